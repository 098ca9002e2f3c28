"""`mast prelabel` as one core call: select trajectories, set up the labeller, run, record.

The CLI parses flags into :class:`PrelabelOptions` and renders progress; everything else is
here, so that a run can be started, dry-run or resumed the same way from anywhere. A run's
options are kept in its LabelRun parameters (never the API key, only the name of the variable
it came from), which is what ``--resume RUN_ID`` reads back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal
from urllib.parse import urlparse, urlsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlite_utils import Database

from annotator.errors import LabellingError
from annotator.labelling import mast_original
from annotator.labelling.batch import run_batch
from annotator.labelling.judge import JudgeSettings, LLMLabeller
from annotator.labelling.pricing import Price, Usage, price_for
from annotator.labelling.prompts import prompt_hash
from annotator.labelling.rules import DETECTORS
from annotator.labelling.rules_pool import PooledRules
from annotator.labelling.redaction import strip_credentials
from annotator.labelling.runner import DEFAULT_CONCURRENCY, DryRun, RunProgress, begin_usage, dry_run, run_labeller
from annotator.labelling.windows import TokenCounter
from annotator.models import LabelRun
from annotator.settings import DEFAULT_API_KEY_ENV
from annotator.store.requests import RunItem, Spend, run_items, run_spend
from annotator.store.runs import create_run, get_run, update_run
from annotator.store.trajectories import list_trajectories, resolve_id
from annotator.taxonomy import Taxonomy, load_taxonomy
from annotator.views import TrajectoryFilter


class PrelabelOptions(BaseModel):
    """Everything a pre-labelling run is asked to do (what ``--resume`` restores)."""

    model_config = ConfigDict(extra="forbid")

    labeller: Literal["llm", "rules"] = "llm"
    trajectories: TrajectoryFilter = Field(
        default_factory=TrajectoryFilter, description="Which trajectories: the filter every command shares."
    )
    limit: int | None = Field(None, ge=1)
    judge: JudgeSettings | None = None
    definitions_path: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    concurrency: int = Field(DEFAULT_CONCURRENCY, ge=1)
    #: Requests and tokens per minute to stay under, for servers that send no rate-limit headers.
    rpm: float | None = Field(None, gt=0)
    tpm: float | None = Field(None, gt=0)
    #: False: keep exactly ``concurrency`` requests in flight whatever the server says.
    adaptive: bool = True
    timeout: float = Field(120.0, gt=0)
    max_attempts: int = Field(5, ge=1)
    max_cost: float | None = Field(None, ge=0)
    price_in: float | None = Field(None, ge=0)
    price_out: float | None = Field(None, ge=0)
    price_cached: float | None = Field(None, ge=0)
    batch: bool = False
    poll_seconds: float = Field(30.0, gt=0)
    taxonomy_path: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _filter_of_older_runs(cls, data: object) -> object:
        """Runs recorded before the shared filter kept its fields at the top level (the
        trajectory model as ``source_model``): read them into ``trajectories`` so they resume."""
        if isinstance(data, dict) and _LEGACY_FILTER.keys() & data.keys():
            data = dict(data)
            legacy = {new: data.pop(old) for old, new in _LEGACY_FILTER.items() if old in data}
            data["trajectories"] = {**data.get("trajectories", {}), **{k: v for k, v in legacy.items() if v is not None}}
        return data


#: Top-level options of runs recorded before ``trajectories``, and the filter field each became.
_LEGACY_FILTER = {"ids": "ids", "system": "system", "source_model": "model", "benchmark": "benchmark",
                  "outcome": "outcome"}


def endpoint_host(base_url: str | None) -> str:
    """Host (and port) of the endpoint: all a run records of where it sent requests."""
    if not base_url:
        return "api.openai.com"
    parsed = urlparse(base_url)
    return parsed.hostname + (f":{parsed.port}" if parsed.port else "") if parsed.hostname else "unknown"


def select(db: Database, opts: PrelabelOptions) -> list[str]:
    """The ids of the trajectories the options select, in a stable order."""
    flt = opts.trajectories
    if flt.ids:
        flt = flt.model_copy(update={"ids": [resolve_id(db, ref) for ref in flt.ids]})
    chosen = [t.id for t in list_trajectories(db, flt)]
    return chosen[: opts.limit] if opts.limit else chosen


def check_base_url(url: str) -> None:
    """Refuse an endpoint URL that cannot work, before anything is stored or sent.

    Credentials in the URL are refused too: the client sends the API key as its Authorization
    header and cannot send a URL's user and password beside it, and a URL is stored with the run.
    """
    shown = strip_credentials(url)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises on a malformed port)
    except ValueError as exc:
        raise LabellingError(f"--base-url {shown!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise LabellingError(f"--base-url {shown!r} is not an http(s) URL with a host (e.g. http://localhost:8080/v1)")
    if parts.username is not None or parts.password is not None:
        raise LabellingError(f"--base-url {shown!r} carries credentials: give the token through the API key "
                             "variable (--api-key-env) instead; URLs are stored with the run")


def _check_judge(opts: PrelabelOptions) -> None:
    if opts.labeller == "llm" and opts.judge is None:
        raise LabellingError("the llm labeller needs at least one --model")
    if opts.labeller == "llm" and opts.judge is not None and opts.judge.base_url is not None:
        check_base_url(opts.judge.base_url)


def _definitions(opts: PrelabelOptions, taxonomy: Taxonomy) -> tuple[dict[str, str] | None, str]:
    if not opts.definitions_path:
        return None, ""
    if opts.judge is None or opts.judge.prompt != "mast-original":
        raise LabellingError("--definitions is used by --prompt mast-original only")
    defs = mast_original.load_definitions(opts.definitions_path, taxonomy)
    return defs, "\n".join(f"{k}\x00{v}" for k, v in sorted(defs.items()))


def prices(opts: PrelabelOptions) -> dict[str, Price]:
    """The price of every judge model of the run, as the run reckons its cost."""
    assert opts.judge is not None
    return {m: price_for(m, opts.price_in, opts.price_out, price_cached=opts.price_cached, batch=opts.batch)
            for m in opts.judge.models}


def _llm_labeller(db: Database, opts: PrelabelOptions, taxonomy: Taxonomy, client, usage: Usage,
                  tokens: TokenCounter | None, run_id: int | None = None) -> LLMLabeller:
    judge = opts.judge
    assert judge is not None
    defs, _ = _definitions(opts, taxonomy)
    return LLMLabeller(db, client, judge, taxonomy, prices=prices(opts), usage=usage,
                       endpoint_host=endpoint_host(judge.base_url), definitions=defs, tokens=tokens, run_id=run_id)


def estimate(db: Database, opts: PrelabelOptions, *, tokens: TokenCounter | None = None) -> DryRun:
    """What the run would send and cost; nothing is sent and nothing is written."""
    _check_judge(opts)
    if opts.labeller == "rules":
        n = len(select(db, opts))
        return DryRun(trajectories=n, requests=0, cached=0, tokens_in=0, tokens_out=0, cost_usd=0.0, price_known=True)
    taxonomy = load_taxonomy(opts.taxonomy_path)
    return dry_run(db, _llm_labeller(db, opts, taxonomy, None, Usage(), tokens), select(db, opts))


def _price_known(opts: PrelabelOptions) -> bool:
    """Whether the run's cost can be told: rules cost nothing, a judge needs a price for every model."""
    if opts.labeller == "rules" or opts.judge is None:
        return True
    return all(p.known for p in prices(opts).values())


