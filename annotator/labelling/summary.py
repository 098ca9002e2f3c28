"""What a pre-labelling run says about itself: the dry run, the closing summary, the exit status.

Every figure a user is billed by is shown apart: input tokens, the part of them the provider
served from its prompt cache (billed at the cached rate), output tokens, and the prices each
model was reckoned at, so that the dollars can be checked against the provider's invoice.
"""

from __future__ import annotations

from annotator.labelling.pricing import Price
from annotator.labelling.runner import DryRun
from annotator.models import LabelRun
from annotator.store.requests import Spend


def price_text(price: Price) -> str:
    """A model's prices as a line shows them."""
    if not price.known:
        return "no price known (give --price-in/--price-out)"
    return (f"${price.per_m_in:g} in, ${price.per_m_cached:g} cached in, ${price.per_m_out:g} out"
            " per million tokens")


def _tokens(tokens_in: int, tokens_cached: int, tokens_out: int) -> str:
    return f"{tokens_in:,} input ({tokens_cached:,} of them cached), {tokens_out:,} output tokens"


def _cost(usd: float, known: bool) -> str:
    return f"${usd:.4f}" if known else "cost unknown"


def dry_run_lines(est: DryRun) -> list[str]:
    """The dry run: requests, tokens and cost in all, then per model with its prices."""
    cost = f"{est.cost_usd:.4f} USD" if est.price_known else "unknown (model not in the price table: give --price-in/--price-out)"
    lines = [
        f"dry run: {est.trajectories} trajectories, {est.requests} requests ({est.cached} cached),"
        f" ~{est.tokens_in:,} input (~{est.tokens_cached:,} of them from the provider's prompt cache) and"
        f" ~{est.tokens_out:,} output tokens, estimated cost {cost}. Nothing was sent."
    ]
    for m in est.models:
        lines.append(f"  {m.model}: {m.requests} requests, ~{_tokens(m.tokens_in, m.tokens_cached, m.tokens_out)},"
                     f" ~{_cost(m.cost_usd, m.price.known)} at {price_text(m.price)}")
    return lines


def run_lines(run: LabelRun, spend: Spend, prices: dict[str, Price], priced: bool) -> list[str]:
    """The closing summary of a run: what it labelled, sent and spent (over all its sessions)."""
    counts = run.counts
    lines = [
        f"run {run.id} ({run.annotator}) {run.status}: {counts.get('done', 0)} labelled,"
        f" {counts.get('failed', 0)} failed, {spend.requests} requests sent, {counts.get('cached', 0)} cached,"
        f" {_tokens(spend.tokens_in, spend.tokens_cached, spend.tokens_out)}, {_cost(spend.cost_usd, priced)}"
    ]
    for model, part in spend.by_model.items():
        price = prices.get(model, Price())
        lines.append(f"  {model}: {part.requests} requests, {_tokens(part.tokens_in, part.tokens_cached, part.tokens_out)},"
                     f" {_cost(part.cost_usd, price.known)} at {price_text(price)}")
    return lines


def exit_status(run: LabelRun, allow_failures: bool) -> int:
    """0 when the run labelled what it was asked to; 1 when a trajectory failed (unless failures
    are allowed) and always when every trajectory that was tried failed."""
    done, failed = run.counts.get("done", 0), run.counts.get("failed", 0)
    if failed and not done:
        return 1
    if failed and not allow_failures:
        return 1
    return 0
