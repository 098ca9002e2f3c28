"""The analysis frame: trajectories × modes 0/1 matrices, the outcome and the grouping columns.

Every statistic in a report is a function of this frame, built once from the store with a
handful of bulk queries and held as numpy arrays, so that 100,000 trajectories × 14 modes ×
several sources fit in memory and every aggregate is vectorised. Rows are the trajectories
that pass the filters and that every requested source has finished; what was left out is
counted by reason in ``excluded``. Columns are the codebook's modes that every source covers:
a rules run gives verdicts on the few modes its detectors look for, and is reported on those.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from sqlite_utils import Database

from annotator.report.sources import Source, SourceLabels, load, read_verdicts, resolve
from annotator.store import report_tables
from annotator.taxonomy import Taxonomy
from annotator.views import TrajectoryFilter

#: Outcome codes in ``Frame.failed``.
FAILED, SUCCEEDED, UNKNOWN = 1, 0, -1
#: Each outcome code's name, as the store writes it (an outcome the store does not know is UNKNOWN).
OUTCOME_NAMES = {FAILED: "failure", SUCCEEDED: "success", UNKNOWN: "unknown"}
GROUP_COLUMNS = ("system", "model", "benchmark")


@dataclass
class Frame:
    """Trajectories (rows) × modes (columns) for one or more label sources."""

    taxonomy: Taxonomy
    ids: np.ndarray
    titles: np.ndarray
    groups: dict[str, np.ndarray]
    failed: np.ndarray  # int8: 1 failed, 0 succeeded, -1 unknown
    n_steps: np.ndarray
    tasks: np.ndarray  # int64: the (benchmark, task) group, -1 where the task is unknown
    labels: dict[str, SourceLabels]
    filters: TrajectoryFilter
    excluded: Counter = field(default_factory=Counter)
    n_total: int = 0
    #: The modes (columns) reported on: the codebook's modes every source covers.
    mode_ids: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def partial(self) -> bool:
        """Whether some of the codebook's modes are left out because a source does not cover them."""
        return len(self.mode_ids) < len(self.taxonomy.mode_ids)

    def category_of(self) -> list[str]:
        category = {m.id: m.category for m in self.taxonomy.modes}
        return [category[m] for m in self.mode_ids]


def _object(values: list) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def build(
    db: Database, source_names: list[str], taxonomy: Taxonomy, filters: TrajectoryFilter | None = None
) -> Frame:
    """The frame over the trajectories that pass ``filters`` and that every source finished."""
    filters = filters or TrajectoryFilter()
    sources: list[Source] = [resolve(db, name) for name in source_names]
    rows = report_tables.trajectory_rows(db, filters)
    n_total = report_tables.count_trajectories(db)
    excluded: Counter = Counter()
    if n_total - len(rows):
        excluded["outside the filters"] = n_total - len(rows)
    cols = list(zip(*rows, strict=True)) if rows else [[] for _ in range(8)]
    ids = np.asarray(cols[0], dtype=str)
    mode_ids = taxonomy.mode_ids
    verdicts = read_verdicts(db, sources, ids, mode_ids)
    loaded = {s.name: load(db, s, ids, mode_ids, verdicts) for s in sources}
    keep = np.ones(len(ids), dtype=bool)
    for s in sources:
        one = loaded[s.name]
        newly = keep & ~one.finished
        if newly.any():
            prefix = f"not finished by {s.name}" if len(sources) > 1 else "not finished by the source"
            excluded[prefix] += int(newly.sum())
        keep &= one.finished
    cover = np.logical_and.reduce([loaded[s.name].covered for s in sources]) if sources else np.ones(len(mode_ids), bool)
    outcome = _object(list(cols[4]))
    failed = np.full(len(ids), UNKNOWN, dtype=np.int8)
    for code, name in OUTCOME_NAMES.items():
        failed[outcome == name] = code
    return Frame(
        taxonomy=taxonomy,
        ids=ids[keep],
        titles=_object(list(cols[6]))[keep],
        groups={c: _object([v or "-" for v in cols[1 + i]])[keep] for i, c in enumerate(GROUP_COLUMNS)},
        failed=failed[keep],
        n_steps=np.asarray(cols[5], dtype=np.int64)[keep],
        tasks=np.asarray([-1 if g is None else g for g in cols[7]], dtype=np.int64)[keep],
        labels={name: _subset(one, keep, cover) for name, one in loaded.items()},
        filters=filters,
        excluded=excluded,
        n_total=n_total,
        mode_ids=tuple(m for m, c in zip(mode_ids, cover.tolist(), strict=True) if c),
    )


def _subset(one: SourceLabels, keep: np.ndarray, cover: np.ndarray) -> SourceLabels:
    """The source's labels on the kept rows and the covered columns."""
    row, col = np.cumsum(keep) - 1, np.cumsum(cover) - 1
    return SourceLabels(
        source=one.source,
        finished=one.finished[keep],
        present=one.present[keep][:, cover],
        known=one.known[keep][:, cover],
        onset=one.onset[keep][:, cover],
        not_finished=one.not_finished,
        ties=[(int(row[r]), int(col[c])) for r, c in one.ties if keep[r] and cover[c]],
        raters=None if one.raters is None else one.raters[keep],
        outside_codebook=one.outside_codebook,
        covered=one.covered,
    )
