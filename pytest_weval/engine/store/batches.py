"""Batches in the store: each request waiting for, or inside, a provider's batch (docs/batch.md).

A line is written here before anything is sent and stays until its reply is in the cache, so a
process killed at any point loses nothing: the next one finds the line queued (and sends it) or
inside a batch (and collects it). ``key`` is the primary key, so a request is in at most one
batch, whichever process or machine queued it. The lines of one batch are marked as taken in
the transaction that records the batch, before the provider is asked, and a batch whose
submitter died before the provider's id was recorded has its lines queued again.

Each operation is written once, as a generator of SQL statements (``?`` placeholders) that
receives each statement's rows, and run in one transaction by SQLite (on the claims file's
thread) or PostgreSQL (``PgBatches``). The tables are created on first use, so a store made by
an older version gains them without a schema change.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from collections.abc import Callable, Generator, Sequence
from typing import Any, Protocol, TypeVar

from pytest_weval.engine.store.db import SqliteDB, transaction

T = TypeVar("T")
Op = Generator[tuple[str, Sequence[Any]], list[tuple[Any, ...]], T]

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS weval_batch_lines (
        key TEXT PRIMARY KEY,
        provider TEXT NOT NULL,
        account TEXT NOT NULL,
        model TEXT NOT NULL,
        request TEXT NOT NULL,
        body TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        estimate DOUBLE PRECISION NOT NULL DEFAULT 0,
        state TEXT NOT NULL,
        batch TEXT,
        submissions INTEGER NOT NULL DEFAULT 0,
        error_status INTEGER,
        error_message TEXT,
        created DOUBLE PRECISION NOT NULL,
        updated DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS weval_batch_lines_state ON weval_batch_lines (state, provider, account)",
    "CREATE INDEX IF NOT EXISTS weval_batch_lines_batch ON weval_batch_lines (batch)",
    """CREATE TABLE IF NOT EXISTS weval_batches (
        id TEXT PRIMARY KEY,
        provider TEXT NOT NULL,
        account TEXT NOT NULL,
        provider_id TEXT,
        status TEXT NOT NULL,
        provider_status TEXT,
        lines INTEGER NOT NULL,
        owner TEXT NOT NULL,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        created DOUBLE PRECISION NOT NULL,
        checked DOUBLE PRECISION,
        ended DOUBLE PRECISION)""",
]

# Line states. A line whose reply went to the cache stays ``done`` for a while, so a process that
# queues it again (it looked in the cache just before) finds it there instead of buying it twice.
QUEUED, TAKEN, SUBMITTED, FAILED, DONE = "queued", "taken", "submitted", "failed", "done"
DONE_KEPT_S = 2 * 24 * 3600
# Batch statuses: recorded before the provider is asked (``submitting``), known to the provider
# (``submitted``), or over (``ended``: its lines were collected, a cancelled batch's too).
SUBMITTING, OPEN, ENDED = "submitting", "submitted", "ended"
# The error status of lines failed because the budget had no room for them: their waiters get
# the budget's error, not a provider's.
BUDGET_STATUS = -1


@dataclasses.dataclass(frozen=True)
class Line:
    """One request for a batch: what the cache entry needs (model, request summary) and what
    the provider is sent (``body``, JSON text without any key)."""

    key: str
    provider: str
    account: str  # a digest of the base URL and key: one provider account's batches
    model: str
    request: str
    body: str
    estimate: float = 0.0  # what it may cost at the batch price (the budget)


@dataclasses.dataclass(frozen=True)
class LineState:
    state: str
    batch: str | None
    provider_id: str | None  # of its batch, once the provider answered
    batch_checked: float | None  # when its batch's status was last asked
    error_status: int | None
    error_message: str | None
    updated: float


@dataclasses.dataclass(frozen=True)
class Batch:
    id: str
    provider: str
    account: str
    provider_id: str | None
    status: str
    provider_status: str | None
    lines: int
    owner: str
    host: str
    pid: int
    created: float | None  # None: the record's is not a time (damaged by hand or a bug)
    checked: float | None


@dataclasses.dataclass(frozen=True)
class Queue:
    """The queued lines of one provider account."""

    provider: str
    account: str
    lines: int
    oldest: float
    newest: float


_BATCH_COLUMNS = (
    "id, provider, account, provider_id, status, provider_status, lines, owner, host, pid, created, checked"
)
_IN = 400  # keys per IN (...) list


def _time(value: Any) -> float | None:
    """A time read from a row; None when the row holds something else (SQLite keeps any type)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _batch(row: Sequence[Any]) -> Batch:
    id_, provider, account, provider_id, status, provider_status, lines, owner, host, pid, created, checked = row
    return Batch(
        id_,
        provider,
        account,
        provider_id,
        status,
        provider_status,
        lines,
        owner,
        host,
        pid,
        _time(created),
        _time(checked),
    )


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def _chunks(keys: Sequence[str]) -> list[Sequence[str]]:
    return [keys[i : i + _IN] for i in range(0, len(keys), _IN)]


