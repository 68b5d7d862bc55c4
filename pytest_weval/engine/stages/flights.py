"""In-flight dedup (docs/engine.md, 'The path of one request', step 3): one task per distinct
request, ``(key, no_cache)``; identical requests await it, each through a future of its own, so
one caller's cancellation does not cancel the others (nor the request). A joiner with a more
urgent priority lowers the waiting request's, so it moves forward in its queue."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any

from pytest_weval.engine.errors import RunInterrupted
from pytest_weval.engine.request import ModelReply, ModelRequest
from pytest_weval.engine.stages.stopping import Stopping
from pytest_weval.engine.stages.usage import RunUsage
from pytest_weval.engine.transport.limits import Priority

FlightKey = tuple[str, bool]


class _Flight:
    """One distinct request under way: its task, its priority, and a future per caller."""

    __slots__ = ("priority", "task", "waiters")

    def __init__(self, task: asyncio.Task[ModelReply], priority: Priority):
        self.task = task
        self.priority = priority
        self.waiters: list[asyncio.Future[ModelReply]] = []


class Flights:
    def __init__(self, stopping: Stopping, usage: RunUsage):
        self.stopping = stopping
        self.usage = usage
        self._flights: dict[FlightKey, _Flight] = {}

    def __len__(self) -> int:
        return len(self._flights)

    def flying(self, request: ModelRequest, key: str) -> bool:
        """A flight of ``request`` is under way (a caller would join it)."""
        return (key, request.no_cache) in self._flights

    async def join(
        self,
        request: ModelRequest,
        key: str,
        obtain: Callable[[Priority], Coroutine[Any, Any, ModelReply]],
    ) -> ModelReply:
        """The reply of the flight of ``request``, started with ``obtain`` unless one is under way."""
        flight_key = (key, request.no_cache)
        flight = self._flights.get(flight_key)
        loop = asyncio.get_running_loop()
        if flight is not None:
            flight.priority.lower(request.priority)  # an earlier item now waits for it too
            self.usage.counts["coalesced"] += 1
        else:
            priority = Priority(request.priority)
            flight = self._flights[flight_key] = _Flight(loop.create_task(obtain(priority)), priority)
            flight.task.add_done_callback(functools.partial(self._landed, flight_key, flight))
        # The caller awaits a future of its own, not the task (as ``asyncio.shield`` would have
        # it, with one future and two callbacks more): cancelling the caller cancels its future only.
        waiter: asyncio.Future[ModelReply] = loop.create_future()
        flight.waiters.append(waiter)
        try:
            reply = await waiter
        except asyncio.CancelledError:
            if self.stopping.interrupted and flight.task.cancelled():
                raise RunInterrupted("the run was interrupted while this request was in flight") from None
            raise
        return reply.copy()

    def _landed(self, flight_key: FlightKey, flight: _Flight, _task: asyncio.Task[ModelReply]) -> None:
        """The flight ended: it is no longer joined, and each caller still waiting gets its outcome."""
        self._flights.pop(flight_key, None)
        task = flight.task
        if task.cancelled():
            for waiter in flight.waiters:
                waiter.cancel()
            return
        error = task.exception()  # retrieved: no "never retrieved" warning when all waiters left
        for waiter in flight.waiters:
            if waiter.done():  # its caller was cancelled
                continue
            if error is not None:
                waiter.set_exception(error)
            else:
                waiter.set_result(task.result())

    async def grace(self) -> None:
        """Interrupted: the replies on the wire get what is left of the stop's grace."""
        if self.stopping.cancel_at is not None and self._flights:
            tasks = [flight.task for flight in self._flights.values()]
            await asyncio.wait(tasks, timeout=self.stopping.grace_left())

    def cancel(self) -> None:
        for flight in list(self._flights.values()):
            flight.task.cancel()
