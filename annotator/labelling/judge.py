"""The LLM labeller: plans a trajectory's requests, asks through the cache, validates, votes.

A trajectory becomes one request per (window, model, sample). Every request has a cache key
of (model, endpoint, prompt hash, parameters, sample index); a response is stored the moment
it arrives and read back instead of being sent again. An answer that fails validation is sent
back once with the reason (``repairs``), and if it is still invalid the trajectory fails: no
label is made from it. Verdicts of a vote's windows are merged, then votes are combined.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from sqlite_utils import Database

from annotator.errors import LabellingError
from annotator.labelling import mast_original
from annotator.labelling.grounding import check_answer
from annotator.labelling.llm import JudgeClient, extract_json
from annotator.labelling.pricing import Price, Usage
from annotator.labelling.prompts import (
    StructuredPrompt,
    content_tag,
    part_note,
    render_step,
    render_trajectory,
    repair_messages,
)
from annotator.labelling.responses import ResponseWriter
from annotator.labelling.verdicts import InvalidAnswer, JudgeAnswer, LabelFailure, ModeVerdict, answer_schema
from annotator.labelling.voting import majority
from annotator.labelling.windows import TokenCounter, merge_windows, plan_windows
from annotator.models import Trajectory
from annotator.store.requests import Response, cached_keys, cached_response, prompt_secret
from annotator.store.trajectories import get_trajectory
from annotator.taxonomy import Taxonomy

PromptName = Literal["structured", "mast-original"]
#: Tokens kept free in every request for the instructions' own variations and the task text.
_MARGIN_TOKENS = 200


class BudgetExhausted(LabellingError):
    """The next request would take the run over ``--max-cost``: the run stops cleanly."""


#: The judge's temperature when none is given: deterministic for one vote, varied for several.
SINGLE_VOTE_TEMPERATURE = 0.0
VOTING_TEMPERATURE = 0.7


class JudgeSettings(BaseModel):
    """How the judge is asked: recorded in the run's parameters."""

    model_config = ConfigDict(extra="forbid")

    models: list[str] = Field(min_length=1)
    base_url: str | None = None
    prompt: PromptName = "structured"
    samples: int = Field(1, ge=1)
    temperature: float = Field(
        None, ge=0, le=2, validate_default=True,  # type: ignore[arg-type]  (None: chosen from samples)
        description=f"Sampling temperature; unset, {SINGLE_VOTE_TEMPERATURE} for one vote per model and"
        f" {VOTING_TEMPERATURE} when several samples vote (identical answers would make a vote pointless).",
    )
    max_input_tokens: int = Field(60_000, ge=500)
    max_output_tokens: int | None = None
    repairs: int = Field(1, ge=0)

    @field_validator("temperature", mode="before")
    @classmethod
    def _default_temperature(cls, value: float | None, info: ValidationInfo) -> float:
        if value is not None:
            return value
        return VOTING_TEMPERATURE if info.data.get("samples", 1) > 1 else SINGLE_VOTE_TEMPERATURE


class PlannedRequest(BaseModel):
    """One first-round request of a trajectory: which window, which voter, its cache key and size."""

    model: str
    sample: int
    window: int
    first_step: int
    last_step: int
    messages: list[dict[str, str]]
    key: str
    tokens_in: int


def expected_output_tokens(prompt: PromptName, n_modes: int) -> int:
    """A typical answer's length, for dry-run estimates and budget reservations."""
    return 40 * n_modes + 60 if prompt == "structured" else 12 * n_modes + 80


