"""Bad input for the agent-log importers: truncated files, foreign zips, bad JSONL lines,
unknown event types, and records whose values have the wrong shape. An importer either
imports or raises ImportFailure naming the file; nothing else escapes and nothing is stored."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

import orjson
import pytest

from annotator.errors import ImportFailure
from annotator.importers.base import ImportOptions
from annotator.importers.importing import import_file
from annotator.importers.registry import registry
from annotator.store.trajectories import list_trajectories

FORMATS = Path(__file__).resolve().parents[2] / "shared" / "data" / "formats"
SAMPLES = sorted(p for p in FORMATS.rglob("*") if p.is_file() and p.name != "SOURCES.md")
CODEX = next(FORMATS.glob("codex_cli/*.jsonl"))
CLAUDE = FORMATS / "claude_code" / "representative_messages.jsonl"
EVAL = FORMATS / "inspect_ai" / "log_read_sample.eval"
CODEX_EXEC = Path(__file__).parent / "fixtures" / "codex_exec" / "fix_iso_week.jsonl"
REAL_WORLD = FORMATS.parent / "real_world"
#: Real samples outside ``formats/``, with their format.
MORE = {
    REAL_WORLD / "gemini_cli_session.json": "gemini_cli",
    REAL_WORLD / "tau_bench_airline_few_shot.jsonl": "tau_bench",
    REAL_WORLD / "swe_agent_0.x_pydicom__pydicom-1458.traj": "swe_agent",
    REAL_WORLD / "litellm_completion_log_claude-sonnet-4.json": "openai_chat",
    Path(__file__).parent / "fixtures" / "tau_bench" / "gpt-4o-airline.json": "tau_bench",
    **{p: "tau2_bench" for p in sorted((Path(__file__).parent / "fixtures" / "tau2_bench").glob("*.json"))},
    Path(__file__).parent / "fixtures" / "stirrup" / "itbench_aa" / "1" / "history.json": "stirrup",
    Path(__file__).parent / "fixtures" / "stirrup" / "cache" / "5d1e0a7c93b2" / "state.json": "stirrup",
    Path(__file__).parent / "fixtures" / "stirrup" / "sub_agents" / "history.json": "stirrup",
}


def _fmt(path: Path) -> str:
    if path in MORE:
        return MORE[path]
    return path.relative_to(FORMATS).parts[0] if FORMATS in path.parents else path.parent.name


def _read_all(path: Path, fmt: str, opts: ImportOptions | None = None) -> list:
    return list(registry()[fmt].read(path, opts or ImportOptions()))


@pytest.mark.parametrize("sample", [p for p in SAMPLES if p.suffix != ".eval"] + [CODEX_EXEC], ids=lambda p: p.name)
@pytest.mark.parametrize("fraction", [0.3, 0.7])
def test_truncated_file_fails_cleanly(db, tmp_path, sample, fraction):
    data = sample.read_bytes()
    cut = tmp_path / sample.name
    cut.write_bytes(data[: int(len(data) * fraction)])
    result = import_file(db, cut, _fmt(sample))
    assert result.error and str(cut) in result.error
    assert ("line " in result.error) if sample.suffix == ".jsonl" else True
    assert list_trajectories(db) == []


def test_truncated_eval_zip(db, tmp_path):
    cut = tmp_path / "cut.eval"
    cut.write_bytes(EVAL.read_bytes()[:3000])
    result = import_file(db, cut)
    assert result.error and "zip" in result.error and list_trajectories(db) == []


def test_zip_that_is_not_an_inspect_log(tmp_path):
    z = tmp_path / "other.eval"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("data.csv", "a,b\n1,2\n")
    with pytest.raises(ImportFailure, match="not an Inspect log"):
        _read_all(z, "inspect_ai")


def test_inspect_zip_with_a_broken_sample_names_the_member(tmp_path):
    z = tmp_path / "broken.eval"
    buf = io.BytesIO()
    with zipfile.ZipFile(EVAL) as src, zipfile.ZipFile(buf, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, b'{"id": 1, "messages": [' if name.startswith("samples/") else src.read(name))
    z.write_bytes(buf.getvalue())
    with pytest.raises(ImportFailure) as err:
        _read_all(z, "inspect_ai")
    assert err.value.where == "samples/1_epoch_1.json"


@pytest.mark.parametrize("sample,fmt", [(CODEX, "codex_cli"), (CLAUDE, "claude_code"), (CODEX_EXEC, "codex_exec")],
                         ids=["codex", "claude", "codex_exec"])
def test_one_bad_jsonl_line(db, tmp_path, sample, fmt):
    lines = sample.read_bytes().splitlines(keepends=True)
    bad = tmp_path / sample.name
    bad.write_bytes(b"".join(lines[:4] + [b'{"type": "assistant", "mess\n'] + lines[4:]))
    result = import_file(db, bad)
    assert result.error and f"{bad}:line 5" in result.error and "--skip-bad-lines" in result.error
    assert list_trajectories(db) == []

    result = import_file(db, bad, opts=ImportOptions(skip_bad_lines=True))
    assert result.ok and result.imported == 1 and result.skipped_lines == [5]


def test_unknown_event_types_are_kept_and_counted(tmp_path):
    lines = CLAUDE.read_bytes().splitlines(keepends=True)
    odd = tmp_path / "session.jsonl"
    extra = [orjson.dumps({"type": "hologram", "sessionId": "s", "uuid": f"u{i}", "payload": i}) + b"\n"
             for i in range(2)]
    odd.write_bytes(b"".join(lines[:2] + extra + lines[2:]))
    [rec] = _read_all(odd, "claude_code")
    events = [s for s in rec.trajectory.steps if s.kind == "event"]
    assert len(events) == 2 and events[0].attributes["unknown_type"] == "hologram"
    assert rec.warnings == ["unknown event of type 'hologram' kept as a generic step (2 times)"]


def test_unknown_inspect_and_openhands_events(tmp_path):
    log = orjson.loads((FORMATS / "inspect_ai" / "2025-05-12T20-27-36-04-00_browser.json").read_bytes())
    log["samples"][0]["events"].insert(3, {"event": "telepathy", "timestamp": "2025-05-12T20:27:38-04:00"})
    f = tmp_path / "log.json"
    f.write_bytes(orjson.dumps(log))
    [rec] = _read_all(f, "inspect_ai")
    assert [s.content for s in rec.trajectory.steps if s.kind == "event"][0].startswith("[telepathy]")
    assert rec.warnings == ["unknown event of type 'telepathy' kept as a generic step"]


def _mutants(value: object, rng: random.Random, n: int) -> list[object]:
    """Copies of ``value`` with one value somewhere replaced by something of the wrong shape."""
    paths: list[tuple] = []

    def walk(node, path):
        if len(paths) > 5000:
            return
        if isinstance(node, dict):
            for k, v in node.items():
                paths.append((*path, k))
                walk(v, (*path, k))
        elif isinstance(node, list):
            for i, v in enumerate(node[:20]):
                paths.append((*path, i))
                walk(v, (*path, i))

    walk(value, ())
    out = []
    for path in rng.sample(paths, min(n, len(paths))):
        copy = orjson.loads(orjson.dumps(value))
        node = copy
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = rng.choice([None, 7, -1.5, "x", "attachment://nope", [], {}, [None], {"a": None}, True])
        out.append(copy)
    return out


FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("sample", [p for p in SAMPLES if p.suffix in (".json", ".traj", ".jsonl")]
                         + [FIXTURES / "openhands_v1" / "events.json", CODEX_EXEC, *MORE], ids=lambda p: p.name)
def test_wrong_shapes_raise_only_import_failure(tmp_path, sample):
    rng = random.Random(sample.name)
    fmt = _fmt(sample)
    target = tmp_path / sample.name
    if sample.suffix == ".jsonl":
        lines = [orjson.loads(ln) for ln in sample.read_bytes().splitlines() if ln.strip()]
        mutants = [[*lines[:i], m, *lines[i + 1:]] for i in range(len(lines))
                   for m in _mutants({"line": lines[i]}, rng, 6)]
        mutants = [[m["line"] if isinstance(m, dict) and "line" in m else m for m in ls] for ls in mutants]
        payloads = [b"".join(orjson.dumps(x) + b"\n" for x in ls) for ls in mutants]
    else:
        payloads = [orjson.dumps(m) for m in _mutants(orjson.loads(sample.read_bytes()), rng, 80)]
    for payload in payloads:
        target.write_bytes(payload)
        try:
            _read_all(target, fmt)
        except ImportFailure as exc:
            assert str(target) in str(exc)


AGENT_FORMATS = ["claude_code", "codex_cli", "codex_exec", "inspect_ai", "itbench_run", "mini_swe_agent", "openhands", "openhands_v1",
                 "openinference", "otel_genai", "swe_agent", "gemini_cli", "tau_bench", "tau2_bench", "stirrup"]


@pytest.mark.parametrize("fmt", AGENT_FORMATS)
@pytest.mark.parametrize("content", [b"7", b'"x"', b"[]", b"{}", b"null", b"[1, 2]", b'{"a": 1}\n{"b": 2}\n', b"\xff\xfe"])
def test_foreign_content_is_an_import_failure(tmp_path, fmt, content):
    f = tmp_path / "file.json"
    f.write_bytes(content)
    with pytest.raises(ImportFailure) as err:
        _read_all(f, fmt)
    assert str(f) in str(err.value)


def test_inspect_zip_with_a_corrupt_member(tmp_path):
    z = tmp_path / "corrupt.eval"
    with zipfile.ZipFile(EVAL) as src, zipfile.ZipFile(z, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for name in src.namelist():
            dst.writestr(name, src.read(name))
    data = bytearray(z.read_bytes())
    start = data.index(b"samples/1_epoch_1.json") + len("samples/1_epoch_1.json")
    data[start + 10:start + 60] = bytes(50)  # zero part of the compressed sample
    z.write_bytes(bytes(data))
    with pytest.raises(ImportFailure) as err:
        _read_all(z, "inspect_ai")
    assert err.value.where == "samples/1_epoch_1.json"
