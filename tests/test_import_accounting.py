"""Accounting: for every registered importer, on real samples, each raw record of the file is
mapped, folded or dropped, and the ledgers' total equals the number of raw records counted here,
by the test, independently of the importer (lines of a JSONL, items of an array, messages ...).

Each row names an importer, a sample and how to count that format's raw records. The import
summary's per-file lines and ``--strict`` are checked end to end at the bottom.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from tests.samples import long_line_jsonl, mast_traces, unlabelled_mad

from annotator.cli import main
from annotator.importers.accounting import WARNING_KINDS, Ledger, check
from annotator.importers.base import ImportOptions
from annotator.importers.importing import import_file, import_paths
from annotator.importers.registry import detect, dir_importer, registry
from annotator.models import Step, Trajectory
from annotator.report import export
from annotator.taxonomy import load_taxonomy

ROOT = Path(__file__).resolve().parents[1]
TRAJECTORIES = ROOT / "trajectories"
WHO_AND_WHEN = TRAJECTORIES / "who_and_when"


def _lines(path: Path) -> int:
    """Non-blank lines of a JSON Lines file."""
    return sum(1 for line in path.read_bytes().splitlines() if line.strip())


def _items(path: Path) -> int:
    """Items of a JSON array (one for a single object)."""
    data = orjson.loads(path.read_bytes())
    return len(data) if isinstance(data, list) else 1


def _history(path: Path) -> int:
    """Messages of a Who&When record's ``history``."""
    return len(orjson.loads(path.read_bytes())["history"])


def _trace_messages(path: Path) -> int:
    """Messages of an AG2 trace; a log (MetaGPT's ``content``, HyperAgent's lines) is one record."""
    inner = orjson.loads(path.read_bytes()).get("trajectory")
    return len(inner) if isinstance(inner, list) and not all(isinstance(x, str) for x in inner) else 1


REAL_WORLD = ROOT.parent / "shared" / "data" / "real_world"
FORMATS = ROOT.parent / "shared" / "data" / "formats"
FIXTURES = ROOT / "tests" / "fixtures"


def _chat(path: Path) -> int:
    """Messages of a chat list, plus a litellm log's ``response``."""
    data = orjson.loads(path.read_bytes())
    return len(data) if isinstance(data, list) else len(data["messages"]) + ("response" in data)


def _messages(path: Path) -> int:
    """Messages of a bare list or of an object's ``messages``."""
    data = orjson.loads(path.read_bytes())
    return len(data if isinstance(data, list) else data["messages"])


def _swe_agent(path: Path) -> int:
    """``history`` items and ``trajectory`` entries of a SWE-agent .traj."""
    data = orjson.loads(path.read_bytes())
    return len(data.get("history") or []) + len(data.get("trajectory") or [])


def _claude_session(path: Path) -> int:
    """Lines of a session file and of the sub-agent transcripts folded into it."""
    subagents = (path.parent / path.stem / "subagents").glob("agent-*.jsonl")
    return _lines(path) + sum(_lines(f) for f in subagents if not f.name.startswith("agent-acompact-"))


def _log_records(path: Path) -> int:
    """ChatDev log records: the lines opening with ``[date time LEVEL]``."""
    import re

    return len(re.findall(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z]+\]", path.read_text(encoding="utf-8"), re.M))


def _tau_results(path: Path) -> int:
    """Messages of every record's ``traj``."""
    return sum(len(rec["traj"]) for rec in orjson.loads(path.read_bytes()))


def _tau2_messages(path: Path) -> int:
    """Messages of every simulation of a tau2-bench results file."""
    return sum(len(sim["messages"]) for sim in orjson.loads(path.read_bytes())["simulations"])


def _stirrup(path: Path) -> int:
    """Messages of every history group (and a cache's active ``msgs``), and of every sub-agent
    run kept in ``run_metadata`` (``{message_history, run_metadata}`` lists), at any depth."""
    data = orjson.loads(path.read_bytes())
    groups = data["history"] if "history" in data else [*data["full_msg_history"], data["msgs"]]

    def sub_agents(metadata: dict) -> int:
        runs = [r for v in metadata.values() if isinstance(v, list) for r in v
                if isinstance(r, dict) and "message_history" in r]
        return sum(sum(map(len, r["message_history"])) + sub_agents(r["run_metadata"]) for r in runs)

    return sum(len(g) for g in groups) + sub_agents(data.get("run_metadata") or {})


def _label_export(tmp_path: Path) -> Path:
    """A real label export: the MAD human sample imported, its three annotators' labels exported."""
    from annotator.store import open_db

    db = open_db(tmp_path / "export.db")
    import_paths(db, [TRAJECTORIES / "mad_human" / "mad_human_sample.json"])
    out = tmp_path / "labels.jsonl"
    sources = [f"mad-human-{i}" for i in (1, 2, 3)]
    out.write_text(export.render(db, "jsonl", sources, load_taxonomy()), encoding="utf-8")
    db.close()
    return out


