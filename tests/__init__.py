"""The test suite (a package, so that ``tests.openai_server`` is ours: ppi-python, the reference
of the PPI tests, installs a top-level package of its own named ``tests``)."""
