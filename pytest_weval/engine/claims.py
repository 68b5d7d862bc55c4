"""Cross-process request claims (docs/rulings.md, ruling 18; docs/engine.md, 'Cross-process claims' explains the design).

Every worker schedules every request; before sending, a worker claims the request's key in the
shared SQLite file. The claim and the check "has a result already landed?" happen in one
IMMEDIATE transaction, and a holder records its outcome and drops its claim in one transaction,
so no interleaving lets two workers send the same request. A worker whose claim fails waits:
one poller per process looks up every awaited key in one query every ``poll_interval_s``.
Claims carry a lease the holder renews every lease/3; a claim whose lease ran out, or whose
holder (on this host) is no longer alive, is taken over.

Outcomes are recorded per run id (``run_results``) and read only within the same run, so
cache mode ``off`` and ``no_cache`` requests are shared between the workers of one run and
never across runs. A result that went into the response store is recorded as ``in_store``
(the waiter reads the store) rather than copied.

Under ``--weval-budget`` the run's spend is kept here too (``SpendLedger``, table ``run_spend``):
one row per process with what it spent and what it holds reserved for its requests in flight. A
reservation is one IMMEDIATE transaction that sums every live process's row, so the processes of
a run together never reserve past the budget (docs/engine.md, 'Prices, spend and the budget').
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_weval.engine.db import SqliteDB, rows_as_dicts, transaction

log = logging.getLogger("pytest_weval.engine")

RESULT_RETENTION_S = 2 * 24 * 3600  # run results older than this are cleaned up at start
_BATCH = 400  # keys per IN (...) query

# The run's spend under --weval-budget, one row per process (owner) of the run (SpendLedger).
SPEND_SCHEMA = """
CREATE TABLE IF NOT EXISTS run_spend (
    run_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    spent REAL NOT NULL DEFAULT 0,
    reserved REAL NOT NULL DEFAULT 0,
    in_flight INTEGER NOT NULL DEFAULT 0,
    updated REAL NOT NULL,
    PRIMARY KEY (run_id, owner)
)
"""


@dataclasses.dataclass
class Landed:
    """A request's outcome, recorded by whichever process sent it."""

    in_store: bool
    text: str | None
    input_tokens: int
    output_tokens: int
    error_kind: str | None
    error_status: int | None
    error_message: str | None


def _landed(row: dict[str, Any]) -> Landed:
    return Landed(
        in_store=bool(row["in_store"]),
        text=row["text"],
        input_tokens=int(row["input_tokens"] or 0),
        output_tokens=int(row["output_tokens"] or 0),
        error_kind=row["error_kind"],
        error_status=row["error_status"],
        error_message=row["error_message"],
    )


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


def request_stop(path: Path, run_id: str) -> None:
    """Tell every process of run ``run_id`` to stop sending (the xdist controller was
    interrupted; its workers may not have been). A no-op when the run has no claims file."""
    if not path.exists():
        return
    try:
        with contextlib.closing(sqlite3.connect(str(path), timeout=2)) as conn:
            conn.execute(
                "INSERT INTO run_signals (run_id, name, until, created) VALUES (?, 'stop', 0, ?) "
                "ON CONFLICT(run_id, name) DO UPDATE SET created = excluded.created",
                (run_id, time.time()),
            )
            conn.commit()
    except sqlite3.Error as exc:
        log.warning("weval claims: could not ask the workers to stop: %s", exc)


