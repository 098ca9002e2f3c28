"""Pacing a bulk run to the provider's rate limits instead of a fixed concurrency.

A provider limits an account by requests and tokens per minute. Too little concurrency wastes
the limit; too much turns a run into a storm of 429s and backoffs. The :class:`Pacer` sits in
front of every request and learns the limit from what the server says:

- ``x-ratelimit-limit-requests`` / ``-tokens`` (OpenAI's and most compatible servers' headers)
  set a leaky bucket (aiolimiter) at that rate, smoothed to one second's worth of burst;
  ``--rpm`` / ``--tpm`` set the same buckets for servers that send no headers;
- ``x-ratelimit-remaining-*`` with ``x-ratelimit-reset-*``: when what is left would not cover
  the requests already in flight, every request waits for the reset, not only the next one;
- the first request goes out alone, so that its answer's headers are read before a burst goes
  out. Once a limit is known (from those headers, or ``--rpm`` / ``--tpm``) the buckets pace the
  run and the window of requests in flight opens to ``--concurrency``. Where nothing names a
  limit the window goes on from ``INITIAL_WINDOW`` and grows by one per answer (slow start: it
  doubles each round trip, as TCP's does from its initial window, RFC 6928); from one it took
  six round trips to reach 64 in flight, a second of a 1,000-request run at 200 ms. A 429 (with
  ``Retry-After`` where given) pauses everyone for that long and halves the window, after which
  every answer widens it by ``1/window`` (additive increase, multiplicative decrease, as TCP
  does); never beyond ``--concurrency``;
- a request's tokens are estimated before it is sent (our count of the prompt plus the answer
  expected); the ratio of what the server then reports in ``usage`` to that estimate is kept as
  a running mean and applied to the next estimates, so a tokens-per-minute limit is used to the
  full and not missed by a tokenizer's difference;
- where neither headers nor ``--rpm`` say the limit, a 429 sets a request bucket at 85% of the
  rate answered over the last seconds, and every answer raises it by half a percent: increase
  by small steps, decrease by a large one, on the rate itself, since with a fast server even one
  request in flight can exceed the limit.

``adaptive=False`` keeps exactly ``--concurrency`` requests in flight and learns nothing (only
``--rpm``/``--tpm`` still apply): for a server of your own with no limits, and as the
benchmark's baseline.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from aiolimiter import AsyncLimiter

#: Share of a limit the buckets aim at: the server's clock and ours drift, and a request
#: counted by the server before our bucket drains must not cost a 429.
HEADROOM = 0.97
#: Longest pause a reset or Retry-After header may impose.
MAX_PAUSE_S = 60.0
#: Seconds of answers over which the rate a 429 interrupted is measured.
RATE_WINDOW_S = 5.0
#: On a 429 with nothing else to go by, the request rate drops to this share of the rate answered.
BACKOFF_SHARE = 0.85
#: Growth of a rate learned from 429s with every answer.
PROBE_STEP = 0.005
#: Requests in flight after the first answer while no limit is known: TCP's initial window is ten
#: segments (RFC 6928); eight stay within the one second of burst of 600 requests a minute.
INITIAL_WINDOW = 8
#: Weight of the newest answer in the running ratio of reported to estimated tokens.
CALIBRATION_WEIGHT = 0.1
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?")


def parse_duration(value: str | None) -> float | None:
    """Seconds in a reset header: ``"1s"``, ``"6m0s"``, ``"20ms"``, ``"1h2m3.5s"`` or a bare number."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    m = _DURATION.fullmatch(value)
    if not m or not any(m.groups()):
        return None
    h, mins, s, ms = (float(g) if g else 0.0 for g in m.groups())
    return h * 3600 + mins * 60 + s + ms / 1000


def _number(headers: Mapping[str, str], name: str) -> float | None:
    value = headers.get(name)
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class _Bucket:
    """A per-minute budget as a leaky bucket holding at most one second's worth of burst."""

    def __init__(self, per_minute: float):
        self.limiter = AsyncLimiter(1.0)
        self.set_rate(per_minute)

    def set_rate(self, per_minute: float) -> None:
        """Change the rate in place, keeping what the bucket holds (a new bucket would start empty
        and let a burst through). aiolimiter derives its drip rate from these three attributes."""
        self.per_minute = per_minute
        per_second = max(per_minute * HEADROOM / 60.0, 1e-6)
        lim = self.limiter
        lim.max_rate, lim.time_period = max(per_second, 1.0), max(1.0, 1.0 / per_second)
        lim._rate_per_sec = lim.max_rate / lim.time_period

    async def take(self, amount: float) -> None:
        """Charge ``amount`` in full: a request larger than the bucket holds is charged in bucket-sized
        parts, so it waits as long as its share of the per-minute budget takes to drip in."""
        amount = max(amount, 0.0)
        while amount > 0:
            part = min(amount, self.limiter.max_rate)
            await self.limiter.acquire(part)
            amount -= part


class PacingStats:
    """What pacing did in a run: for the run summary and the benchmark."""

    def __init__(self) -> None:
        self.rate_limited = 0
        self.paused_s = 0.0
        self.learned_rpm: float | None = None
        self.learned_tpm: float | None = None


