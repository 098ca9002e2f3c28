"""mast-annotator: find out why LLM agents and multi-agent systems fail (MAST taxonomy)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mast-annotator")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"
