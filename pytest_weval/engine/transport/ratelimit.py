"""Rate limits: reading what a provider says about them, and pacing requests to stay inside.

A refused request (429, Anthropic's 529 "overloaded") is not a fault: it waits as long as the
provider asks and goes again, without spending an attempt, until its wait budget
(``--weval-rate-limit-wait``) runs out (docs/engine.md, 'Rate limits').

Each *pace group* (a provider reached with one key at one host) has a ``Pacer``:

* a **pause**: when one request is told to wait, every request of the group waits, instead of
  each in-flight request finding out on its own with a refusal of its own;
* a **pace** (requests per second) learned from the rate-limit headers when the provider sends
  them (OpenAI's ``x-ratelimit-*``, Anthropic's ``anthropic-ratelimit-*``) and from refusals
  when it does not; requests are spaced to keep under it, so refusals stay rare.

Under xdist every worker takes ``1/N`` of the learned pace and budget (as it takes ``1/N`` of
each concurrency cap), and pauses reach the other workers through the claims store.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import email.utils
import hashlib
import math
import re
import time
from collections import deque
from collections.abc import Callable, Mapping

from pytest_weval.engine.transport.providers.base import HttpCall
from pytest_weval.errors import WevalError

# A little under what the provider allows: the server's count and ours drift (requests in
# flight, clock granularity), and a refusal costs far more than a slightly slower pace.
PACE_MARGIN = 0.92
# Without rate headers, a refusal sets the pace to what the provider sustained lately (served
# replies over ``SUSTAINED_WINDOW_S``, once there are ``SUSTAINED_MIN`` of them) times the
# margin; a refusal while already paced lowers it by ``REFUSED_FACTOR`` (once a second), and
# it creeps back up by ``RECOVERY_FACTOR`` after every ``RECOVERY_STEP`` served requests.
SUSTAINED_WINDOW_S = 5.0
SUSTAINED_MIN = 10
REFUSED_FACTOR = 0.8
RECOVERY_FACTOR = 1.05
RECOVERY_STEP = 50
# A refusal that says nothing about how long to wait: wait this long (then double, up to 30 s).
DEFAULT_WAIT_S = 1.0

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def pace_group(provider: str, call: HttpCall) -> str:
    """One provider reached with one key at one host: the unit rate limits apply to. Named by
    a digest of the host and headers, never the key itself."""
    host = call.url.split("://", 1)[-1].split("/", 1)[0]
    digest = hashlib.sha256(repr((host, sorted(call.headers.items()))).encode()).hexdigest()[:12]
    return f"{provider}:{digest}"


class RateLimitWaitExceeded(WevalError):
    """A request would wait past its rate-limit budget."""


def parse_duration(text: str) -> float | None:
    """OpenAI's reset durations: ``1s``, ``6m0s``, ``20ms``, ``1h2m3.5s``, in seconds."""
    text = text.strip()
    if not text:
        return None
    total = 0.0
    position = 0
    for match in _DURATION.finditer(text):
        if match.start() != position:
            return None
        value, unit = float(match.group(1)), match.group(2)
        total += value * {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}[unit]
        position = match.end()
    if position != len(text):
        try:
            return max(0.0, float(text))  # a bare number of seconds
        except ValueError:
            return None
    return total


def _seconds_until(timestamp: str, now: float) -> float | None:
    """An RFC 3339 time (Anthropic's resets) or an HTTP date, as seconds from ``now``."""
    value = timestamp.strip()
    when: _dt.datetime | None
    try:
        when = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return max(0.0, when.timestamp() - now)


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """How long a refused request should wait: ``retry-after-ms``, ``Retry-After`` (seconds or
    an HTTP date), else the reset of an exhausted budget (OpenAI's
    ``x-ratelimit-reset-requests`` / ``-tokens``, Anthropic's ``anthropic-ratelimit-*-reset``)."""
    current = time.time() if now is None else now
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value:
        try:
            return max(0.0, float(value.strip()))
        except ValueError:
            waited = _seconds_until(value, current)
            if waited is not None:
                return waited
    info = RateInfo.from_headers(headers, current)
    return info.exhausted_reset if info is not None else None


@dataclasses.dataclass(frozen=True)
class RateInfo:
    """A provider's request budget as its headers state it."""

    limit: float  # requests in a full budget
    remaining: float
    reset_s: float | None  # until the budget is full again
    exhausted_reset: float | None  # until some exhausted budget (requests or tokens) recovers

    @property
    def rate(self) -> float | None:
        """Requests per second the budget refills at: what was used of it, over the time it
        takes to come back (both headers describe a bucket that refills steadily)."""
        used = self.limit - self.remaining
        if self.reset_s is None or self.reset_s <= 0 or used <= 0:
            return None
        return used / self.reset_s

    @classmethod
    def from_headers(cls, headers: Mapping[str, str], now: float) -> RateInfo | None:
        if "x-ratelimit-limit-requests" in headers or "x-ratelimit-remaining-requests" in headers:
            return cls._read(headers, "x-ratelimit-{}-requests", "x-ratelimit-{}-tokens", parse_duration)
        if "anthropic-ratelimit-requests-limit" in headers:

            def until(text: str) -> float | None:
                return _seconds_until(text, now)

            return cls._read(headers, "anthropic-ratelimit-requests-{}", "anthropic-ratelimit-tokens-{}", until)
        return None

    @classmethod
    def _read(
        cls, headers: Mapping[str, str], requests: str, tokens: str, reset: Callable[[str], float | None]
    ) -> RateInfo | None:
        limit = _number(headers.get(requests.format("limit")))
        remaining = _number(headers.get(requests.format("remaining")))
        if limit is None or remaining is None:
            return None
        reset_s = reset(headers.get(requests.format("reset"), ""))
        exhausted = [reset_s] if remaining < 1 and reset_s is not None else []
        tokens_left = _number(headers.get(tokens.format("remaining")))
        if tokens_left is not None and tokens_left < 1:
            token_reset = reset(headers.get(tokens.format("reset"), ""))
            if token_reset is not None:
                exhausted.append(token_reset)
        return cls(limit, remaining, reset_s, max(exhausted) if exhausted else None)


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