class Pacer:
    """Admits requests at the pace the limits allow; one per endpoint, shared by all workers."""

    def __init__(self, concurrency: int, *, rpm: float | None = None, tpm: float | None = None,
                 adaptive: bool = True):
        self.adaptive = adaptive
        self.max_window = max(1, concurrency)
        self.window = 1.0 if adaptive else float(self.max_window)
        self._slow_start = adaptive
        self.in_flight = 0
        self._given_rpm, self._given_tpm = rpm, tpm
        self._requests = _Bucket(rpm) if rpm else None
        self._tokens = _Bucket(tpm) if tpm else None
        self._resume_at = 0.0
        self._changed = asyncio.Condition()
        self._answered: deque[float] = deque()
        self._probing = False  # the request bucket was set from 429s alone
        self._token_ratio = 1.0
        self.stats = PacingStats()

    @property
    def request_rate(self) -> float | None:
        """Requests per minute the pacer holds to, if it has a limit (given, learned or probed)."""
        return self._requests.per_minute if self._requests is not None else None

    # -- admission ---------------------------------------------------------------------------

    @asynccontextmanager
    async def slot(self, tokens: int) -> AsyncIterator[None]:
        """Hold one request's place: the window, the buckets and any pause all allow it."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.in_flight < int(self.window))
            self.in_flight += 1
        try:
            await self._wait_pause()
            if self._requests is not None:
                await self._requests.take(1)
            if self._tokens is not None:
                await self._tokens.take(tokens * self._token_ratio)
            await self._wait_pause()
            yield
        finally:
            async with self._changed:
                self.in_flight -= 1
                self._changed.notify_all()

    async def _wait_pause(self) -> None:
        while (delay := self._resume_at - time.monotonic()) > 0:
            await asyncio.sleep(delay)

    def _pause(self, seconds: float) -> None:
        seconds = min(max(seconds, 0.0), MAX_PAUSE_S)
        until = time.monotonic() + seconds
        if until > self._resume_at:
            self.stats.paused_s += until - max(self._resume_at, time.monotonic())
            self._resume_at = until

    # -- learning ----------------------------------------------------------------------------

    async def succeeded(self, headers: Mapping[str, str], estimated: int = 0, reported: int = 0) -> None:
        """A request was answered: learn from its headers and its tokens (``estimated`` before it
        was sent, ``reported`` by the server) and widen the window a little."""
        if not self.adaptive:
            return
        if estimated > 0 and reported > 0:
            w = CALIBRATION_WEIGHT
            self._token_ratio = (1 - w) * self._token_ratio + w * (reported / estimated)
        now = time.monotonic()
        self._answered.append(now)
        while self._answered and self._answered[0] < now - RATE_WINDOW_S:
            self._answered.popleft()
        self._learn(headers)
        if self._probing and self._requests is not None:
            rate = self._requests.per_minute
            self._requests.set_rate(rate + max(1.0, rate * PROBE_STEP))
        async with self._changed:
            if not self._slow_start:
                self.window += 1.0 / self.window
            elif self._requests is not None or self._tokens is not None:
                self.window = float(self.max_window)  # the buckets keep to the limit from here
            else:
                self.window = max(self.window + 1.0, INITIAL_WINDOW)
            self.window = min(float(self.max_window), self.window)
            self._changed.notify_all()

    async def rate_limited(self, headers: Mapping[str, str], retry_after: float | None) -> None:
        """A 429: everyone waits as long as the server said, and the window halves."""
        self.stats.rate_limited += 1
        if not self.adaptive:
            return
        self._learn(headers)
        span = min(RATE_WINDOW_S, time.monotonic() - self._answered[0]) if len(self._answered) > 1 else 0.0
        answered = (len(self._answered) - 1) / span * 60 if span > 0 else 0.0
        if self._given_rpm is None and answered > 0 and (self._requests is None or self._probing):
            # Only a measured rate sets the bucket: a 429 before two answers says nothing of the rate.
            current = self._requests.per_minute if self._requests is not None else answered
            self._requests = self._set(self._requests, max(1.0, BACKOFF_SHARE * min(answered, current)))
            self._probing = True
        reset = max(
            (d for d in (parse_duration(headers.get("x-ratelimit-reset-requests")),
                         parse_duration(headers.get("x-ratelimit-reset-tokens"))) if d is not None),
            default=None,
        )
        self._pause(retry_after if retry_after is not None else reset if reset is not None else 1.0)
        async with self._changed:
            self._slow_start = False
            self.window = max(1.0, self.window / 2)
            self._changed.notify_all()

    @staticmethod
    def _set(bucket: _Bucket | None, per_minute: float) -> _Bucket:
        if bucket is None:
            return _Bucket(per_minute)
        bucket.set_rate(per_minute)
        return bucket

    def _learn(self, headers: Mapping[str, str]) -> None:
        limit_r = _number(headers, "x-ratelimit-limit-requests")
        limit_t = _number(headers, "x-ratelimit-limit-tokens")
        if limit_r and self._given_rpm is None and (self._probing or self._requests is None
                                                    or self._requests.per_minute != limit_r):
            self._requests = self._set(self._requests, limit_r)
            self._probing = False
            self.stats.learned_rpm = limit_r
        if limit_t and self._given_tpm is None and (self._tokens is None or self._tokens.per_minute != limit_t):
            self._tokens = self._set(self._tokens, limit_t)
            self.stats.learned_tpm = limit_t
        left_r = _number(headers, "x-ratelimit-remaining-requests")
        if left_r is not None and left_r < self.in_flight:
            self._pause(parse_duration(headers.get("x-ratelimit-reset-requests")) or 0.0)
        left_t = _number(headers, "x-ratelimit-remaining-tokens")
        if left_t is not None and left_t <= 0:
            self._pause(parse_duration(headers.get("x-ratelimit-reset-tokens")) or 0.0)
