"""Concurrency: priority-ordered slots per provider, an AIMD limiter, and a global cap (docs/engine.md, 'Concurrency').

Unlike the reference (whose limiter only logs), the limit here is real: after a 429 new
requests wait until fewer than the reduced limit are in flight, and the limit grows back by
one after every 10 consecutive successes, up to the provider's max.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import time
from collections.abc import Mapping
from typing import Generic, TypeVar

# provider -> (initial, max, min), Weval's provider profiles (docs/engine.md, 'Concurrency')
PROFILES: dict[str, tuple[int, int, int]] = {
    "openrouter": (25, 40, 5),
    "openai": (20, 30, 10),
    "anthropic": (20, 40, 5),
    "google": (20, 30, 3),
    "mistral": (20, 30, 3),
    "together": (15, 40, 5),
    "xai": (10, 25, 3),
}
DEFAULT_PROFILE = (10, 30, 3)


class Priority:
    """A request's priority that can be lowered (made more urgent) while it waits."""

    __slots__ = ("value", "waiting")

    def __init__(self, value: int):
        self.value = value
        self.waiting: list[tuple[PrioritySlots, asyncio.Future[None]]] = []

    def lower(self, value: int) -> None:
        if value >= self.value:
            return
        self.value = value
        for slots, future in list(self.waiting):
            if not future.done():
                slots._requeue(value, future)


