"""What the batcher's pieces share: this process's batch APIs, which batches it cannot collect,
what the budget holds per submitted batch, and a count of what it changed in the store."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from pytest_weval.engine.errors import ModelCallError
from pytest_weval.engine.prices import Budget
from pytest_weval.engine.request import EngineSettings
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.store.batches import Batch, BatchStore
from pytest_weval.engine.transport.batch_api import BATCH_APIS, BatchAPI


class BatchApis:
    """This process's batch API of each provider, and which batches it cannot collect (no key,
    another account, a damaged record) with why."""

    def __init__(
        self,
        settings: EngineSettings,
        redactor: Redactor,
        http: Callable[[], httpx.AsyncClient],
        notice: Callable[[str, str], None],
    ):
        self.settings = settings
        self.redactor = redactor
        self.http = http
        self.notice = notice
        self._apis: dict[str, BatchAPI] = {}
        self.uncollectable: dict[str, str] = {}  # batch id -> why this process cannot collect it

    def api(self, provider: str) -> BatchAPI:
        """This process's batch API of ``provider`` (``MissingKeyError`` without a key)."""
        api = self._apis.get(provider)
        if api is None:
            api = self._apis[provider] = BATCH_APIS[provider](
                self.settings.environ, self.redactor, self.http(), backoff_s=self.settings.backoff_base_s
            )
        return api

    def collector(self, batch: Batch) -> BatchAPI | None:
        """The API that can collect ``batch`` here, or None (and its waiters are told why)."""
        try:
            api = self.api(batch.provider)
        except ModelCallError as exc:
            why = exc.message
        else:
            if api.account == batch.account:
                self.uncollectable.pop(batch.id, None)
                return api
            why = "it was submitted with another key or base URL"
        self.cannot_collect(batch, why)
        return None

    def cannot_collect(self, batch: Batch, why: str) -> None:
        """Its waiters here end (skipped under ``submit``, errors under ``wait``) rather than wait
        for ever; the batch and its lines stay in the store for a process that can collect them."""
        self.uncollectable[batch.id] = why
        self.notice(
            f"batch-uncollectable:{batch.id}",
            f"weval: cannot collect {batch.provider} batch {batch.provider_id or batch.id} here: {why}; "
            "it is kept for a run that can",
        )


class BudgetHolds:
    """What the budget holds for each batch this process submitted, until it is collected."""

    def __init__(self, budget: Budget):
        self.budget = budget
        self._held: dict[str, float] = {}  # batch id -> what the budget holds for it here

    def __bool__(self) -> bool:
        return bool(self._held)

    def keep(self, batch_id: str, amount: float) -> None:
        if amount:
            self._held[batch_id] = amount

    async def settle(self, batch_id: str, cost: float) -> None:
        """``batch_id`` was collected here for ``cost``: its hold (if any) becomes that cost."""
        held = self._held.pop(batch_id, None)
        if held is not None:
            await self.budget.settle(held, cost)
        else:
            await self.budget.charge(cost)

    async def release_collected(self, store: BatchStore) -> None:
        """What the budget held for a batch this process submitted and another one collected."""
        if not self._held:
            return
        open_ids = {batch.id for batch in await store.open_batches()}
        for batch_id in [b for b in self._held if b not in open_ids]:
            await self.budget.settle(self._held.pop(batch_id), 0.0)


class Changes:
    """How many times this process changed the store (queued, submitted, collected): the lines
    waited for are looked up again after a change."""

    def __init__(self) -> None:
        self.count = 0

    def made(self) -> None:
        self.count += 1


class StatusClock:
    """When this process last asked (or learned) each batch's status: asks are spaced by the
    poll interval."""

    def __init__(self, poll_s: float):
        self.poll_s = poll_s
        self._asked: dict[str, float] = {}

    def due(self, batch_id: str, now: float) -> bool:
        asked = self._asked.get(batch_id)
        return asked is None or now - asked >= self.poll_s

    def asked(self, batch_id: str, now: float | None = None) -> None:
        self._asked[batch_id] = time.time() if now is None else now
