"""The lines this process waits for, and how each wait ends (docs/batch.md, 'Waiting')."""

from __future__ import annotations

import asyncio
import dataclasses
import time

from pytest_weval.engine.errors import BatchPending, BudgetReached, ModelCallError, ProviderError
from pytest_weval.engine.request import ModelReply
from pytest_weval.engine.store.batches import BUDGET_STATUS, DONE, FAILED, SUBMITTED, BatchStore, Line, LineState
from pytest_weval.engine.store.cache import ResponseCache, reply_from_entry


@dataclasses.dataclass
class _Wanted:
    line: Line
    future: asyncio.Future[ModelReply]


class Waiters:
    def __init__(
        self,
        store: BatchStore,
        cache: ResponseCache,
        *,
        mode: str,
        poll_s: float,
        run_started: float,
        uncollectable: dict[str, str],
    ):
        self.store = store
        self.cache = cache
        self.mode = mode
        self.poll_s = poll_s
        self.run_started = run_started
        self.uncollectable = uncollectable  # batch id -> why this process cannot collect it
        self._wanted: dict[str, _Wanted] = {}
        self._next_look = 0.0

    def __bool__(self) -> bool:
        return bool(self._wanted)

    async def wait(self, line: Line) -> ModelReply:
        future: asyncio.Future[ModelReply] = asyncio.get_running_loop().create_future()
        self._wanted[line.key] = _Wanted(line, future)
        try:
            return await future
        finally:
            self._wanted.pop(line.key, None)

    def answer(self, key: str, reply: ModelReply) -> None:
        """A reply collected here: its waiter (if any) has it at once."""
        wanted = self._wanted.get(key)
        if wanted is not None and not wanted.future.done():
            wanted.future.set_result(reply)

    def fail_all(self, exc: ModelCallError) -> None:
        for wanted in list(self._wanted.values()):
            if not wanted.future.done():
                wanted.future.set_exception(exc)

    async def look(self, changed: bool) -> None:
        """The lines waited for are looked up when this process changed something, else now and
        then (another process may have collected them): not every turn, as they may be many."""
        now = time.monotonic()
        if self._wanted and (changed or now >= self._next_look):
            self._next_look = now + min(self.poll_s, 5.0)
            await self._answer()

    async def _answer(self) -> None:
        keys = list(self._wanted)
        states = await self.store.look(keys)
        again: list[Line] = []
        lost: list[str] = []
        for key in keys:
            wanted = self._wanted.get(key)
            if wanted is None or wanted.future.done():
                continue
            state = states.get(key)
            why = self.uncollectable.get(state.batch or "") if state is not None else None
            if why is not None and state is not None and state.state not in (DONE, FAILED):
                self._uncollectable(wanted, state, why)
            elif state is None or state.state == DONE:  # collected (or cancelled: state None)
                entry = await self.cache.get(key)
                if entry is not None:
                    wanted.future.set_result(reply_from_entry(entry, cached=False))
                elif state is None:
                    again.append(wanted.line)
                else:  # its reply left the cache since (pruned): bought again
                    lost.append(key)
            elif state.state == FAILED and state.updated >= self.run_started:
                self._failed(wanted, state)
            elif (
                self.mode == "submit"
                and state.state == SUBMITTED
                and state.batch_checked is not None
                and state.batch_checked >= self.run_started
            ):
                line = wanted.line
                wanted.future.set_exception(
                    BatchPending(
                        f"in batch {state.provider_id} at {line.provider}; collect with --weval-batch=wait",
                        model_id=line.model,
                        provider=line.provider,
                        batch_id=state.provider_id or "",
                    )
                )
        if again:
            await self.store.queue(again)
        if lost:
            await self.store.requeue(lost, DONE, before=time.time())

    def _uncollectable(self, wanted: _Wanted, state: LineState, why: str) -> None:
        line = wanted.line
        batch_name = state.provider_id or state.batch
        message = f"in {line.provider} batch {batch_name}, which this run cannot collect: {why}"
        if self.mode == "submit":
            wanted.future.set_exception(
                BatchPending(message, model_id=line.model, provider=line.provider, batch_id=batch_name or "")
            )
        else:
            wanted.future.set_exception(ProviderError(None, f"{line.model}: {message}", model_id=line.model))

    @staticmethod
    def _failed(wanted: _Wanted, state: LineState) -> None:
        line = wanted.line
        where = f" (batch {state.provider_id})" if state.provider_id else ""
        if state.error_status == BUDGET_STATUS:
            wanted.future.set_exception(BudgetReached(state.error_message or "budget", model_id=line.model))
        else:
            wanted.future.set_exception(
                ProviderError(state.error_status, f"{line.model}: {state.error_message}{where}", model_id=line.model)
            )
