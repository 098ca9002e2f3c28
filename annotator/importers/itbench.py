"""ITBench SRE agent runs: a run folder (``agent_outputs/<incident>/<trial>/``) is imported as
a unit rather than file by file.

The agent is Codex, run with ``CODEX_HOME`` set to the run folder, so its steps come from the
Codex session rollouts found under the folder; without one, from the OTLP log records Codex
sent to ``traces/traces.jsonl``. A trial the harness retried (another model, a crash) holds
one rollout per attempt: each attempt is its own trajectory with its own model, linked to its
incident, trial and attempt number in the metadata. The diagnosis in ``agent_output.json``
(root-cause entities, propagation chain, explained alerts) belongs to the attempt that wrote
it (a tool call naming the file; else the last attempt): it is that attempt's final step, its
metadata and its score.

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
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import yaml

from annotator.errors import ImportFailure
from annotator.importers.accounting import Ledger
from annotator.importers.base import (ImportedRecord, Importer, ImportOptions, as_text, finish, first_request,
                                      stable_id)
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


def _log_records(path: Path, opts: ImportOptions, lines: set[int]) -> Iterator[tuple[int, dict]]:
    """Every OTLP log record of the file with its line number; ``lines`` collects the numbers
    of the lines read."""
    skipped = opts.extra.setdefault("skipped_lines", [])
    for lineno, line in iter_jsonl(path, opts, skipped):
        lines.add(lineno)
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
    """Steps from Codex's OTLP log records in ``traces.jsonl``, and the model they name.

    Accounted per line: a line is mapped when one of its records gave a step or the model,
    else dropped as Codex's own telemetry (API requests, stream events)."""
    out, model = StepList(), None
    lines: set[int] = set()
    shown: set[int] = set()  # lines that gave a step or the model
    for lineno, rec in _log_records(path, opts, lines):
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
            if model is None and attrs.get("model"):
                model = attrs["model"]
                shown.add(lineno)
            continue
        else:
            out.unknown_event(name or "log_record", plain(rec), id=f"line {lineno}", timestamp=when)
        shown.add(lineno)
    out.ledger.mapped(len(shown))
    out.ledger.dropped("codex telemetry (API requests, stream events)", len(lines - shown))
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


@dataclass
class _Attempt:
    """One run of the agent in a trial: a rollout, or the trial's traces."""

    steps: list[Step]
    model: str | None
    ledger: Ledger
    final_message: str | None = None
    source: str | None = None  # the rollout's path in the run folder
    session: dict = field(default_factory=dict)


def _owner(attempts: list[_Attempt]) -> int:
    """The attempt the diagnosis belongs to: the last one with a tool call naming the file."""
    wrote = [i for i, a in enumerate(attempts) if any(OUTPUT_FILE in (s.tool_args or "") for s in a.steps)]
    return wrote[-1] if wrote else len(attempts) - 1


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
        attempts = self._attempts(path, opts)
        owner = _owner(attempts)
        where = f"incident {incident}, trial {trial}" if trial else f"incident {incident}"
        for n, attempt in enumerate(attempts, start=1):
            meta: dict = {"incident_id": incident, "trial": trial, "attempt": n, "attempts": len(attempts)}
            if attempt.source:
                meta.update(rollout=attempt.source, session=attempt.session)
            if attempt.final_message:
                meta["final_message"] = attempt.final_message
            ident = stable_id(self.name, incident, trial, "attempt", attempt.source)
            steps, model, raw = attempt.steps, attempt.model, {"rollout": attempt.source}
            outcome, score = "unknown", None
            if n - 1 == owner:  # the attempt that gave the diagnosis
                ident = stable_id(self.name, incident, trial, fingerprint(output))
                attempt.ledger.mapped()  # agent_output.json
                steps = [*steps, Step(index=len(steps), id=OUTPUT_FILE, kind="final_answer", role="assistant",
                                      agent=AGENT, content=_diagnosis_text(diagnosis), raw=plain(diagnosis))]
                model = model or self._config_model(path, attempt.ledger)
                meta["diagnosis"], raw = diagnosis, {"agent_output": diagnosis}
                outcome, score, graded = grade(diagnosis, incident, opts, attempt.ledger)
                if graded:
                    meta[HIDDEN] = graded
            else:
                meta["diagnosis_in_attempt"] = owner + 1
            attempt_tag = f" attempt {n} of {len(attempts)}" if len(attempts) > 1 else ""
            traj = Trajectory(
                id=ident,
                source_format=self.name,
                source_path=str(path),
                source_ref=where + attempt_tag.replace(" of ", "/"),
                title=f"ITBench incident {incident}" + (f" trial {trial}" if trial else "") + attempt_tag,
                system="ITBench SRE Agent",
                model=model,
                benchmark="ITBench-SRE",
                task=first_request(steps),
                outcome=outcome,
                score=score,
                metadata=meta,
                raw=orjson.dumps(raw, default=str),
                steps=steps,
            )
            yield ImportedRecord(trajectory=finish(traj, opts), ledger=attempt.ledger)

    def _attempts(self, path: Path, opts: ImportOptions) -> list[_Attempt]:
        """One attempt per Codex rollout, else one from traces.jsonl, else one of only the system prompt."""
        rollouts = sorted(path.rglob("rollout-*.jsonl"))
        if rollouts:
            out = []
            for f in rollouts:
                r = rollout(f, opts)
                out.append(_Attempt(steps=r.steps.steps, model=r.model, ledger=r.steps.ledger,
                                    final_message=r.final_message, source=str(f.relative_to(path)), session=r.meta))
            return out
        traces = path / "traces" / "traces.jsonl"
        if traces.is_file():
            steps, model = trace_steps(traces, opts)
            return [_Attempt(steps=steps.steps, model=model, ledger=steps.ledger)]
        ledger, steps = Ledger(), []
        prompt = path / "AGENTS.md"
        if prompt.is_file():
            ledger.mapped()
            steps.append(Step(index=0, id="AGENTS.md", kind="system", role="system", agent="system",
                              content=prompt.read_text(encoding="utf-8", errors="replace")))
        ledger.warn("incomplete", "no Codex session rollout or traces/traces.jsonl: only the diagnosis is imported")
        return [_Attempt(steps=steps, model=None, ledger=ledger)]

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
