"""The product's vocabulary: trajectories, steps, labels, review states and label runs.

Every importer produces these models, the store persists them and the front ends, labellers
and reports consume them, so this module is the contract between the floors. Persisted
shapes carry ``SCHEMA_VERSION`` so that an export written today can be read tomorrow.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from annotator.label_sources import run_source

SCHEMA_VERSION = 1
#: The ``format`` tag of every line of a label export (what ``mast import`` detects it by).
LABEL_EXPORT_FORMAT = "mast-labels"

StepKind = Literal[
    "message",
    "thought",
    "plan",
    "tool_call",
    "tool_result",
    "observation",
    "handoff",
    "system",
    "error",
    "final_answer",
    "evaluation",
    "log",
    "event",
]
STEP_KINDS: tuple[str, ...] = StepKind.__args__  # type: ignore[attr-defined]

#: Metadata key holding what must never be shown to an annotator or a judge: the task's answer,
#: the outcome as the source wrote it, earlier labels embedded in the trace. Kept for reports.
HIDDEN = "hidden"

Outcome = Literal["success", "failure", "unknown"]
Verdict = Literal["present", "absent", "unknown"]
Provenance = Literal["human", "accepted", "llm", "rules", "imported"]
ReviewStatus = Literal["not_started", "in_progress", "done"]
RunStatus = Literal["running", "completed", "interrupted", "failed"]
Decision = Literal["accepted", "rejected"]


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC (every stored timestamp is UTC)."""
    return datetime.now(UTC)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class Step(_Model):
    """One atomic item of a trajectory: a message, a thought, one tool call or one tool result."""

    index: int = Field(ge=0, description="0-based replay position within the trajectory.")
    id: str = Field(
        "",
        description="Stable id from the source (message id, span id) or derived from the position; "
        "labels survive re-import because this does not change.",
    )
    agent: str | None = Field(None, description="Who produced the step (agent name, speaker).")
    role: str | None = Field(None, description="Chat role as the source gives it (user, assistant, tool...).")
    recipient: str | None = Field(None, description="Addressee where the source names one (handoffs).")
    kind: StepKind = Field("message", description="What sort of item this is.")
    content: str = Field("", description="Display text; always plain text, never markup.")
    tool_name: str | None = Field(None, description="Tool invoked (tool_call) or that produced the output.")
    tool_args: str | None = Field(
        None, description="Arguments of a tool call exactly as the source wrote them (usually JSON)."
    )
    call_id: str | None = Field(None, description="Id tying a tool call to its result.")
    link: int | None = Field(
        None, description="Index of the paired step: a call's result, or a result's call."
    )
    parent: int | None = Field(None, description="Index of the enclosing step (span trees, sub-agents).")
    group: str | None = Field(None, description="The source's coarser unit (turn, phase, span name).")
    timestamp: datetime | None = Field(None, description="When the step happened (UTC) if known.")
    tokens_in: int | None = Field(None, description="Prompt tokens spent on this step, if known.")
    tokens_out: int | None = Field(None, description="Completion tokens produced by this step, if known.")
    attributes: dict[str, Any] = Field(
        default_factory=dict, description="Source fields with no place above; never dropped."
    )
    raw: Any = Field(None, description="The source item this step came from, untouched.")


class Trajectory(_Model):
    """One run of an agent or multi-agent system on one task, with its steps in replay order."""

    # The raw original is any bytes (not always UTF-8): JSON carries it as base64.
    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    schema_version: int = Field(SCHEMA_VERSION, description="Version of this model's persisted shape.")
    id: str = Field(description="Stable id derived from the source identity or content hash.")
    source_format: str = Field(description="Name of the importer that read it (e.g. 'who_and_when').")
    source_path: str | None = Field(None, description="File it was imported from.")
    source_ref: str | None = Field(None, description="Where in the file: record index, line, trace id.")
    title: str | None = Field(None, description="Short human-readable name.")
    system: str | None = Field(None, description="The agent system (MAS) that produced the run.")
    model: str | None = Field(None, description="The LLM that drove it.")
    benchmark: str | None = Field(None, description="Benchmark or dataset the task comes from.")
    task: str | None = Field(None, description="The task statement, as given to the system.")
    outcome: Outcome = Field("unknown", description="Whether the run solved its task.")
    score: float | None = Field(None, description="A numeric outcome where the source gives one.")
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="Everything else the source says about the run, including outcome-bearing "
        "fields that are hidden from annotators and judges.",
    )
    raw: bytes | None = Field(None, description="The original bytes of the record, kept for provenance.")
    content_hash: str = Field("", description="sha256 of the normalised content: re-import detects change.")
    imported_at: datetime = Field(default_factory=utcnow, description="When it was imported.")
    steps: list[Step] = Field(default_factory=list, description="Steps in replay order.")