#: (importer, sample or a function making one from tmp_path, how the test counts raw records).
ROWS: list[tuple[str, Path | Callable[[Path], Path], Callable[[Path], int]]] = [
    ("mad_human", TRAJECTORIES / "mad_human" / "mad_human_sample.json", _items),
    *[("who_and_when", p, _history) for p in sorted(WHO_AND_WHEN.glob("*.json"))],
    ("mast_export", _label_export, _lines),
    ("mad_full", lambda tmp: unlabelled_mad(tmp / "traces.json"), _items),
    *[("mast_trace", lambda tmp, i=i: mast_traces(tmp / "traces")[i], _trace_messages) for i in range(3)],
    ("jsonl", lambda tmp: long_line_jsonl(tmp / "runs.jsonl"), _lines),
    ("openai_chat", REAL_WORLD / "litellm_completion_log_claude-sonnet-4.json", _chat),
    ("openai_chat", TRAJECTORIES / "openai_chat" / "swe_agent_function_calling.messages.json", _chat),
    ("swe_agent", REAL_WORLD / "swe_agent_0.x_pydicom__pydicom-1458.traj", _swe_agent),
    *[("swe_agent", p, _swe_agent) for p in sorted((FORMATS / "swe_agent").glob("*.traj"))],
    ("mini_swe_agent", TRAJECTORIES / "mini_swe_agent" / "github_issue.traj.json", _messages),
    *[("mini_swe_agent", p, _messages) for p in sorted((FORMATS / "mini_swe_agent").glob("*.traj.json"))],
    ("claude_code", REAL_WORLD / "claude_code_2.1_short.jsonl", _claude_session),
    ("claude_code", FORMATS / "claude_code" / "representative_messages.jsonl", _claude_session),
    ("claude_code", FIXTURES / "claude_code_subagents" / "5b0c3a7e-8d1f-4c2a-9e6b-2f4d8a1c7e90.jsonl", _claude_session),
    *[("text_log", p, _log_records) for p in sorted((FIXTURES / "chatdev").glob("*.log"))],
    ("gemini_cli", REAL_WORLD / "gemini_cli_session.json", _messages),
    ("tau_bench", FIXTURES / "tau_bench" / "gpt-4o-airline.json", _tau_results),
    ("tau_bench", REAL_WORLD / "tau_bench_airline_few_shot.jsonl", _lines),
    *[("tau2_bench", p, _tau2_messages) for p in sorted((FIXTURES / "tau2_bench").glob("*.json"))],
    ("stirrup", FIXTURES / "stirrup" / "itbench_aa" / "1" / "history.json", _stirrup),
    ("stirrup", FIXTURES / "stirrup" / "sub_agents" / "history.json", _stirrup),
    ("stirrup", FIXTURES / "stirrup" / "cache" / "5d1e0a7c93b2" / "state.json", _stirrup),
]

def _inspect_events(path: Path) -> int:
    """Events of every sample of an Inspect log (.json or .eval)."""
    import zipfile

    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            samples = [orjson.loads(zf.read(n)) for n in zf.namelist() if n.startswith("samples/")]
    else:
        samples = orjson.loads(path.read_bytes())["samples"]
    return sum(len(s["events"]) for s in samples)


def _spans(path: Path) -> int:
    """Spans of a span list, or of a ``{session_id, span_count, spans}`` export."""
    data = orjson.loads(path.read_bytes())
    return len(data["spans"]) if isinstance(data, dict) else len(data)


def _histories(path: Path) -> int:
    """Events in the ``history`` of every record of an OpenHands output.jsonl."""
    return sum(len(orjson.loads(line)["history"]) for line in path.read_bytes().splitlines() if line.strip())


def _conversation(path: Path) -> int:
    """A V1 conversation folder's event files and its base_state.json."""
    return len(list((path / "events").glob("event-*.json"))) + 1


def _itbench_trial(path: Path) -> int:
    """Lines of every Codex rollout of a trial folder, and its agent_output.json."""
    return sum(_lines(f) for f in path.rglob("rollout-*.jsonl")) + 1


#: Importers of agent logs and span traces, on the real samples of tests/fixtures.
ROWS += [
    *[("inspect_ai", FIXTURES / "inspect_ai" / n, _inspect_events)
      for n in ("model_graded_security-guide.json", "log_images.json", "log_message_deduplication.eval")],
    *[("otel_genai", FIXTURES / "spans" / n, _spans)
      for n in ("otel_genai_convention_spans.json", "adk_live_spans.json", "openai_agents_genai_adot_spans.json")],
    *[("openinference", FIXTURES / "spans" / n, _spans) for n in ("claude_live_spans.json", "claude_adot_spans.json")],
    *[("openhands", FIXTURES / "openhands" / n, _histories)
      for n in ("resolver_output.jsonl", "benchmarks_v1_output.jsonl")],
    ("openhands_v1", FIXTURES / "openhands" / "v1_conversation", _conversation),
    *[("codex_exec", p, _lines) for p in sorted((FIXTURES / "codex_exec").glob("*.jsonl"))],
    ("codex_cli", next((FIXTURES / "itbench_retries").rglob("rollout-*.jsonl")), _lines),
    ("itbench_run", FIXTURES / "itbench_retries" / "outputs" / "agent_outputs" / "3" / "1", _itbench_trial),
    ("itbench_run", FIXTURES / "itbench_run" / "outputs" / "agent_outputs" / "1" / "1", _itbench_trial),
]

