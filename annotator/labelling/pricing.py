"""What a run costs: a small price table for well-known models, overridable per run.

Prices are USD per million tokens (input, cached input, output) as published by the providers;
input tokens the provider serves from its prompt cache (``usage.prompt_tokens_details.
cached_tokens``) are billed at the cached rate. A model not in the table has no price unless
``--price-in/--price-out`` give one (``--price-cached`` for the cached rate, else the input
rate), and then costs are reported as unknown (0) rather than guessed. The Batch API is billed
at half price.
"""

from __future__ import annotations

from pydantic import BaseModel

from annotator.errors import LabellingError

#: (input, cached input, output), USD per million tokens.
PRICES: dict[str, tuple[float, float, float]] = {
    "gpt-4o": (2.50, 1.25, 10.00),
    "gpt-4o-mini": (0.15, 0.075, 0.60),
    "gpt-4.1": (2.00, 0.50, 8.00),
    "gpt-4.1-mini": (0.40, 0.10, 1.60),
    "gpt-4.1-nano": (0.10, 0.025, 0.40),
    "o1": (15.00, 7.50, 60.00),
    "o1-mini": (1.10, 0.55, 4.40),
    "o3-mini": (1.10, 0.55, 4.40),
    "o4-mini": (1.10, 0.275, 4.40),
    "gpt-5": (1.25, 0.125, 10.00),
    "gpt-5-mini": (0.25, 0.025, 2.00),
    "gpt-5-nano": (0.05, 0.005, 0.40),
}
BATCH_DISCOUNT = 0.5
#: OpenAI caches a prompt's prefix from this many identical leading tokens on.
PROMPT_CACHE_MIN_TOKENS = 1024


class Price(BaseModel):
    """USD per million input, cached input and output tokens; ``known`` is False when no price is known."""

    per_m_in: float = 0.0
    per_m_cached: float = 0.0
    per_m_out: float = 0.0
    known: bool = False

    def cost(self, tokens_in: int, tokens_out: int, tokens_cached: int = 0) -> float:
        """``tokens_in`` counts every input token, the ``tokens_cached`` among them included."""
        cached = min(max(tokens_cached, 0), tokens_in)
        return ((tokens_in - cached) * self.per_m_in + cached * self.per_m_cached
                + tokens_out * self.per_m_out) / 1_000_000


def price_for(model: str, price_in: float | None = None, price_out: float | None = None, *,
              price_cached: float | None = None, batch: bool = False) -> Price:
    """The price of ``model``: the flags win, then the table (matched by name or dated variant)."""
    if (price_in is None) != (price_out is None):
        raise LabellingError("give both --price-in and --price-out, or neither")
    if price_cached is not None and price_in is None:
        raise LabellingError("--price-cached goes with --price-in and --price-out")
    factor = BATCH_DISCOUNT if batch else 1.0
    if price_in is not None and price_out is not None:
        cached = price_in if price_cached is None else price_cached
        return Price(per_m_in=price_in * factor, per_m_cached=cached * factor, per_m_out=price_out * factor,
                     known=True)
    name = model.split("/")[-1]
    for key in sorted(PRICES, key=len, reverse=True):
        if name == key or name.startswith(key + "-20"):
            pin, pcached, pout = PRICES[key]
            return Price(per_m_in=pin * factor, per_m_cached=pcached * factor, per_m_out=pout * factor, known=True)
    return Price()


class Usage(BaseModel):
    """What a run has spent so far (earlier sessions of the run included), and the ceiling the
    whole run must stay under."""

    tokens_in: int = 0
    tokens_cached: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    max_cost: float | None = None
    reserved: float = 0.0

    def reserve(self, estimate: float) -> bool:
        """Set ``estimate`` aside for a request about to be sent, if the ceiling allows it.

        Requests in flight hold their estimate, so concurrent requests cannot together
        overshoot ``max_cost``.
        """
        if self.max_cost is not None and self.cost_usd + self.reserved + estimate > self.max_cost:
            return False
        self.reserved += estimate
        return True

    def settle(self, estimate: float, price: Price, tokens_in: int, tokens_out: int, tokens_cached: int = 0) -> None:
        """Replace a reservation by what the request actually cost (0 tokens if it failed)."""
        self.reserved = max(0.0, self.reserved - estimate)
        self.tokens_in += tokens_in
        self.tokens_cached += tokens_cached
        self.tokens_out += tokens_out
        self.cost_usd += price.cost(tokens_in, tokens_out, tokens_cached)
