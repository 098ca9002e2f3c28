"""ITBench SRE agent runs: one run folder (``agent_outputs/<incident>/<trial>/``) is one
trajectory, imported as a unit rather than file by file.

The agent is Codex, run with ``CODEX_HOME`` set to the run folder, so its steps come from the
Codex session rollout found under the folder; without one, from the OTLP log records Codex
sent to ``traces/traces.jsonl``. The diagnosis in ``agent_output.json`` (root-cause entities,
propagation chain, explained alerts) is the final step and run metadata.

With ground truth (ITBench scenario ``groundtruth.yaml`` files) the run is scored the way
ITBench-AA scores it, recall-gated precision: 0 when any ground-truth root-cause entity is
missing from the submitted entities, else the share of submitted entities that are true
root causes; the run succeeds when every root cause was found. Score, success flag and the
ground truth are hidden metadata, so annotators judge the run without knowing its grade.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import yaml

from annotator.errors import ImportFailure
from annotator.importers.accounting import Ledger
from annotator.importers.base import ImportedRecord, Importer, ImportOptions, as_text, finish, stable_id
from annotator.importers.codex_cli import rollout
from annotator.importers.detect import Head
from annotator.importers.reading import iter_jsonl, load_json
from annotator.importers.span_files import otlp_attributes
from annotator.importers.steps import StepList, fingerprint, obj, parse_time, plain, seq
from annotator.models import HIDDEN, Step, Trajectory

AGENT = "sre-agent"
OUTPUT_FILE = "agent_output.json"
_QUIET_LOG_EVENTS = {"codex.api_request", "codex.sse_event", "codex.conversation_starts"}


def is_run_dir(path: Path) -> bool:
    """Whether ``path`` is an ITBench run folder: it holds an ``agent_output.json`` diagnosis."""
    out = path / OUTPUT_FILE
    if not out.is_file():
        return False
    try:
        with out.open("rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return head.lstrip()[:1] == b"{" and b'"entities"' in head


# ---------------------------------------------------------------- ground truth and scoring


def _key(name: str) -> str:
    """Scenario key: the trailing number of 'scenario-3' / 'scenario_3' / '3', else the name."""
    m = re.search(r"(\d+)$", name.strip())
    return m.group(1) if m else name.strip().lower()


@dataclass
class GroundTruth:
    scenario: str
    entities: list[str]  # "namespace/Kind/name"
    source: str


def load_ground_truth(folder: Path) -> dict[str, GroundTruth]:
    """Ground truths by scenario key from every YAML file under ``folder``."""
    if not folder.is_dir():
        raise ImportFailure(str(folder), "--ground-truth must be a folder of ITBench groundtruth.yaml files")
    out: dict[str, GroundTruth] = {}
    for f in sorted([*folder.rglob("*.yaml"), *folder.rglob("*.yml")]):
        try:
            doc = yaml.safe_load(f.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise ImportFailure(str(f), f"malformed ground-truth YAML: {exc}") from exc
        if not isinstance(doc, dict) or doc.get("kind") != "GroundTruth":
            continue
        spec = obj(doc.get("spec"))
        name = str(obj(doc.get("metadata")).get("name") or f.parent.name)
        entities = []
        for e in seq(spec.get("entities")):
            e = obj(e)
            meta = obj(e.get("metadata"))
            if meta.get("name") and e.get("kind"):
                entities.append(f"{meta.get('namespace') or ''}/{e['kind']}/{meta['name']}")
        out[_key(name)] = GroundTruth(scenario=name, entities=entities, source=str(f))
    return out


def _ground_truth(opts: ImportOptions) -> dict[str, GroundTruth]:
    """The ground truths of ``opts.ground_truth``, parsed once per import: every run folder of
    an import scores against the same folder. The mapping is shared, so it is only read."""
    folder = Path(opts.ground_truth)
    shared = opts.extra.setdefault("shared", {})
    key = ("itbench ground truth", folder.resolve())
    if key not in shared:
        shared[key] = load_ground_truth(folder)
    return shared[key]


def score_diagnosis(submitted: list[str], truth: list[str]) -> tuple[float, bool, list[str]]:
    """(recall-gated precision, every root cause found, missing root causes), names compared
    case-insensitively."""
    sub = {s.strip().lower() for s in submitted if s and s.strip()}
    true = {t.lower() for t in truth}
    missing = sorted(t for t in truth if t.lower() not in sub)
    if missing or not sub:
        return 0.0, False, missing
    return len(sub & true) / len(sub), True, []


def grade(diagnosis: dict, incident: str, opts: ImportOptions, ledger: Ledger) -> tuple[str, float | None, dict]:
    """(outcome, score, hidden metadata) of a diagnosis of ``incident`` against ``--ground-truth``:
    ("unknown", None, {}) without ground truth, or with none for the incident (then a warning)."""
    if opts.ground_truth is None:
        return "unknown", None, {}
    truth = _ground_truth(opts).get(_key(incident))
    if truth is None:
        ledger.warn("incomplete", f"no ground truth for incident {incident!r} in {opts.ground_truth}")
        return "unknown", None, {}
    score, success, missing = score_diagnosis(submitted_entities(diagnosis), truth.entities)
    return ("success" if success else "failure"), score, {"itbench": {
        "score": score, "success": success, "scenario": truth.scenario, "ground_truth_entities": truth.entities,
        "missing": missing, "ground_truth_file": truth.source, "metric": "recall-gated precision"}}


def submitted_entities(diagnosis: dict) -> list[str]:
    """Entity names the agent put forward as root causes (``contributing_factor`` not false)."""
    return [str(e.get("name")) for e in seq(diagnosis.get("entities"))
            if isinstance(e, dict) and e.get("name") and e.get("contributing_factor") is not False]


# ---------------------------------------------------------------- steps


def _log_records(path: Path, opts: ImportOptions) -> Iterator[tuple[int, dict]]:
    skipped = opts.extra.setdefault("skipped_lines", [])
    for lineno, line in iter_jsonl(path, opts, skipped):
        data = line.get("data") if isinstance(line, dict) else None
        if not isinstance(data, dict):
            raise ImportFailure(str(path), "not an ITBench trace line (needs 'data')", where=f"line {lineno}")
        if "error" in data or "body_raw" in data:
            problem = data.get("error") or data.get("decode_error")
            yield lineno, {"attributes": {"event.name": "decode_error"}, "body": problem}
            continue
        for rl in seq(data.get("resource_logs") or data.get("resourceLogs")):
            for sl in seq(obj(rl).get("scope_logs") or obj(rl).get("scopeLogs")):
                for rec in seq(obj(sl).get("log_records") or obj(sl).get("logRecords")):
                    if isinstance(rec, dict):
                        yield lineno, rec


def trace_steps(path: Path, opts: ImportOptions) -> tuple[StepList, str | None]:
    """Steps from Codex's OTLP log records in ``traces.jsonl``, and the model they name."""
    out, model = StepList(), None
    for lineno, rec in _log_records(path, opts):
        attrs = otlp_attributes(rec.get("attributes"))
        name = str(attrs.get("event.name") or "")
        when = parse_time(attrs.get("event.timestamp") or rec.get("time_unix_nano") or rec.get("timeUnixNano")
                          or rec.get("observed_time_unix_nano"))
        base = dict(timestamp=when, raw=plain(rec), agent=AGENT)
        if name == "codex.user_prompt":
            out.add(id=f"line {lineno}", kind="message", role="user", content=as_text(attrs.get("prompt")),
                    **{**base, "agent": "user"})
        elif name == "codex.tool_result":
            call_id = attrs.get("call_id") or f"line {lineno}.{len(out.steps)}"
            args = as_text(attrs.get("arguments"))
            out.add(id=f"line {lineno}.call", kind="tool_call", role="assistant", tool_name=attrs.get("tool_name"),
                    tool_args=args, content=f"{attrs.get('tool_name')}({args})", call_id=call_id, **base)
            result = out.add(id=f"line {lineno}.result", kind="tool_result", role="tool", call_id=call_id,
                             content=as_text(attrs.get("output")), **{**base, "agent": "environment"})
            result.attributes.update({k: attrs[k] for k in ("success", "duration_ms") if k in attrs})
        elif name == "codex.tool_decision":
            out.add(id=f"line {lineno}", kind="event", content=f"tool decision: {attrs.get('tool_name')} "
                    f"{attrs.get('decision')} ({attrs.get('source') or ''})".strip(), **base)
        elif name in _QUIET_LOG_EVENTS:
            model = model or attrs.get("model")
        else:
            out.unknown_event(name or "log_record", plain(rec), id=f"line {lineno}", timestamp=when)
    return out, model


