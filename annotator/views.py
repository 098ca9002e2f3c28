"""Plain read models the front ends show: trajectory summaries, step previews, search hits, filters.

They sit below the store and import nothing of it, so the guard that makes text inert
(``annotator.text``), the annotation core and the TUI can name what they show without
reaching into SQL: the store fills these models, everyone else reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from pydantic import BaseModel, Field, field_validator

from annotator.models import Outcome

#: Characters of a step's content a preview carries (the step list shows one line); the store's
#: ``step_heads`` table keeps this many (migration 003_tui).
PREVIEW_CHARS = 240

#: Characters of a long content a step's head carries (``step_heads.head``, migration 003_tui):
#: what a viewer shows first without reading a multi-megabyte content whole.
HEAD_CHARS = 10_000


class TrajectorySummary(BaseModel):
    """A trajectory without its steps and raw bytes: what lists and queues show."""

    id: str
    source_format: str
    source_path: str | None = None
    title: str | None = None
    system: str | None = None
    model: str | None = None
    benchmark: str | None = None
    task: str | None = None
    outcome: Outcome = "unknown"
    score: float | None = None
    n_steps: int = 0
    agents: list[str] = Field(default_factory=list)
    imported_at: datetime | None = None
    metadata: dict = Field(default_factory=dict)


class StepPreview(BaseModel):
    """One line of the step list: enough to draw it without loading the step's full content."""

    index: int
    agent: str | None = None
    kind: str
    tool_name: str | None = None
    preview: str
    length: int


class SearchHit(BaseModel):
    """A step whose content matches a full-text query."""

    trajectory_id: str
    index: int
    snippet: str


class TrajectoryFilter(BaseModel):
    """Which trajectories a command works on: the one filter of ``list``, ``prelabel``,
    ``report``, ``agreement``, ``export`` and the queue. Every field left None selects everything."""

    ids: Sequence[str] | None = Field(None, description="Only these trajectory ids.")
    system: str | None = Field(None, description="Only trajectories of this system (MAS).")
    model: str | None = Field(None, description="Only trajectories driven by this model (never the judge's).")
    benchmark: str | None = Field(None, description="Only trajectories from this benchmark.")
    outcome: Outcome | None = Field(None, description="Only this outcome.")
    source_format: str | None = Field(None, description="Only trajectories imported with this format.")
    since: datetime | None = Field(None, description="Only trajectories imported at or after this time.")
    until: datetime | None = Field(None, description="Only trajectories imported before this time.")
    tag: str | None = Field(None, description="Only trajectories with this tag: a value of their metadata 'tags'"
                                              " list, or the name of an audit sample (`mast sample`).")
    search: str | None = Field(None, description="Full-text query over step content.")
    review_status: str | None = Field(None, description="Status for `annotator` (not_started counts none).")
    annotator: str | None = Field(None, description="Whose review status `review_status` means.")

    @field_validator("since", "until")
    @classmethod
    def _in_utc(cls, value: datetime | None) -> datetime | None:
        """A time without a zone is UTC, the zone every stored timestamp is in."""
        return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value

    def active(self) -> dict[str, str]:
        """The restrictions in force, as text (what a report says it was filtered by)."""
        return {k: str(v) for k, v in self.model_dump(exclude_none=True).items()}