# -- the operations -----------------------------------------------------------------------------
def _prepare(now: float) -> Op[None]:
    for statement in SCHEMA:
        yield statement, ()
    yield "DELETE FROM weval_batch_lines WHERE state = ? AND updated < ?", (DONE, now - DONE_KEPT_S)


def _look(keys: Sequence[str]) -> Op[dict[str, LineState]]:
    found: dict[str, LineState] = {}
    for chunk in _chunks(keys):
        rows = yield (
            "SELECT l.key, l.state, l.batch, b.provider_id, b.checked, l.error_status, l.error_message, l.updated "
            "FROM weval_batch_lines l LEFT JOIN weval_batches b ON b.id = l.batch "
            f"WHERE l.key IN ({_marks(len(chunk))})",
            tuple(chunk),
        )
        for key, *rest in rows:
            found[key] = LineState(*rest)
    return found


def _queue(lines: Sequence[Line], now: float) -> Op[dict[str, LineState]]:
    """Queue the lines not yet here (a line already queued, in a batch or failed is left as
    it is), then say where each stands."""
    for line in lines:
        yield (
            "INSERT INTO weval_batch_lines (key, provider, account, model, request, body, bytes, estimate, state, "
            "created, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING",
            (
                line.key,
                line.provider,
                line.account,
                line.model,
                line.request,
                line.body,
                len(line.body.encode()),
                line.estimate,
                QUEUED,
                now,
                now,
            ),
        )
    return (yield from _look([line.key for line in lines]))


def _requeue(keys: Sequence[str], state: str, before: float, now: float) -> Op[None]:
    """Lines asked for again: failed in an earlier run (asked again, as a live request would be),
    or done but their reply is no longer in the cache."""
    for chunk in _chunks(keys):
        yield (
            f"UPDATE weval_batch_lines SET state = ?, batch = NULL, error_status = NULL, error_message = NULL, "
            f"updated = ? WHERE state = ? AND updated < ? AND key IN ({_marks(len(chunk))})",
            (QUEUED, now, state, before, *chunk),
        )


def _queues() -> Op[list[Queue]]:
    rows = yield (
        "SELECT provider, account, COUNT(*), MIN(updated), MAX(updated) FROM weval_batch_lines WHERE state = ? "
        "GROUP BY provider, account",
        (QUEUED,),
    )
    return [Queue(*row) for row in rows]


def _take(
    batch_id: str,
    provider: str,
    account: str,
    max_lines: int,
    max_bytes: int,
    max_estimate: float,
    owner: tuple[str, str, int],
    now: float,
) -> Op[tuple[list[tuple[str, str, str, float]], bool]]:
    """Up to ``max_lines`` queued lines of one account, within ``max_bytes`` and ``max_estimate``
    (the budget's room), marked as taken by a new batch recorded in the same transaction:
    (key, model, body, estimate) each, and whether the budget left out a line."""
    rows = yield (
        "SELECT key, model, body, bytes, estimate FROM weval_batch_lines WHERE state = ? AND provider = ? "
        "AND account = ? ORDER BY updated, key LIMIT ?",
        (QUEUED, provider, account, max_lines),
    )
    chosen: list[tuple[str, str, str, float]] = []
    size = 0
    cost = 0.0
    over = False
    for key, model, body, nbytes, estimate in rows:
        if chosen and size + nbytes + 200 > max_bytes:  # 200: a line's envelope around its body
            break
        if cost + estimate > max_estimate:
            over = True
            break
        size += nbytes + 200
        cost += estimate
        chosen.append((key, model, body, estimate))
    if not chosen:
        return [], over
    taken: list[str] = []
    for chunk in _chunks([c[0] for c in chosen]):
        got = yield (
            f"UPDATE weval_batch_lines SET state = ?, batch = ?, submissions = submissions + 1, updated = ? "
            f"WHERE state = ? AND key IN ({_marks(len(chunk))}) RETURNING key",
            (TAKEN, batch_id, now, QUEUED, *chunk),
        )
        taken.extend(row[0] for row in got)
    kept = set(taken)
    chosen = [c for c in chosen if c[0] in kept]
    if chosen:
        yield (
            f"INSERT INTO weval_batches ({_BATCH_COLUMNS}) VALUES (?, ?, ?, NULL, ?, NULL, ?, ?, ?, ?, ?, ?)",
            (batch_id, provider, account, SUBMITTING, len(chosen), *owner, now, now),
        )
    return chosen, over


def _lines_of(batch_id: str) -> Op[list[tuple[str, str, str]]]:
    rows = yield "SELECT key, model, request FROM weval_batch_lines WHERE batch = ?", (batch_id,)
    return [(key, model, request) for key, model, request in rows]