class Coordinator:
    def __init__(
        self,
        db: SqliteDB,
        *,
        run_id: str,
        worker_id: str,
        lease_s: float,
        poll_s: float,
        on_signal: Callable[[str, float], None] | None = None,
    ):
        self.db = db
        self.run_id = run_id
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.owner = f"{self.host}:{self.pid}:{worker_id}:{uuid.uuid4().hex[:8]}"
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

    async def start(self) -> None:
        cutoff = time.time() - RESULT_RETENTION_S

        def cleanup(conn: sqlite3.Connection) -> None:
            conn.execute(SPEND_SCHEMA)
            conn.execute("DELETE FROM run_results WHERE created < ?", (cutoff,))
            conn.execute("DELETE FROM claims WHERE expires < ?", (time.time() - 3600,))
            conn.execute("DELETE FROM run_signals WHERE created < ?", (cutoff,))
            conn.execute("DELETE FROM run_spend WHERE updated < ?", (cutoff,))

        await self.db.run(cleanup)
        loop = asyncio.get_running_loop()
        self._heartbeat = loop.create_task(self._renew_forever())
        if self.on_signal is not None:
            self._watcher = loop.create_task(self._watch_signals())

    # -- signals between the processes of a run ------------------------------------------
    def signal(self, name: str, until: float) -> None:
        """Record ``name`` (until a wall-clock time) for the run's other processes; returns at
        once, the write goes on in the background."""
        now = time.time()

        def record(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO run_signals (run_id, name, until, created) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(run_id, name) DO UPDATE SET until = max(until, excluded.until), "
                "created = excluded.created",
                (self.run_id, name, until, now),
            )

        write = asyncio.ensure_future(self.db.run(record))
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

            def look(conn: sqlite3.Connection, since: float = seen) -> list[tuple[str, float, float]]:
                return conn.execute(
                    "SELECT name, until, created FROM run_signals WHERE run_id = ? AND created > ?",
                    (self.run_id, since),
                ).fetchall()

            try:
                rows = await self.db.run(look)
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
        if another live process holds it."""
        return (await self.claim_many([key]))[key]

    async def claim_many(self, keys: list[str]) -> dict[str, Landed | bool]:
        """``claim`` for several keys in one transaction (the scheduler claims items in runs)."""

        def attempt(conn: sqlite3.Connection) -> dict[str, Landed | bool]:
            return {key: self._claim_one(conn, key) for key in keys}

        claiming = asyncio.ensure_future(self.db.run(lambda conn: transaction(conn, attempt)))

        def note_held(done: asyncio.Future) -> None:
            # Also when the caller was cancelled meanwhile: what was claimed is renewed and
            # released like any other claim.
            if not done.cancelled() and done.exception() is None:
                self.held.update(key for key, outcome in done.result().items() if outcome is True)

        claiming.add_done_callback(note_held)
        return await asyncio.shield(claiming)

    def _claim_one(self, conn: sqlite3.Connection, key: str) -> Landed | bool:
        rows = rows_as_dicts(conn.execute("SELECT * FROM run_results WHERE run_id = ? AND key = ?", (self.run_id, key)))
        if rows:
            return _landed(rows[0])
        now = time.time()
        taken = conn.execute(
            "INSERT INTO claims (key, owner, host, pid, expires) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET owner = excluded.owner, host = excluded.host, "
            "pid = excluded.pid, expires = excluded.expires "
            "WHERE claims.expires < ? OR claims.owner = excluded.owner RETURNING owner",
            (key, self.owner, self.host, self.pid, now + self.lease_s, now),
        ).fetchall()
        if taken:
            return True
        holder = conn.execute("SELECT owner, host, pid FROM claims WHERE key = ?", (key,)).fetchone()
        if holder and holder[1] == self.host and holder[2] != self.pid and not _pid_alive(holder[2]):
            conn.execute(
                "UPDATE claims SET owner = ?, host = ?, pid = ?, expires = ? WHERE key = ? AND owner = ?",
                (self.owner, self.host, self.pid, now + self.lease_s, key, holder[0]),
            )
            self.takeovers += 1
            return True
        return False

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

        def record(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO run_results (run_id, key, in_store, text, input_tokens, "
                "output_tokens, error_kind, error_status, error_message, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.run_id,
                    key,
                    int(in_store),
                    None if in_store else text,
                    input_tokens,
                    output_tokens,
                    error_kind,
                    error_status,
                    error_message,
                    time.time(),
                ),
            )
            conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self.owner))

        try:
            await self.db.run(lambda conn: transaction(conn, record))
        finally:
            self.held.discard(key)

    async def forget(self, key: str) -> None:
        """Drop this run's recorded outcome for ``key`` (it pointed at a store entry that cannot
        be read), so the next claim can be taken."""
        await self.db.run(
            lambda conn: conn.execute("DELETE FROM run_results WHERE run_id = ? AND key = ?", (self.run_id, key))
        )

    async def abandon(self, key: str) -> None:
        """Drop a claim without an outcome (cancelled): another process may take it at once."""
        self.held.discard(key)
        await self.db.run(
            lambda conn: conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, self.owner))
        )

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

            def look(conn: sqlite3.Connection, keys: list[str] = keys) -> dict[str, Landed | None]:
                return transaction(conn, lambda c: self._look(c, keys), immediate=False)

            try:
                found = await self.db.run(look)
            except Exception as exc:  # noqa: BLE001 - busy beyond the timeout, or worse: try again next round
                log.warning("weval claims: poll failed: %s", exc)
                continue
            for key, outcome in found.items():
                for future in self._waiting.pop(key, []):
                    if not future.done():
                        future.set_result(outcome)

    def _look(self, conn: sqlite3.Connection, keys: list[str]) -> dict[str, Landed | None]:
        """One snapshot: outcomes for awaited keys, and which claims have lapsed."""
        found: dict[str, Landed | None] = {}
        now = time.time()
        for start in range(0, len(keys), _BATCH):
            chunk = keys[start : start + _BATCH]
            marks = ",".join("?" * len(chunk))
            for row in rows_as_dicts(
                conn.execute(f"SELECT * FROM run_results WHERE run_id = ? AND key IN ({marks})", (self.run_id, *chunk))
            ):
                found[row["key"]] = _landed(row)
            live = {}
            for key, host, pid, expires in conn.execute(
                f"SELECT key, host, pid, expires FROM claims WHERE key IN ({marks})", chunk
            ):
                live[key] = expires >= now and not (host == self.host and pid != self.pid and not _pid_alive(pid))
            for key in chunk:
                if key not in found and not live.get(key, False):
                    found[key] = None  # no outcome and no live claim: claim it ourselves
        return found

    # -- lease renewal --------------------------------------------------------------------
    async def _renew_forever(self) -> None:
        interval = max(0.05, self.lease_s / 3)
        while True:
            await asyncio.sleep(interval)
            if not self.held:
                continue
            expires = time.time() + self.lease_s

            def renew(conn: sqlite3.Connection, expires: float = expires) -> sqlite3.Cursor:
                return conn.execute("UPDATE claims SET expires = ? WHERE owner = ?", (expires, self.owner))

            try:
                await self.db.run(renew)
            except sqlite3.Error as exc:
                log.warning("weval claims: lease renewal failed: %s", exc)

    async def close(self) -> None:
        if self._writes:
            await asyncio.wait(list(self._writes), timeout=5)
        for task in (self._poller, self._heartbeat, self._watcher):
            if task is not None:
                task.cancel()
        for task in (self._poller, self._heartbeat, self._watcher):
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

        def release_all(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM claims WHERE owner = ?", (self.owner,))
            # What this process spent stays counted; what it still held reserved does not.
            conn.execute("UPDATE run_spend SET reserved = 0, in_flight = 0 WHERE owner = ?", (self.owner,))

        try:
            await self.db.run(release_all)
        except sqlite3.Error:
            pass
        self.held.clear()


# -- the run's spend under a budget ----------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Spend:
    """The run's spend as one reservation found it. ``reserved`` and ``in_flight`` are what the
    live processes held before it; ``admitted`` says whether it was added."""

    admitted: bool
    spent: float
    reserved: float
    in_flight: int


class SpendLedger:
    """``--weval-budget`` for a run of several processes: each process's spend and its
    reservations for requests in flight, in table ``run_spend`` of the claims file (one row per
    process). ``reserve`` is one IMMEDIATE transaction over every row of the run, so no two
    processes can both take the last room; ``settle`` turns a reservation into what the reply
    cost in one statement. A row whose process is dead (on this host) keeps its spend, and its
    reservations stop counting."""

    def __init__(self, coordinator: Coordinator):
        self.db = coordinator.db
        self.run_id = coordinator.run_id
        self.owner = coordinator.owner
        self.host = coordinator.host
        self.pid = coordinator.pid
        self._last = Spend(False, 0.0, 0.0, 0)  # the last look, should the file be busy
        self._seen_alive: dict[int, float] = {}  # pid -> when it was last found alive

    async def reserve(self, amount: float, limit: float) -> Spend:
        """Add ``amount`` to this process's reservations if the run's spend is below ``limit``
        and either the spend, every live reservation and ``amount`` stay within it, or nothing
        is in flight anywhere in the run (a request that alone does not fit goes alone)."""

        def attempt(conn: sqlite3.Connection) -> Spend:
            spent, reserved, in_flight = self._tally(conn, release_dead=True)
            admitted = spent < limit and (in_flight == 0 or spent + reserved + amount <= limit)
            if admitted:
                conn.execute(
                    "INSERT INTO run_spend (run_id, owner, host, pid, reserved, in_flight, updated) "
                    "VALUES (?, ?, ?, ?, ?, 1, ?) ON CONFLICT(run_id, owner) DO UPDATE SET "
                    "reserved = reserved + excluded.reserved, in_flight = in_flight + 1, updated = excluded.updated",
                    (self.run_id, self.owner, self.host, self.pid, amount, time.time()),
                )
            return Spend(admitted, spent, reserved, in_flight)

        try:
            self._last = await self.db.run(lambda conn: transaction(conn, attempt))
        except sqlite3.Error as exc:  # busy beyond the timeout: not admitted, look again soon
            log.warning("weval budget: reading the run's spend failed: %s", exc)
            return dataclasses.replace(self._last, admitted=False)
        return self._last

    async def settle(self, reserved: float, cost: float) -> None:
        """An attempt is over: its reservation ``reserved`` becomes ``cost`` (0 when nothing
        was answered), in one statement (an UPDATE reads the row as it was)."""

        def record(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE run_spend SET spent = spent + ?, in_flight = max(0, in_flight - 1), "
                "reserved = CASE WHEN in_flight <= 1 THEN 0 ELSE max(0, reserved - ?) END, updated = ? "
                "WHERE run_id = ? AND owner = ?",
                (cost, reserved, time.time(), self.run_id, self.owner),
            )

        try:
            await self.db.run(record)
        except sqlite3.Error as exc:  # the reservation stays held until this process closes
            log.warning("weval budget: recording a reply's cost failed: %s", exc)

    async def total(self) -> Spend:
        """The run's spend and what its live processes hold reserved, without reserving."""
        spent, reserved, in_flight = await self.db.run(lambda conn: self._tally(conn, release_dead=False))
        return Spend(False, spent, reserved, in_flight)

    def _tally(self, conn: sqlite3.Connection, *, release_dead: bool) -> tuple[float, float, int]:
        """(spent, reserved, in flight) over the run's rows. The reservations of a process that
        died (on this host: ``_pid_alive``) do not count; ``release_dead`` clears them."""
        spent = reserved = 0.0
        in_flight = 0
        rows = conn.execute(
            "SELECT owner, host, pid, spent, reserved, in_flight FROM run_spend WHERE run_id = ?", (self.run_id,)
        ).fetchall()
        for owner, host, pid, row_spent, row_reserved, row_in_flight in rows:
            spent += row_spent
            if row_in_flight and host == self.host and pid != self.pid and not self._alive(pid):
                if release_dead:
                    conn.execute(
                        "UPDATE run_spend SET reserved = 0, in_flight = 0 WHERE run_id = ? AND owner = ?",
                        (self.run_id, owner),
                    )
                continue
            reserved += row_reserved
            in_flight += row_in_flight
        return spent, reserved, in_flight

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
