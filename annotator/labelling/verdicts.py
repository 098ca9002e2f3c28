"""What a labeller returns, and the shape a judge must answer in.

``JudgeAnswer`` is the contract with the model: its JSON schema goes into ``response_format``
(or into the prompt where the server cannot enforce it), and every answer is validated
against it *and* against the trajectory before anything is stored. ``ModeVerdict`` is what
every labeller (judge, rules) hands to the runner, whatever produced it.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from annotator.errors import LabellingError
from annotator.models import Trajectory, Verdict
from annotator.taxonomy import Taxonomy


class InvalidAnswer(LabellingError):
    """A judge's answer that fails the schema or contradicts the trajectory; never stored."""


class LabelFailure(LabellingError):
    """A trajectory that could not be labelled (attempts exhausted, answers invalid)."""


class ModeAnswer(BaseModel):
    """The judge's answer for one failure mode."""

    model_config = ConfigDict(extra="ignore")

    mode_id: str = Field(description="Id of the mode exactly as listed, e.g. 'FM-1.3'.")
    present: bool = Field(description="Whether the failure occurs in the trajectory.")
    onset_step: int | None = Field(None, description="Step number where it first shows (present only).")
    evidence_steps: list[int] = Field(default_factory=list, description="Further step numbers that show it.")
    quote: str | None = Field(None, description="A short verbatim excerpt of a cited step.")
    rationale: str | None = Field(None, description="One or two sentences on why.")
    confidence: float | None = Field(None, ge=0, le=1, description="How sure the judge is, 0..1.")


class JudgeAnswer(BaseModel):
    """The whole structured answer: one entry per mode of the codebook."""

    model_config = ConfigDict(extra="ignore")

    modes: list[ModeAnswer] = Field(description="One entry for every mode of the codebook.")
    summary: str | None = Field(None, description="One sentence on what went wrong, if anything.")


def answer_schema() -> dict[str, Any]:
    """The JSON schema sent as ``response_format`` and shown in the prompt."""
    return JudgeAnswer.model_json_schema()


class ModeVerdict(BaseModel):
    """One labeller's conclusion on one mode: what becomes a stored suggestion."""

    mode_id: str
    verdict: Verdict
    onset_step: int | None = None
    evidence_steps: list[int] = Field(default_factory=list)
    quote: str | None = None
    rationale: str | None = None
    confidence: float | None = Field(None, ge=0, le=1)
    grounded: bool | None = Field(None, description="Cited steps exist and the quote is in one of them.")
    votes: list[dict[str, Any]] = Field(default_factory=list, description="Every vote behind a majority.")


class Labeller(Protocol):
    """Anything that turns a trajectory into per-mode verdicts (the judge, the rules)."""

    kind: str

    async def label(self, trajectory: Trajectory, taxonomy: Taxonomy) -> list[ModeVerdict]:
        """Verdicts for the modes this labeller covers; raises LabelFailure when it cannot."""
        ...
