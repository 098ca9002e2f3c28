"""How a raw record value is shown in the terminal, Markdown and HTML renderings.

Only display: JSON and CSV keep the raw numbers. Interval bounds are merged into one
"[low, high]" column so wide tables stay readable; a statistic withheld because the mode has
too few positives shows as "n/e" (not estimable), one the comparison cannot give as "n/a" (its
record says why under ``<statistic>_na``, and the table's note repeats it), any other missing
value as "-".
"""

from __future__ import annotations

from typing import Any

from annotator.report.tables import Document, Table

NOT_ESTIMABLE = "n/e"
NOT_AVAILABLE = "n/a"
LEGEND = f"{NOT_ESTIMABLE} = not estimable (too few positives); {NOT_AVAILABLE} = not available (see the note); - = not defined"
_PAIRS = (("_ci_low", "_ci_high"), ("_boot_low", "_boot_high"))
_WITHHELD = ("kappa", "alpha", "fleiss")


def _interval_of(column: str) -> tuple[str, str, str] | None:
    for low, high in _PAIRS:
        if column == low[1:]:
            return "", low[1:], high[1:]
        if column.endswith(low):
            base = column[: -len(low)]
            return base, low, high
        if column.endswith(low + "_pp"):
            base = column[: -len(low + "_pp")]
            return base, low + "_pp", high + "_pp"
    return None


#: Columns holding text rather than numbers, and the widest the terminal lets them get.
TEXT_COLUMNS = {"title": 26, "present": 30, "pair": 30, "term": 24, "trajectory": 16, "system": 16, "model": 16,
                "outcome": 8, "mode": 18, "with": 8, "source": 16, "benchmark": 16, "attributed_by": 16}
#: Column names that keep their underscore in headings (a statistic's usual notation).
_VERBATIM = {"p_o"}


def heading(column: str) -> str:
    """A column name as a table heading: words separated by spaces."""
    return column if column in _VERBATIM else column.replace("_", " ").replace("ac1", "AC1")


def value(v: Any, column: str = "", record: dict | None = None) -> str:
    """One cell as text."""
    if v is None:
        return _missing(column, record)
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if column.endswith("_pp") or "_pp_" in column:
            return f"{v:+.1f}" if column in ("gap_pp", "diff_pp_group_minus_rest") else f"{v:.1f}"
        if column in ("p", "fisher_p", "bh_q"):
            if v == 0:
                return "<1e-300"  # below the smallest double the test computes
            return f"{v:.2g}" if v < 0.001 else f"{v:.3f}"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.3f}"
    return str(v)


def _missing(column: str, record: dict | None) -> str:
    """How an absent value shows: n/a with a stated reason, n/e when withheld for too few positives, else -.

    ``human_*`` columns (the human ceiling) have their own estimability: the human sources' positives.
    """
    if record is None:
        return "-"
    if record.get(column.split("_ci_")[0] + "_na"):
        return NOT_AVAILABLE
    estimable = record.get("human_estimable" if column.startswith("human_") else "estimable")
    if estimable is False and any(w in column for w in _WITHHELD):
        return NOT_ESTIMABLE
    return "-"


def display(table: Table) -> tuple[list[str], list[list[str]]]:
    """Headers and text rows of a table, with interval bounds merged into one column."""
    plan: list[tuple[str, list[str]]] = []
    skip: set[str] = set()
    for col in table.columns:
        if col in skip:
            continue
        iv = _interval_of(col)
        if iv is not None:
            base, low, high = iv
            partner = base + high
            if partner in table.columns:
                label = "boot CI" if "boot" in low else "95% CI"
                plan.append((f"{base.rstrip('_')} {label}".strip(), [col, partner]))
                skip.add(partner)
                continue
        plan.append((col, [col]))
    rows = []
    for rec in table.records:
        row = []
        for _, cols in plan:
            if len(cols) == 2:
                lo, hi = rec.get(cols[0]), rec.get(cols[1])
                if lo is None or hi is None:
                    row.append(NOT_AVAILABLE if _missing(cols[0], rec) == NOT_AVAILABLE else "-")
                else:
                    row.append(f"[{value(lo, cols[0])}, {value(hi, cols[1])}]")
            else:
                row.append(value(rec.get(cols[0]), cols[0], rec))
        rows.append(row)
    return [h for h, _ in plan], rows


