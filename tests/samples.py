"""Sample files the import tests build from the real samples in trajectories/ (see its SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import orjson

TRAJECTORIES = Path(__file__).resolve().parents[1] / "trajectories"
MAD_HUMAN = TRAJECTORIES / "mad_human" / "mad_human_sample.json"
CHAT = TRAJECTORIES / "openai_chat" / "swe_agent_function_calling.messages.json"


def unlabelled_mad(path: Path) -> Path:
    """The MAD human sample's four real traces in MAD's layout without any labels, as other MAST
    tools write traces still to be annotated."""
    records = [{k: r[k] for k in ("mas_name", "benchmark_name", "trace_id", "trace")}
               for r in orjson.loads(MAD_HUMAN.read_bytes())]
    path.write_bytes(orjson.dumps(records))
    return path


def long_line_jsonl(path: Path, lines: int = 3) -> Path:
    """Generic JSON Lines whose every line holds the real SWE-agent chat several times over,
    so each is longer than detection's 64 KiB head (as OpenHands evaluation records are)."""
    messages = orjson.loads(CHAT.read_bytes())
    with path.open("wb") as fh:
        for i in range(lines):
            fh.write(orjson.dumps({"id": f"run-{i}", "task": messages[1]["content"], "messages": messages * 12}))
            fh.write(b"\n")
    return path


def mast_traces(folder: Path) -> list[Path]:
    """The MAD human sample's traces that are JSON (two AG2 runs, one MetaGPT run), each written as
    the per-trace file of MAST's ``traces/`` folders it was taken from."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for i, rec in enumerate(orjson.loads(MAD_HUMAN.read_bytes()), start=1):
        if rec["trace"].lstrip().startswith("{"):
            out.append(folder / f"trace_{i}.json")
            out[-1].write_text(rec["trace"], encoding="utf-8")
    return out
