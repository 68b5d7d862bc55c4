"""The budget around each attempt (docs/engine.md, 'Prices, spend and the budget'): what an
attempt reserves before it goes and what its reply is charged after. Whether a reservation is
admitted is ``Budget.reserve`` (``engine/prices.py``, by ``admits``); what a reply costs is
``PriceBook.reply_cost`` (its own usage, as billed)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from pytest_weval.engine.prices import Budget, PriceBook
from pytest_weval.engine.request import EngineSettings, ModelReply, ModelRequest
from pytest_weval.engine.store.common import StoreDown


class Attempt:
    """One attempt's room in the budget: reserved on entry, settled on exit at its reply's
    cost (0 when no reply came). ``store_down`` raises the request's error when the run's
    shared spend is out of reach."""

    __slots__ = ("_budget", "_max_tokens", "_prices", "_request", "_reserved", "_store_down", "cost")

    def __init__(
        self,
        budget: Budget,
        prices: PriceBook,
        request: ModelRequest,
        max_tokens: int | None,
        store_down: Callable[[ModelRequest], None],
    ):
        self._budget = budget
        self._prices = prices
        self._request = request
        self._max_tokens = max_tokens
        self._store_down = store_down
        self._reserved = 0.0
        self.cost = 0.0

    async def __aenter__(self) -> Attempt:
        try:
            self._reserved = await self._budget.reserve(self._request, self._max_tokens)
        except StoreDown:
            self._store_down(self._request)
            raise
        return self

    def reply(self, reply: ModelReply) -> None:
        """The attempt got ``reply``: the budget is charged what it cost."""
        if self._budget.limit_usd is not None:
            model_id = self._request.model.id
            self.cost = self._prices.reply_cost(model_id, reply) or 0.0

    async def __aexit__(self, *exc: Any) -> None:
        await self._budget.settle(self._reserved, self.cost)


class BudgetStage:
    def __init__(self, settings: EngineSettings, prices: PriceBook):
        self.settings = settings
        self.prices = prices
        # shared through the claims store under xdist (Budget.use_ledger)
        self.budget = Budget(settings.budget_usd, prices, keeps_replies=settings.cache_mode != "off")

    @property
    def limited(self) -> bool:
        """A budget is set (``--weval-budget``): each attempt reserves room and is charged."""
        return self.budget.limit_usd is not None

    def holds_items(self) -> bool:
        """An item's samples hold room together only where requests are sent live and priced:
        not under ``--weval-cache=ro``, nor under ``--weval-batch`` (batches are cut to the room)."""
        return self.budget.limit_usd is not None and self.settings.cache_mode != "ro" and self.settings.batch == "off"

    def holding(
        self, request: ModelRequest, max_tokens: int | None, count: int
    ) -> contextlib.AbstractAsyncContextManager[None]:
        return self.budget.holding(request, max_tokens, count)

    def attempt(
        self, request: ModelRequest, max_tokens: int | None, store_down: Callable[[ModelRequest], None]
    ) -> Attempt:
        """Room for one attempt of ``request`` (``async with``)."""
        return Attempt(self.budget, self.prices, request, max_tokens, store_down)
