"""The annotation core: one annotator's session on a trajectory, the queue, and comparing annotators.

The TUI (and any other front end) calls only this package to read and write annotations; it
opens the database and watches ``data_version``, nothing more of the store.
"""
