"""Detection over every file of the shared sample data and of trajectories/: the right format
for each trajectory, no other specific importer claiming it, and no format for the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotator.errors import AmbiguousFormat, ImportFailure, UnknownFormat
from annotator.importers.registry import detect, registry
from annotator.importers.detect import read_head

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
#: Documentation, and a run's diagnosis file that its run file reads (not a trajectory itself).
NOT_TRAJECTORIES = {"README.md", "SOURCES.md", "LICENSE", "diagnosis.json"}


def expected_format(path: Path) -> str | None:
    """The format a file is, from where it lives; None for documentation and reference files."""
    if path.name in NOT_TRAJECTORIES or path.suffix in (".yaml", ".txt"):
        return None
    parts = path.parts
    if "formats" in parts:
        return parts[parts.index("formats") + 1]
    if "trajectories" in parts:  # the samples live in a folder named by their format
        return parts[parts.index("trajectories") + 1]
    if "fixtures" in parts:
        return FIXTURE_FORMATS[parts[parts.index("fixtures") + 1]]
    if "who_and_when" in parts:
        return "who_and_when"
    if path.name == "mad_human_sample.json":
        return "mad_human"
    if "real_world" in parts:
        return REAL_WORLD[parts[parts.index("real_world") + 1]]
    raise AssertionError(f"no expectation for {path}")


#: The real-world files by the format each must be detected as: the first folder below
#: ``real_world`` (a conversation folder) or the file itself.
REAL_WORLD = {
    "claude_code_2.1_short.jsonl": "claude_code",
    "gemini_cli_session.json": "gemini_cli",
    "inspect_ai_model_graded_security-guide.json": "inspect_ai",
    "litellm_completion_log_claude-sonnet-4.json": "openai_chat",
    "openhands_v1_conversation": "openhands_v1",
    "otel_genai_convention_spans.json": "otel_genai",
    "swe_agent_0.x_pydicom__pydicom-1458.traj": "swe_agent",
    "tau_bench_airline_few_shot.jsonl": "tau_bench",
}

#: Test fixtures of formats the shared data has no sample of, by folder.
FIXTURE_FORMATS = {"codex_exec": "codex_exec", "claude_code_subagents": "claude_code", "chatdev": "text_log",
                   "stirrup": "stirrup", "tau_bench": "tau_bench", "tau2_bench": "tau2_bench"}
FIXTURES = [ROOT / "tests" / "fixtures" / name for name in FIXTURE_FORMATS]
FILES = sorted(p for base in (SHARED, ROOT / "trajectories", *FIXTURES) for p in base.rglob("*") if p.is_file())


def test_the_table_covers_the_samples():
    assert len(FILES) > 60
    assert {expected_format(p) for p in FILES} >= {
        "claude_code", "codex_cli", "codex_exec", "inspect_ai", "mini_swe_agent", "openhands", "openinference", "otel_genai",
        "swe_agent", "who_and_when", "mad_human", "gemini_cli", "tau_bench", "tau2_bench", "stirrup", "text_log", None}


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(p.parents[2])) for p in FILES])
def test_detection(path: Path):
    want = expected_format(path)
    if want is None:
        with pytest.raises(UnknownFormat):
            detect(path)
        return
    head = read_head(path)
    importers = registry()
    claims = {imp.name for imp in importers.values() if imp.sniff(head) and not imp.fallback}
    assert claims == (set() if importers[want].fallback else {want})
    assert detect(path, head=head).name == want


def test_ambiguous_file_lists_candidates_and_the_flag(tmp_path):
    odd = tmp_path / "odd.json"
    odd.write_text('{"trajectory": [{"action": "ls", "observation": "a"}], "history": [],'
                   ' "mistake_agent": "x", "mistake_step": "0"}')
    with pytest.raises(AmbiguousFormat) as err:
        detect(odd)
    assert set(err.value.candidates) == {"swe_agent", "who_and_when"}
    assert "--format" in str(err.value)


def test_a_zip_that_is_not_an_inspect_log(tmp_path):
    import zipfile

    z = tmp_path / "other.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("header.json", "{}")
        zf.writestr("readme.txt", "hello")
    with pytest.raises(UnknownFormat):
        detect(z)


def test_otlp_attributes_deep_in_the_file_are_seen(tmp_path):
    otlp = tmp_path / "export.json"
    otlp.write_text(
        '{"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "s"}, "spans": ['
        '{"traceId": "t", "spanId": "a", "name": "chat", "startTimeUnixNano": "1", "endTimeUnixNano": "2",'
        ' "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "LLM"}}]}]}]}]}'
    )
    assert "openinference.span.kind" in read_head(otlp).attribute_keys
    assert detect(otlp).name == "openinference"


def test_detection_reads_a_bounded_head(tmp_path):
    big = tmp_path / "big.json"
    filler = ",".join(['{"role": "user", "content": "' + "x" * 1000 + '"}'] * 2000)
    big.write_text('[{"role": "system", "content": "mswea_bash_command"},' + filler + "]")
    head = read_head(big)
    assert head.size > 2_000_000 and len(head.text) <= 64 * 1024
    assert detect(big, head=head).name == "mini_swe_agent"


def test_binary_file_is_refused(tmp_path):
    f = tmp_path / "x.json"
    f.write_bytes(b"{\x00\x01")
    with pytest.raises(ImportFailure):
        detect(f)
