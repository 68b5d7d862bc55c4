"""Batches outside a run: ``python -m pytest_weval batch list|cancel`` (docs/batch.md)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import httpx

from pytest_weval.engine.errors import ModelCallError
from pytest_weval.engine.request import EngineSettings
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.store.backends import backend_for, batch_store
from pytest_weval.engine.store.batches import DONE, FAILED, BatchStore
from pytest_weval.engine.transport.batch_api import BATCH_APIS
from pytest_weval.engine.transport.http import async_client


@dataclasses.dataclass(frozen=True)
class BatchRow:
    provider: str
    id: str  # the provider's id (ours while it is being submitted)
    status: str  # ours: submitting, submitted, ended, cancelled
    provider_status: str | None  # as the provider last said
    lines: int
    waiting: int  # lines still in it (not collected)
    failed: int
    age_s: float | None  # None: its record's created is not a time (damaged)


async def _open_batches_of(settings: EngineSettings, redactor: Redactor) -> tuple[BatchStore, Callable[[], Any]]:
    opened = await backend_for(settings.cache_store, settings.cache_dir).open(settings, redactor)
    assert opened.claims is not None
    return batch_store(opened.claims), opened.close


def _admin_settings(cache_store: str, cache_dir: str, env: Any = None) -> EngineSettings:
    return EngineSettings(cache_mode="rw", cache_store=cache_store, cache_dir=cache_dir, coordinate=True, env=env)


async def list_batches(cache_store: str, cache_dir: str, *, include_ended: bool = False) -> list[BatchRow]:
    """The batches recorded in a store, oldest first (open ones, or all)."""
    store, close = await _open_batches_of(_admin_settings(cache_store, cache_dir), Redactor())
    try:
        batches = await store.batches(include_ended=include_ended)
        counts = await store.line_counts()
    finally:
        await close()
    now = time.time()
    return [
        BatchRow(
            provider=b.provider,
            id=b.provider_id or b.id,
            status=b.status,
            provider_status=b.provider_status,
            lines=b.lines,
            waiting=sum(n for state, n in counts.get(b.id, {}).items() if state not in (FAILED, DONE)),
            failed=counts.get(b.id, {}).get(FAILED, 0),
            age_s=None if b.created is None else now - b.created,
        )
        for b in batches
    ]


async def cancel_batches(cache_store: str, cache_dir: str, which: str, env: Any = None) -> list[str]:
    """Ask the provider to cancel open batch ``which`` (its id, or ``all``); the provider's ids of
    those cancelled. Their lines are dropped when the batch is next collected (a run that still
    needs them queues them again)."""
    settings = _admin_settings(cache_store, cache_dir, env)
    redactor = Redactor()
    store, close = await _open_batches_of(settings, redactor)
    http = async_client(timeout=httpx.Timeout(settings.timeout_s))
    cancelled: list[str] = []
    try:
        for batch in await store.batches():
            if which != "all" and which not in (batch.provider_id, batch.id):
                continue
            if batch.provider_id is None:
                continue
            api = BATCH_APIS[batch.provider](settings.environ, redactor, http)
            if api.account != batch.account:
                raise ModelCallError(
                    f"{batch.provider} batch {batch.provider_id} was submitted with another key or base URL"
                )
            await api.cancel(batch.provider_id)
            cancelled.append(batch.provider_id)
    finally:
        await http.aclose()
        await close()
    return cancelled
