"""Recovering a batch whose submitter died between asking the provider and recording its answer
(docs/batch.md)."""

from __future__ import annotations

import time

from pytest_weval.engine.batching.accounts import BatchApis
from pytest_weval.engine.errors import ModelCallError
from pytest_weval.engine.store.batches import Batch, BatchStore

# OpenAI and Anthropic end every batch within 24 hours: a batch recorded without the provider's id
# that no process could look for by then has ended at the provider (collected by no one), so
# its lines may be queued again without buying any twice while it is still open.
PROVIDER_WINDOW_S = 25 * 3600


class Recovery:
    def __init__(self, store: BatchStore, apis: BatchApis, *, claim_lease_s: float):
        self.store = store
        self.apis = apis
        self.claim_lease_s = claim_lease_s

    def abandoned(self, batch: Batch, now: float, gone: bool) -> bool:
        """A batch still being submitted whose submitter is ``gone``, or (on another machine) long
        gone, or whose record has no time."""
        return gone or batch.created is None or now - batch.created > self.claim_lease_s * 4

    async def recover(self, batch: Batch, known: set[str]) -> None:
        """If the provider has it, it is collected like any other; else its lines are queued again.
        A process that cannot look (no key, another account) leaves it as it is: the batch may
        exist, and queueing its lines again would buy them twice (docs/batch.md)."""
        api = self.apis.collector(batch)
        if api is None:
            if batch.created is not None and time.time() - batch.created > PROVIDER_WINDOW_S:
                await self.store.unsubmit(batch.id)
            return
        if batch.created is None:  # what the provider is searched by: left for `batch cancel`/a person
            self.apis.cannot_collect(batch, "its record in the store is damaged (its created is not a time)")
            return
        try:
            provider_id = await api.find(batch.id, batch.created, batch.lines, known)
        except ModelCallError as exc:  # e.g. no list endpoint: asked again after the poll interval
            self.apis.cannot_collect(batch, f"it could not be looked for at the provider: {exc.message}")
            return
        if provider_id is None:
            await self.store.unsubmit(batch.id)
        else:
            await self.store.submitted(batch.id, provider_id)