def _diagnosis_text(d: dict) -> str:
    lines = ["Root-cause entities:"]
    for e in seq(d.get("entities")):
        if isinstance(e, dict):
            flag = "contributing factor" if e.get("contributing_factor") else "not a contributing factor"
            lines.append(f"- {e.get('name')} ({flag}): {as_text(e.get('reasoning'))}".rstrip(": "))
    lines.append("Propagation chain:")
    for p in seq(d.get("propagations")):
        if isinstance(p, dict):
            lines.append(f"- {p.get('source')} -> {p.get('target')}: {as_text(p.get('condition'))}; "
                         f"{as_text(p.get('effect'))}")
    lines.append("Alerts explained:")
    for a in seq(d.get("alerts_explained")):
        if isinstance(a, dict):
            lines.append(f"- {a.get('alert')} ({'explained' if a.get('explained') else 'not explained'}): "
                         f"{as_text(a.get('explanation'))}")
    return "\n".join(lines)


def _renumber(steps: list[Step], start: int) -> list[Step]:
    return [s.model_copy(update={"index": start + i, "link": None}) for i, s in enumerate(steps)]


class ITBenchRun(Importer):
    name = "itbench_run"
    description = "ITBench SRE agent run folder (agent_output.json + Codex session / traces/traces.jsonl)"

    def sniff(self, head: Head) -> bool:
        return False  # a run is a folder, never a single file

    def claims_dir(self, path: Path) -> bool:
        return is_run_dir(path)

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        if not is_run_dir(path):
            raise ImportFailure(str(path), f"not an ITBench run folder (no {OUTPUT_FILE} with 'entities')")
        output = (path / OUTPUT_FILE).read_bytes()
        diagnosis = load_json(path / OUTPUT_FILE, output)
        if not isinstance(diagnosis, dict) or not isinstance(diagnosis.get("entities"), list):
            raise ImportFailure(str(path / OUTPUT_FILE), "expected an object with an 'entities' list")
        incident, trial = (path.parent.name, path.name) if path.name.isdigit() else (path.name, None)
        ledger = Ledger()
        steps, model, final_message = self._steps(path, opts, ledger)
        steps.append(Step(index=len(steps), id=OUTPUT_FILE, kind="final_answer", role="assistant", agent=AGENT,
                          content=_diagnosis_text(diagnosis), raw=plain(diagnosis)))
        model = self._config_model(path, ledger) or model
        meta: dict = {"incident_id": incident, "trial": trial, "diagnosis": diagnosis}
        if final_message:
            meta["final_message"] = final_message
        outcome, score, graded = grade(diagnosis, incident, opts, ledger)
        if graded:
            meta[HIDDEN] = graded
        task = next((s.content for s in steps if s.role == "user" and s.kind == "message"), None)
        traj = Trajectory(
            id=stable_id(self.name, incident, trial, fingerprint(output)),
            source_format=self.name,
            source_path=str(path),
            source_ref=f"incident {incident}, trial {trial}" if trial else f"incident {incident}",
            title=f"ITBench incident {incident}" + (f" trial {trial}" if trial else ""),
            system="ITBench SRE Agent",
            model=model,
            benchmark="ITBench-SRE",
            task=task,
            outcome=outcome,
            score=score,
            metadata=meta,
            raw=orjson.dumps({"agent_output": diagnosis}),
            steps=steps,
        )
        yield ImportedRecord(trajectory=finish(traj, opts), ledger=ledger)

    def _steps(self, path: Path, opts: ImportOptions, ledger: Ledger) -> tuple[list[Step], str | None, str | None]:
        """Steps from the Codex rollout(s), else traces.jsonl, else only the system prompt."""
        rollouts = sorted(path.rglob("rollout-*.jsonl"))
        steps: list[Step] = []
        if rollouts:
            model = final = None
            for f in rollouts:
                r = rollout(f, opts)
                steps += _renumber(r.steps.steps, len(steps))
                ledger.merge(r.steps.ledger)
                model, final = model or r.model, r.final_message or final
            return steps, model, final
        traces = path / "traces" / "traces.jsonl"
        if traces.is_file():
            out, model = trace_steps(traces, opts)
            ledger.merge(out.ledger)
            return out.steps, model, None
        prompt = path / "AGENTS.md"
        if prompt.is_file():
            steps.append(Step(index=0, id="AGENTS.md", kind="system", role="system", agent="system",
                              content=prompt.read_text(encoding="utf-8", errors="replace")))
        ledger.warn("incomplete", "no Codex session rollout or traces/traces.jsonl: only the diagnosis is imported")
        return steps, None, None

    def _config_model(self, path: Path, ledger: Ledger) -> str | None:
        config = path / "config.toml"
        if not config.is_file():
            return None
        try:
            model = tomllib.loads(config.read_text(encoding="utf-8")).get("model")
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            ledger.warn("incomplete", f"config.toml unreadable: {exc}")
            return None
        return model if isinstance(model, str) else None
