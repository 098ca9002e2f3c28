"""Plain read models the front ends show: trajectory summaries, step previews, search hits, filters.

They sit below the store and import nothing of it, so the guard that makes text inert
(``annotator.text``), the annotation core and the TUI can name what they show without
reaching into SQL: the store fills these models, everyone else reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, Field

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
    """Which trajectories a listing selects; every field left None selects everything."""

    ids: Sequence[str] | None = None
    system: str | None = None
    model: str | None = None
    benchmark: str | None = None
    outcome: Outcome | None = None
    source_format: str | None = None
    search: str | None = Field(None, description="Full-text query over step content.")
    review_status: str | None = Field(None, description="Status for `annotator` (not_started counts none).")
    annotator: str | None = None
    imported_after: datetime | None = None
    imported_before: datetime | None = None
    tag: str | None = Field(None, description="A value the trajectory's metadata 'tags' list holds, or an audit"
                                              " sample's tag.")
