"""In-flight dedup (docs/engine.md, 'The path of one request', step 3): one task per distinct
request, ``(key, no_cache)``; identical requests await it, shielded, so one caller's
cancellation does not cancel the others. A joiner with a more urgent priority lowers the
waiting request's, so it moves forward in its queue."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Coroutine
from typing import Any

from pytest_weval.engine.errors import RunInterrupted
from pytest_weval.engine.request import ModelReply, ModelRequest
from pytest_weval.engine.stages.stopping import Stopping
from pytest_weval.engine.stages.usage import RunUsage
from pytest_weval.engine.transport.limits import Priority

FlightKey = tuple[str, bool]


class Flights:
    def __init__(self, stopping: Stopping, usage: RunUsage):
        self.stopping = stopping
        self.usage = usage
        self._flights: dict[FlightKey, tuple[asyncio.Task[ModelReply], Priority]] = {}

    def __len__(self) -> int:
        return len(self._flights)

    async def join(
        self,
        request: ModelRequest,
        key: str,
        obtain: Callable[[Priority], Coroutine[Any, Any, ModelReply]],
    ) -> ModelReply:
        """The reply of the flight of ``request``, started with ``obtain`` unless one is under way."""
        flight_key = (key, request.no_cache)
        flight = self._flights.get(flight_key)
        if flight is not None:
            task, priority = flight
            priority.lower(request.priority)  # an earlier item now waits for it too
            self.usage.counts["coalesced"] += 1
        else:
            priority = Priority(request.priority)
            task = asyncio.get_running_loop().create_task(obtain(priority))
            self._flights[flight_key] = (task, priority)

            def done(t: asyncio.Task, fk: FlightKey = flight_key) -> None:
                self._flights.pop(fk, None)
                if not t.cancelled():
                    t.exception()  # retrieved: no "never retrieved" warning when all waiters left

            task.add_done_callback(done)
        try:
            reply = await asyncio.shield(task)
        except asyncio.CancelledError:
            if self.stopping.interrupted and task.cancelled():
                raise RunInterrupted("the run was interrupted while this request was in flight") from None
            raise
        return dataclasses.replace(reply, tool_calls=list(reply.tool_calls))

    async def grace(self) -> None:
        """Interrupted: the replies on the wire get what is left of the stop's grace."""
        if self.stopping.cancel_at is not None and self._flights:
            tasks = [task for task, _priority in self._flights.values()]
            await asyncio.wait(tasks, timeout=self.stopping.grace_left())

    def cancel(self) -> None:
        for task, _priority in list(self._flights.values()):
            task.cancel()