class PrioritySlots:
    """A semaphore whose waiters are served lowest priority first (FIFO within a priority),
    and whose limit can change while requests are in flight."""

    def __init__(self, limit: int):
        self.limit = max(1, int(limit))
        self.in_use = 0
        self._heap: list[tuple[int, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self.waiting = 0  # live waiters in the heap

    async def acquire(self, priority: int | Priority = 0) -> None:
        """Wait for a slot. ``priority`` may be a ``Priority`` box: lowering it later moves a
        waiting request forward (an urgent caller joined an identical request in flight)."""
        if self.in_use < self.limit and not self.waiting:
            self.in_use += 1
            return
        box = priority if isinstance(priority, Priority) else None
        value = priority.value if isinstance(priority, Priority) else priority
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (value, next(self._seq), future))
        self.waiting += 1
        if box is not None:
            box.waiting.append((self, future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # granted, then cancelled: give it back
                self.release()
            else:
                future.cancel()
                self.waiting -= 1
            raise
        finally:
            if box is not None:
                box.waiting = [(slots, f) for slots, f in box.waiting if f is not future]

    def _requeue(self, priority: int, future: asyncio.Future[None]) -> None:
        # The old heap entry stays; whichever pops first grants, the other finds it done.
        heapq.heappush(self._heap, (priority, next(self._seq), future))
        self._wake()

    def release(self) -> None:
        self.in_use -= 1
        self._wake()

    def set_limit(self, limit: int) -> None:
        self.limit = max(1, int(limit))
        self._wake()

    def _wake(self) -> None:
        while self.in_use < self.limit and self._heap:
            _, _, future = heapq.heappop(self._heap)
            if future.done():  # cancelled while waiting (already uncounted)
                continue
            self.waiting -= 1
            self.in_use += 1
            future.set_result(None)


class AdaptiveLimiter(PrioritySlots):
    """AIMD: +1 after ``success_step`` consecutive successes (up to max); on a rate limit,
    ``max(min(floor(c/2), c-1), min)``, at most once per ``decrease_cooldown_s``; back to the
    initial value after ``idle_reset_s`` without requests."""

    success_step = 10
    decrease_cooldown_s = 5.0
    idle_reset_s = 300.0

    def __init__(self, name: str, initial: int, maximum: int, minimum: int, adaptive: bool = True):
        self.name = name
        self.initial = max(1, initial)
        self.maximum = max(self.initial, maximum)
        self.minimum = max(1, min(minimum, self.initial))
        self.adaptive = adaptive
        self.streak = 0
        self.decreases = 0
        self.increases = 0
        self._last_decrease = -math.inf
        self._last_used = time.monotonic()
        super().__init__(self.initial)

    async def acquire(self, priority: int | Priority = 0) -> None:
        now = time.monotonic()
        if self.in_use == 0 and now - self._last_used > self.idle_reset_s and self.limit != self.initial:
            self.set_limit(self.initial)
        self._last_used = now
        await super().acquire(priority)

    def on_success(self) -> None:
        if not self.adaptive:
            return
        self.streak += 1
        if self.streak >= self.success_step:
            self.streak = 0
            if self.limit < self.maximum:
                self.increases += 1
                self.set_limit(self.limit + 1)

    def on_rate_limit(self) -> None:
        self.streak = 0
        if not self.adaptive:
            return
        now = time.monotonic()
        if now - self._last_decrease < self.decrease_cooldown_s:
            return
        self._last_decrease = now
        current = self.limit
        reduced = max(min(current // 2, current - 1), self.minimum)
        if reduced < current:
            self.decreases += 1
            self.set_limit(reduced)

    def on_error(self) -> None:
        self.streak = 0

    def snapshot(self) -> dict[str, int]:
        return {
            "limit": self.limit,
            "in_use": self.in_use,
            "waiting": self.waiting,
            "initial": self.initial,
            "max": self.maximum,
            "min": self.minimum,
            "decreases": self.decreases,
            "increases": self.increases,
        }


def _share(cap: int, workers: int) -> int:
    """Each of N workers takes 1/N of a whole-run cap (docs/rulings.md, ruling 18), at least 1."""
    return max(1, int(cap) // max(1, workers))


class Limits:
    """One limiter per provider group, plus the optional global cap."""

    def __init__(
        self,
        *,
        concurrency: int | None,
        overrides: Mapping[str, int],
        workers: int = 1,
        adaptive: bool = True,
    ):
        self.workers = max(1, workers)
        self.adaptive = adaptive
        self.overrides = {k.lower(): int(v) for k, v in overrides.items()}
        self.global_slots = PrioritySlots(_share(concurrency, self.workers)) if concurrency else None
        self._groups: dict[str, AdaptiveLimiter] = {}

    def group(self, name: str) -> AdaptiveLimiter:
        name = name.lower()
        limiter = self._groups.get(name)
        if limiter is None:
            initial, maximum, minimum = PROFILES.get(name, DEFAULT_PROFILE)
            if name in self.overrides:
                # The user's number is the ceiling; 429s still shrink it (down to a quarter).
                cap = self.overrides[name]
                initial = maximum = cap
                minimum = max(1, min(minimum, math.ceil(cap / 4)))
            limiter = AdaptiveLimiter(
                name,
                _share(initial, self.workers),
                _share(maximum, self.workers),
                _share(minimum, self.workers),
                adaptive=self.adaptive,
            )
            self._groups[name] = limiter
        return limiter

    def provider_slot(self, group: str, priority: int | Priority) -> _Slot[AdaptiveLimiter]:
        """A slot of the provider's limiter, taken first: a request waiting for its provider
        (or paced by its rate limit) holds no global slot other providers could use."""
        return _Slot(self.group(group), priority)

    def global_slot(self, priority: int | Priority) -> _Slot[PrioritySlots | None]:
        """A slot of the run's global cap (``--weval-concurrency``), for the HTTP exchange."""
        return _Slot(self.global_slots, priority)

    def most_in_flight(self) -> int:
        """How many requests this process may have on the wire at once now: the global cap, or
        what its providers' limiters allow together."""
        by_providers = sum(limiter.limit for limiter in self._groups.values())
        if self.global_slots is None:
            return by_providers
        return min(self.global_slots.limit, by_providers) if by_providers else self.global_slots.limit

    def snapshot(self) -> dict[str, dict[str, int]]:
        return {name: limiter.snapshot() for name, limiter in self._groups.items()}


_Slots = TypeVar("_Slots", bound="PrioritySlots | None")


class _Slot(Generic[_Slots]):
    """``async with``: a slot of ``slots`` (nothing to take when there are none), given back
    on exit. A class, not an ``asynccontextmanager``: an attempt takes two, and the generator
    machinery cost more than the slots' own work."""

    __slots__ = ("_priority", "_slots", "_taken")

    def __init__(self, slots: _Slots, priority: int | Priority):
        self._slots = slots
        self._priority = priority
        self._taken = False

    async def __aenter__(self) -> _Slots:
        if self._slots is not None:
            await self._slots.acquire(self._priority)
            self._taken = True
        return self._slots

    async def __aexit__(self, *exc: object) -> None:
        if self._taken and self._slots is not None:
            self._slots.release()
