"""Drawing an audit sample: which of the trajectories a judge labelled people should check blind.

A judge-corrected estimate needs a probability sample: chosen at random, not by the judge's
confidence or by disagreement. By default the sample is simple random (every trajectory the
source finished has the same inclusion probability n/N). Stratified on request: by the judge's
verdict on one mode (to see more of a rare mode the judge flags), by outcome or by system, with
equal allocation (n split evenly over the strata, a stratum smaller than its share given whole
and the rest spread over the others), so each stratum h has inclusion probability n_h/N_h,
which the report uses as Horvitz–Thompson weights. The draw is reproducible from the seed.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from sqlite_utils import Database

from annotator.errors import ReportError
from annotator.models import utcnow
from annotator.report.frame import OUTCOME_NAMES, Frame, build
from annotator.store.samples import Sample, SampleItem, save_sample
from annotator.taxonomy import Taxonomy
from annotator.views import TrajectoryFilter

Stratify = Literal["verdict", "outcome", "system"]
STRATIFY: tuple[str, ...] = Stratify.__args__  # type: ignore[attr-defined]


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Equal allocation of ``n`` over strata of the given sizes, capped by each stratum's size."""
    alloc = dict.fromkeys(sizes, 0)
    left = n
    open_ = sorted(sizes)
    while left > 0 and open_:
        share, extra = divmod(left, len(open_))
        for i, h in enumerate(list(open_)):
            give = min(share + (1 if i < extra else 0), sizes[h] - alloc[h])
            alloc[h] += give
            left -= give
        open_ = [h for h in open_ if alloc[h] < sizes[h]]
    return alloc


def _rarest_flagged(present: np.ndarray, known: np.ndarray, mode_ids: tuple[str, ...]) -> str:
    counts = (present & known).sum(axis=0)
    flagged = np.flatnonzero(counts > 0)
    if not len(flagged):
        raise ReportError("--stratify verdict: the source flags no mode present; name one with --mode")
    return mode_ids[int(flagged[np.argmin(counts[flagged])])]


def strata_of(frame: Frame, source: str, design: str | None) -> np.ndarray:
    """Each trajectory's stratum under a sample's design (``verdict:FM-x.y``, ``outcome``,
    ``system`` or none): how the sample was drawn, and how a report weights it."""
    if design and design.startswith("verdict:"):
        mode = design.split(":", 1)[1]
        if mode not in frame.mode_ids:
            raise ReportError(f"the sample is stratified by {source}'s verdict on {mode}, which it does not cover here")
        present = frame.labels[source].present[:, frame.mode_ids.index(mode)]
        return np.where(present, f"{mode} present", f"{mode} absent").astype(str)
    if design == "outcome":
        return np.asarray([OUTCOME_NAMES[int(f)] for f in frame.failed], dtype=str)
    if design == "system":
        return frame.groups["system"].astype(str)
    return np.full(frame.n, "all")


def draw(
    db: Database,
    source: str,
    size: int,
    tag: str,
    taxonomy: Taxonomy,
    filters: TrajectoryFilter | None = None,
    *,
    stratify: Stratify | None = None,
    mode: str | None = None,
    seed: int = 0,
) -> tuple[Sample, list[SampleItem]]:
    """Choose ``size`` of the trajectories ``source`` finished, store the sample under ``tag``."""
    frame = build(db, [source], taxonomy, filters)
    labels = frame.labels[source]
    if size < 1:
        raise ReportError("the sample size must be at least 1")
    if size > frame.n:
        raise ReportError(f"{source} finished {frame.n} trajectories (with these filters): cannot draw {size}")
    if mode is not None and stratify != "verdict":
        raise ReportError("--mode chooses the mode of --stratify verdict; use it with that")
    if stratify == "verdict":
        if mode is not None and mode not in taxonomy.mode_ids:
            raise ReportError(f"--mode {mode}: no such mode in the codebook ({', '.join(taxonomy.mode_ids)})")
        mode = mode or _rarest_flagged(labels.present, labels.known, frame.mode_ids)
        if mode not in frame.mode_ids:
            raise ReportError(f"--mode {mode}: {source} gives no verdicts on it")
    design = f"verdict:{mode}" if stratify == "verdict" else stratify
    strata = strata_of(frame, source, design)
    sizes = {str(h): int((strata == h).sum()) for h in np.unique(strata)}
    alloc = allocate(sizes, size)
    rng = np.random.default_rng(seed)
    items: list[SampleItem] = []
    for h in sorted(sizes):
        members = frame.ids[strata == h]
        chosen = rng.choice(len(members), alloc[h], replace=False) if alloc[h] else np.zeros(0, dtype=int)
        items += [SampleItem(str(members[i]), h, alloc[h] / sizes[h]) for i in sorted(chosen.tolist())]
    sample = Sample(tag=tag, source=source, stratify=design, seed=seed, size=len(items), population=frame.n,
                    strata={h: (sizes[h], alloc[h]) for h in sorted(sizes)}, filters=frame.filters.active(),
                    created_at=utcnow())
    save_sample(db, sample, items)
    return sample, items
