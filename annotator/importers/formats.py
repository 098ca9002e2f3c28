"""The built-in importers, imported here in detection order so that each registers itself."""

from annotator.importers import chat, jsonl, mad, mast_trace, text_log, who_and_when  # noqa: F401
from annotator.importers import otel_genai, openinference  # noqa: F401
from annotator.importers import inspect_ai  # noqa: F401
from annotator.importers import mini_swe_agent, swe_agent  # noqa: F401
from annotator.importers import openhands, openhands_v1  # noqa: F401
from annotator.importers import claude_code, codex_cli, codex_exec  # noqa: F401
from annotator.importers import itbench  # noqa: F401
from annotator.importers import gemini_cli, stirrup, tau_bench  # noqa: F401
from annotator.importers import mast_export  # noqa: F401
