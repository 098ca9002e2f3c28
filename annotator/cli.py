"""The `mast` command line: parse arguments, call the core, render the result.

No business logic lives here; every command is a thin shell over the store, importers,
labellers and reports, the same functions the TUI calls. Errors of the core arrive as
AnnotatorError and leave as one line on stderr with a non-zero exit code.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

import click
import orjson
from rich import box
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from annotator import __version__
from annotator.errors import AnnotatorError, RunInterrupted, database_trouble
from annotator.report.output import REPORT_FORMATS
from annotator.text import inert, inert_console, json_text, table_line

out = inert_console(soft_wrap=False)
err = inert_console(stderr=True, soft_wrap=True)

#: Rows of ``mast list`` laid out and printed at a time.
LIST_BLOCK = 1000
#: Its columns' headers where they are not the column's name.
_LIST_HEADERS = {"n_steps": "steps"}


def _fail(message: str, code: int = 1) -> None:
    err.print(Text(f"error: {message}", style="bold red"))
    sys.exit(code)


def handled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Render core errors as one clear line and a non-zero exit instead of a traceback.

    A database that cannot be read (damaged pages, a file that is not a database) fails in
    whatever query meets it first; that too is one line naming the file and what to do.
    """

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AnnotatorError as exc:
            _fail(str(exc))
        except sqlite3.DatabaseError as exc:
            _fail(database_trouble(_settings(click.get_current_context()).db, exc))

    return wrapper


def _open(ctx: click.Context):
    from annotator.store import open_db

    path = _settings(ctx).db

    def upgrading(names: list[str]) -> None:
        err.print(f"upgrading {path} to this release's schema ({', '.join(names)}): once, and a large database"
                  " takes minutes")

    return open_db(path, on_upgrade=upgrading)


def _settings(ctx: click.Context):
    """The command's Settings: the environment, read once, with the group's flags over it."""
    return ctx.find_root().obj["settings"]


def _taxonomy(path: str | None):
    from annotator.taxonomy import TaxonomyError, load_taxonomy

    try:
        return load_taxonomy(path)
    except TaxonomyError as exc:
        _fail(str(exc))


#: The filter flags of every command that selects trajectories, with the words --help shows.
_FILTER_FLAGS = ("system", "model", "benchmark", "outcome", "source_format", "since", "until", "tag")


def _filter_options(model_flag: str = "--model", format_alias: bool = False, with_tag: bool = True
                    ) -> Callable[..., Any]:
    """The trajectory filter of list, prelabel, report, agreement, export and sample: the same flags
    and help everywhere, handed to the command as one ``flt`` (a TrajectoryFilter). Where
    ``--model`` is the judge (prelabel), the trajectories' model is ``model_flag``; ``list`` also
    takes its older ``--format`` for ``--source-format``; ``sample``, whose ``--tag`` names the
    sample, goes ``with_tag=False``."""
    options = [
        click.option("--system", help="Only trajectories of this system (MAS)."),
        click.option(model_flag, "model", help="Only trajectories driven by this model."),
        click.option("--benchmark", help="Only trajectories from this benchmark."),
        click.option("--outcome", type=click.Choice(["success", "failure", "unknown"]), help="Only this outcome."),
        click.option("--source-format", *(["--format"] if format_alias else []), "source_format", metavar="NAME",
                     help="Only trajectories imported with this format (see `mast formats`)."),
        click.option("--since", type=click.DateTime(), help="Only trajectories imported at or after this date (UTC)."),
        click.option("--until", type=click.DateTime(), help="Only trajectories imported before this date (UTC)."),
    ]
    if with_tag:
        options.append(click.option("--tag", help="Only trajectories with this tag (a metadata 'tags' value or an"
                                                  " audit sample's name, see `mast sample`)."))
    names = _FILTER_FLAGS if with_tag else tuple(n for n in _FILTER_FLAGS if n != "tag")

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(fn)
        def with_filter(*args: Any, **kwargs: Any) -> Any:
            from annotator.views import TrajectoryFilter

            flt = TrajectoryFilter(**{name: kwargs.pop(name) for name in names})
            return fn(*args, flt=flt, **kwargs)

        for option in reversed(options):
            with_filter = option(with_filter)
        return with_filter

    return decorate


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    show_default="mast.db",
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
    from annotator.settings import Settings

    ctx.ensure_object(dict)
    ctx.obj["settings"] = Settings(**({"db": db} if db else {}))


# ---------------------------------------------------------------- import / list / show


@main.command("import")
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", metavar="NAME", help="Force a format instead of detecting it (see `mast formats`).")
@click.option("--system", help="Set the system (MAS) of every imported trajectory.")
@click.option("--model", help="Set the model of every imported trajectory.")
@click.option("--benchmark", help="Set the benchmark of every imported trajectory.")
@click.option("--skip-bad-lines", is_flag=True, help="JSONL: skip malformed lines (counted) instead of failing the file.")
@click.option("--max-size", type=int, default=None, metavar="BYTES", help="Refuse files larger than this, and zip archives that inflate to more.")
@click.option("--strict", is_flag=True, help="Fail a file with any warning (unknown record kinds, unnamed tool calls ...).")
@click.option(
    "--ground-truth",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="ITBench: folder of scenario groundtruth.yaml files; scores each run's diagnosis.",
)
@click.option("--quiet", "-q", is_flag=True, help="Print only the summary.")
@click.pass_context
@handled
def import_cmd(ctx, paths, fmt, system, model, benchmark, skip_bad_lines, max_size, strict, ground_truth, quiet):
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
        system=system, model=model, benchmark=benchmark, skip_bad_lines=skip_bad_lines, strict=strict,
        ground_truth=ground_truth,
    )
    if max_size is not None:
        opts.max_bytes = max_size
    summary = _import(_open(ctx), paths, fmt, opts, quiet)
    if summary.failed:
        sys.exit(1)


