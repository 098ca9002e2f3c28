"""The `mast` command line: parse arguments, call the core, render the result.

No business logic lives here; every command is a thin shell over the store, importers,
labellers and reports, the same functions the TUI calls. Errors of the core arrive as
AnnotatorError and leave as one line on stderr with a non-zero exit code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

import click
import orjson
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from annotator import __version__
from annotator.errors import AnnotatorError

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _fail(message: str, code: int = 1) -> None:
    err.print(Text(f"error: {message}", style="bold red"))
    sys.exit(code)


def handled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Render core errors as one clear line and a non-zero exit instead of a traceback."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AnnotatorError as exc:
            _fail(str(exc))

    return wrapper


def _open(ctx: click.Context):
    from annotator.store import open_db

    return open_db(ctx.obj["db"])


def _taxonomy(path: str | None):
    from taxonomy import TaxonomyError, load_taxonomy

    try:
        return load_taxonomy(path)
    except TaxonomyError as exc:
        _fail(str(exc))


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    envvar="MAST_DB",
    default="mast.db",
    show_default=True,
    help="The database file (env MAST_DB).",
)
@click.version_option(__version__, prog_name="mast")
@click.pass_context
def main(ctx: click.Context, db: str) -> None:
    """Find out why LLM agents fail: import trajectories, annotate MAST failure modes, report.

    \b
    Examples:
      mast import trajectories/            # import a folder of trajectories
      mast list --system Magentic-One      # what is in the database
      mast show 7d7a --step 12             # read one trajectory
      mast annotate                        # tag failure modes in the TUI
    """
    ctx.ensure_object(dict)
    ctx.obj["db"] = db


# ---------------------------------------------------------------- import / list / show


@main.command("import")
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", metavar="NAME", help="Force a format instead of detecting it (see `mast formats`).")
@click.option("--system", help="Set the system (MAS) of every imported trajectory.")
@click.option("--model", help="Set the model of every imported trajectory.")
@click.option("--benchmark", help="Set the benchmark of every imported trajectory.")
@click.option("--skip-bad-lines", is_flag=True, help="JSONL: skip malformed lines (counted) instead of failing the file.")
@click.option("--max-size", type=int, default=None, metavar="BYTES", help="Refuse files larger than this.")
@click.option(
    "--ground-truth",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="ITBench: folder of scenario groundtruth.yaml files; scores each run's diagnosis.",
)
@click.option("--quiet", "-q", is_flag=True, help="Print only the summary.")
@click.pass_context
@handled
def import_cmd(ctx, paths, fmt, system, model, benchmark, skip_bad_lines, max_size, ground_truth, quiet):
    """Import trajectory files, folders or glob patterns.

    Each file is imported whole or not at all; a bad file is reported with its line or
    record and the others still import. Re-importing unchanged content is a no-op.

    \b
    Examples:
      mast import ../shared/data/who_and_when
      mast import 'runs/**/*.jsonl' --format openai_chat --system my-agent
      mast import outputs/agent_outputs --ground-truth scenarios/   # ITBench runs, scored
    """
    from annotator.importers.base import ImportOptions

    opts = ImportOptions(
        system=system, model=model, benchmark=benchmark, skip_bad_lines=skip_bad_lines, ground_truth=ground_truth
    )
    if max_size is not None:
        opts.max_bytes = max_size
    summary = _import(_open(ctx), paths, fmt, opts, quiet)
    if summary.failed:
        sys.exit(1)


def _import(db, paths, fmt, opts, quiet: bool):
    """Import with a progress bar, print one line per file (unless quiet) and the totals."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from annotator.importers.service import expand_paths, import_paths

    files = expand_paths(paths)
    if not files:
        _fail("no files match " + " ".join(paths))
    with Progress(
        TextColumn("[bold]importing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=True,
        disable=quiet or not err.is_terminal,
    ) as bar:
        task = bar.add_task("", total=len(files))

        def step(result):
            bar.update(task, advance=1, description=escape(Path(result.path).name))

        summary = import_paths(db, paths, fmt, opts, progress=step)
    for f in summary.files:
        if not quiet:
            _print_file_result(f)
    failed = summary.failed
    line = (
        f"{len(summary.files)} file(s): {summary.total('imported')} imported, {summary.total('updated')} updated,"
        f" {summary.total('unchanged')} unchanged, {summary.total('labels')} labels, {len(failed)} failed"
    )
    skipped = sum(1 for f in summary.files if f.skipped)
    if skipped:
        line += f", {skipped} skipped (not a trajectory)"
    out.print(Text(line, style="bold"), soft_wrap=True)
    for f in failed:
        err.print(Text(f"failed: {f.error}", style="red"))
    return summary


def _print_file_result(f) -> None:
    if not f.ok:
        return
    if f.skipped:
        out.print(Text.assemble((f"{'skipped':<14} ", "dim"), f.path, ": ", f.skipped))
        return
    parts = [f"{f.imported} imported"] if f.imported else []
    if f.updated:
        parts.append(f"{f.updated} updated")
    if f.unchanged:
        parts.append(f"{f.unchanged} unchanged")
    if f.labels:
        parts.append(f"{f.labels} labels")
    if f.skipped_lines:
        parts.append(f"{len(f.skipped_lines)} bad line(s) skipped: {', '.join(map(str, f.skipped_lines[:10]))}")
    out.print(Text.assemble((f"{f.format:<14} ", "cyan"), f.path, ": ", ", ".join(parts) or "nothing"), soft_wrap=True)
    for w in f.warnings:
        out.print(Text(f"  warning: {w}", style="yellow"), soft_wrap=True)


@main.command("list")
@click.option("--system")
@click.option("--model")
@click.option("--benchmark")
@click.option("--outcome", type=click.Choice(["success", "failure", "unknown"]))
@click.option("--format", "source_format", help="Only trajectories imported with this format.")
@click.option("--status", type=click.Choice(["not_started", "in_progress", "done"]), help="Review status of --annotator.")
@click.option("--annotator", envvar="MAST_ANNOTATOR", help="Whose review status --status means.")
@click.option("--search", help="Full-text search over step content.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of a table.")
@click.pass_context
@handled
def list_cmd(ctx, system, model, benchmark, outcome, source_format, status, annotator, search, as_json):
    """List the trajectories in the database.

    \b
    Examples:
      mast list --outcome failure --system MetaGPT
      mast list --status done --annotator alice --json
    """
    from annotator.store.trajectories import TrajectoryFilter, list_trajectories

    if status and not annotator:
        annotator = _default_annotator()
    flt = TrajectoryFilter(
        system=system,
        model=model,
        benchmark=benchmark,
        outcome=outcome,
        source_format=source_format,
        review_status=status,
        annotator=annotator,
        search=search,
    )
    rows = list_trajectories(_open(ctx), flt)
    if as_json:
        for r in rows:
            sys.stdout.write(orjson.dumps(r.model_dump(mode="json", exclude={"metadata", "task"})).decode() + "\n")
        return
    table = Table(box=None, header_style="bold", pad_edge=False)
    # Widths that keep every column legible at 100 columns; the title takes what is left.
    widths = {"id": (16, 16), "system": (8, 14), "model": (5, 16), "benchmark": (8, 16), "outcome": (7, 7),
              "steps": (5, 6)}
    for col, (low, high) in widths.items():
        table.add_column(col, overflow="ellipsis", no_wrap=True, min_width=low, max_width=high,
                         justify="right" if col == "steps" else "left")
    table.add_column("title", overflow="ellipsis", no_wrap=True, min_width=10, ratio=1)
    for r in rows:
        table.add_row(
            r.id,
            r.system or "-",
            r.model or "-",
            r.benchmark or "-",
            r.outcome,
            str(r.n_steps),
            r.title or "",
        )
    out.print(table)
    out.print(Text(f"{len(rows)} trajectories", style="dim"))


def _default_annotator() -> str:
    from annotator.annotation import default_annotator

    return default_annotator()


@main.command("show")
@click.argument("trajectory")
@click.option("--step", "step", type=int, default=None, help="Print only this step (0-based).")
@click.option("--limit", type=int, default=None, help="Print at most this many steps.")
@click.option("--raw", is_flag=True, help="Print the original record as imported.")
@click.pass_context
@handled
def show_cmd(ctx, trajectory, step, limit, raw):
    """Print a trajectory step by step (ID may be a unique prefix).

    \b
    Examples:
      mast show 7d7a048670901feb
      mast show 7d7a --step 12
    """
    from annotator.render import plain_header, plain_step
    from annotator.store import trajectories as tq

    db = _open(ctx)
    traj_id = tq.resolve_id(db, trajectory)
    if raw:
        t = tq.get_trajectory(db, traj_id, with_steps=False, with_raw=True)
        sys.stdout.write((t.raw or b"").decode("utf-8", "replace") + "\n")
        return
    summary = tq.get_summary(db, traj_id)
    write = sys.stdout.write
    if step is not None:
        write(plain_step(tq.get_step(db, traj_id, step)))
        return
    write(plain_header(summary))
    sys.stdout.flush()  # the header shows at once, before any step is read
    start, page = 0, 200
    shown = 0
    while True:
        chunk = tq.get_steps(db, traj_id, start, page)
        for s in chunk:
            if limit is not None and shown >= limit:
                return
            write(plain_step(s))
            shown += 1
        if len(chunk) < page:
            return
        start += page


# ---------------------------------------------------------------- taxonomy


@main.group("taxonomy", invoke_without_command=True)
@click.option("--taxonomy", "taxonomy_path", type=click.Path(exists=True, dir_okay=False), help="A custom codebook file.")
@click.option("--json", "as_json", is_flag=True, help="Print the codebook as JSON.")
@click.pass_context
def taxonomy_cmd(ctx, taxonomy_path, as_json):
    """Print the failure-mode codebook (the built-in MAST taxonomy unless --taxonomy).

    \b
    Examples:
      mast taxonomy
      mast taxonomy validate my_codebook.yaml
    """
    if ctx.invoked_subcommand is not None:
        return
    tax = _taxonomy(taxonomy_path)
    if as_json:
        data = tax.model_dump(mode="json") | {"version_hash": tax.version_hash}
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    out.print(Text(f"{tax.name} ({tax.version}), version hash {tax.version_hash}", style="bold"))
    out.print(Text(tax.citation, style="dim"))
    for cat in tax.categories:
        out.print()
        out.print(Text(f"{cat.id}  {cat.name}", style="bold underline"))
        table = Table(box=None, show_header=False, pad_edge=False)
        table.add_column("id", style="cyan", no_wrap=True)
        table.add_column("key", style="magenta", no_wrap=True)
        table.add_column("mode")
        for m in tax.modes_in(cat.id):
            # Text, never markup: a hotkey like "[s]" or a custom codebook's names must print as written.
            table.add_row(Text(m.id), Text(f"[{m.hotkey}]"), Text.assemble((m.name, "bold"), "\n", m.definition))
        out.print(table)


@taxonomy_cmd.command("validate")
@click.argument("path", type=click.Path(dir_okay=False))
def taxonomy_validate(path):
    """Check a custom codebook file and explain every problem found."""
    tax = _taxonomy(path)
    out.print(
        Text(f"ok: {tax.name} ({tax.version}): {len(tax.categories)} categories, {len(tax.modes)} modes,"
             f" version hash {tax.version_hash}")
    )


@main.command("formats")
def formats_cmd():
    """List the import formats and how each is recognised."""
    from annotator.importers.base import registry

    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("format", style="cyan", no_wrap=True)
    table.add_column("what it reads")
    for name, imp in registry().items():
        table.add_row(name, imp.description)
    out.print(table)


# ---- annotate


@main.command("annotate")
@click.argument("paths", nargs=-1)
@click.option("--annotator", envvar="MAST_ANNOTATOR", help="Your name on the labels (default: $MAST_ANNOTATOR, else the OS user).")
@click.option("--blind", is_flag=True, help="Hide suggestions, other annotators' labels, attributions and task outcomes (agreement studies).")
@click.option("--taxonomy", "taxonomy_path", type=click.Path(exists=True, dir_okay=False), help="A custom codebook file.")
@click.pass_context
@handled
def annotate_cmd(ctx, paths, annotator, blind, taxonomy_path):
    """Open the annotation app: queue, step-by-step replay, tagging of failure modes.

    PATHS, if given, are imported first (files or folders, as with `mast import`; a file that
    fails is reported and the app opens on the rest). Every tag is saved the moment it is made;
    press ? in the app for the keys.

    \b
    Examples:
      mast annotate                          # annotate what is in ./mast.db
      mast --db study.db annotate runs/      # import runs/, then annotate
      mast annotate --annotator alice --blind
      mast annotate --taxonomy my-codebook.yaml
    """
    from annotator.tui.app import make_app
    from annotator.tui.keys import check_hotkeys

    tax = _taxonomy(taxonomy_path)
    check_hotkeys(tax)
    if paths:
        db = _open(ctx)
        _import(db, paths, None, None, quiet=False)  # a file that fails is reported; the rest opens
        db.close()
    make_app(ctx.obj["db"], annotator or _default_annotator(), blind=blind, taxonomy=tax).run()


if __name__ == "__main__":
    main()