#: The heading of the key findings block, the same in every rendering.
FINDINGS_TITLE = "Key findings"


def title(doc: Document) -> str:
    """The document's title, the same in every rendering."""
    return "MAST failure report" if doc.kind == "report" else "Agreement between label sources"


def shown_note(table: Table) -> str | None:
    """"N of M rows shown" when a table holds only its first rows, else None; each rendering
    says where the rest are."""
    if table.total_rows is not None and table.total_rows > len(table.records):
        return f"{len(table.records)} of {table.total_rows} rows shown"
    return None


def _modes_line(header: dict) -> list[tuple[str, str]]:
    """The modes line when a source covers only some of the codebook's modes."""
    modes = header.get("modes")
    if not modes or not modes["not_covered"]:
        return []
    total = len(modes["reported"]) + len(modes["not_covered"])
    by = "the source covers" if len(header["sources"]) == 1 else "every source covers"
    return [("modes", f"{len(modes['reported'])} of {total} reported, the ones {by}: {', '.join(modes['reported'])}"
                      f" (not covered: {', '.join(modes['not_covered'])})")]


def header_lines(header: dict) -> list[tuple[str, str]]:
    """The report header as (label, text) lines, in reading order."""
    counts = header["counts"]
    lines = [
        ("sources", "; ".join(f"{s['name']} ({s['kind']}: {s['detail']})" for s in header["sources"])),
        ("taxonomy", f"{header['taxonomy']['name']} {header['taxonomy']['version']},"
                     f" version hash {header['taxonomy']['version_hash']}"),
        *_modes_line(header),
        ("filters", ", ".join(f"{k}={v}" for k, v in header["filters"].items()) or "none"),
        ("trajectories", f"{counts['trajectories_counted']:,} counted of {counts['trajectories_in_database']:,} in"
                         f" the database; {counts['failed']:,} failed, {counts['succeeded']:,} succeeded,"
                         f" {counts['outcome_unknown']:,} outcome unknown"),
    ]
    left = counts["left_out"]
    lines.append(("left out", ", ".join(f"{n} {why}" for why, n in left.items()) or "none"))
    for s in header["sources"]:
        if s["not_finished"]:
            lines.append((f"  {s['name']}", "unfinished: " + ", ".join(f"{n} {why}" for why, n in
                                                                      s["not_finished"].items())))
        if s["verdicts_outside_codebook"]:
            lines.append((f"  {s['name']}", f"{s['verdicts_outside_codebook']} verdicts on modes not in the codebook"
                                            " were ignored"))
    if "consensus_ties" in counts:
        lines.append(("consensus ties", f"{counts['consensus_ties']} (trajectory, mode) cells, left undecided"))
    if header.get("strongest_predictor") is not None or header.get("by") is not None:
        lines.append(("strongest predictor", header.get("strongest_predictor") or "none supported (see key findings)"))
    if header.get("reference"):
        lines.append(("reference", header["reference"]))
    if audit := header.get("audit"):
        sample = audit["sample"]
        drawn = (f"sample {sample['tag']} ({sample['stratify'] or 'simple random'}, {sample['size']} of"
                 f" {sample['population']})" if sample else "no stored sample")
        lines.append(("audit", f"{audit['audit']}: {audit['audited']} trajectories audited, {drawn}"))
    lines.append(("bootstrap", f"{header['bootstrap_replicates']} replicates over trajectories, seed {header['seed']}"))
    libs = ", ".join(f"{k} {v}" for k, v in header["libraries"].items())
    lines.append(("tool", f"mast-annotator {header['tool_version']} ({libs}); generated {header['generated_at']}"))
    return lines