class Pacer:
    """Spaces one pace group's requests and pauses them all when one is told to wait.

    Time is ``time.monotonic()``; pauses crossing processes are converted by the caller.
    """

    def __init__(self, name: str, *, share: int = 1, on_pause: Callable[[str, float], None] | None = None):
        self.name = name
        self.share = max(1, share)
        self.on_pause = on_pause  # (group, wall-clock until): tell the other workers
        self.learned_pace: float | None = None  # requests per second, the provider's whole (all workers)
        self._paused_until = 0.0
        self._pace: float | None = None  # this process's requests per second; None: unpaced
        self._next_slot = 0.0
        self._from_headers = False
        self._served = 0
        self._served_at: deque[float] = deque(maxlen=2048)  # to learn a pace from refusals
        self._lowered = -math.inf
        self._refusal_streak = 0

    @property
    def paused(self) -> bool:
        return self._paused_until > time.monotonic()

    @property
    def open(self) -> bool:
        """A request may go at once, with no wait to ask ``ready`` for: not paused, not paced."""
        return not self._pace and self._paused_until <= time.monotonic()

    async def ready(self, deadline: float) -> float:
        """Wait until this group may send one request; returns the seconds waited. Raises
        ``RateLimitWaitExceeded`` rather than wait past ``deadline``."""
        started = time.monotonic()
        while True:
            now = time.monotonic()
            if self._paused_until > now:
                if self._paused_until > deadline:
                    raise RateLimitWaitExceeded(f"paused for {self._paused_until - now:.1f} s more")
                await asyncio.sleep(self._paused_until - now)
                continue
            slot = now
            if self._pace:
                # Each request reserves the next free slot; a gap (nothing to send) banks no burst.
                slot = max(self._next_slot, now)
                if slot > deadline:
                    raise RateLimitWaitExceeded(f"next free slot in {slot - now:.1f} s")
                self._next_slot = slot + 1.0 / self._pace
            if slot > now:
                await asyncio.sleep(slot - now)
            if self._paused_until > time.monotonic():
                continue  # paused meanwhile: this slot is lost, take one after the pause
            return time.monotonic() - started

    def served(self, info: RateInfo | None) -> None:
        """A reply came back (with the provider's rate headers, when it sends them)."""
        self._refusal_streak = 0
        self._served_at.append(time.monotonic())
        rate = info.rate if info is not None else None
        if rate is not None:
            self._from_headers = True
            self._set_pace(rate * PACE_MARGIN / self.share, whole=rate)
            if info is not None and info.remaining < self.share and info.exhausted_reset:
                # The budget is spent: wait for it rather than be refused.
                self._pause(info.exhausted_reset, tell=False)
            return
        if self._pace and not self._from_headers:
            self._served += 1
            if self._served >= RECOVERY_STEP:
                self._served = 0
                self._set_pace(self._pace * RECOVERY_FACTOR, whole=self._pace * RECOVERY_FACTOR * self.share)

    def refused(self, wait_s: float | None, info: RateInfo | None) -> float:
        """A request was refused: pause the group; returns how long the refused request waits."""
        self._refusal_streak += 1
        if info is not None and info.rate is not None:
            self._from_headers = True
            self._set_pace(info.rate * PACE_MARGIN / self.share, whole=info.rate)
        elif not self._from_headers:
            self._learn_from_refusal()
        if wait_s is None:
            wait_s = min(30.0, DEFAULT_WAIT_S * 2 ** (self._refusal_streak - 1))
        self._pause(wait_s, tell=True)
        return wait_s

    def _learn_from_refusal(self) -> None:
        now = time.monotonic()
        if self._pace is not None:
            if now - self._lowered >= 1.0:
                self._lowered = now
                lowered = self._pace * REFUSED_FACTOR
                self._set_pace(lowered, whole=lowered * self.share)
            return
        recent = [t for t in self._served_at if now - t <= SUSTAINED_WINDOW_S]
        if len(recent) >= SUSTAINED_MIN:
            span = max(now - recent[0], 1.0)
            sustained = len(recent) / span  # this process's share of what the provider served
            self._lowered = now
            self._set_pace(sustained * PACE_MARGIN, whole=sustained * PACE_MARGIN * self.share)

    def pause_until_wall(self, until: float) -> None:
        """Another worker was told to wait until ``until`` (wall clock)."""
        remaining = until - time.time()
        if remaining > 0:
            self._paused_until = max(self._paused_until, time.monotonic() + remaining)

    def _pause(self, wait_s: float, *, tell: bool) -> None:
        until = time.monotonic() + wait_s
        if until > self._paused_until:
            self._paused_until = until
            if tell and self.on_pause is not None:
                self.on_pause(self.name, time.time() + wait_s)

    def _set_pace(self, pace: float, *, whole: float) -> None:
        self._pace = max(pace, 0.01)
        self.learned_pace = whole