@pytest.mark.parametrize(("name", "sample", "count"), ROWS, ids=lambda v: v if isinstance(v, str) else None)
def test_every_raw_record_is_accounted_for(name, sample, count, tmp_path):
    path = sample(tmp_path) if callable(sample) else sample
    assert (dir_importer(path) if path.is_dir() else detect(path)).name == name
    total = Ledger()
    for rec in registry()[name].read(path, ImportOptions()):
        total.merge(rec.ledger)
    expected = count(path)
    assert expected > 0
    assert total.read == expected, total.as_dict()


def test_the_table_covers_every_importer():
    covered = {name for name, _, _ in ROWS}
    assert covered == set(registry())


# ---------------------------------------------------------------- the ledger and the central checks


def test_ledger_counts_merge_and_say_repeats_once():
    a, b = Ledger(), Ledger()
    a.mapped(3)
    a.folded("streamed fragment", 2)
    a.dropped("progress")
    b.dropped("progress", 4)
    b.warn("unknown_kind", "unknown event of type 'x' kept as a generic step")
    b.warn("unknown_kind", "unknown event of type 'x' kept as a generic step")
    a.merge(b)
    assert a.as_dict() == {
        "read": 10, "mapped": 3, "folded": {"streamed fragment": 2}, "dropped": {"progress": 5},
        "warnings": [{"kind": "unknown_kind", "message": "unknown event of type 'x' kept as a generic step",
                      "count": 2}],
    }
    assert a.warning_lines() == ["unknown event of type 'x' kept as a generic step (2 times)"]
    with pytest.raises(ValueError, match="unknown warning kind"):
        a.warn("whatever", "x")
    assert set(WARNING_KINDS) >= {"unknown_kind", "tool_call_unnamed", "tool_call_no_args", "result_unlinked",
                                  "empty_task"}


def test_central_checks_find_unnamed_argless_unlinked_and_taskless():
    steps = [
        Step(index=0, id="0", kind="tool_call", tool_name="bash", tool_args='{"cmd": "ls"}', call_id="a", link=1),
        Step(index=1, id="1", kind="tool_result", call_id="a", link=0, content="x"),
        Step(index=2, id="2", kind="tool_call", tool_name=None, tool_args=None),
        Step(index=3, id="3", kind="tool_call", tool_name="edit", tool_args="  "),
        Step(index=4, id="4", kind="tool_result", content="orphan"),
    ]
    ledger = Ledger()
    check(Trajectory(id="t", source_format="jsonl", task=" ", steps=steps), ledger)
    assert {kind: n for (kind, _), n in ledger.warnings.items()} == {
        "tool_call_unnamed": 1, "tool_call_no_args": 2, "result_unlinked": 1, "empty_task": 1}


# ---------------------------------------------------------------- the summary and --strict


def _jsonl_with_an_unnamed_call(tmp_path: Path) -> Path:
    path = tmp_path / "run.jsonl"
    rows = [{"id": 1, "task": "say hi", "steps": [{"kind": "message", "content": "hi"}]},
            {"id": 2, "task": "list files", "steps": [{"kind": "tool_call", "tool_args": "ls"}]}]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def test_summary_prints_warnings_with_their_kind(tmp_path):
    path = _jsonl_with_an_unnamed_call(tmp_path)
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "m.db"), "import", str(path)])
    assert result.exit_code == 0, result.output
    assert "warning (tool_call_unnamed): tool call without a tool name" in result.stdout
    again = CliRunner().invoke(main, ["--db", str(tmp_path / "m.db"), "import", str(path)])
    assert "2 unchanged" in again.stdout and "warning (" not in again.stdout  # said once, when written


def test_strict_fails_the_file_and_writes_nothing(db, tmp_path):
    path = _jsonl_with_an_unnamed_call(tmp_path)
    result = import_file(db, path, opts=ImportOptions(strict=True))
    assert result.error == f"{path}:line 2: --strict: tool_call_unnamed: tool call without a tool name"
    assert result.imported == 0 and db["trajectories"].count == 0
    cli = CliRunner().invoke(main, ["--db", str(tmp_path / "m.db"), "import", "--strict", str(path)])
    assert cli.exit_code == 1 and "--strict: tool_call_unnamed" in cli.stderr
