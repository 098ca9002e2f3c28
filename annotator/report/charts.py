"""Chart geometry for the HTML report: plain shapes and labels that the template draws as SVG.

The template writes every label through Jinja2's autoescape, so names that come from the
data (systems, models) cannot inject markup into the page; this module only computes
coordinates and colours. No JavaScript: the charts are static inline SVG.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from annotator.report.tables import Document


@dataclass
class Shape:
    x: float
    y: float
    w: float
    h: float
    fill: str
    tip: str = ""


@dataclass
class ChartLabel:
    x: float
    y: float
    text: str
    anchor: str = "start"
    rotate: bool = False


@dataclass
class Chart:
    title: str
    width: int
    height: int
    shapes: list[Shape] = field(default_factory=list)
    labels: list[ChartLabel] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)


FAILED, SUCCEEDED = "#c0392b", "#2e86c1"


def _heat(p: float | None, peak: float) -> str:
    """Red in proportion to ``p`` / ``peak``, so the scale spans the values shown."""
    if p is None:
        return "#eeeeee"
    shade = int(255 - 200 * max(0.0, min(1.0, p / peak)))
    return f"rgb(255,{shade},{shade})"


def heatmap(doc: Document, column: str = "system") -> Chart | None:
    """Prevalence of each mode (columns) in each group (rows)."""
    table = doc.table(f"prevalence_by_{column}")
    if table is None or not table.records:
        return None
    modes = [m for m in dict.fromkeys(r["mode"] for r in table.records) if m.startswith("FM-") or "." in m]
    groups = list(dict.fromkeys(r[column] for r in table.records))
    cell, left, top = 36, 170, 70
    chart = Chart(f"Prevalence by {column}", left + cell * len(modes) + 20, top + cell * len(groups) + 20)
    for j, m in enumerate(modes):
        chart.labels.append(ChartLabel(left + j * cell + cell / 2, top - 8, m, "start", rotate=True))
    for i, g in enumerate(groups):
        chart.labels.append(ChartLabel(left - 8, top + i * cell + cell / 2 + 4, str(g)[:24], "end"))
    values = {(r[column], r["mode"]): r["prevalence"] for r in table.records}
    peak = max([v for (_, m), v in values.items() if m in modes and v is not None] + [0.0]) or 1.0
    for i, g in enumerate(groups):
        for j, m in enumerate(modes):
            p = values.get((g, m))
            chart.shapes.append(Shape(left + j * cell, top + i * cell, cell - 2, cell - 2, _heat(p, peak),
                                      f"{g} {m}: {'-' if p is None else f'{p:.0%}'}"))
            if p is not None:
                chart.labels.append(ChartLabel(left + j * cell + cell / 2 - 1, top + i * cell + cell / 2 + 3,
                                          f"{round(p * 100)}", "middle"))
    chart.legend = [(_heat(0.0, peak), "0%"), (_heat(peak, peak), f"{peak:.0%} (share of trajectories)")]
    return chart


def gap_bars(doc: Document) -> Chart | None:
    """Prevalence among failed and among successful trajectories, per mode, ranked by gap."""
    table = doc.table("failed_vs_successful")
    if table is None or not table.records:
        return None
    rows, bar, gap, left, width = table.records, 9, 8, 80, 420
    chart = Chart("Failed vs successful: prevalence per mode", left + width + 90, 30 + len(rows) * (2 * bar + gap))
    keys = (("prevalence_failed", FAILED), ("prevalence_succeeded", SUCCEEDED))
    peak = max([r[key] for r in rows for key, _ in keys if r[key] is not None] + [0.0]) or 1.0
    for i, r in enumerate(rows):
        y = 20 + i * (2 * bar + gap)
        chart.labels.append(ChartLabel(left - 6, y + bar + 3, r["mode"], "end"))
        for k, (key, colour) in enumerate(keys):
            p = r[key]
            w = 0 if p is None else p / peak * width
            chart.shapes.append(Shape(left, y + k * bar, max(w, 0.5), bar - 1, colour,
                                      f"{r['mode']} {key.split('_')[1]}: {'-' if p is None else f'{p:.1%}'}"))
        if r["gap_pp"] is not None:
            chart.labels.append(ChartLabel(left + width + 6, y + bar + 3, f"{r['gap_pp']:+.1f} pp"))
    chart.title += f" (longest bar {peak:.0%} of trajectories; right: the gap in percentage points)"
    chart.legend = [(FAILED, "failed"), (SUCCEEDED, "succeeded")]
    return chart


def histogram(doc: Document) -> Chart | None:
    """How many trajectories show 0, 1, 2 ... distinct modes."""
    table = doc.table("modes_per_trajectory")
    if table is None or not table.records:
        return None
    rows = table.records
    peak = max(r["trajectories"] for r in rows) or 1
    bar, left, height = max(30, 7 * len(str(peak)) + 8), 40, 160  # wide enough for the counts
    chart = Chart("Distinct modes per trajectory", left + bar * len(rows) + 20, height + 60)
    for i, r in enumerate(rows):
        h = r["trajectories"] / peak * height
        x = left + i * bar
        tip = f"{r['modes']} modes: {r['trajectories']}"
        chart.shapes.append(Shape(x, 20 + height - h, bar - 4, h, "#7f8c8d", tip))
        chart.labels.append(ChartLabel(x + bar / 2 - 2, 20 + height + 14, str(r["modes"]), "middle"))
        if r["trajectories"]:
            chart.labels.append(ChartLabel(x + bar / 2 - 2, 16 + height - h, str(r["trajectories"]), "middle"))
    chart.labels.append(ChartLabel(left, height + 54, "number of distinct modes (bars: trajectories)"))
    return chart


def charts(doc: Document) -> list[Chart]:
    """The charts a document has data for."""
    return [c for c in (heatmap(doc), gap_bars(doc), histogram(doc)) if c is not None]
