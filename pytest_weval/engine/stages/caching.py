"""Cache read and write, the run memo, and whether the store can keep replies (docs/engine.md,
'The path of one request', steps 4, 5 and 9; 'When the store is unreachable').

No request is sent once the store cannot keep its reply: it would be paid for and lost, and
bought again by the next run. That rule is ``check_storable``; ``broke`` says when a write of
the shared store showed it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as _dt
import logging
from typing import Any

from pytest_weval.engine.errors import ReplayMissError, StoreDownError, StoreFullError
from pytest_weval.engine.request import EngineSettings, ModelReply, ModelRequest
from pytest_weval.engine.stages.notices import Notices
from pytest_weval.engine.stages.usage import RunUsage
from pytest_weval.engine.store.cache import ResponseCache, StoreFaults, make_entry, reply_from_entry
from pytest_weval.engine.store.common import StoreDown
from pytest_weval.engine.store.outage import Outage
from pytest_weval.engine.store.sqlite_health import fix_command, is_full, is_unwritable

log = logging.getLogger("pytest_weval.engine")


class CacheStage:
    def __init__(self, settings: EngineSettings, usage: RunUsage, notices: Notices, run_started: float):
        self.settings = settings
        self.usage = usage
        self.notices = notices
        self.run_started = run_started
        self.cache = ResponseCache(None, settings.cache_mode)
        self.outage: Outage | None = None  # a store server's reachability (store/outage.py)
        self.shares_store = False  # replies are claimed and shared through the store (coordinating)
        # Replies the persistent cache does not serve (modes refresh/off, no_cache requests):
        # a run answers each distinct request once (docs/engine.md).
        self._memo: dict[str, ModelReply] = {}
        self._writes: set[asyncio.Task[bool]] = set()  # cache writes: finished even on Ctrl-C

    def open(self, cache: ResponseCache | None, outage: Outage | None, *, shares_store: bool) -> None:
        if cache is not None:
            self.cache = cache
        self.outage = outage
        self.shares_store = shares_store

    # -- read ------------------------------------------------------------------------------
    async def read(self, request: ModelRequest, key: str) -> ModelReply | None:
        """The cache's reply, else the run memo's, else None. The run's usage counts a reply
        from the cache of an earlier run here; one recorded during this run (by another worker,
        or an identical request of ours) is counted where it was sent."""
        if self.cache.readable(request):
            entry = await self.cache.get(key)
            if entry is not None:
                if created_at(entry) < self.run_started:
                    return self.usage.cache_hit(key, request.model.id, reply_from_entry(entry))
                return reply_from_entry(entry, cached=False)
        memo = self._memo.get(key)
        if memo is not None:
            self.usage.counts["memo_hits"] += 1
            return dataclasses.replace(memo, cached=False, tool_calls=list(memo.tool_calls))
        return None

    async def entry(self, request: ModelRequest, key: str) -> dict[str, Any] | None:
        """The stored entry of ``key``, when the cache serves ``request``."""
        if not self.cache.readable(request):
            return None
        return await self.cache.get(key)

    async def cached_reply(self, request: ModelRequest, key: str) -> ModelReply | None:
        """The reply the cache held when this run began, without sending or counting anything."""
        entry = await self.entry(request, key)
        if entry is None or created_at(entry) >= self.run_started:
            return None
        return reply_from_entry(entry)

    # -- before sending --------------------------------------------------------------------
    async def before_send(self, request: ModelRequest, key: str) -> None:
        """Nothing is sent under ``--weval-cache=ro``, nor while the store cannot keep replies."""
        if self.settings.cache_mode == "ro":
            why = " (the prompt is marked noCache, so it is never recorded)" if request.no_cache else ""
            raise ReplayMissError(
                f"response was never recorded{why} (cache key {key[:16]}…, model {request.model.id}); "
                f"re-record with --weval-cache=rw",
                model_id=request.model.id,
            )
        self.notice_faults()
        self.check_storable(request)
        await self.wait_until_up(request)

    def check_storable(self, request: ModelRequest) -> None:
        """No request is sent once the store cannot keep replies: each would be paid for and lost
        (and bought again by the next run). ``--weval-cache=off`` stores nothing, so never stops."""
        if self.outage is not None and self.outage.gave_up and self._needs_store(request):
            raise StoreDownError(
                f"not sent: {self.outage.gave_up}; replies already received are kept for the next run",
                model_id=request.model.id,
            )
        if self.cache.writable(request) and self.cache.stopped:
            raise StoreFullError(
                f"not sent: the cache at {self.cache.faults.where} cannot store replies ({self.cache.stopped}), "
                "so this reply would be paid for and lost; free space, or run with --weval-cache=off",
                model_id=request.model.id,
            )

    def _needs_store(self, request: ModelRequest) -> bool:
        """Its reply goes into the store, or is claimed and shared through it."""
        return self.cache.writable(request) or self.shares_store

    async def wait_until_up(self, request: ModelRequest) -> None:
        """While the store server does not answer, no request starts: its reply might not be
        storable, and its claim not shareable. Returns when the store answers again; raises
        ``StoreDownError`` when it was given up (``--weval-store-retry``)."""
        outage = self.outage
        if outage is None or not outage.down or not self._needs_store(request):
            return
        self.notice_faults()
        with contextlib.suppress(StoreDown):
            await outage.wait_up()
        self.check_storable(request)

    def broke(self, exc: BaseException, request: ModelRequest) -> bool:
        """A write of the shared store (a claim, an outcome) failed for want of space or
        permission: from now on nothing is sent (``check_storable``). True when it was that."""
        if isinstance(exc, StoreDown):  # given up: ``check_storable`` stops the sending
            self.notice_faults()
            return True
        if not (is_full(exc) or is_unwritable(exc)) or not self.cache.writable(request):
            return False
        faults = self.cache.faults
        faults.stop = faults.stop or ("disk full" if is_full(exc) else "read-only")
        self.notice_faults()
        return True

    # -- after sending ---------------------------------------------------------------------
    async def write(self, request: ModelRequest, key: str, summary: dict, reply: ModelReply) -> bool:
        """Record ``reply``; True when it is in the store."""
        # A blank reply is an error for the caller; it is not worth replaying.
        if not self.cache.writable(request) or not reply.text.strip():
            return False
        entry = make_entry(key, request.model.id, summary, reply)
        # A reply that arrived is kept whatever happens next (Ctrl-C cancels its caller):
        # the write goes on as a task of its own, which closing waits for.
        write = asyncio.ensure_future(self.cache.put(entry))
        self._writes.add(write)
        write.add_done_callback(self._writes.discard)
        stored = await asyncio.shield(write)
        if not stored:
            self.notice_faults()
        return stored

    def remember(self, request: ModelRequest, key: str, reply: ModelReply) -> None:
        """The run memo keeps what the persistent cache does not serve."""
        if not self.cache.readable(request) and reply.text.strip():
            self._memo[key] = reply

    # -- faults and closing ----------------------------------------------------------------
    def notice_faults(self) -> None:
        """Say at once (not only in a log) that the store stopped keeping replies or is damaged."""
        faults = self.cache.faults
        outage = self.outage
        if outage is not None and outage.gave_up and not self.notices.said("store-down"):
            last = f" (last: {outage.last_error})" if outage.last_error else ""
            self.notices.once(
                "store-down",
                f"weval: {outage.gave_up}{last}: no new request is sent; replies received are kept for the next run",
            )
        elif outage is not None and outage.since is not None:
            self.notices.once(
                f"store-outage-{outage.outages}",
                f"weval: the cache store {outage.where} does not answer: sending paused, retrying for up to "
                f"{outage.retry_s:g} s (--weval-store-retry)",
            )
        if faults.stop:
            self.notices.once(
                "store-stop",
                f"weval: the cache at {faults.where} cannot store replies ({faults.stop}): no new request is "
                "sent, as each would be paid for and lost; free space, or run with --weval-cache=off",
            )
        if faults.damaged:
            self.notices.once(
                "store-damaged",
                f"weval: the cache at {faults.where} is damaged ({faults.damaged}): its unreadable entries are "
                f"bought again; after the run, {fix_command(self.settings.cache_dir)} keeps every entry it can "
                "still read",
            )

    def faults(self) -> StoreFaults:
        """What went wrong with the store in this process (nothing: no line at the end)."""
        if self.outage is not None and self.outage.gave_up:
            self.cache.faults.down = self.cache.faults.down or self.outage.gave_up
        return self.cache.faults

    async def finish_writes(self) -> None:
        """Replies received are written before anything is cancelled."""
        if self._writes:
            await asyncio.wait(list(self._writes), timeout=self.settings.store_retry_s + 30)
        self._write_spool()

    def _write_spool(self) -> None:
        """The replies a given-up store could not take, into the spool for the next run."""
        spool = self.cache.spool
        if spool is None or not spool.entries:
            return
        try:
            spool.write()
        except OSError as exc:
            log.error("weval: could not write the spool %s: %s", spool.path, exc)
            self.cache.faults.unstored += len(spool.entries)
            self.cache.faults.spooled = 0

    def close(self) -> None:
        if self.cache.store is not None:
            self.cache.store.close()


def created_at(entry: dict) -> float:
    """An entry's creation time in seconds (the files store keeps it as ISO text)."""
    created = entry.get("created")
    if isinstance(created, (int, float)):
        return float(created)
    try:
        return _dt.datetime.fromisoformat(str(created)).timestamp()
    except ValueError:
        return 0.0