def _fail_queued(provider: str, account: str, status: int | None, message: str, now: float) -> Op[None]:
    yield (
        "UPDATE weval_batch_lines SET state = ?, error_status = ?, error_message = ?, updated = ? "
        "WHERE state = ? AND provider = ? AND account = ?",
        (FAILED, status, message, now, QUEUED, provider, account),
    )


def _submitted(batch_id: str, provider_id: str, now: float) -> Op[None]:
    yield (
        "UPDATE weval_batches SET provider_id = ?, status = ?, checked = ? WHERE id = ?",
        (
            provider_id,
            OPEN,
            now,
            batch_id,
        ),
    )
    yield "UPDATE weval_batch_lines SET state = ?, updated = ? WHERE batch = ?", (SUBMITTED, now, batch_id)


def _unsubmit(batch_id: str, now: float) -> Op[None]:
    """The provider did not take the batch: its lines are queued again, as they were."""
    yield (
        "UPDATE weval_batch_lines SET state = ?, batch = NULL, submissions = submissions - 1, updated = ? "
        "WHERE batch = ?",
        (QUEUED, now, batch_id),
    )
    yield "DELETE FROM weval_batches WHERE id = ?", (batch_id,)


def _fail_all(batch_id: str, status: int | None, message: str, now: float) -> Op[None]:
    yield (
        "UPDATE weval_batch_lines SET state = ?, error_status = ?, error_message = ?, updated = ? WHERE batch = ?",
        (FAILED, status, message, now, batch_id),
    )
    yield "UPDATE weval_batches SET status = ?, ended = ? WHERE id = ?", (ENDED, now, batch_id)


def _open_batches() -> Op[list[Batch]]:
    rows = yield (
        # Not ended: a status this version does not know (damaged, or a newer version's) is
        # open too, so whoever waits on its lines is told rather than left waiting.
        f"SELECT {_BATCH_COLUMNS} FROM weval_batches WHERE status <> ? ORDER BY created",
        (ENDED,),
    )
    return [_batch(row) for row in rows]


def _checked(batch_id: str, provider_status: str, now: float) -> Op[None]:
    yield "UPDATE weval_batches SET provider_status = ?, checked = ? WHERE id = ?", (provider_status, now, batch_id)


def _land(
    batch_id: str,
    done: Sequence[str],
    again: Sequence[str],
    dropped: Sequence[str],
    failed: Sequence[tuple[str, int | None, str]],
    provider_status: str | None,
    now: float,
) -> Op[None]:
    """A batch ended and its replies are in the cache: those lines are done; lines that expired
    or met a passing fault are queued for the next batch; cancelled ones are dropped (whoever
    still needs them queues them again); the rest failed for good."""
    for chunk in _chunks(done):
        yield (
            f"UPDATE weval_batch_lines SET state = ?, updated = ? WHERE batch = ? AND key IN ({_marks(len(chunk))})",
            (DONE, now, batch_id, *chunk),
        )
    for chunk in _chunks(dropped):
        yield f"DELETE FROM weval_batch_lines WHERE batch = ? AND key IN ({_marks(len(chunk))})", (batch_id, *chunk)
    for chunk in _chunks(again):
        yield (
            f"UPDATE weval_batch_lines SET state = ?, batch = NULL, updated = ? WHERE batch = ? "
            f"AND key IN ({_marks(len(chunk))})",
            (QUEUED, now, batch_id, *chunk),
        )
    for key, status, message in failed:
        yield (
            "UPDATE weval_batch_lines SET state = ?, error_status = ?, error_message = ?, updated = ? "
            "WHERE batch = ? AND key = ?",
            (FAILED, status, message, now, batch_id, key),
        )
    # Lines the provider's results left out (there should be none) are asked again.
    yield (
        "UPDATE weval_batch_lines SET state = ?, batch = NULL, updated = ? WHERE batch = ? AND state NOT IN (?, ?)",
        (QUEUED, now, batch_id, FAILED, DONE),
    )
    yield (
        "UPDATE weval_batches SET status = ?, provider_status = COALESCE(?, provider_status), ended = ?, checked = ? "
        "WHERE id = ?",
        (ENDED, provider_status, now, now, batch_id),
    )


def _all_batches(include_ended: bool) -> Op[list[Batch]]:
    if not include_ended:
        return (yield from _open_batches())
    rows = yield f"SELECT {_BATCH_COLUMNS} FROM weval_batches ORDER BY created", ()
    return [_batch(row) for row in rows]


def _line_counts() -> Op[dict[str, dict[str, int]]]:
    rows = yield (
        "SELECT batch, state, COUNT(*) FROM weval_batch_lines WHERE batch IS NOT NULL GROUP BY batch, state",
        (),
    )
    counts: dict[str, dict[str, int]] = {}
    for batch, state, count in rows:
        counts.setdefault(batch, {})[state] = count
    return counts


