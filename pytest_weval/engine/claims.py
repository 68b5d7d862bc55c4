"""Cross-process request claims (docs/rulings.md, ruling 18; docs/engine.md, 'Cross-process claims' explains the design).

Every worker schedules every request; before sending, a worker claims the request's key in the
run's shared claims store. The claim and the check "has a result already landed?" cannot be
interleaved with a holder recording its outcome and dropping its claim, so no interleaving lets
two workers send the same request. A worker whose claim fails waits: one poller per process
looks up every awaited key in one query every ``poll_interval_s``. Claims carry a lease the
holder renews every lease/3; a claim whose lease ran out, or whose holder (on this host) is no
longer alive, is taken over.

Outcomes are recorded per run id (``run_results``) and read only within the same run, so
cache mode ``off`` and ``no_cache`` requests are shared between the processes of one run and
never across runs. A result that went into the response store is recorded as ``in_store``
(the waiter reads the store) rather than copied.

Under ``--weval-budget`` the run's spend is kept here too (``SpendLedger``, table ``run_spend``):
one row per process with what it spent and what it holds reserved for its requests in flight. A
reservation sums every live process's row under the store's write lock, so the processes of a
run together never reserve past the budget (docs/engine.md, 'Prices, spend and the budget').

Where the rows live is a ``ClaimsStore``: SQLite on one machine (``claims_sqlite.py``, the
cache's own file or a claims file beside it) or PostgreSQL shared by several machines
(``store/postgres.py``). The policy (leases, waiting, renewal, who is dead) is here, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import os
import shutil
import socket
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_weval.engine.store.claims_sqlite import SqliteClaims
from pytest_weval.engine.store.claims_store import (
    SPEND_SCHEMA,
    ClaimsStore,
    Dead,
    Landed,
    Owner,
    Spend,
    landed_from_row,
)
from pytest_weval.engine.store.common import StoreDown
from pytest_weval.engine.store.db import SqliteDB
from pytest_weval.files import write_atomic

__all__ = [
    "RESULT_RETENTION_S",
    "ROLE_PREFIX",
    "SPEND_SCHEMA",
    "ClaimsStore",
    "Coordinator",
    "Dead",
    "Landed",
    "Owner",
    "Spend",
    "SpendLedger",
    "handover_folder",
    "landed_from_row",
    "request_stop",
]

log = logging.getLogger("pytest_weval.engine")

RESULT_RETENTION_S = 2 * 24 * 3600  # run results older than this are cleaned up at start
# A claim on a duty rather than a request or an item (the batch submitter): held for as long as
# its process does the duty, so nobody waits for it to be finished.
ROLE_PREFIX = "role:"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return True
    # A killed xdist worker stays a zombie until the controller reaps it; signal 0 still
    # reaches a zombie, /proc says what it is (elsewhere the lease runs out instead).
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def request_stop(path: Path, run_id: str, name: str = "stop") -> None:
    """Tell every process of run ``run_id`` to stop sending (the xdist controller was
    interrupted; its workers may not have been). A no-op when the run has no claims file."""
    if not path.exists():
        return
    try:
        with contextlib.closing(sqlite3.connect(str(path), timeout=2)) as conn:
            conn.execute(
                "INSERT INTO run_signals (run_id, name, until, created) VALUES (?, ?, 0, ?) "
                "ON CONFLICT(run_id, name) DO UPDATE SET created = excluded.created",
                (run_id, name, time.time()),
            )
            conn.commit()
    except sqlite3.Error as exc:
        log.warning("weval claims: could not ask the workers to stop: %s", exc)


def handover_folder(coordination_dir: Path | str | None, run_id: str) -> Path:
    """Where the processes of a run on this host hand each other the outcomes their store could
    not take (a full disk): outside the store, in the coordination folder (the system's temporary
    folder by default)."""
    where = Path(coordination_dir) if coordination_dir else Path(tempfile.gettempdir()) / "pytest-weval"
    return where / f"handover-{hashlib.sha256(run_id.encode()).hexdigest()[:16]}"


def _prune_handovers(folder: Path, before: float) -> None:
    """Handover folders are kept past their run (a process cannot tell when the last one read
    them), and removed, like run results, when older than ``RESULT_RETENTION_S``."""
    with contextlib.suppress(OSError):
        for old in folder.glob("handover-*"):
            with contextlib.suppress(OSError):
                if old.stat().st_mtime < before:
                    shutil.rmtree(old)


_GIVEN_UP = {"given_up": True}  # a handed-over claim its holder gave up without an outcome


class Coordinator:
    def __init__(
        self,
        store: ClaimsStore | SqliteDB,
        *,
        run_id: str,
        worker_id: str,
        lease_s: float,
        poll_s: float,
        on_signal: Callable[[str, float], None] | None = None,
        shares_outcomes: bool = True,
        outcomes_lost: Callable[[], bool] | None = None,
        handover: Path | None = None,
    ):
        if isinstance(store, SqliteDB):
            store = SqliteClaims(store)
        self.store: ClaimsStore = store
        self.run_id = run_id
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.owner = f"{self.host}:{self.pid}:{worker_id}:{uuid.uuid4().hex[:8]}"
        self.me = Owner(self.owner, self.host, self.pid)
        self.lease_s = lease_s
        self.poll_s = poll_s
        self.held: set[str] = set()
        self._waiting: dict[str, list[asyncio.Future[Landed | None]]] = {}
        self._poller: asyncio.Task | None = None
        self._heartbeat: asyncio.Task | None = None
        self._watcher: asyncio.Task | None = None
        self._writes: set[asyncio.Task[Any]] = set()
        self.on_signal = on_signal  # (name, until): "stop", or "pause:<group>" until a wall-clock time
        self.takeovers = 0
        # False for a run of one process (its own flights and memo serve a repeated request):
        # its claims only keep other runs on the same store from sending the same request.
        self.shares_outcomes = shares_outcomes
        # True once the store takes no more writes (a full disk): a holder can then neither
        # record its outcome nor give its claim up, so waiting for it lasts the whole lease.
        self.outcomes_lost = outcomes_lost or (lambda: False)
        # Then the holder hands its outcome (or its giving up) to the other processes of the
        # run on this host through a file here, and they look here before the store.
        self.handover = handover
        self._handover_failed = False
        self._claim_queue: dict[str, list[asyncio.Future[Landed | bool]]] = {}
        self._claimer: asyncio.Task[None] | None = None

    def dead(self, host: str, pid: int) -> bool:
        """A holder known to be gone: another process on this host that is no longer alive
        (a holder on another machine is judged by its lease alone)."""
        return host == self.host and pid != self.pid and not _pid_alive(pid)

    def _dead_now(self) -> Callable[[str, int], bool]:
        """``dead`` for one transaction: its rows name the same few holders (an xdist run's
        workers) hundreds of times, each asked of the system once (a signal and a read of /proc)."""
        verdicts: dict[tuple[str, int], bool] = {}

        def dead(host: str, pid: int) -> bool:
            verdict = verdicts.get((host, pid))
            if verdict is None:
                verdict = verdicts[(host, pid)] = self.dead(host, pid)
            return verdict

        return dead

    async def start(self) -> None:
        await self.store.prepare(RESULT_RETENTION_S)
        if self.handover is not None:
            _prune_handovers(self.handover.parent, time.time() - RESULT_RETENTION_S)
        loop = asyncio.get_running_loop()
        self._heartbeat = loop.create_task(self._renew_forever())
        if self.on_signal is not None:
            self._watcher = loop.create_task(self._watch_signals())

    # -- signals between the processes of a run ------------------------------------------
    def signal(self, name: str, until: float) -> None:
        """Record ``name`` (until a wall-clock time) for the run's other processes; returns at
        once, the write goes on in the background."""
        write = asyncio.ensure_future(self.store.signal(self.run_id, name, until))
        self._writes.add(write)
        write.add_done_callback(self._written)

    def _written(self, write: asyncio.Task[Any]) -> None:
        self._writes.discard(write)
        if not write.cancelled() and write.exception() is not None:
            log.warning("weval claims: could not share a signal: %s", write.exception())

    async def _watch_signals(self) -> None:
        """Every other poll: signals recorded since the last look (one small query)."""
        seen = 0.0
        while True:
            await asyncio.sleep(self.poll_s * 2)
            try:
                rows = await self.store.signals_since(self.run_id, seen)
            except StoreDown:
                return  # given up for the run: nothing more to hear
            except Exception as exc:  # noqa: BLE001 - busy beyond the timeout: look again next round
                log.warning("weval claims: reading signals failed: %s", exc)
                continue
            for name, until, created in rows:
                seen = max(seen, created)
                assert self.on_signal is not None
                self.on_signal(name, until)

    # -- claiming ----------------------------------------------------------------------
    async def claim(self, key: str) -> Landed | bool:
        """A Landed outcome if one is already recorded, True if we now hold the claim, False
        if another live process holds it. Claims asked for while one transaction is on its way
        go together in the next (every request of a serial run is claimed: one transaction each
        would cost more than the request's HTTP exchange)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Landed | bool] = loop.create_future()
        self._claim_queue.setdefault(key, []).append(future)
        if self._claimer is None or self._claimer.done():
            self._claimer = loop.create_task(self._claim_queued())
        return await future

    async def _claim_queued(self) -> None:
        while self._claim_queue:
            queue, self._claim_queue = self._claim_queue, {}
            try:
                outcomes = await self.claim_many(list(queue))
            except BaseException as exc:
                for futures in queue.values():
                    for future in futures:
                        if not future.done():
                            future.set_exception(exc if isinstance(exc, Exception) else asyncio.CancelledError())
                if not isinstance(exc, Exception):
                    raise
                continue
            for key, futures in queue.items():
                # Several callers of one key in one batch: the first holds the claim, the
                # others wait for its outcome like any other holder's.
                first, *others = futures
                if not first.done():
                    first.set_result(outcomes[key])
                elif outcomes[key] is True:  # its caller left meanwhile: nobody will send it
                    await self.abandon(key)
                for future in others:
                    if not future.done():
                        future.set_result(False if outcomes[key] is True else outcomes[key])

    async def claim_many(self, keys: list[str]) -> dict[str, Landed | bool]:
        """``claim`` for several keys in one transaction (the scheduler claims items in runs)."""
        claiming = asyncio.ensure_future(
            self.store.claim_many(self.run_id, keys, self.me, self.lease_s, self._dead_now())
        )

        def note_held(done: asyncio.Future) -> None:
            # Also when the caller was cancelled meanwhile: what was claimed is renewed and
            # released like any other claim.
            if not done.cancelled() and done.exception() is None:
                outcomes, takeovers = done.result()
                self.takeovers += takeovers
                self.held.update(key for key, outcome in outcomes.items() if outcome is True)

        claiming.add_done_callback(note_held)
        outcomes, _ = await asyncio.shield(claiming)
        return outcomes

    async def finish(
        self,
        key: str,
        *,
        in_store: bool = False,
        text: str | None = None,
        input_tokens: int = 0,
        output_tokens: int = 0,
        error_kind: str | None = None,
        error_status: int | None = None,
        error_message: str | None = None,
    ) -> None:
        """Record the outcome for this run and drop the claim, in one transaction."""
        if not self.shares_outcomes:
            await self.abandon(key)
            return
        landed = Landed(
            in_store=in_store,
            text=None if in_store else text,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            error_kind=error_kind,
            error_status=error_status,
            error_message=error_message,
        )
        try:
            await self.store.finish(self.run_id, key, self.owner, landed)
        except Exception:
            # The outcome is paid for: the process asked for it gets it from the handover.
            if not self._hand_over(key, dataclasses.asdict(landed)):
                raise
        finally:
            self.held.discard(key)

    async def forget(self, key: str) -> None:
        """Drop this run's recorded outcome for ``key`` (it pointed at a store entry that cannot
        be read), so the next claim can be taken."""
        await self.store.forget(self.run_id, key)

    async def abandon(self, key: str) -> None:
        """Drop a claim without an outcome (cancelled): another process may take it at once."""
        self.held.discard(key)
        try:
            await self.store.abandon(key, self.owner)
        except Exception:
            # Its waiters would wait for the lease to run out (it cannot be renewed either).
            self._hand_over(key, _GIVEN_UP)
            raise

    # -- waiting -------------------------------------------------------------------------
    async def wait(self, key: str) -> Landed | None:
        """Until the holder records an outcome (Landed) or the claim lapses (None)."""
        future: asyncio.Future[Landed | None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, []).append(future)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll_forever())
        try:
            return await future
        finally:
            waiters = self._waiting.get(key)
            if waiters is not None:
                if future in waiters:
                    waiters.remove(future)
                if not waiters:
                    self._waiting.pop(key, None)

    async def _poll_forever(self) -> None:
        while self._waiting:
            await asyncio.sleep(self.poll_s)
            keys = list(self._waiting)
            try:
                found = self._handed_over(keys)
                keys = [key for key in keys if key not in found]
                if keys and self.outcomes_lost() and (self.handover is None or self._handover_failed):
                    # Nothing can be handed over either: each waiter asks again, the claim
                    # fails, and it is evaluated here rather than waiting out the lease.
                    raise StoreDown("the store takes no more writes")
                found.update(await self.store.look(self.run_id, keys, self._dead_now()) if keys else {})
            except StoreDown:
                # Given up for the run: no outcome will be read, so every waiter is told the
                # claim lapsed, and asks again (where the engine sends nothing more).
                found.update(dict.fromkeys(keys))
            except Exception as exc:  # noqa: BLE001 - busy beyond the timeout, or worse: try again next round
                log.warning("weval claims: poll failed: %s", exc)
                continue
            for key, outcome in found.items():
                for future in self._waiting.pop(key, []):
                    if not future.done():
                        future.set_result(outcome)

    # -- the handover, when the store takes no writes ----------------------------------------
    def _handover_path(self, key: str) -> Path:
        assert self.handover is not None
        return self.handover / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")

    def _hand_over(self, key: str, outcome: dict[str, Any]) -> bool:
        """True when the run's other processes on this host can now read ``outcome``. Only
        once the store takes no more writes: a store that is down for a while (a restart)
        recovers, and its outage policy (wait, spool, replay) keeps the claims meaning what
        they say; an outcome handed over then would have its waiters re-ask a store that is
        not there yet."""
        if self.handover is None or not self.shares_outcomes or not self.outcomes_lost():
            return False
        try:
            write_atomic(self._handover_path(key), json.dumps({"key": key, **outcome}).encode())
        except OSError as exc:
            self._handover_failed = True
            log.debug("weval claims: could not hand %s over: %s", key, exc)
            return False
        return True

    def _handed_over(self, keys: list[str]) -> dict[str, Landed | None]:
        """The outcomes (a Landed) and the given-up claims (None) handed over for ``keys``."""
        if self.handover is None or not self.handover.is_dir():
            return {}
        found: dict[str, Landed | None] = {}
        for key in keys:
            try:
                data = json.loads(self._handover_path(key).read_bytes())
            except (OSError, ValueError):
                continue
            if not isinstance(data, dict) or data.pop("key", None) != key:
                continue
            try:
                found[key] = None if data.get("given_up") else Landed(**data)
            except TypeError:  # not a handover of this version
                continue
        return found

    # -- lease renewal --------------------------------------------------------------------
    async def _renew_forever(self) -> None:
        interval = max(0.05, self.lease_s / 3)
        while True:
            await asyncio.sleep(interval)
            if not self.held:
                continue
            try:
                await self.store.renew(self.owner, self.lease_s)
            except StoreDown:
                return
            except Exception as exc:  # noqa: BLE001 - try again next round, well within the lease
                log.warning("weval claims: lease renewal failed: %s", exc)

    async def close(self) -> None:
        if self._writes:
            await asyncio.wait(list(self._writes), timeout=5)
        for task in (self._poller, self._heartbeat, self._watcher, self._claimer):
            if task is not None:
                task.cancel()
        for task in (self._poller, self._heartbeat, self._watcher, self._claimer):
            if task is not None:
                try:
                    await task
                except (asyncio.CancelledError, Exception):  # noqa: BLE001
                    pass
        for futures in self._waiting.values():
            for future in futures:
                if not future.done():
                    future.cancel()
        self._waiting.clear()
        try:
            # What this process spent stays counted; what it still held reserved does not.
            await self.store.release(self.owner)
        except Exception:  # noqa: BLE001 - the leases run out instead, unless handed over
            for key in self.held:
                self._hand_over(key, _GIVEN_UP)
        self.held.clear()


