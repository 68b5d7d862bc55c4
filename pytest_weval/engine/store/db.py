"""One SQLite file shared by processes: WAL, a busy timeout, short transactions.

All statements for one file run on one dedicated thread (sqlite3 connections are not shared
across threads), so the engine's event loop never blocks on the disk. A SIGKILL can lose at
most the transaction being written; WAL keeps the file consistent.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    text TEXT NOT NULL,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS claims_owner ON claims(owner);
CREATE TABLE IF NOT EXISTS run_results (
    run_id TEXT NOT NULL,
    key TEXT NOT NULL,
    in_store INTEGER NOT NULL DEFAULT 0,
    text TEXT,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    error_kind TEXT,
    error_status INTEGER,
    error_message TEXT,
    created REAL NOT NULL,
    PRIMARY KEY (run_id, key)
);
CREATE TABLE IF NOT EXISTS run_signals (
    run_id TEXT NOT NULL,
    name TEXT NOT NULL,
    until REAL NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (run_id, name)
);
"""

BUSY_TIMEOUT_MS = 30_000

# SQLite's primary result codes (sqlite3.h).
BUSY, LOCKED, READONLY, IOERR, CORRUPT, FULL, CANTOPEN, NOTADB = 5, 6, 8, 10, 11, 13, 14, 26


def sqlite_code(exc: BaseException) -> int | None:
    """The primary result code of a sqlite3 error: the one SQLite gave (Python 3.11+), else
    (Python 3.10 has none) read from its message."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF
    text = str(exc)
    for words, found in (
        ("malformed", CORRUPT),
        ("not a database", NOTADB),
        ("disk is full", FULL),
        ("readonly database", READONLY),
        ("unable to open", CANTOPEN),
        ("disk I/O error", IOERR),
        ("database is locked", BUSY),
        ("database table is locked", LOCKED),
    ):
        if words in text:
            return found
    return None


def cannot_open() -> sqlite3.OperationalError:
    """The error SQLite gives for a file it cannot open, with its code."""
    exc = sqlite3.OperationalError("unable to open database file")
    exc.sqlite_errorcode = CANTOPEN  # type: ignore[attr-defined]
    exc.sqlite_errorname = "SQLITE_CANTOPEN"  # type: ignore[attr-defined]
    return exc


def prepare_shared(conn: sqlite3.Connection, pragmas: Sequence[str], script: str) -> None:
    """Run ``pragmas`` (switching to WAL) then ``script`` (the schema), retried while another
    process has the file busy: switching to WAL needs a moment alone with it. The one busy-wait
    on opening a shared file."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            for pragma in pragmas:
                conn.execute(pragma)
            conn.executescript(script)
            return
        except sqlite3.OperationalError as exc:
            if sqlite_code(exc) not in (BUSY, LOCKED) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def open_readonly(path: Path) -> sqlite3.Connection:
    """A connection that writes and creates nothing (``--weval-cache=ro``): no journal-mode
    switch, no schema, and no ``-wal``/``-shm`` files left behind. ``immutable`` when no writer
    has the file open (no ``-wal`` beside it) or on a read-only medium, where a plain read-only
    open of a WAL database cannot make its shared-memory file; else read-only beside the writer."""
    return open_replay(path)[0]


def open_replay(path: Path) -> tuple[sqlite3.Connection, bool]:
    """``open_readonly``'s connection, and whether it is ``immutable``. Usable from any thread:
    the connection is opened on the store's thread and an immutable one is read on the
    engine's (``SqliteDB.run``)."""
    if not path.exists():
        raise cannot_open()
    base = path.resolve().as_uri()
    timeout = BUSY_TIMEOUT_MS / 1000
    if Path(str(path) + "-wal").exists():
        conn = sqlite3.connect(
            base + "?mode=ro", uri=True, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            return conn, False
        except sqlite3.OperationalError as exc:
            conn.close()
            if sqlite_code(exc) != CANTOPEN:
                raise
    conn = sqlite3.connect(
        base + "?immutable=1", uri=True, timeout=timeout, isolation_level=None, check_same_thread=False
    )
    return conn, True


class SqliteDB:
    def __init__(self, path: Path | str, *, readonly: bool = False):
        self.path = Path(path)
        self.readonly = readonly
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="weval-sqlite")
        self._conn: sqlite3.Connection | None = None
        # A replay of a file no writer has open (opened immutable): SQLite takes no lock and
        # waits for nothing, so its statements run where they are awaited (below, ``run``).
        self._read_inline = False
        self._closed = False

    # Runs on the DB thread.
    def _connection(self) -> sqlite3.Connection:
        if self._conn is None and self.readonly:
            self._conn, self._read_inline = open_replay(self.path)
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                str(self.path),
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            prepare_shared(conn, ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"), SCHEMA)
            self._conn = conn
        return self._conn

    @property
    def reads_inline(self) -> bool:
        """Statements run where they are asked (``run_inline``): an ``immutable`` replay, opened."""
        return self._read_inline and self._conn is not None and not self._closed

    def run_inline(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn`` on the connection, here and now: only where ``reads_inline``."""
        assert self._conn is not None and self._read_inline
        return fn(self._conn)

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._read_inline and self._conn is not None:
            # A read of an immutable file is a page or two from the OS's cache: handing it to
            # the store's thread and back cost more than the read (a replay's two reads an
            # item: the GIL's hand-over each way, the thread's wake-up, a loop callback).
            return fn(self._conn)
        # What run_in_executor does, without its chain of a concurrent future into an asyncio
        # one (four statements a request under claims: that chaining was a sixth of the engine
        # thread's time). As there, a statement whose caller was cancelled before it started
        # does not run, and one already running finishes unheard.
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[T] = loop.create_future()

        def work() -> None:
            if answer.cancelled():
                return
            try:
                result = fn(self._connection())
            except BaseException as exc:  # noqa: BLE001  # as the executor's own work item: the caller raises it
                _hand_over(loop, _settle_error, answer, exc)
            else:
                _hand_over(loop, _settle, answer, result)

        self._executor.submit(work)
        return await answer

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        def _close() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        try:
            self._executor.submit(_close).result(timeout=30)
        finally:
            self._executor.shutdown(wait=True)


def _hand_over(loop: asyncio.AbstractEventLoop, settle: Callable[..., None], *args: Any) -> None:
    try:
        loop.call_soon_threadsafe(settle, *args)
    except RuntimeError:  # the loop closed meanwhile: nobody waits for the answer
        pass


def _settle(answer: asyncio.Future[T], result: T) -> None:
    if not answer.done():
        answer.set_result(result)


def _settle_error(answer: asyncio.Future[Any], exc: BaseException) -> None:
    if not answer.done():
        answer.set_exception(exc)


def transaction(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T], immediate: bool = True) -> T:
    """Run ``fn`` in one short transaction (IMMEDIATE takes the write lock up front)."""
    conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
    try:
        result = fn(conn)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


def rows_as_dicts(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description or ()]
    return [dict(zip(names, row)) for row in cursor.fetchall()]
