"""The built-in importers, imported here in detection order so that each registers itself."""

from annotator.importers import chat, jsonl, mad, mast_trace, text_log, who_and_when  # noqa: F401