# -- where they run ---------------------------------------------------------------------------
class Runs(Protocol):
    async def run(self, make: Callable[[], Op[T]]) -> T: ...


class SqliteBatches:
    """The batch tables in a SQLite file (the cache's own, or the claims file of a files store)."""

    def __init__(self, db: SqliteDB):
        self.db = db

    async def run(self, make: Callable[[], Op[T]]) -> T:
        def drive(conn: sqlite3.Connection) -> T:
            op = make()
            try:
                statement = next(op)
                while True:
                    rows = conn.execute(statement[0], tuple(statement[1])).fetchall()
                    statement = op.send(rows)
            except StopIteration as stop:
                return stop.value

        return await self.db.run(lambda conn: transaction(conn, drive))


class PgBatches:
    """The batch tables in PostgreSQL (``postgres.PgDB``), shared by every machine of the store."""

    def __init__(self, db: Any):
        self.db = db

    async def run(self, make: Callable[[], Op[T]]) -> T:
        async def drive(conn: Any) -> T:
            op = make()  # a fresh one per try: PgDB.run tries again after a conflict or an outage
            async with conn.transaction():
                try:
                    statement = next(op)
                    while True:
                        cursor = await conn.execute(statement[0].replace("?", "%s"), tuple(statement[1]))
                        rows = await cursor.fetchall() if cursor.description else []
                        statement = op.send(rows)
                except StopIteration as stop:
                    return stop.value

        return await self.db.run(drive)


class BatchStore:
    """What the batcher (``engine/batching/``) and ``python -m pytest_weval batch`` ask of the
    store, each one transaction."""

    def __init__(self, runs: Runs):
        self.runs = runs
        self._prepared = False

    async def prepare(self) -> None:
        if not self._prepared:
            await self.runs.run(lambda: _prepare(time.time()))
            self._prepared = True

    async def queue(self, lines: Sequence[Line]) -> dict[str, LineState]:
        await self.prepare()
        return await self.runs.run(lambda: _queue(lines, time.time()))

    async def requeue(self, keys: Sequence[str], state: str, before: float) -> None:
        await self.runs.run(lambda: _requeue(keys, state, before, time.time()))

    async def look(self, keys: Sequence[str]) -> dict[str, LineState]:
        await self.prepare()
        return await self.runs.run(lambda: _look(keys))

    async def queues(self) -> list[Queue]:
        await self.prepare()
        return await self.runs.run(_queues)

    async def take(
        self,
        batch_id: str,
        provider: str,
        account: str,
        max_lines: int,
        max_bytes: int,
        owner: tuple[str, str, int],
        *,
        max_estimate: float = float("inf"),
    ) -> tuple[list[tuple[str, str, str, float]], bool]:
        return await self.runs.run(
            lambda: _take(batch_id, provider, account, max_lines, max_bytes, max_estimate, owner, time.time())
        )

    async def lines_of(self, batch_id: str) -> list[tuple[str, str, str]]:
        return await self.runs.run(lambda: _lines_of(batch_id))

    async def fail_queued(self, provider: str, account: str, status: int | None, message: str) -> None:
        await self.runs.run(lambda: _fail_queued(provider, account, status, message, time.time()))

    async def submitted(self, batch_id: str, provider_id: str) -> None:
        await self.runs.run(lambda: _submitted(batch_id, provider_id, time.time()))

    async def unsubmit(self, batch_id: str) -> None:
        await self.runs.run(lambda: _unsubmit(batch_id, time.time()))

    async def fail_all(self, batch_id: str, status: int | None, message: str) -> None:
        await self.runs.run(lambda: _fail_all(batch_id, status, message, time.time()))

    async def open_batches(self) -> list[Batch]:
        await self.prepare()
        return await self.runs.run(_open_batches)

    async def checked(self, batch_id: str, provider_status: str) -> None:
        await self.runs.run(lambda: _checked(batch_id, provider_status, time.time()))

    async def land(
        self,
        batch_id: str,
        done: Sequence[str],
        again: Sequence[str],
        dropped: Sequence[str],
        failed: Sequence[tuple[str, int | None, str]],
        provider_status: str | None = None,
    ) -> None:
        """``provider_status``: the provider's last word on the ended batch (``batch list``)."""
        await self.runs.run(lambda: _land(batch_id, done, again, dropped, failed, provider_status, time.time()))

    async def batches(self, *, include_ended: bool = False) -> list[Batch]:
        await self.prepare()
        return await self.runs.run(lambda: _all_batches(include_ended))

    async def line_counts(self) -> dict[str, dict[str, int]]:
        await self.prepare()
        return await self.runs.run(_line_counts)
