"""Taking requests into rounds and submitting them (docs/batch.md, 'Rounds').

Queued lines go out once no line has joined the queue for ``batch_round_s``, as one batch per
provider account, cut at the provider's line and byte limits and at what the budget has room for.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable

from pytest_weval.engine.batching.accounts import BatchApis, BudgetHolds, Changes, StatusClock
from pytest_weval.engine.claims import Coordinator
from pytest_weval.engine.errors import ModelCallError, ProviderError
from pytest_weval.engine.prices import Budget
from pytest_weval.engine.store.batches import BUDGET_STATUS, FAILED, BatchStore, Line
from pytest_weval.engine.transport.batch_api import BatchAPI

# Statuses of a refused submission that refusing again would repeat: its lines fail.
_REFUSED_FOR_GOOD = (400, 401, 403, 404, 413, 422)


class Rounds:
    def __init__(
        self,
        store: BatchStore,
        *,
        apis: BatchApis,
        budget: Budget,
        holds: BudgetHolds,
        clock: StatusClock,
        changes: Changes,
        coordinator: Coordinator,
        round_s: float,
        run_started: float,
        interrupted: Callable[[], bool],
        notice: Callable[[str, str], None],
    ):
        self.store = store
        self.apis = apis
        self.budget = budget
        self.holds = holds
        self.clock = clock
        self.changes = changes
        self.coordinator = coordinator
        self.round_s = round_s
        self.run_started = run_started
        self.interrupted = interrupted
        self.notice = notice
        self._queue: list[Line] = []
        self.queued = asyncio.Event()  # a line joined this process's queue

    def take(self, line: Line) -> None:
        self._queue.append(line)
        self.queued.set()

    async def flush(self) -> None:
        """This process's new lines into the store's queue (a line that failed in an earlier run
        is queued again)."""
        if not self._queue:
            return
        self.queued.clear()
        lines, self._queue = self._queue, []
        await self.store.queue(lines)
        await self.store.requeue([line.key for line in lines], FAILED, before=self.run_started)
        self.changes.made()

    async def submit_due(self) -> None:
        """The submitter's part: every settled (or full) queue of an account this process has."""
        now = time.time()
        round_s = self.round_s
        for queue in await self.store.queues():
            try:
                api = self.apis.api(queue.provider)
            except ModelCallError:
                continue
            if api.account != queue.account:
                continue
            settled = now - queue.newest >= round_s or now - queue.oldest >= 10 * round_s
            if settled or queue.lines >= api.max_lines:
                await self._submit(api, queue.provider, queue.account)

    async def _submit(self, api: BatchAPI, provider: str, account: str) -> None:
        while not self.interrupted():
            room = await self.budget.room()
            batch_id = f"wb-{uuid.uuid4().hex}"
            coordinator = self.coordinator
            taken, over = await self.store.take(
                batch_id,
                provider,
                account,
                api.max_lines,
                api.max_bytes,
                (coordinator.owner, coordinator.host, coordinator.pid),
                max_estimate=room,
            )
            if not taken:
                if over and not self.holds:
                    await self._over_budget(provider, account)
                return
            amount = sum(estimate for _, _, _, estimate in taken)
            if not await self.budget.hold(amount):
                await self.store.unsubmit(batch_id)
                return
            try:
                provider_id = await api.submit([(key, body) for key, _, body, _ in taken], batch_id)
            except ProviderError as exc:
                await self.budget.settle(amount, 0.0)
                if exc.status in _REFUSED_FOR_GOOD:
                    await self.store.fail_all(batch_id, exc.status, exc.message)
                else:
                    await self.store.unsubmit(batch_id)
                raise
            except BaseException:
                await self.budget.settle(amount, 0.0)
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.store.unsubmit(batch_id))
                raise
            await self.store.submitted(batch_id, provider_id)
            self.changes.made()
            self.holds.keep(batch_id, amount)
            self.clock.asked(batch_id)
            self.notice(
                f"batch-submitted:{batch_id}",
                f"weval: submitted {len(taken)} request{'s' if len(taken) != 1 else ''} to {provider} as batch "
                f"{provider_id}",
            )
            if len(taken) < api.max_lines:
                return

    async def _over_budget(self, provider: str, account: str) -> None:
        """No room for even one more line and no batch of ours open that could free some: the
        queued lines fail as a live request would under a spent budget."""
        spent = self.budget.spent
        limit = self.budget.limit_usd
        message = (
            f"budget reached (${spent:.4f} of ${limit:g}): the next batch would pass it; "
            "the replies received are in the cache, so a larger --weval-budget continues from here"
        )
        await self.store.fail_queued(provider, account, BUDGET_STATUS, message)
        self.changes.made()
