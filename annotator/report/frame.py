"""The analysis frame: trajectories × modes 0/1 matrices, the outcome and the grouping columns.

Every statistic in a report is a function of this frame, built once from the store with a
handful of bulk queries read a block at a time and held as compact numpy arrays (bool
matrices, integer codes: a few hundred bytes per trajectory and source, no Python object per
cell), so that a million trajectories × 14 modes × several sources fit in memory and every
aggregate is vectorised. Grouping columns carry their sorted levels and per-row codes, so
grouping never sorts strings. Rows are the trajectories
that pass the filters and that every requested source has finished; what was left out is
counted by reason in ``excluded``. Columns are the codebook's modes that every source covers:
a rules run gives verdicts on the few modes its detectors look for, and is reported on those.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
from sqlite_utils import Database

from annotator.report.sources import Source, SourceLabels, load, people, read_verdicts, resolve
from annotator.store import report_tables
from annotator.taxonomy import Taxonomy
from annotator.views import TrajectoryFilter

#: Outcome codes in ``Frame.failed``.
FAILED, SUCCEEDED, UNKNOWN = 1, 0, -1
#: Each outcome code's name, as the store writes it (an outcome the store does not know is UNKNOWN).
OUTCOME_NAMES = {FAILED: "failure", SUCCEEDED: "success", UNKNOWN: "unknown"}
GROUP_COLUMNS = report_tables.GROUP_COLUMNS


@dataclass
class Frame:
    """Trajectories (rows) × modes (columns) for one or more label sources."""

    taxonomy: Taxonomy
    ids: np.ndarray
    titles: np.ndarray
    groups: Mapping[str, np.ndarray]  # str per row, "-" where the value is missing (made when read)
    failed: np.ndarray  # int8: 1 failed, 0 succeeded, -1 unknown
    n_steps: np.ndarray
    tasks: np.ndarray  # int64: the (benchmark, task) group, -1 where the task is unknown
    #: Per grouping column, its levels (sorted) and each row's index into them.
    group_levels: dict[str, list[str]]
    group_codes: dict[str, np.ndarray]
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

    def levels(self, column: str) -> list[str]:
        """The distinct values of a grouping column over the rows, sorted."""
        return self.group_levels[column]

    def codes(self, column: str) -> np.ndarray:
        """Each row's index into :meth:`levels` of a grouping column."""
        return self.group_codes[column]

    def in_level(self, column: str, level: str) -> np.ndarray:
        """Which rows have ``level`` in a grouping column (none if it is not one of its levels)."""
        levels = self.group_levels[column]
        return self.group_codes[column] == (levels.index(level) if level in levels else -1)


class GroupValues(Mapping):
    """Each grouping column's value per row, as a string array made from its levels and codes
    the first time it is read: the statistics group by codes and never need it."""

    def __init__(self, levels: dict[str, list[str]], codes: dict[str, np.ndarray]) -> None:
        self._levels, self._codes, self._made = levels, codes, {}

    def __getitem__(self, column: str) -> np.ndarray:
        if column not in self._made:
            self._made[column] = np.asarray(self._levels[column] or [""], dtype=str)[self._codes[column]]
        return self._made[column]

    def __iter__(self) -> Iterator[str]:
        return iter(self._codes)

    def __len__(self) -> int:
        return len(self._codes)


def build(
    db: Database, source_names: list[str], taxonomy: Taxonomy, filters: TrajectoryFilter | None = None
) -> Frame:
    """The frame over the trajectories that pass ``filters`` and that every source finished."""
    filters = filters or TrajectoryFilter()
    sources: list[Source] = [resolve(db, name) for name in source_names]
    mode_ids = taxonomy.mode_ids
    reading = read_verdicts(db, sources, mode_ids)  # SQLite folds the cells while the columns are read
    cols = report_tables.trajectory_columns(db, filters, people(sources))
    ids = cols.ids
    n_total = report_tables.count_trajectories(db)
    excluded: Counter = Counter()
    if n_total - len(ids):
        excluded["outside the filters"] = n_total - len(ids)
    verdicts = reading()
    loaded = {s.name: load(db, s, ids, mode_ids, verdicts, cols.reviews) for s in sources}
    del verdicts
    keep = np.ones(len(ids), dtype=bool)
    for s in sources:
        one = loaded[s.name]
        newly = keep & ~one.finished
        if newly.any():
            prefix = f"not finished by {s.name}" if len(sources) > 1 else "not finished by the source"
            excluded[prefix] += int(newly.sum())
        keep &= one.finished
    cover = np.logical_and.reduce([loaded[s.name].covered for s in sources]) if sources else np.ones(len(mode_ids), bool)
    everything = bool(keep.all())
    rows = slice(None) if everything else keep
    group_levels, group_codes = {}, {}
    for column in GROUP_COLUMNS:
        codes = cols.codes[column][rows]
        used = np.flatnonzero(np.bincount(codes, minlength=len(cols.levels[column])))
        renumber = np.zeros(len(cols.levels[column]), dtype=np.int32)
        renumber[used] = np.arange(len(used), dtype=np.int32)
        group_levels[column] = [cols.levels[column][i] for i in used.tolist()]
        group_codes[column] = renumber[codes]
    labels = {}
    for name in list(loaded):
        labels[name] = _subset(loaded.pop(name), keep, everything, cover)
    return Frame(
        taxonomy=taxonomy,
        ids=ids[rows],
        titles=cols.titles[rows],
        groups=GroupValues(group_levels, group_codes),
        failed=cols.outcome[rows],
        n_steps=cols.n_steps[rows],
        tasks=cols.tasks[rows],
        group_levels=group_levels,
        group_codes=group_codes,
        labels=labels,
        filters=filters,
        excluded=excluded,
        n_total=n_total,
        mode_ids=tuple(m for m, c in zip(mode_ids, cover.tolist(), strict=True) if c),
    )


def _subset(one: SourceLabels, keep: np.ndarray, everything: bool, cover: np.ndarray) -> SourceLabels:
    """The source's labels on the kept rows and the covered columns (the same arrays when that is all)."""
    if everything and cover.all():
        return one
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
