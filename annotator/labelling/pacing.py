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
  six round trips to reach 64 in flight, a second of a 1,000-request run at 200 ms. Slow start
  goes in rounds: a round goes out whole and the next waits for all of its answers, until the
  window has grown to ``--concurrency``. A round's answers come back together: sent again as
  each came, the places of the round that emptied the server's bucket (doubled by its answers)
  went out before the 429 among them was read, a dozen 429s at once. A 429 (with
  ``Retry-After`` where given) pauses everyone for that long and halves the window, after which
  every answer widens it by ``1/window`` (additive increase, multiplicative decrease, as TCP
  does); never beyond ``--concurrency``. A 429 for a request sent before the last 429 was read is
  the same overshoot, not news: it halves nothing;
- a request's tokens are estimated before it is sent (our count of the prompt plus the answer
  expected); the ratio of what the server then reports in ``usage`` to that estimate is kept as
  a running mean and applied to the next estimates, so a tokens-per-minute limit is used to the
  full and not missed by a tokenizer's difference;
- where neither headers nor ``--rpm`` say the limit, the request rate is measured from the 429s,
  since with a fast server even one request in flight can exceed the limit. A server refuses a
  request when its bucket is empty, so between two refused requests it admitted what it
  refilled: its rate (less if its bucket overflowed meanwhile). Before the first 429 there is no
  such span, but the bucket held at most a burst: what was admitted, over the span plus
  ``BURST_S``, is the rate or less (for a burst of a second or less: providers enforce a
  per-minute limit over shorter periods, 600 a minute as 10 a second). A request bucket is set
  at that rate, empty as the server's is, and every answer raises it by ``PROBE_STEP`` while it
  rests on the assumed burst, by ``PROBE_STEP_MEASURED`` once two 429s measured it: about one
  429 in 20 s at the benchmark's 400 a minute. A 429 too soon after the last to measure by (``MIN_SPAN_S``) cuts the
  rate to ``BACKOFF_SHARE``. The rate answered over the last seconds, cut by 15% at every 429,
  missed both ways: well above the limit after the burst, well below it after the dozen 429s
  that followed; 3% of the requests were answered 429.

