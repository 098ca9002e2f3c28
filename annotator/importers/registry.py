"""The importers `mast` knows, in detection order, and which one reads a file or folder.

Adding a format is one line in ``IMPORTERS``. The list is data, not a chain of imports: each
entry names a module of this package and the :class:`~annotator.importers.base.Importer`
subclass it defines. The modules are imported the first time the registry is asked for (so
``mast --help`` stays light). No format module imports this one (they import ``base`` and
``detect``), so the package's imports run one way: ``importing`` → ``registry`` → formats →
``detect`` / ``base``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType

from annotator.errors import AmbiguousFormat, UnknownFormat
from annotator.importers.base import Importer, ImportOptions
from annotator.importers.detect import Head, read_head

#: Every built-in importer as ``module:Class``, in detection order: the order `mast formats`
#: lists them, an unknown file's error names them and an ambiguous file's candidates come in.
#: Which importer reads a file does not depend on it: a file is one format's, or ambiguous.
IMPORTERS: tuple[str, ...] = (
    "chat:OpenAIChat",
    "jsonl:Jsonl",
    "mad:MadFull",
    "mad:MadHuman",
    "mast_trace:MastTrace",
    "text_log:TextLog",
    "who_and_when:WhoAndWhen",
    "otel_genai:OtelGenAI",
    "openinference:OpenInference",
    "inspect_ai:InspectAI",
    "mini_swe_agent:MiniSWEAgent",
    "swe_agent:SWEAgent",
    "openhands:OpenHands",
    "openhands_v1:OpenHandsV1",
    "claude_code:ClaudeCode",
    "codex_cli:CodexCLI",
    "codex_exec:CodexExec",
    "itbench:ITBenchRun",
    "gemini_cli:GeminiCLI",
    "tau_bench:TauBench",
    "tau2_bench:Tau2Bench",
    "stirrup:Stirrup",
    "mast_export:MastExport",
)


@cache
def _built_in() -> Mapping[str, Importer]:
    importers: dict[str, Importer] = {}
    for entry in IMPORTERS:
        module, _, cls_name = entry.partition(":")
        importer = getattr(importlib.import_module(f"annotator.importers.{module}"), cls_name)()
        if importer.name in importers:
            raise ValueError(f"importer {importer.name!r} listed twice ({entry})")
        importers[importer.name] = importer
    return MappingProxyType(importers)


def registry() -> dict[str, Importer]:
    """All importers by name (their ``--format`` value), in detection order."""
    return dict(_built_in())


def detect(path: Path, opts: ImportOptions | None = None, head: Head | None = None) -> Importer:
    """The one importer for ``path``; UnknownFormat or AmbiguousFormat otherwise."""
    head = head or read_head(path, opts)
    importers = _built_in()
    matches = [imp for imp in importers.values() if imp.sniff(head)]
    specific = [imp for imp in matches if not imp.fallback]
    chosen = specific or matches
    if len(chosen) == 1:
        return chosen[0]
    if not chosen:
        raise UnknownFormat(
            str(path),
            f"unknown format ({head.kind}); supported: {', '.join(importers)} (force one with --format)",
        )
    raise AmbiguousFormat(str(path), [imp.name for imp in chosen])


def dir_importer(path: Path) -> Importer | None:
    """The importer that reads the folder ``path`` as one unit (a run folder), if any."""
    return next((imp for imp in _built_in().values() if imp.claims_dir(path)), None)
