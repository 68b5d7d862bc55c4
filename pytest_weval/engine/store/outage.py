"""A shared store that goes away for a while (docs/engine.md, 'When the store is unreachable'):
one retry policy for every call to it, and the spool that keeps paid replies when it stays away.

``Outage.call`` is the only place a store call is retried for want of the server: every call of
the PostgreSQL store (the cache, the claims, outcomes, signals, the spend) goes through it. The
first failure starts an outage; calls then retry with backoff, and the engine sends no request
while it lasts (``wait_up``), since its reply might not be storable. The store answering again
ends it. When it lasts ``retry_s`` (``--weval-store-retry``) the store is given up for the rest
of the run: every call fails at once with ``StoreDown``, no request is sent, and every reply that
could not be stored goes to the ``Spool``, a file the next run stores and removes.

The spool lives in the cache folder (``--weval-cache-dir``, ``.weval_cache`` beside the project),
not in the temp dir: it holds paid replies, so it must outlive a reboot and a temp cleaner, and it
belongs to the project whose next run flushes it. One file per process (xdist workers each write
their own), named by a hash of the store's URL without its password, so it is flushed only into
the store it was meant for. Entries are cache entries (the request's key payload and the reply):
no key, no header, no password.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from pytest_weval.engine.store.common import StoreDown, one_line, redact_url
from pytest_weval.files import write_atomic

log = logging.getLogger("pytest_weval.engine")
T = TypeVar("T")

BACKOFF_FIRST_S = 0.05
BACKOFF_MAX_S = 1.0  # short: a restart of a fraction of a second should cost about that
SPOOL_FOLDER = "weval-spool"


class Outage:
    """Whether one store answers, and the retry of every call to it."""

    def __init__(self, where: str, retry_s: float):
        self.where = where  # the store as shown (a redacted URL)
        self.retry_s = retry_s
        self.since: float | None = None  # monotonic: the first failure of the outage under way
        self.gave_up: str | None = None  # why the store was given up, for the rest of the run
        self.last_error: str | None = None  # the driver's last word when it was given up
        self.outages = 0  # outages this process saw (those it survived and the last)
        self.longest_s = 0.0
        self._back: asyncio.Event | None = None  # set when the outage under way ends (or is given up)

    @property
    def down(self) -> bool:
        return self.since is not None or self.gave_up is not None

    async def call(self, attempt: Callable[[], Awaitable[T]], transient: Callable[[BaseException], bool]) -> T:
        """``attempt()``, tried again while it fails for want of the server (``transient``),
        until the outage has lasted ``retry_s``; then ``StoreDown``."""
        delay = BACKOFF_FIRST_S
        while True:
            if self.gave_up is not None:
                raise StoreDown(self.gave_up)
            try:
                result = await attempt()
            except Exception as exc:
                if not transient(exc):
                    raise
                now = time.monotonic()
                if self.since is None:
                    self._begin(now, exc)
                assert self.since is not None
                left = self.since + self.retry_s - now
                if left <= 0:
                    self._give_up(exc)
                    continue
                await asyncio.sleep(min(delay, left))
                delay = min(delay * 2, BACKOFF_MAX_S)
                continue
            if self.since is not None:
                self._end()
            return result

    async def wait_up(self) -> None:
        """Return when the store answers (at once when it does), or raise ``StoreDown``."""
        while self.since is not None and self.gave_up is None:
            back = self._back
            assert back is not None
            left = self.since + self.retry_s - time.monotonic()
            try:
                await asyncio.wait_for(back.wait(), timeout=max(0.0, left) + BACKOFF_MAX_S)
            except asyncio.TimeoutError:
                # Nobody retried to the end (their callers were cancelled): the time is up anyway.
                if self.since is not None and self.gave_up is None:
                    self._give_up(None)
        if self.gave_up is not None:
            raise StoreDown(self.gave_up)

    def _begin(self, now: float, exc: BaseException) -> None:
        self.since = now
        self.outages += 1
        self._back = asyncio.Event()
        log.info(
            "weval: the cache store %s does not answer (%s); retrying for up to %g s, sending nothing meanwhile",
            self.where,
            one_line(exc),
            self.retry_s,
        )

    def _end(self) -> None:
        assert self.since is not None
        lasted = time.monotonic() - self.since
        self.longest_s = max(self.longest_s, lasted)
        log.info("weval: the cache store %s answers again after %.1f s", self.where, lasted)
        self.since = None
        if self._back is not None:
            self._back.set()

    def _give_up(self, exc: BaseException | None) -> None:
        self.longest_s = max(self.longest_s, self.retry_s)
        # Short, for every item it stops; the driver's words once, in the log and the notice.
        self.gave_up = f"the cache store {self.where} did not answer for {self.retry_s:g} s (--weval-store-retry)"
        self.last_error = one_line(exc) if exc is not None else None
        log.info("weval: %s (%s); giving it up for this run", self.gave_up, self.last_error or "no call finished")
        self.since = None
        if self._back is not None:
            self._back.set()


def spool_folder(cache_dir: Path | str) -> Path:
    return Path(cache_dir) / SPOOL_FOLDER


def _store_id(url: str) -> str:
    return hashlib.sha256(redact_url(url).encode("utf-8")).hexdigest()[:16]


class Spool:
    """Replies a given-up store could not take, kept in memory and written at the end of the
    run (``write``) to one file of this process; read by the next run (``flush``)."""

    def __init__(self, cache_dir: Path | str, url: str):
        self.path = spool_folder(cache_dir) / f"{_store_id(url)}-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
        self.entries: dict[str, dict[str, Any]] = {}

    def add(self, entry: dict[str, Any]) -> None:
        self.entries[entry["key"]] = entry

    def get(self, key: str) -> dict[str, Any] | None:
        return self.entries.get(key)

    def write(self) -> Path | None:
        """Write every entry held (atomically: a reader never sees half a spool); the file, or
        None when there is nothing to keep."""
        if not self.entries:
            return None
        payload = json.dumps({"v": 1, "entries": list(self.entries.values())}, ensure_ascii=False)
        write_atomic(self.path, payload.encode("utf-8"), durable=True)
        return self.path


async def flush(cache_dir: Path | str, url: str, put: Callable[[dict[str, Any]], Awaitable[None]]) -> int:
    """Store the entries of every spool left for this store by earlier runs, and remove each
    file once all its entries are in. A file is taken by renaming it first, so two processes
    starting at once never both flush it; one that cannot be stored now is put back for the next
    run. Returns the number of entries stored."""
    folder = spool_folder(cache_dir)
    if not folder.is_dir():
        return 0
    stored = 0
    for path in sorted(folder.glob(f"{_store_id(url)}-*.json")):
        taken = path.with_name(f".{path.name}.{os.getpid()}.flushing")
        try:
            os.rename(path, taken)
        except OSError:
            continue  # another process took it
        try:
            entries = json.loads(taken.read_text(encoding="utf-8"))["entries"]
            for entry in entries:
                await put(entry)
        except BaseException:
            os.replace(taken, path)
            raise
        stored += len(entries)
        taken.unlink()
    with_nothing_left = not any(folder.iterdir())
    if with_nothing_left:
        try:
            folder.rmdir()
        except OSError:
            pass
    return stored