def _require_key(opts: PrelabelOptions, api_key: str | None) -> str:
    if not api_key:
        raise LabellingError(f"no API key: set {opts.api_key_env} (or name another variable with --api-key-env)")
    return api_key


def start_run(db: Database, opts: PrelabelOptions, *, api_key: str | None) -> tuple[LabelRun, PrelabelOptions]:
    """Record a new run (status running) with its options; nothing is sent yet. ``api_key`` is
    the key held in ``opts.api_key_env``: a judge's run is not started without one."""
    _check_judge(opts)
    if opts.labeller == "llm":
        _require_key(opts, api_key)
    taxonomy = load_taxonomy(opts.taxonomy_path)
    _, extra = _definitions(opts, taxonomy)
    judge = opts.judge
    name = judge.prompt if judge and opts.labeller == "llm" else "rules"
    run = LabelRun(
        kind=opts.labeller,
        model=",".join(judge.models) if judge and opts.labeller == "llm" else None,
        endpoint_host=endpoint_host(judge.base_url) if judge and opts.labeller == "llm" else None,
        prompt_name=name,
        prompt_hash=prompt_hash(name, taxonomy, extra if opts.labeller == "llm" else ",".join(DETECTORS)),
        params={"options": opts.model_dump(mode="json"), "price_known": _price_known(opts)},
        taxonomy_hash=taxonomy.version_hash,
    )
    return create_run(db, run), opts