``adaptive=False`` keeps exactly ``--concurrency`` requests in flight and learns nothing (only
``--rpm``/``--tpm`` still apply): for a server of your own with no limits, and as the
benchmark's baseline.
"""

from __future__ import annotations

import asyncio
import re
import time
from bisect import bisect_left, bisect_right, insort
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from aiolimiter import AsyncLimiter

#: Share of a limit the buckets aim at: the server's clock and ours drift, and a request
#: counted by the server before our bucket drains must not cost a 429.
HEADROOM = 0.97
#: Longest pause a reset or Retry-After header may impose.
MAX_PAUSE_S = 60.0
#: Seconds of burst a server's bucket is taken to hold where nothing says: providers enforce a
#: per-minute limit over shorter periods, 600 a minute as 10 a second.
BURST_S = 1.0
#: Seconds of sends and 429s kept to measure the rate the server admits by.
HISTORY_S = 60.0
#: Shortest span between two 429s that is measured: a shorter one holds too few requests.
MIN_SPAN_S = 1.0
#: On a 429 too soon after the last one to measure by, the request rate drops to this share.
BACKOFF_SHARE = 0.85
#: Growth with every answer of a rate learned from 429s: while it rests on the assumed burst
#: (a lower bound) ...
PROBE_STEP = 0.005
#: ... and once two 429s measured it.
PROBE_STEP_MEASURED = 0.0005
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

    def empty(self) -> None:
        """Hold nothing from now on, as the server's bucket after a 429: a full one would let a
        second's burst into a bucket that has none (aiolimiter's level is what has been taken)."""
        lim = self.limiter
        lim._level, lim._last_check = lim.max_rate, asyncio.get_running_loop().time()

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
        self._round_size, self._round_sent = 1, 0  # slow start's round: its size, and how many went
        self._given_rpm, self._given_tpm = rpm, tpm
        self._requests = _Bucket(rpm) if rpm else None
        self._tokens = _Bucket(tpm) if tpm else None
        self._resume_at = 0.0
        self._changed = asyncio.Condition()
        self._sends: deque[float] = deque()  # when each request of the last HISTORY_S went out
        self._refused: list[float] = []  # when the requests answered 429 went out, in order
        self._probing = False  # the request bucket was set from 429s alone
        self._measured = False  # ... from the span between two 429s, not from an assumed burst
        self._cut_at = 0.0  # when a 429 last set the rate: a request sent before it is no news
        self._cut: tuple[float, float, float] | None = None  # the span that rate was measured over
        self._token_ratio = 1.0
        self.stats = PacingStats()

    @property
    def request_rate(self) -> float | None:
        """Requests per minute the pacer holds to, if it has a limit (given, learned or probed)."""
        return self._requests.per_minute if self._requests is not None else None

    # -- admission ---------------------------------------------------------------------------

    @asynccontextmanager
    async def slot(self, tokens: int) -> AsyncIterator[float]:
        """Hold one request's place: the window, the buckets and any pause all allow it. Yields
        the moment it goes out, which :meth:`rate_limited` is to be given back."""
        async with self._changed:
            await self._changed.wait_for(self._may_send)
            self.in_flight += 1
            self._round_sent += 1
        try:
            await self._wait_pause()
            if self._requests is not None:
                await self._requests.take(1)
            if self._tokens is not None:
                await self._tokens.take(tokens * self._token_ratio)
            await self._wait_pause()
            sent_at = time.monotonic()
            self._sends.append(sent_at)
            while self._sends[0] < sent_at - HISTORY_S:
                self._sends.popleft()
            yield sent_at
        finally:
            async with self._changed:
                self.in_flight -= 1
                if self.in_flight == 0:  # the round is answered: the next one may go
                    self._round_size, self._round_sent = int(self.window), 0
                self._changed.notify_all()

    def _may_send(self) -> bool:
        """Room in the window; and in slow start (no limit known, no 429 yet, the window still short
        of ``--concurrency``) room in the round: a round goes out whole and the next one waits for
        all its answers. A round's answers come back together, so a 429 among them is heard before
        the places of the others go out again (at a window doubled by them, into a bucket the 429
        says is empty)."""
        if self.in_flight >= int(self.window):
            return False
        rounds = (self._slow_start and self._requests is None and self._tokens is None
                  and self._round_size < self.max_window)
        return not rounds or self._round_sent < self._round_size

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
        self._learn(headers)
        if self._probing and self._requests is not None:
            rate = self._requests.per_minute
            step = rate * PROBE_STEP_MEASURED if self._measured else max(1.0, rate * PROBE_STEP)
            self._requests.set_rate(rate + step)
        async with self._changed:
            if not self._slow_start:
                self.window += 1.0 / self.window
            elif self._requests is not None or self._tokens is not None:
                self.window = float(self.max_window)  # the buckets keep to the limit from here
            else:
                self.window = max(self.window + 1.0, INITIAL_WINDOW)
            self.window = min(float(self.max_window), self.window)
            self._changed.notify_all()

    async def rate_limited(self, headers: Mapping[str, str], retry_after: float | None, sent_at: float) -> None:
        """A 429 for the request that went out at ``sent_at`` (from :meth:`slot`): everyone waits as
        long as the server said; unless the request went out before the last 429 was heard (it
        tells nothing new), the window halves and, where only 429s say the limit, the request rate
        is set to the rate the server admitted."""
        self.stats.rate_limited += 1
        if not self.adaptive:
            return
        self._learn(headers)
        insort(self._refused, sent_at)
        while self._refused[0] < sent_at - HISTORY_S:
            del self._refused[0]
        news = sent_at >= self._cut_at
        if self._given_rpm is None and (self._requests is None or self._probing):
            self._learn_from_429(sent_at, news)
        reset = max(
            (d for d in (parse_duration(headers.get("x-ratelimit-reset-requests")),
                         parse_duration(headers.get("x-ratelimit-reset-tokens"))) if d is not None),
            default=None,
        )
        self._pause(retry_after if retry_after is not None else reset if reset is not None else 1.0)
        if news:
            self._cut_at = time.monotonic()
            async with self._changed:
                self._slow_start = False
                self.window = max(1.0, self.window / 2)
                self._changed.notify_all()

    def _learn_from_429(self, sent_at: float, news: bool) -> None:
        """Set the request rate from a 429, the only word of the limit.

        The server's bucket was empty when it refused a request, so between two refused requests
        it admitted what it refilled: the rate itself, as long as its bucket did not overflow
        meanwhile (otherwise less). Before the first 429 there is no such span: from the first
        request kept it admitted at most its rate over the span plus a burst (``BURST_S``). Both
        are lower bounds of the limit, the first a close one. A 429 for a request that went out
        before the last one was heard only corrects that one's count (it was counted admitted)."""
        if not news:
            if self._cut is not None and self._requests is not None and (rate := self._admitted(*self._cut)):
                self._requests.set_rate(min(self._requests.per_minute, rate))
            return
        i = bisect_left(self._refused, sent_at)
        start, burst = (self._refused[i - 1], 0.0) if i > 0 else (self._sends[0] if self._sends else sent_at, BURST_S)
        rate = self._admitted(start, sent_at, burst) if burst or sent_at - start >= MIN_SPAN_S else None
        if rate:
            self._cut, self._measured = (start, sent_at, burst), not burst
        elif self._requests is not None:  # too soon after the last 429 to measure: the rate was too high
            self._cut, rate = None, BACKOFF_SHARE * self._requests.per_minute
        else:
            return  # no request admitted yet: nothing says the rate (a 1-a-minute crawl otherwise)
        self._requests = self._set(self._requests, max(1.0, rate))
        self._requests.empty()
        self._probing = True

    def _admitted(self, start: float, end: float, burst: float) -> float:
        """Requests a minute admitted from ``start`` to ``end``: those sent minus those refused,
        over the span plus ``burst`` (the start included where it is not a refused request)."""
        edge = bisect_right if burst == 0 else bisect_left
        sent = bisect_right(self._sends, end) - edge(self._sends, start)
        refused = bisect_right(self._refused, end) - edge(self._refused, start)
        return max(sent - refused, 0) / (end - start + burst) * 60

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
