"""mast-annotator: find out why LLM agents and multi-agent systems fail (MAST taxonomy)."""

#: The package version (also the distribution's: pyproject reads it from here).
__version__ = "0.1.0"
