"""The budget around each attempt (docs/engine.md, 'Prices, spend and the budget'): what an
attempt reserves before it goes and what its reply is charged after. Whether a reservation is
admitted is ``Budget.reserve`` (``engine/prices.py``, ``admits``); what a reply costs is
``PriceBook.cost``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

from pytest_weval.engine.prices import Budget, PriceBook
from pytest_weval.engine.request import EngineSettings, ModelReply, ModelRequest
from pytest_weval.engine.store.common import StoreDown


class Charge:
    """What the budget is charged for one attempt: its reply's cost, if a reply came."""

    def __init__(self, stage: BudgetStage, model_id: str):
        self._stage = stage
        self._model_id = model_id
        self.cost = 0.0

    def reply(self, reply: ModelReply) -> None:
        if self._stage.budget.limit_usd is not None:
            cost = self._stage.prices.cost(self._model_id, reply.input_tokens, reply.output_tokens)
            self.cost = cost or 0.0


class BudgetStage:
    def __init__(self, settings: EngineSettings, prices: PriceBook):
        self.settings = settings
        self.prices = prices
        # shared through the claims store under xdist (Budget.use_ledger)
        self.budget = Budget(settings.budget_usd, prices, keeps_replies=settings.cache_mode != "off")

    def holds_items(self) -> bool:
        """An item's samples hold room together only where requests are sent live and priced:
        not under ``--weval-cache=ro``, nor under ``--weval-batch`` (batches are cut to the room)."""
        return self.budget.limit_usd is not None and self.settings.cache_mode != "ro" and self.settings.batch == "off"

    def holding(
        self, request: ModelRequest, max_tokens: int | None, count: int
    ) -> contextlib.AbstractAsyncContextManager[None]:
        return self.budget.holding(request, max_tokens, count)

    @contextlib.asynccontextmanager
    async def attempt(
        self, request: ModelRequest, max_tokens: int | None, store_down: Callable[[ModelRequest], None]
    ) -> AsyncIterator[Charge]:
        """Room for one attempt, settled at its reply's cost (0 without a reply) when it ends.
        ``store_down`` raises the request's error when the run's shared spend is out of reach."""
        try:
            reserved = await self.budget.reserve(request, max_tokens)
        except StoreDown:
            store_down(request)
            raise
        charge = Charge(self, request.model.id)
        try:
            yield charge
        finally:
            await self.budget.settle(reserved, charge.cost)
