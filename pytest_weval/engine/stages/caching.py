"""Cache read and write and the run memo (docs/engine.md, 'The path of one request', steps 4, 5
and 9). Whether the store can keep replies at all is ``store_health.py``'s."""

from __future__ import annotations

import asyncio
import datetime as _dt
import functools
import logging
from typing import Any

from pytest_weval.engine.errors import ReplayMissError
from pytest_weval.engine.request import EngineSettings, ModelReply, ModelRequest
from pytest_weval.engine.stages.store_health import StoreHealth
from pytest_weval.engine.stages.usage import RunUsage
from pytest_weval.engine.store.cache import ResponseCache, make_entry, reply_from_entry
from pytest_weval.engine.store.common import NOT_NOW

log = logging.getLogger("pytest_weval.engine")


class CacheStage:
    def __init__(self, settings: EngineSettings, usage: RunUsage, health: StoreHealth, run_started: float):
        self.settings = settings
        self.usage = usage
        self.health = health  # told when a write fails
        self.run_started = run_started
        self.cache = health.cache  # one cache object: its write faults are the health's to read
        # Replies the persistent cache does not serve (modes refresh/off, no_cache requests):
        # a run answers each distinct request once (docs/engine.md).
        self._memo: dict[str, ModelReply] = {}
        self._writes: set[asyncio.Task[bool]] = set()  # cache writes: finished even on Ctrl-C

    def open(self, cache: ResponseCache | None) -> None:
        if cache is not None:
            self.cache = cache

    # -- read ------------------------------------------------------------------------------
    async def read(self, request: ModelRequest, key: str) -> ModelReply | None:
        """The cache's reply, else the run memo's, else None (under ``--weval-cache=ro``,
        ``ReplayMissError``: nothing is sent). The run's usage counts a reply from the cache of
        an earlier run here; one recorded during this run (by another worker, or an identical
        request of ours) is counted where it was sent."""
        if self.cache.readable(request):
            entry = await self.cache.get(key)
            if entry is not None:
                return self._stored(request, key, entry)
        return self._unstored(request, key)

    def read_now(self, request: ModelRequest, key: str) -> ModelReply | None:
        """``read``'s reply when the cache holds it and can say so without awaiting (a replay
        read where it is asked: ``ResponseCache.get_now``), counted as ``read`` counts it; else
        None, and ``read`` decides (a miss, the memo, an entry that cannot be read)."""
        if not self.cache.readable(request):
            return None
        entry = self.cache.get_now(key)
        if entry is None or entry is NOT_NOW:
            return None
        return self._stored(request, key, entry)

    def _stored(self, request: ModelRequest, key: str, entry: dict[str, Any]) -> ModelReply:
        if created_at(entry) < self.run_started:
            return self.usage.cache_hit(key, request.model.id, reply_from_entry(entry))
        return reply_from_entry(entry, cached=False)

    def _unstored(self, request: ModelRequest, key: str) -> ModelReply | None:
        memo = self._memo.get(key)
        if memo is not None:
            self.usage.counts["memo_hits"] += 1
            return memo.copy(cached=False)
        self._replay_miss(request, key)
        return None

    def _replay_miss(self, request: ModelRequest, key: str) -> None:
        """Under ``--weval-cache=ro`` a reply the cache does not hold is an error: nothing is sent."""
        if self.settings.cache_mode == "ro":
            why = " (the prompt is marked noCache, so it is never recorded)" if request.no_cache else ""
            raise ReplayMissError(
                f"response was never recorded{why} (cache key {key[:16]}…, model {request.model.id}); "
                f"re-record with --weval-cache=rw",
                model_id=request.model.id,
            )

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
        self.health.write_began()  # the sending waits while too many replies do (``StoreHealth.behind``)
        # The caller waits on a future of its own (as in ``flights.py``): cancelling it leaves
        # the write alone, with one future and two callbacks fewer than ``asyncio.shield``.
        told: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        write.add_done_callback(functools.partial(self._written, told))
        stored = await told
        if not stored:
            self.health.notice_faults()
        return stored

    def _written(self, told: asyncio.Future[bool], write: asyncio.Task[bool]) -> None:
        self._writes.discard(write)
        self.health.write_ended()
        if told.done():  # its caller was cancelled
            if not write.cancelled():
                write.exception()  # retrieved: the caller is gone, the write's error was counted by the cache
        elif write.cancelled():
            told.cancel()
        elif (error := write.exception()) is not None:
            told.set_exception(error)
        else:
            told.set_result(write.result())

    def remember(self, request: ModelRequest, key: str, reply: ModelReply) -> None:
        """The run memo keeps what the persistent cache does not serve."""
        if not self.cache.readable(request) and reply.text.strip():
            self._memo[key] = reply

    # -- closing ---------------------------------------------------------------------------
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