def run_options(db: Database, run_id: int) -> PrelabelOptions:
    """The options a stored run was started with (its ``api_key_env`` names the key it needs)."""
    run = get_run(db, run_id)
    if "options" not in run.params:
        raise LabellingError(f"run {run_id} has no recorded options and cannot be resumed")
    return PrelabelOptions.model_validate(run.params["options"])


#: What a resumed run may change: how it is paced and how much it may spend in all. What it labels
#: and how it asks (models, prompt, filters, prices) stay as started, so its verdicts stay one run's.
RESUMABLE = ("concurrency", "rpm", "tpm", "adaptive", "timeout", "max_attempts", "max_cost", "poll_seconds")


def resume_run(db: Database, run_id: int, *, api_key: str | None,
               changes: Mapping[str, Any] | None = None) -> tuple[LabelRun, PrelabelOptions]:
    """A stored run set running again, with the options it was started with and ``changes`` (of
    :data:`RESUMABLE` only) stored over them, so a budget raised on one resume holds for the next."""
    changes = dict(changes or {})
    if refused := sorted(set(changes) - set(RESUMABLE)):
        raise LabellingError(f"a resumed run keeps its settings: cannot change {', '.join(refused)}")
    opts = run_options(db, run_id)
    if opts.labeller == "llm":
        _require_key(opts, api_key)
    run = get_run(db, run_id)
    if changes:
        opts = PrelabelOptions.model_validate(opts.model_dump() | changes)
    params = run.params | {"options": opts.model_dump(mode="json")}
    params.pop("stopped", None)  # why the last session stopped is not why this one will
    run = run.model_copy(update={"status": "running", "finished_at": None, "params": params})
    update_run(db, run)
    return run, opts


def spend(db: Database, run: LabelRun) -> Spend:
    """What ``run`` sent and paid for over all its sessions, per model, from what it stored."""
    return run_spend(db, run.id) if run.id is not None else Spend()


def failures(db: Database, run: LabelRun, limit: int = 20) -> list[RunItem]:
    """The first ``limit`` trajectories the run failed on, with why (what a summary lists)."""
    return run_items(db, run.id, "failed")[:limit]


async def execute(
    db: Database,
    run: LabelRun,
    opts: PrelabelOptions,
    *,
    api_key: str | None,
    tokens: TokenCounter | None = None,
    on_progress: Callable[[RunProgress], None] | None = None,
    on_batch: Callable[[str, str], None] | None = None,
    resume_batch: str | None = None,
) -> LabelRun:
    """Run (or continue) ``run``: label what it has not labelled yet and record the outcome."""
    taxonomy = load_taxonomy(opts.taxonomy_path)
    ids = select(db, opts)
    usage = begin_usage(db, run, opts.max_cost)
    if opts.labeller == "rules":
        with PooledRules(db) as labeller:
            return await run_labeller(db, labeller, taxonomy, run, ids, concurrency=opts.concurrency,
                                      usage=usage, on_progress=on_progress)
    key = _require_key(opts, api_key)
    from annotator.labelling.llm import JudgeClient

    assert opts.judge is not None
    client = JudgeClient(base_url=opts.judge.base_url, api_key=key, timeout=opts.timeout,
                         max_attempts=opts.max_attempts, concurrency=opts.concurrency, rpm=opts.rpm, tpm=opts.tpm,
                         adaptive=opts.adaptive)
    try:
        labeller = _llm_labeller(db, opts, taxonomy, client, usage, tokens, run.id)
        if opts.batch or resume_batch:
            run, _ = await run_batch(db, labeller, client, run, ids, batch_id=resume_batch,
                                     poll_seconds=opts.poll_seconds, on_status=on_batch)
        return await run_labeller(db, labeller, taxonomy, run, ids, concurrency=opts.concurrency,
                                  usage=usage, on_progress=on_progress)
    finally:
        await client.close()