class LLMLabeller:
    """The judge as a Labeller; needs a client only to send what the cache does not hold."""

    kind = "llm"
    needs_steps = True

    def __init__(
        self,
        db: Database,
        client: JudgeClient | None,
        settings: JudgeSettings,
        taxonomy: Taxonomy,
        *,
        prices: dict[str, Price],
        usage: Usage,
        endpoint_host: str | None,
        definitions: dict[str, str] | None = None,
        run_id: int | None = None,
        tokens: TokenCounter | None = None,
    ):
        self.db, self.client, self.settings, self.taxonomy = db, client, settings, taxonomy
        self.prices, self.usage, self.endpoint_host = prices, usage, endpoint_host
        self.run_id = run_id
        self.tokens = tokens or TokenCounter()
        self.schema = answer_schema() if settings.prompt == "structured" else None
        self._structured = StructuredPrompt(taxonomy, self.schema) if self.schema is not None else None
        self._original = mast_original.system_message(taxonomy, definitions) if self.schema is None else ""
        self._secret = prompt_secret(db)
        self._responses = ResponseWriter(db)
        self.sent = 0
        self.cached = 0
        #: Requests in flight by key, with how many askers share each: an identical request
        #: (two trajectories with the same task and steps) waits for the first answer instead of
        #: being paid for twice while only one response can be stored.
        self._in_flight: dict[str, tuple[asyncio.Lock, list[int]]] = {}

    # -- planning --------------------------------------------------------------------------

    def _prompt_tokens(self, messages: list[dict[str, str]], model: str) -> int:
        """Input tokens of a prompt for ``model``."""
        return sum(self.tokens(m["content"], model) for m in messages)

    def _messages(self, text: str) -> list[dict[str, str]]:
        if self._structured is not None:
            return self._structured.messages(text)
        return mast_original.messages(self._original, text)

    def key(self, model: str, messages: list[dict[str, str]], sample: int) -> str:
        """The cache key of a request: model, endpoint, prompt hash, parameters, sample index."""
        s = self.settings
        prompt = hashlib.sha256(orjson.dumps(messages)).hexdigest()
        params = {"prompt": s.prompt, "temperature": s.temperature, "max_tokens": s.max_output_tokens}
        material = orjson.dumps([model, s.base_url or "", prompt, params, sample], option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(material).hexdigest()

    def plan(self, traj: Trajectory) -> list[PlannedRequest]:
        """Every first-round request of ``traj``, windows first, then models, then samples."""
        s = self.settings
        model0 = s.models[0]
        tag = content_tag(traj, self._secret)
        rendered = [render_step(step, tag) for step in traj.steps]
        empty = render_trajectory(traj, [], tag, part_note(traj.steps, len(traj.steps), 1, 2) if traj.steps else None)
        overhead = self._prompt_tokens(self._messages(empty), model0)
        budget = max(s.max_input_tokens - overhead - _MARGIN_TOKENS, 1)
        windows = plan_windows([self.tokens(r, model0) for r in rendered], budget)
        plans = []
        for k, w in enumerate(windows):
            steps = traj.steps[w.start : w.stop]
            note = part_note(steps, len(traj.steps), k + 1, len(windows)) if steps else None
            messages = self._messages(render_trajectory(traj, rendered[w.start : w.stop], tag, note))
            for model in s.models:
                tokens_in = self._prompt_tokens(messages, model)  # once per (window, model): samples share it
                for sample in range(s.samples):
                    plans.append(
                        PlannedRequest(
                            model=model,
                            sample=sample,
                            window=k,
                            first_step=steps[0].index if steps else 0,
                            last_step=steps[-1].index if steps else -1,
                            messages=messages,
                            key=self.key(model, messages, sample),
                            tokens_in=tokens_in,
                        )
                    )
        return plans

    def estimate(self, model: str, tokens_in: int, tokens_cached: int = 0) -> tuple[int, int, float]:
        """(input tokens, output tokens, cost) expected for one request of ``tokens_in`` to ``model``,
        ``tokens_cached`` of them expected from the provider's prompt cache."""
        tout = self.settings.max_output_tokens or expected_output_tokens(self.settings.prompt, len(self.taxonomy.modes))
        return tokens_in, tout, self.prices[model].cost(tokens_in, tout, tokens_cached)

    def fixed_prefix_tokens(self, model: str) -> int:
        """Tokens of the system message every request of the run starts with: what a provider's
        prompt cache can serve after the first request."""
        return self.tokens(self._messages("")[0]["content"], model)

    # -- labelling -------------------------------------------------------------------------

    async def label(self, trajectory: Trajectory, taxonomy: Taxonomy) -> list[ModeVerdict]:
        plans = self.plan(trajectory)
        if len(plans) == 1:  # the usual case: awaited in place, without a task and a gather of its own
            results: list = [await self._answer(trajectory, plans[0])]
        else:
            results = await asyncio.gather(*(self._answer(trajectory, p) for p in plans), return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException):
                raise r
        votes: dict[tuple[str, int], list[list[ModeVerdict]]] = {}
        for p, verdicts in zip(plans, results, strict=True):
            votes.setdefault((p.model, p.sample), []).append(verdicts)  # type: ignore[arg-type]
        return majority([(f"{m}#{k}", merge_windows(ws)) for (m, k), ws in votes.items()])

    async def _answer(self, traj: Trajectory, req: PlannedRequest) -> list[ModeVerdict]:
        messages, key, tokens_in, problem = req.messages, req.key, req.tokens_in, ""
        for _ in range(self.settings.repairs + 1):
            text = await self._ask(traj.id, req.model, messages, key, tokens_in)
            try:
                return self._read(text, traj, req)
            except InvalidAnswer as exc:
                problem = str(exc)
            messages = repair_messages(req.messages, text, problem)
            key = self.key(req.model, messages, req.sample)
            tokens_in = self._prompt_tokens(messages, req.model)
        raise LabelFailure(
            f"{req.model}: invalid answer after {self.settings.repairs + 1} tries: {problem}"
        )

    def _read(self, text: str, traj: Trajectory, req: PlannedRequest) -> list[ModeVerdict]:
        if self.settings.prompt == "mast-original":
            return mast_original.to_verdicts(text, self.taxonomy)
        try:
            answer = JudgeAnswer.model_validate(extract_json(text))
        except ValueError as exc:  # ValidationError is a ValueError too
            if isinstance(exc, ValidationError):
                detail = "; ".join(
                    f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:8]
                )
                raise InvalidAnswer(f"the JSON does not match the schema: {detail}") from exc
            raise InvalidAnswer("the reply is not a JSON object") from exc
        window = [s for s in traj.steps if req.first_step <= s.index <= req.last_step]
        return check_answer(answer, self.taxonomy, window)

    async def _ask(
        self, traj_id: str, model: str, messages: list[dict[str, str]], key: str, tokens_in: int
    ) -> str:
        lock, users = self._in_flight.setdefault(key, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                return await self._ask_once(traj_id, model, messages, key, tokens_in)
        finally:
            users[0] -= 1
            if not users[0]:
                del self._in_flight[key]

    async def _ask_once(
        self, traj_id: str, model: str, messages: list[dict[str, str]], key: str, tokens_in: int
    ) -> str:
        hit = cached_response(self.db, key)
        if hit is not None:
            self.cached += 1
            return hit
        if self.client is None:
            raise LabelFailure("the response is not cached and no endpoint is configured")
        tin, tout, cost = self.estimate(model, tokens_in)
        if not self.usage.reserve(cost):
            raise BudgetExhausted(f"the next request would exceed --max-cost {self.usage.max_cost:g} USD "
                                  f"(the run has spent {self.usage.cost_usd:.4f} USD)")
        got_in = got_cached = got_out = 0
        try:
            reply = await self.client.complete(
                model,
                messages,
                temperature=self.settings.temperature,
                schema=self.schema,
                max_tokens=self.settings.max_output_tokens,
                tokens=tin + tout,
            )
            got_in, got_cached, got_out = reply.tokens_in or tin, reply.tokens_cached, reply.tokens_out
            await self._responses.store(Response(
                key, reply.content, model, self.endpoint_host, traj_id, self.run_id, got_in, got_cached, got_out,
                self.prices[model].cost(got_in, got_out, got_cached),
            ))
        finally:
            self.usage.settle(cost, self.prices[model], got_in, got_out, got_cached)
        self.sent += 1
        return reply.content


def uncached_plans(
    db: Database, labeller: LLMLabeller, ids: Sequence[str]
) -> tuple[int, list[tuple[str, PlannedRequest]]]:
    """(first-round requests of ``ids``, those of them the cache does not hold with their trajectory id).

    The cache is asked once for every key, not once per trajectory.
    """
    plans = [(tid, p) for tid in ids for p in labeller.plan(get_trajectory(db, tid))]
    have = cached_keys(db, [p.key for _, p in plans])
    return len(plans), [(tid, p) for tid, p in plans if p.key not in have]