def _import(db, paths, fmt, opts, quiet: bool):
    """Import with a progress bar, print one line per file (unless quiet) and the totals."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from annotator.importers.importing import import_planned, plan_imports

    files = plan_imports(paths)
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
            bar.update(task, advance=1, description=escape(inert(Path(result.path).name)))

        summary = import_planned(db, files, fmt, opts, progress=step)
    for f in summary.files:
        if not quiet:
            _print_file_result(f)
    failed = summary.failed
    line = (
        f"{len(summary.files)} file(s): {summary.total('imported')} imported, {summary.total('updated')} updated,"
        f" {summary.total('unchanged')} unchanged, {summary.total('labels')} labels, {len(failed)} failed"
    )
    for why, n in summary.skipped():
        line += f", {n} skipped ({why})"
    if unsupported := sum(1 for f in summary.files if f.unsupported):
        line += f", {unsupported} unsupported"
    out.print(Text(line, style="bold"), soft_wrap=True)
    for f in failed:
        err.print(Text(f"failed: {f.error}", style="red"))
    return summary


def _print_file_result(f) -> None:
    if not f.ok:
        return
    if f.skipped:
        out.print(Text.assemble((f"{'skipped':<14} ", "dim"), f.path, ": ", f.skipped), soft_wrap=True)
        return
    if f.unsupported:
        out.print(Text.assemble((f"{'unsupported':<14} ", "yellow"), f.path, ": ", f.unsupported), soft_wrap=True)
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
    for what, by_reason in (("folded", f.ledger.folded_by), ("dropped", f.ledger.dropped_by)):
        if by_reason:
            reasons = ", ".join(f"{n} {reason}" for reason, n in by_reason.most_common())
            out.print(Text(f"  {what}: {reasons}", style="dim"), soft_wrap=True)
    for (kind, _), line in zip(f.ledger.warnings, f.ledger.warning_lines(), strict=True):
        out.print(Text(f"  warning ({kind}): {line}", style="yellow"), soft_wrap=True)


@main.command("list")
@_filter_options(format_alias=True)
@click.option("--status", type=click.Choice(["not_started", "in_progress", "done"]), help="Review status of --annotator.")
@click.option("--annotator", help="Whose review status --status means (default: $MAST_ANNOTATOR, else the OS user).")
@click.option("--search", help="Full-text search over step content.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of a table.")
@click.pass_context
@handled
def list_cmd(ctx, flt, status, annotator, search, as_json):
    """List the trajectories in the database.

    \b
    Examples:
      mast list --outcome failure --system MetaGPT
      mast list --status done --annotator alice --json
    """
    from itertools import islice

    from annotator.store.trajectories import iter_trajectories, longest_values

    if status and not annotator:
        annotator = _settings(ctx).annotator_name()
    flt = flt.model_copy(update={"review_status": status, "annotator": annotator, "search": search})
    db = _open(ctx)
    rows = iter_trajectories(db, flt)
    if as_json:
        for r in rows:
            sys.stdout.write(json_text(r.model_dump(mode="json", exclude={"metadata", "task"})) + "\n")
        return
    # Widths that keep every column legible at 100 columns; the title takes what is left. Nothing
    # is cut: a value wider than its column wraps inside it (an id stays whole for `mast show`).
    # Rich lays a table out at about a millisecond a row (100,000 rows took two minutes and 750 MB
    # as one table), so the widths come from the longest values, rows are read and printed a
    # block at a time, and a row whose every value fits its column on one line is written as the
    # line Rich would draw for it; Rich draws the header and the rows that wrap.
    widths = {"id": (16, 16), "system": (8, 14), "model": (5, 16), "benchmark": (8, 16), "outcome": (7, 7),
              "n_steps": (5, 6)}
    longest = longest_values(db, flt, [*widths, "title"])
    fixed = [min(max(longest[col], len(_LIST_HEADERS.get(col, col)), low), high) for col, (low, high) in widths.items()]
    title = min(max(longest["title"], 10), out.width - sum(fixed) - 2 * len(fixed))
    fits = title >= 10  # else the console is too narrow for the widths, and Rich narrows each block

    def table(header: bool) -> Table:
        t = Table(box=None, header_style="bold", pad_edge=False, show_header=header)
        for (col, (low, high)), width in zip(widths.items(), fixed, strict=True):
            t.add_column(_LIST_HEADERS.get(col, col), overflow="fold", min_width=width if fits else low,
                         max_width=width if fits else high, justify="right" if col == "n_steps" else "left")
        t.add_column("title", overflow="fold", min_width=title if fits else 10, max_width=title if fits else None,
                     ratio=None if fits else 1)
        return t

    if fits:
        out.print(table(header=True))
    count = 0
    while block := list(islice(rows, LIST_BLOCK)):
        wrapped = table(header=not fits and not count)
        for r in block:
            cells = [r.id, r.system or "-", r.model or "-", r.benchmark or "-", r.outcome, str(r.n_steps), r.title or ""]
            line = table_line(cells, [*fixed, title], right={5}) if fits else None
            if line is None:
                wrapped.add_row(*cells)
                continue
            if wrapped.rows:
                out.print(wrapped)
                wrapped = table(header=False)
            out.file.write(line + "\n")
        if wrapped.rows or wrapped.show_header:
            out.print(wrapped)
        count += len(block)
    out.print(Text(f"{count} trajectories", style="dim"))


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
    from annotator.store import steps as sq
    from annotator.store import trajectories as tq
    from annotator.text import inert, plain_header, plain_step

    db = _open(ctx)
    traj_id = tq.resolve_id(db, trajectory)
    if raw:
        t = tq.get_trajectory(db, traj_id, with_steps=False, with_raw=True)
        sys.stdout.write(inert((t.raw or b"").decode("utf-8", "replace")) + "\n")
        return
    summary = tq.get_summary(db, traj_id)
    write = sys.stdout.write
    if step is not None:
        write(plain_step(sq.get_step(db, traj_id, step)))
        return
    write(plain_header(summary))
    sys.stdout.flush()  # the header shows at once, before any step is read
    start, page = 0, 200
    shown = 0
    while True:
        chunk = sq.get_steps(db, traj_id, start, page)
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
        sys.stdout.write(json_text(data, orjson.OPT_INDENT_2) + "\n")
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
    """Check a custom codebook file and explain every problem found.

    \b
    Examples:
      mast taxonomy validate my-codebook.yaml
      mast taxonomy --json > mast.json     # the built-in codebook, to start a custom one from
    """
    tax = _taxonomy(path)
    out.print(
        Text(f"ok: {tax.name} ({tax.version}): {len(tax.categories)} categories, {len(tax.modes)} modes,"
             f" version hash {tax.version_hash}")
    )


@main.command("formats")
def formats_cmd():
    """List the import formats and how each is recognised.

    \b
    Examples:
      mast formats
      mast import runs/ --format openai_chat   # force one of the names listed
    """
    from annotator.importers.registry import registry

    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("format", style="cyan", no_wrap=True)
    table.add_column("what it reads")
    for name, imp in registry().items():
        table.add_row(name, imp.description)
    out.print(table)


# ---- pre-labelling


def _progress_columns():
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    return (
        TextColumn("[bold]prelabel"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[stats]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )


#: prelabel's flags that change how a run goes, not what it labels or how it asks: the ones a
#: resume may take (``--fixed-concurrency`` is the option ``adaptive`` turned off).
_RESUME_FLAGS = {"concurrency": "concurrency", "rpm": "rpm", "tpm": "tpm", "fixed_concurrency": "adaptive",
                 "timeout": "timeout", "max_attempts": "max_attempts", "max_cost": "max_cost",
                 "poll_seconds": "poll_seconds"}
#: Flags that say how this session behaves and belong to no run.
_SESSION_FLAGS = {"resume", "resume_batch", "quiet", "allow_failures"}


def _resume_changes(ctx: click.Context, run_id: int) -> dict[str, Any]:
    """The run options this ``--resume`` changes; any other flag given with it is refused, rather
    than silently ignored (the run continues as it was started)."""
    given = {p.name: p for p in ctx.command.params
             if p.name and ctx.get_parameter_source(p.name) == click.core.ParameterSource.COMMANDLINE}
    refused = [p.opts[0] for name, p in given.items() if name not in _RESUME_FLAGS and name not in _SESSION_FLAGS]
    if refused:
        allowed = ", ".join(p.opts[0] for p in ctx.command.params if p.name in _RESUME_FLAGS)
        _fail(f"--resume {run_id} continues the run with the settings it was started with: {', '.join(refused)}"
              f" cannot change (start a new run for that); a resume may change only {allowed}", code=2)
    params = ctx.params
    return {_RESUME_FLAGS[name]: (not params[name] if name == "fixed_concurrency" else params[name])
            for name in given if name in _RESUME_FLAGS}


@main.command("prelabel")
@click.argument("ids", nargs=-1)
@_filter_options(model_flag="--source-model")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many trajectories.")
@click.option("--labeller", type=click.Choice(["llm", "rules"]), default="llm", show_default=True)
@click.option("--model", "models", multiple=True, metavar="NAME", help="Judge model; repeat for a multi-model vote.")
@click.option("--base-url", help="OpenAI-compatible endpoint (else env MAST_JUDGE_BASE_URL or OPENAI_BASE_URL, else OpenAI).")
@click.option("--api-key-env", metavar="NAME", show_default="OPENAI_API_KEY, or env MAST_API_KEY_ENV",
              help="Environment variable holding the API key (the key itself is never stored).")
@click.option("--prompt", type=click.Choice(["structured", "mast-original"]), default="structured", show_default=True)
@click.option("--definitions", type=click.Path(exists=True, dir_okay=False),
              help="Long-form definitions file for --prompt mast-original (e.g. the official definitions.txt).")
@click.option("--samples", type=click.IntRange(min=1), default=1, show_default=True, help="Votes per model.")
@click.option("--temperature", type=click.FloatRange(0, 2), default=None, help="Default 0, or 0.7 with --samples > 1.")
@click.option("--max-input-tokens", type=click.IntRange(min=500), default=60_000, show_default=True,
              help="Token budget of one request; longer trajectories are labelled in overlapping windows.")
@click.option("--max-output-tokens", type=click.IntRange(min=16), default=None, help="Cap on the judge's answer.")
@click.option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True,
              help="Most requests in flight; fewer while the server reports its rate limit reached.")
@click.option("--rpm", type=click.FloatRange(min=0, min_open=True), metavar="N",
              help="Requests per minute to stay under (for servers that send no rate-limit headers).")
@click.option("--tpm", type=click.FloatRange(min=0, min_open=True), metavar="N",
              help="Tokens per minute to stay under (likewise).")
@click.option("--fixed-concurrency", is_flag=True,
              help="Keep --concurrency requests in flight whatever the server says (no adaptive pacing).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=120.0, show_default=True, help="Seconds per request.")
@click.option("--max-attempts", type=click.IntRange(min=1), default=5, show_default=True, help="Tries per request.")
@click.option("--dry-run", is_flag=True, help="Print requests, tokens and cost; send nothing.")
@click.option("--max-cost", type=click.FloatRange(min=0), help="Stop cleanly before spending more USD than this.")
@click.option("--price-in", type=click.FloatRange(min=0), help="USD per million input tokens (models not in the table).")
@click.option("--price-out", type=click.FloatRange(min=0), help="USD per million output tokens.")
@click.option("--price-cached", type=click.FloatRange(min=0),
              help="USD per million cached input tokens (with --price-in; default: the input price).")
@click.option("--allow-failures", is_flag=True,
              help="Exit 0 even if some trajectories failed (not if all did).")
@click.option("--batch", is_flag=True, help="Use the OpenAI Batch API (half price, answers within 24 h).")
@click.option("--resume-batch", metavar="BATCH_ID", help="Continue waiting for a submitted batch (with --resume).")
@click.option("--poll", "poll_seconds", type=click.FloatRange(min=0.01), default=30.0, show_default=True,
              help="Seconds between batch status checks.")
@click.option("--resume", "resume", type=int, metavar="RUN_ID", help="Continue an interrupted run.")
@click.option("--taxonomy", "taxonomy_path", type=click.Path(exists=True, dir_okay=False), help="A custom codebook.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.pass_context
@handled
def prelabel_cmd(ctx, ids, flt, limit, labeller, models, base_url, api_key_env,
                 prompt, definitions, samples, temperature, max_input_tokens, max_output_tokens, concurrency, rpm, tpm,
                 fixed_concurrency, timeout, max_attempts, dry_run, max_cost, price_in, price_out, price_cached,
                 allow_failures, batch, resume_batch, poll_seconds, resume, taxonomy_path, quiet):
    """Pre-label trajectories with an LLM judge or the rule detectors, as suggestions.

    Labels are stored under the run's own annotator (run:<id>), never over a person's.
    Every response is cached: an interrupted run (Ctrl-C, SIGTERM, a crash) resumes with
    --resume and sends no request twice; --max-cost holds for the run across resumes. A resume
    may change only the pacing flags and --max-cost (a larger budget for the run's total).
    Requests are paced to the rate limits the server reports (or --rpm/--tpm). Exits 1
    if any trajectory failed (unless --allow-failures) and whenever all of them did.

    \b
    Examples:
      mast prelabel --dry-run --model gpt-4o-mini --outcome failure
      mast prelabel --model gpt-4o-mini --max-cost 5
      mast prelabel --model llama3 --base-url http://localhost:8080/v1 --concurrency 4
      mast prelabel --model gpt-4o-mini --rpm 500 --tpm 200000
      mast prelabel --model gpt-4o --model o3-mini --samples 3 --temperature 0.7
      mast prelabel --prompt mast-original --definitions definitions.txt --model o1
      mast prelabel --labeller rules
      mast prelabel --resume 3
    """
    from rich.progress import Progress as Bar

    from annotator.labelling import prelabel, summary
    from annotator.labelling.judge import JudgeSettings
    from annotator.labelling.windows import TokenCounter

    db, settings = _open(ctx), _settings(ctx)
    tokens = TokenCounter(settings.tiktoken_cache_dir)
    if resume is not None:
        key_env = prelabel.run_options(db, resume).api_key_env
        run, opts = prelabel.resume_run(db, resume, api_key=settings.api_key(key_env),
                                        changes=_resume_changes(ctx, resume))
    else:
        judge = None
        if labeller == "llm":
            if not models:
                _fail("give the judge model with --model (e.g. --model gpt-4o-mini)")
            judge = JudgeSettings(models=list(models), base_url=base_url or settings.judge_base_url, prompt=prompt,
                                  samples=samples, temperature=temperature, max_input_tokens=max_input_tokens,
                                  max_output_tokens=max_output_tokens)
        opts = prelabel.PrelabelOptions(
            labeller=labeller, trajectories=flt.model_copy(update={"ids": list(ids) or None}), limit=limit,
            judge=judge, definitions_path=definitions,
            api_key_env=api_key_env or settings.api_key_env,
            concurrency=concurrency, rpm=rpm, tpm=tpm, adaptive=not fixed_concurrency, timeout=timeout,
            max_attempts=max_attempts, max_cost=max_cost, price_in=price_in, price_out=price_out,
            price_cached=price_cached, batch=batch, poll_seconds=poll_seconds, taxonomy_path=taxonomy_path,
        )
        if dry_run:
            first, *rest = summary.dry_run_lines(prelabel.estimate(db, opts, tokens=tokens))
            out.print(Text(first, style="bold"))
            for line in rest:
                out.print(Text(line))
            return
        run, opts = prelabel.start_run(db, opts, api_key=settings.api_key(opts.api_key_env))
    priced = run.params.get("price_known", True)

    def cost(usd: float) -> str:
        return f"${usd:.4f}" if priced else "cost unknown"

    stats = f"done 0 · failed 0 · cached 0 · 0 tok · {cost(0.0)}"
    with Bar(*_progress_columns(), console=err, transient=False, disable=quiet or not err.is_terminal) as bar:
        task = bar.add_task("", total=None, stats=stats)

        def on_progress(p):
            bar.update(task, total=p.total, completed=p.done + p.failed + p.skipped,
                       stats=f"done {p.done} · failed {p.failed} · cached {p.cached} ·"
                             f" {p.tokens_in + p.tokens_out:,} tok · {cost(p.cost_usd)}")

        def on_batch(batch_id, status):
            bar.update(task, stats=f"batch {escape(inert(batch_id))}: {escape(inert(status))}")

        try:
            final, signalled = _until_signal(prelabel.execute(
                db, run, opts, api_key=settings.api_key(opts.api_key_env), tokens=tokens, on_progress=on_progress,
                on_batch=on_batch, resume_batch=resume_batch))
        except RunInterrupted as exc:
            _fail(f"{exc}; resume with `mast prelabel --resume {run.id}`")
        if signalled:
            err.print(Text(f"interrupted: resume with `mast prelabel --resume {run.id}`", style="yellow"))
            sys.exit(128 + signalled)
    first, *rest = summary.run_lines(final, prelabel.spend(db, final), prelabel.prices(opts) if opts.judge else {},
                                     priced)
    out.print(Text(first, style="bold"))
    for line in rest:
        out.print(Text(line))
    counts = final.counts
    if counts.get("done"):
        out.print(Text(f"suggestions: {counts.get('present', 0)} present ({counts.get('ungrounded', 0)} ungrounded:"
                       f" the quote is not in the cited steps), {counts.get('absent', 0)} absent,"
                       f" {counts.get('unknown', 0)} unknown"))
    if final.params.get("stopped"):
        out.print(Text(f"stopped: {final.params['stopped']}", style="yellow"))
    for item in prelabel.failures(db, final):
        err.print(Text(f"failed: {item.trajectory_id}: {item.error}", style="red"))
    code = summary.exit_status(final, allow_failures)
    if code and counts.get("failed"):
        err.print(Text(f"{counts['failed']} trajectory(ies) failed: fix the cause and `mast prelabel --resume {final.id}`"
                       + ("" if counts.get("done") else "; nothing was labelled")
                       + ("" if allow_failures or not counts.get("done") else " (or pass --allow-failures)"),
                       style="red"))
    if code:
        sys.exit(code)


def _until_signal(coro):
    """Run ``coro``; SIGINT or SIGTERM cancels it (the run records itself as interrupted first).

    Returns (the coroutine's result, None), or (None, the number of the signal that stopped it).
    """
    import asyncio
    import signal

    async def main():
        task = asyncio.ensure_future(coro)
        loop = asyncio.get_running_loop()
        got: list[int] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, lambda s=sig: (got.append(s), task.cancel()))
        try:
            return await task, None
        except asyncio.CancelledError:
            if got:
                return None, got[0]
            raise
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    return asyncio.run(main())


# ---- annotate


@main.command("annotate")
@click.argument("paths", nargs=-1)
@click.option("--annotator", help="Your name on the labels (default: $MAST_ANNOTATOR, else the OS user).")
@click.option("--blind", is_flag=True, help="Hide suggestions, other annotators' labels, attributions and task"
              " outcomes (audits, agreement studies); recorded with each review.")
@click.option("--tag", help="Queue only trajectories with this tag (e.g. an audit sample from `mast sample`).")
@click.option("--adjudicate", metavar="A,B", help="Decide the disagreements of these two people (queue: what they both finished and disagree on).")
@click.option("--taxonomy", "taxonomy_path", type=click.Path(exists=True, dir_okay=False), help="A custom codebook file.")
@click.pass_context
@handled
def annotate_cmd(ctx, paths, annotator, blind, tag, adjudicate, taxonomy_path):
    """Open the annotation app: queue, step-by-step replay, tagging of failure modes.

    PATHS, if given, are imported first (files or folders, as with `mast import`; a file that
    fails is reported and the app opens on the rest). Every tag is saved the moment it is made;
    press ? in the app for the keys.

    \b
    Examples:
      mast annotate                          # annotate what is in ./mast.db
      mast --db study.db annotate runs/      # import runs/, then annotate
      mast annotate --annotator alice --blind
      mast annotate --tag audit-1 --blind    # label an audit sample without the judge's suggestions
      mast annotate --taxonomy my-codebook.yaml
      mast annotate --annotator carol --adjudicate alice,bob
    """
    from annotator.tui.app import make_app
    from annotator.tui.keys import check_hotkeys

    tax = _taxonomy(taxonomy_path)
    check_hotkeys(tax)
    if paths:
        db = _open(ctx)
        _import(db, paths, None, None, quiet=False)  # a file that fails is reported; the rest opens
        db.close()
    settings = _settings(ctx)
    pair = tuple(_sources((adjudicate,))) if adjudicate else None
    if pair is not None and len(pair) != 2:
        _fail("--adjudicate takes two people: A,B")
    app = make_app(settings.db, annotator or settings.annotator_name(), blind=blind, taxonomy=tax, adjudicate=pair,
                   tag=tag)
    app.run()
    if app.store_trouble:
        _fail(app.store_trouble)
    sys.exit(app.return_code or 0)


# ---- reports: report / agreement / export


_TAXONOMY_OPTION = click.option("--taxonomy", "taxonomy_path", type=click.Path(exists=True, dir_okay=False),
                                help="A custom codebook file (default: the built-in MAST taxonomy).")


def _sources(values: tuple[str, ...]) -> list[str]:
    return [s.strip() for v in values for s in v.split(",") if s.strip()] if values else []


def _emit(doc, fmt: str, path: str | None) -> None:
    """Render a report document in ``fmt`` to ``path`` (whole or not at all), or to stdout."""
    from annotator.report import output

    if path is None:
        if fmt == "terminal":
            from annotator.report.render_terminal import render

            render(doc, output.terminal_console(width=max(out.width, output.FILE_WIDTH)))
        else:
            output.write(doc, fmt, sys.stdout)
        return
    with output.atomic_file(path) as fh:
        output.write(doc, fmt, fh)
    err.print(Text(f"wrote {path}", style="dim"))


def _print_sources(listed, console) -> None:
    from annotator.label_sources import KINDS
    from annotator.text import inert

    table = Table(title="Label sources", title_justify="left", header_style="bold", box=box.SIMPLE_HEAD)
    table.add_column("source", overflow="fold", min_width=min(30, max(len(s.name) for s in listed)))
    table.add_column("kind", no_wrap=True)
    table.add_column("finished", justify="right", no_wrap=True)
    table.add_column("modes covered", overflow="fold")
    table.add_column("last activity (UTC)", no_wrap=True)
    for s in listed:
        modes = f"{len(s.modes)} of {s.codebook_modes}" + (f": {', '.join(s.modes)}" if 0 < len(s.modes) < s.codebook_modes
                                                            else "")
        table.add_row(Text(inert(s.name)), KINDS[s.kind].title, f"{s.finished:,}", modes,
                      (s.last_activity or "-")[:19].replace("T", " "))
    console.print(table)


def _listed_sources(db, taxonomy):
    from annotator.report.source_list import summaries

    return summaries(db, taxonomy)


def _source_or_exit(db, taxonomy, command: str) -> str:
    """The only label source when --source is not given; else list them and exit 2."""
    from annotator.report.source_list import SourceNeeded, only_source

    listed = _listed_sources(db, taxonomy)
    try:
        name = only_source(listed, command)
    except SourceNeeded as exc:
        if listed:
            _print_sources(listed, err)
        _fail(str(exc), code=2)
    err.print(Text(f"source: {name} (the only label source)", style="dim"))
    return name


@main.command("sources")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of a table.")
@_TAXONOMY_OPTION
@click.pass_context
@handled
def sources_cmd(ctx, as_json, taxonomy_path):
    """Every label source: name, kind, trajectories finished, modes covered, last activity.

    Kinds: person (labels in the annotator; finished = marked done), run (a pre-labelling run,
    run:<id>; finished = a verdict on every mode it covers), imported human set and imported
    judge set (finished = has labels), consensus (the majority of two or more people).

    \b
    Examples:
      mast sources
      mast sources --json
    """
    listed = _listed_sources(_open(ctx), _taxonomy(taxonomy_path))
    if as_json:
        for s in listed:
            sys.stdout.write(json_text(s.as_dict()) + "\n")
        return
    if not listed:
        err.print(Text("no label sources yet: annotate, prelabel or import labels first", style="dim"))
        return
    _print_sources(listed, out)


@main.command("report")
@click.option("--source", "-s",
              help="Whose labels: a person, run:<id>, an imported set (mad-llm, mad-human-2), consensus"
                   " (majority of the people who marked a trajectory done) or consensus:alice,bob."
                   " Default: the only source, if there is one (see `mast sources`).")
@click.option("--by", default="system,model", show_default=True, help="Grouping columns (system, model, benchmark).")
@click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS), default="terminal", show_default=True)
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False), help="Write to this file.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option("--bootstrap", "replicates", type=click.IntRange(0), default=1000, show_default=True,
              help="Bootstrap replicates over trajectories (0 = none).")
@click.option("--rows", type=click.IntRange(0), default=50, show_default=True,
              help="Trajectories listed in terminal/md/html (json and csv list all).")
@click.option("--audit", metavar="SOURCE",
              help="People who labelled an audit sample of the source (a person, consensus, an imported set):"
                   " adds the judge's estimates corrected by prediction-powered inference.")
@click.option("--audit-sample", metavar="TAG", help="The audit sample (default: the newest drawn from the source).")
@_filter_options()
@_TAXONOMY_OPTION
@click.pass_context
@handled
def report_cmd(ctx, source, by, fmt, output, seed, replicates, rows, audit, audit_sample, flt, taxonomy_path):
    """Which failure modes the trajectories show, per system and model, and which predict failure.

    Counts only the trajectories the label source finished and says how many were left out
    and why. Sections: per trajectory, prevalence (Wilson 95% CI), modes per failed and per
    successful trajectory, failed-vs-successful gaps and the strongest predictor, risk and
    odds ratios, Fisher's test with BH q, logistic regression (with and without FC3),
    group comparisons, co-occurrence and onsets.

    \b
    Examples:
      mast report --source alice
      mast report --source run:3 --by model --format html -o report.html
      mast report --source consensus --outcome failure --format md
      mast report --source mad-llm --system AG2 --format json -o report.json
      mast report --source run:3 --audit alice     # judge corrected by alice's blind audit (PPI)
    """
    from annotator.report.document import build_report

    if audit_sample and not audit:
        raise click.UsageError("--audit-sample names the sample of an --audit: give --audit SOURCE with it")
    db, taxonomy = _open(ctx), _taxonomy(taxonomy_path)
    source = source or _source_or_exit(db, taxonomy, "report")
    doc = build_report(
        db, source, taxonomy, flt, by=tuple(_sources((by,))), seed=seed,
        replicates=replicates, row_limit=None if fmt in ("json", "csv") else rows,
        audit=audit, audit_sample=audit_sample,
    )
    _emit(doc, fmt, output)


@main.command("agreement")
@click.option("--source", "-s", "sources", multiple=True,
              help="A label source (repeat, or comma-separated): person, run:<id>, imported set, consensus."
                   " Without it the sources are listed (see `mast sources`).")
@click.option("--reference", "-r", help="The source the others are scored against (precision, recall, F1, κ).")
@click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS), default="terminal", show_default=True)
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False), help="Write to this file.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option("--bootstrap", "replicates", type=click.IntRange(0), default=1000, show_default=True,
              help="Bootstrap replicates over trajectories (0 = no intervals).")
@click.option("--tolerance", "-k", type=click.IntRange(0), default=3, show_default=True,
              help="Onsets within this many steps count as agreeing.")
@_filter_options()
@_TAXONOMY_OPTION
@click.pass_context
@handled
def agreement_cmd(ctx, sources, reference, fmt, output, seed, replicates, tolerance, flt, taxonomy_path):
    """How well two or more label sources agree, over the trajectories all of them finished.

    Per mode and pooled: observed, positive and negative agreement, prevalence, Cohen's κ and
    Gwet's AC1 per pair, AC1, Fleiss' κ and Krippendorff's α for three or more; with
    --reference, each source's κ against it next to the human ceiling (the human sources'
    mean pairwise κ), precision, recall and F1 (checking a judge against humans); onset
    agreement exact and within ±k steps. Intervals: cluster bootstrap over trajectories.
    Modes with fewer than 10 positives are "not estimable" for κ and α.

    \b
    Examples:
      mast agreement -s mad-human-1 -s mad-human-2 -s mad-human-3
      mast agreement -s run:3 -s consensus --reference consensus --format html -o judge.html
      mast agreement -s alice,bob -k 2 --bootstrap 2000 --seed 7 --format json
    """
    from annotator.report.agreement_report import build_agreement

    db, taxonomy = _open(ctx), _taxonomy(taxonomy_path)
    if not sources:
        listed = _listed_sources(db, taxonomy)
        if listed:
            _print_sources(listed, err)
        _fail("agreement: name two or more label sources with --source", code=2)
    doc = build_agreement(
        db, _sources(sources), taxonomy, flt, reference=reference, seed=seed, replicates=replicates,
        tolerance=tolerance,
    )
    _emit(doc, fmt, output)


@main.command("export")
@click.option("--source", "-s", "sources", multiple=True, required=True,
              help="A label source to export (repeat, or comma-separated).")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv", "wide-csv", "mad-json"]), default="jsonl",
              show_default=True, help="Long JSONL or CSV (one row per trajectory × mode × source), wide CSV"
                                      " (trajectory × mode 0/1), or MAD-style JSON (mast_annotation).")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False), help="Write to this file.")
@_filter_options()
@_TAXONOMY_OPTION
@click.pass_context
@handled
def export_cmd(ctx, sources, fmt, output, flt, taxonomy_path):
    """Export the labels a report counts, to recompute every number elsewhere.

    Only each source's finished trajectories are exported. `mast import` reads the JSONL
    back and restores the same labels (trajectories become stubs when not already present).

    \b
    Examples:
      mast export -s alice -o alice.jsonl
      mast export -s mad-human-1,mad-human-2,mad-human-3 --format wide-csv -o humans.csv
      mast export -s run:3 --format mad-json -o judge_mad.json
    """
    from annotator.report.export import write_export
    from annotator.report.output import atomic_file

    db, taxonomy = _open(ctx), _taxonomy(taxonomy_path)
    if output is None:
        write_export(db, fmt, _sources(sources), taxonomy, sys.stdout, flt)
        return
    with atomic_file(output) as fh:
        write_export(db, fmt, _sources(sources), taxonomy, fh, flt)
    err.print(Text(f"wrote {output}", style="dim"))


@main.command("sample")
@click.option("--source", "-s", required=True, help="The label source to audit, usually a judge's run:<id>.")
@click.option("--size", "-n", type=click.IntRange(min=1), required=True, help="How many trajectories to draw.")
@click.option("--tag", required=True, help="The sample's name; its trajectories carry it as a tag.")
@click.option("--stratify", type=click.Choice(["verdict", "outcome", "system"]),
              help="Stratify (equal allocation): by the source's verdict on --mode, by outcome or by system."
                   " Default: simple random.")
@click.option("--mode", metavar="FM-x.y", help="--stratify verdict: the mode (default: the rarest one the source flags).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the draw.")
@_filter_options(with_tag=False)
@_TAXONOMY_OPTION
@click.pass_context
@handled
def sample_cmd(ctx, source, size, tag, stratify, mode, seed, flt, taxonomy_path):
    """Draw an audit sample of the trajectories a label source finished, for people to label blind.

    The sample and each trajectory's inclusion probability are stored under TAG; `mast annotate
    --tag TAG --blind` queues exactly these trajectories, and `mast report -s SOURCE --audit NAME`
    corrects the source's estimates with the audited labels (prediction-powered inference).

    \b
    Examples:
      mast sample -s run:3 -n 200 --tag audit-1 --seed 7
      mast sample -s run:3 -n 200 --tag audit-2 --stratify verdict --mode FM-2.4
      mast annotate --tag audit-1 --blind --annotator alice
    """
    from annotator.report.sampling import draw

    sample, _ = draw(_open(ctx), source, size, tag, _taxonomy(taxonomy_path), flt, stratify=stratify, mode=mode,
                     seed=seed)
    design = f"stratified by {sample.stratify}, equal allocation" if sample.stratify else "simple random"
    out.print(Text(f"sample {sample.tag}: {sample.size} of the {sample.population} trajectories {source} finished"
                   f" ({design}, seed {sample.seed})", style="bold"), soft_wrap=True)
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("stratum", "trajectories", "drawn", "inclusion probability"):
        table.add_column(col, justify="left" if col == "stratum" else "right")
    for stratum, (population, drawn) in sample.strata.items():
        table.add_row(Text(stratum), str(population), str(drawn), f"{drawn / population:.4f}")
    out.print(table)
    out.print(Text(f"next: mast annotate --tag {sample.tag} --blind", style="dim"), soft_wrap=True)
# ---- working as a team: assign / progress


@main.command("assign")
@click.option("--annotators", required=True, metavar="A,B,...", help="The people to share the trajectories between.")
@click.option("--overlap", type=click.FloatRange(0, 1), default=0.2, show_default=True,
              help="Share of the trajectories given to two people (labelled blind by both, for agreement).")
@click.option("--stratify", type=click.Choice(["system"]), help="Balance each person's share within each system.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the choice of overlap items.")
@_filter_options()
@click.pass_context
@handled
def assign_cmd(ctx, annotators, overlap, stratify, seed, flt):
    """Share the (filtered) trajectories between people, a share of them labelled twice.

    Each person gets as close to the same number as possible (within each system with
    --stratify system). Run it again after importing more: only trajectories nobody has yet
    are given out; earlier assignments stay. `mast annotate --annotator NAME` then shows NAME
    their own trajectories first, the overlap ones blind.

    \b
    Examples:
      mast assign --annotators alice,bob,carol --overlap 0.2 --seed 1
      mast assign --annotators alice,bob --overlap 0.5 --tag pilot --stratify system
    """
    from collections import Counter

    from annotator.annotating.assignments import Candidate, assign
    from annotator.store import assignments as assigned_store
    from annotator.store.report_tables import trajectory_rows
    from annotator.text import inert

    db = _open(ctx)
    people = [a.strip() for a in annotators.split(",") if a.strip()]
    rows = trajectory_rows(db, flt)
    before = assigned_store.assigned(db)
    candidates = [Candidate(r[0], (r[1] or "") if stratify else None) for r in rows]
    added = assign(db, candidates, people, overlap, seed=seed)
    after = assigned_store.assigned(db)
    new = {tid: who for tid, who in after.items() if tid not in before}
    kept = sum(1 for r in rows if r[0] in before)
    doubles = sum(1 for who in new.values() if len(who) > 1)
    out.print(Text(f"assigned {len(new)} trajectories ({doubles} to two people, {added} assignments);"
                   f" {kept} already assigned, kept"))
    per = Counter(w for who in new.values() for w in who)
    total = Counter(w for who in after.values() for w in who)
    for person in sorted(total):
        line = Text("  ")
        line.append(Text(inert(person), style="bold"))
        line.append(f": {per.get(person, 0)} new, {total[person]} in all")
        out.print(line)


@main.command("progress")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one object per person.")
@_TAXONOMY_OPTION
@click.pass_context
@handled
def progress_cmd(ctx, as_json, taxonomy_path):
    """How far each person is with their assignments, and how they agree where they overlap.

    Per person: assigned, done, in progress, time spent, overlap (their trajectories also given
    to someone else) and on the overlap both finished, Cohen's κ over the (trajectory, mode)
    cells, present vs not.

    \b
    Examples:
      mast progress
      mast progress --json
    """
    from annotator.annotating.assignments import agreement_text, duration, team_progress
    from annotator.text import inert

    people = team_progress(_open(ctx), _taxonomy(taxonomy_path).mode_ids)
    if as_json:
        sys.stdout.write(json_text([p.as_dict() for p in people], option=orjson.OPT_INDENT_2) + "\n")
        return
    if not people:
        out.print("no assignments yet: mast assign --annotators alice,bob --overlap 0.2")
        return
    table = Table(box=None, header_style="bold", pad_edge=False)
    for col in ("annotator", "assigned", "done", "in progress", "time", "overlap", "agreement on the overlap"):
        table.add_column(col, justify="right" if col in ("assigned", "done", "in progress", "time", "overlap") else "left")
    for p in people:
        table.add_row(Text(inert(p.annotator)), str(p.assigned), str(p.done), str(p.in_progress), duration(p.seconds_spent),
                      str(p.overlap), agreement_text(p))
    out.print(table)


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (not local: a token is required).")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@click.option("--token", help="The token every request must carry (default for a non-local --host: a new one, printed in the URL).")
@click.option("--blind", is_flag=True, help="Every app it starts is blind (suggestions, others' labels, outcomes hidden).")
@click.pass_context
@handled
def serve_cmd(ctx, host, port, token, blind):
    """Serve the annotation app to browsers: one app per page, each with its own annotator name.

    Open the printed URL and add `&annotator=NAME` (or type the name in the form it shows).
    Only 127.0.0.1 is served without a token; any other address needs one, and a request
    without it is refused.

    \b
    Examples:
      mast serve                                 # http://127.0.0.1:8000/?annotator=alice
      mast serve --host 0.0.0.0 --port 8080      # prints http://0.0.0.0:8080/?token=...
      mast --db study.db serve --host 10.0.0.5 --token s3cret
    """
    from annotator.tui.serve import serve

    db = _open(ctx)  # migrated and checked before any browser connects
    db.close()
    serve(Path(_settings(ctx).db).resolve(), host=host, port=port, token=token, blind=blind).serve()


if __name__ == "__main__":
    main()