# -- the run's spend under a budget ----------------------------------------------------------
class SpendLedger:
    """``--weval-budget`` for a run of several processes: each process's spend and its
    reservations for requests in flight, in table ``run_spend`` of the claims store (one row per
    process). ``reserve`` is one transaction over every row of the run under the store's write
    lock, so no two processes can both take the last room; ``settle`` turns a reservation into
    what the reply cost in one statement. A row whose process is dead (on this host) keeps its
    spend, and its reservations stop counting."""

    def __init__(self, coordinator: Coordinator):
        self.store = coordinator.store
        self.run_id = coordinator.run_id
        self.me = coordinator.me
        self.owner = coordinator.owner
        self.host = coordinator.host
        self.pid = coordinator.pid
        self._last = Spend(False, 0.0, 0.0, 0)  # the last look, should the store be busy
        self._seen_alive: dict[int, float] = {}  # pid -> when it was last found alive

    async def reserve(self, amount: float, limit: float) -> Spend:
        """Add ``amount`` to this process's reservations if the run's spend is below ``limit``
        and either the spend, every live reservation and ``amount`` stay within it, or nothing
        is in flight anywhere in the run (a request that alone does not fit goes alone)."""
        try:
            self._last = await self.store.reserve(self.run_id, self.me, amount, limit, self._dead)
        except StoreDown:
            raise  # never admitted again: the engine stops sending instead of waiting
        except Exception as exc:  # noqa: BLE001 - busy beyond the timeout: not admitted, look again soon
            log.warning("weval budget: reading the run's spend failed: %s", exc)
            return dataclasses.replace(self._last, admitted=False)
        return self._last

    async def settle(self, reserved: float, cost: float) -> None:
        """An attempt is over: its reservation ``reserved`` becomes ``cost`` (0 when nothing
        was answered), in one statement (an UPDATE reads the row as it was)."""
        try:
            await self.store.settle(self.run_id, self.owner, reserved, cost)
        except Exception as exc:  # noqa: BLE001 - the reservation stays held until this process closes
            log.warning("weval budget: recording a reply's cost failed: %s", exc)

    async def total(self) -> Spend:
        """The run's spend and what its live processes hold reserved, without reserving."""
        spent, reserved, in_flight = await self.store.tally(self.run_id, self._dead, release_dead=False)
        return Spend(False, spent, reserved, in_flight)

    def _dead(self, host: str, pid: int) -> bool:
        return host == self.host and pid != self.pid and not self._alive(pid)

    def _alive(self, pid: int) -> bool:
        """``_pid_alive``, asked at most once a second per process: it runs under the write lock."""
        now = time.monotonic()
        if now - self._seen_alive.get(pid, -math.inf) < 1.0:
            return True
        if not _pid_alive(pid):
            self._seen_alive.pop(pid, None)
            return False
        self._seen_alive[pid] = now
        return True