class Label(_Model):
    """One verdict on one failure mode of one trajectory by one annotator (human, run or dataset).

    Labels are append-only: a change writes a new row and an undo writes a retraction, so the
    current state of a (trajectory, annotator, mode) is its newest row that was not retracted.
    """

    schema_version: int = Field(SCHEMA_VERSION, description="Version of this model's persisted shape.")
    id: int | None = Field(None, description="Row id once stored.")
    trajectory_id: str = Field(description="The trajectory the label is about.")
    mode_id: str = Field(description="Canonical mode id, e.g. 'FM-1.3'. Never a name.")
    annotator: str = Field(
        description="Who labelled: a person ('alice'), a run ('run:3') or a dataset ('mad-human-1')."
    )
    verdict: Verdict | None = Field(
        description="present / absent / unknown (unreadable judge answer); None clears an earlier tag."
    )
    onset_step: int | None = Field(None, description="Step index where the failure first shows.")
    evidence_steps: list[int] = Field(default_factory=list, description="Further steps that show it.")
    quote: str | None = Field(None, description="Short excerpt of a step that shows the failure.")
    note: str | None = Field(None, description="Free-text remark by the annotator.")
    rationale: str | None = Field(None, description="Why a labeller decided so (judges).")
    confidence: float | None = Field(None, ge=0, le=1, description="Agreeing fraction of votes, or stated.")
    provenance: Provenance = Field("human", description="How the label came to be.")
    run_id: int | None = Field(None, description="The LabelRun that produced it, or that an accept came from.")
    grounded: bool | None = Field(
        None, description="For machine labels: whether cited steps exist and the quote is in them."
    )
    taxonomy_hash: str | None = Field(None, description="Version hash of the codebook in use.")
    retracts: int | None = Field(None, description="Row id this row withdraws (undo); verdict is ignored.")
    extra: dict[str, Any] = Field(
        default_factory=dict, description="Source-specific detail (original code, mapping used, votes)."
    )
    created_at: datetime = Field(default_factory=utcnow, description="When the row was written.")


class ReviewState(_Model):
    """How far one annotator has got with one trajectory."""

    trajectory_id: str = Field(description="The trajectory.")
    annotator: str = Field(description="The annotator.")
    status: ReviewStatus = Field("not_started", description="not_started, in_progress or done.")
    seconds_spent: float = Field(0.0, ge=0, description="Time spent on it in the annotation UI.")
    updated_at: datetime = Field(default_factory=utcnow, description="Last change.")


class LabelRun(_Model):
    """One pre-labelling run: which labeller, with what settings, at what cost."""

    schema_version: int = Field(SCHEMA_VERSION, description="Version of this model's persisted shape.")
    id: int | None = Field(None, description="Row id once stored; labels name it as 'run:<id>'.")
    kind: Literal["llm", "rules"] = Field(description="Which labeller.")
    model: str | None = Field(None, description="Model name(s), comma-separated for a multi-model vote.")
    endpoint_host: str | None = Field(None, description="Host of the endpoint; never a key or full URL.")
    prompt_name: str | None = Field(None, description="Which prompt ('structured', 'mast-original').")
    prompt_hash: str | None = Field(None, description="Hash of the prompt template and codebook.")
    params: dict[str, Any] = Field(default_factory=dict, description="Temperature, samples, budget...")
    taxonomy_hash: str | None = Field(None, description="Version hash of the codebook.")
    status: RunStatus = Field("running", description="running, completed, interrupted or failed.")
    counts: dict[str, int] = Field(default_factory=dict, description="done / failed / cached / skipped.")
    tokens_in: int = Field(0, ge=0, description="Prompt tokens spent.")
    tokens_out: int = Field(0, ge=0, description="Completion tokens spent.")
    cost_usd: float = Field(0.0, ge=0, description="Estimated cost.")
    started_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None

    @property
    def annotator(self) -> str:
        """The annotator name its labels are stored under."""
        return run_source(self.id)


class Attribution(_Model):
    """A decisive-error attribution: which agent, at which step, made the run fail (Who&When)."""

    trajectory_id: str = Field(description="The trajectory.")
    annotator: str = Field(description="Who attributed it ('who-and-when', a person).")
    step: int | None = Field(None, description="Resolved step index, None if it does not exist.")
    step_as_given: str | None = Field(None, description="The step reference exactly as the source gave it.")
    agent: str | None = Field(None, description="The agent blamed.")
    reason: str | None = Field(None, description="Why.")
    warnings: list[str] = Field(default_factory=list, description="Inconsistencies found at import.")
    created_at: datetime = Field(default_factory=utcnow)
