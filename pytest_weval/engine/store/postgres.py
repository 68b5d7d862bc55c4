"""PostgreSQL store: the response cache and the claims of runs shared by several machines
(``--weval-cache-store=postgresql://user@host:port/database``; docs/engine.md, 'Claims across
machines'). psycopg 3, async, on the engine's loop; a few connections per process.

Tables (``weval_`` prefix; created on first use, under an advisory lock, and versioned in
``weval_meta``): ``weval_responses`` (the cache), ``weval_claims``, ``weval_run_results``,
``weval_run_signals``, ``weval_run_spend`` (as the SQLite store's). Leases and signal times are
the server's clock, so machines with skewed clocks agree on who holds what.

Why nothing is sent twice without SQLite's single writer: a claim is taken first (``INSERT ...
ON CONFLICT DO UPDATE ... WHERE expired``, which waits on a holder's uncommitted delete), and
only then is the run's outcome looked up; a holder records its outcome and deletes its claim in
one transaction. So a claimer that did not see the outcome took the claim after no holder had
it, and a waiter reads claims before outcomes: no lapse without the outcome being visible.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import pytest_weval.defaults as defaults
from pytest_weval.engine.store.claims_store import Dead, Landed, Owner, Spend, admits, landed_from_row
from pytest_weval.engine.store.common import NOT_NOW, NotNow, StoreError, StoreStats, one_line, redact_url, scrub
from pytest_weval.engine.store.outage import Outage

if TYPE_CHECKING:
    import psycopg

T = TypeVar("T")

SCHEMA_VERSION = 1
POOL_SIZE = 4  # connections per process: the poller, renewals, claims and cache reads share them
CONNECT_TIMEOUT_S = 10  # unless the URL sets connect_timeout
DEFAULT_RETRY_S = defaults.STORE_RETRY_S  # how long an unreachable server is waited for (--weval-store-retry)
_SCHEMA_LOCK = 0x7765_7661_6C01  # advisory lock held while the tables are created
NOW = "extract(epoch from clock_timestamp())"

SCHEMA = [
    "CREATE TABLE IF NOT EXISTS weval_meta (name text PRIMARY KEY, value text NOT NULL)",
    """CREATE TABLE IF NOT EXISTS weval_responses (
        key text PRIMARY KEY,
        model text NOT NULL,
        request jsonb NOT NULL,
        text text NOT NULL,
        input_tokens integer NOT NULL DEFAULT 0,
        output_tokens integer NOT NULL DEFAULT 0,
        created double precision NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS weval_responses_created ON weval_responses (created)",
    """CREATE TABLE IF NOT EXISTS weval_claims (
        key text PRIMARY KEY,
        owner text NOT NULL,
        host text NOT NULL,
        pid integer NOT NULL,
        expires double precision NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS weval_claims_owner ON weval_claims (owner)",
    """CREATE TABLE IF NOT EXISTS weval_run_results (
        run_id text NOT NULL,
        key text NOT NULL,
        in_store boolean NOT NULL DEFAULT false,
        text text,
        input_tokens integer NOT NULL DEFAULT 0,
        output_tokens integer NOT NULL DEFAULT 0,
        error_kind text,
        error_status integer,
        error_message text,
        created double precision NOT NULL,
        PRIMARY KEY (run_id, key))""",
    """CREATE TABLE IF NOT EXISTS weval_run_signals (
        run_id text NOT NULL,
        name text NOT NULL,
        until double precision NOT NULL,
        created double precision NOT NULL,
        PRIMARY KEY (run_id, name))""",
    """CREATE TABLE IF NOT EXISTS weval_run_spend (
        run_id text NOT NULL,
        owner text NOT NULL,
        host text NOT NULL,
        pid integer NOT NULL,
        spent double precision NOT NULL DEFAULT 0,
        reserved double precision NOT NULL DEFAULT 0,
        in_flight integer NOT NULL DEFAULT 0,
        updated double precision NOT NULL,
        PRIMARY KEY (run_id, owner))""",
]


def _psycopg(url: str) -> Any:
    """psycopg and the parts of it used here, imported on first use: it is the extra
    ``pytest-weval[postgres]``, needed only with a postgresql:// store."""
    try:
        import psycopg
        import psycopg.conninfo
        import psycopg.errors
        import psycopg.pq
        import psycopg.rows
        import psycopg.types.json
    except ImportError:
        raise StoreError(
            f"cache store {redact_url(url)}: PostgreSQL needs psycopg 3: pip install 'pytest-weval[postgres]'"
        ) from None
    return psycopg


def _connect_kwargs(url: str) -> dict[str, Any]:
    pg = _psycopg(url)
    try:
        params = pg.conninfo.conninfo_to_dict(url)
    except pg.ProgrammingError as exc:
        raise StoreError(f"cache store {redact_url(url)}: not a PostgreSQL URL: {scrub(one_line(exc), url)}") from None
    kwargs: dict[str, Any] = {"autocommit": True}
    if "connect_timeout" not in params:
        kwargs["connect_timeout"] = CONNECT_TIMEOUT_S
    if "application_name" not in params:
        kwargs["application_name"] = "pytest-weval"
    return kwargs


async def connect(url: str) -> psycopg.AsyncConnection[Any]:
    """One connection (autocommit), or ``StoreError``: one line, password masked."""
    kwargs = _connect_kwargs(url)
    pg = _psycopg(url)
    try:
        return await pg.AsyncConnection.connect(url, **kwargs)
    except pg.Error as exc:
        raise StoreError(f"cache store {redact_url(url)}: cannot connect: {scrub(one_line(exc), url)}") from None


async def ensure_schema(conn: psycopg.AsyncConnection[Any], url: str, *, create: bool = True) -> None:
    """The tables exist and are of ``SCHEMA_VERSION``; created on first use (one process does
    it, under an advisory lock, while the others wait). Without ``create`` (``--weval-cache=ro``,
    which never writes), a database without them is a ``StoreError``: nothing was recorded there."""
    pg = _psycopg(url)
    try:
        version = await _version(conn)
        if version is None and not create:
            raise StoreError(
                f"cache store {redact_url(url)}: no replies were ever recorded in this database (it has no "
                "pytest-weval tables), so --weval-cache=ro has nothing to replay: record them with "
                "--weval-cache=rw first, or name the database that holds them"
            )
        if version is None:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                version = await _version(conn)
                if version is None:
                    for statement in SCHEMA:
                        await conn.execute(statement)
                    await conn.execute(
                        "INSERT INTO weval_meta (name, value) VALUES ('schema_version', %s) ON CONFLICT DO NOTHING",
                        (str(SCHEMA_VERSION),),
                    )
                    version = str(SCHEMA_VERSION)
    except pg.Error as exc:
        raise StoreError(
            f"cache store {redact_url(url)}: cannot set up its tables: {scrub(one_line(exc), url)}"
        ) from None
    if version != str(SCHEMA_VERSION):
        raise StoreError(
            f"cache store {redact_url(url)}: its tables are pytest-weval schema version {version}, this "
            f"pytest-weval uses version {SCHEMA_VERSION}: run the same pytest-weval on every machine, or use "
            "another database"
        )


async def _version(conn: psycopg.AsyncConnection[Any]) -> str | None:
    cur = await conn.execute("SELECT to_regclass('weval_meta') IS NOT NULL")
    row = await cur.fetchone()
    if not row or not row[0]:
        return None
    cur = await conn.execute("SELECT value FROM weval_meta WHERE name = 'schema_version'")
    row = await cur.fetchone()
    return "missing" if row is None else str(row[0])


class PgDB:
    """A few connections to one database, used by one event loop. ``run(fn)`` lends one to
    ``fn``; a deadlock or serialisation failure (two processes locking claims in different
    orders) is tried again, and a server that does not answer (restarted, stopped, a dropped
    connection) is waited for under the store's one retry policy (``outage.Outage``)."""

    def __init__(self, url: str, size: int = POOL_SIZE, retry_s: float = DEFAULT_RETRY_S):
        self.url = url
        self.pg = _psycopg(url)
        self._connect_kwargs = _connect_kwargs(url)
        self.outage = Outage(redact_url(url), retry_s)
        self._idle: list[psycopg.AsyncConnection[Any]] = []
        self._slots = asyncio.Semaphore(size)
        self._all: set[psycopg.AsyncConnection[Any]] = set()

    async def open(self, *, create: bool = True) -> None:
        conn = await connect(self.url)
        self._all.add(conn)
        try:
            await ensure_schema(conn, self.url, create=create)
        except BaseException:
            await self.aclose()
            raise
        self._idle.append(conn)

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        async with self._slots:
            if self._idle:
                conn = self._idle.pop()
            else:
                # The driver's own error, not connect()'s StoreError: a refused connection is
                # an outage to wait out, not a store to reject.
                conn = await self.pg.AsyncConnection.connect(self.url, **self._connect_kwargs)
                self._all.add(conn)
            reusable = False
            try:
                yield conn
                reusable = True
            except self.pg.Error:
                reusable = True  # the statement failed; the connection may still be fine
                raise
            finally:
                if reusable and not conn.closed and conn.info.transaction_status == self.pg.pq.TransactionStatus.IDLE:
                    self._idle.append(conn)
                else:  # cancelled mid-statement, or broken: never lent again
                    self._all.discard(conn)
                    with contextlib.suppress(Exception):
                        await conn.close()

    async def run(self, fn: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]], *, tries: int = 5) -> T:
        async def once() -> T:
            for attempt in range(tries):
                try:
                    async with self.connection() as conn:
                        return await fn(conn)
                except (self.pg.errors.DeadlockDetected, self.pg.errors.SerializationFailure):
                    if attempt == tries - 1:
                        raise
                    await asyncio.sleep(0.01 * (attempt + 1))
            raise AssertionError("unreachable")

        return await self.outage.call(once, self._unreachable)

    def _unreachable(self, exc: BaseException) -> bool:
        """The server did not answer (refused, shut down, a dropped connection), as opposed to a
        statement it refused; conflicts between claimers are retried apart."""
        return (
            isinstance(exc, (self.pg.OperationalError, self.pg.InterfaceError))
            and not isinstance(exc, self.pg.errors.TransactionRollback)
        ) or isinstance(exc, OSError)

    async def aclose(self) -> None:
        conns, self._all, self._idle = list(self._all), set(), []
        for conn in conns:
            with contextlib.suppress(Exception):
                await conn.close()


# -- the response cache ------------------------------------------------------------------------
class PgStore:
    """``cache.Store`` in table ``weval_responses``."""

    def __init__(self, db: PgDB):
        self.db = db

    async def get(self, key: str) -> dict[str, Any] | None:
        async def fetch(conn: psycopg.AsyncConnection[Any]) -> dict[str, Any] | None:
            async with conn.cursor(row_factory=self.db.pg.rows.dict_row) as cur:
                await cur.execute(
                    "SELECT key, model, request, text, input_tokens, output_tokens, created "
                    "FROM weval_responses WHERE key = %s",
                    (key,),
                )
                return await cur.fetchone()

        return await self.db.run(fetch)

    get_reply = get

    def get_reply_now(self, key: str) -> NotNow:
        return NOT_NOW  # a server is always awaited

    async def put(self, entry: dict[str, Any]) -> None:
        async def store(conn: psycopg.AsyncConnection[Any]) -> None:
            await conn.execute(
                "INSERT INTO weval_responses (key, model, request, text, input_tokens, output_tokens, created) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET model = excluded.model, "
                "request = excluded.request, text = excluded.text, input_tokens = excluded.input_tokens, "
                "output_tokens = excluded.output_tokens, created = excluded.created",
                (
                    entry["key"],
                    entry["model"],
                    self.db.pg.types.json.Jsonb(entry["request"]),
                    entry["text"],
                    int(entry.get("input_tokens") or 0),
                    int(entry.get("output_tokens") or 0),
                    float(entry["created"]),
                ),
            )

        await self.db.run(store)

    def close(self) -> None:
        pass  # the engine closes the PgDB


# -- the claims --------------------------------------------------------------------------------
_RESULT_COLUMNS = "key, in_store, text, input_tokens, output_tokens, error_kind, error_status, error_message"


async def _outcomes(conn: psycopg.AsyncConnection[Any], run_id: str, keys: list[str]) -> dict[str, Landed]:
    cur = await conn.execute(
        f"SELECT {_RESULT_COLUMNS} FROM weval_run_results WHERE run_id = %s AND key = ANY(%s)", (run_id, keys)
    )
    names = _RESULT_COLUMNS.split(", ")
    rows = [dict(zip(names, row)) for row in await cur.fetchall()]
    return {row["key"]: landed_from_row(row) for row in rows}


def _lock_id(run_id: str) -> int:
    """The advisory lock of one run's spend (a signed 64-bit number)."""
    return int.from_bytes(hashlib.sha256(b"weval_run_spend:" + run_id.encode()).digest()[:8], "big", signed=True)


class PgClaims:
    """``claims.ClaimsStore`` in PostgreSQL."""

    def __init__(self, db: PgDB):
        self.db = db

    async def prepare(self, retention_s: float) -> None:
        async def cleanup(conn: psycopg.AsyncConnection[Any]) -> None:
            async with conn.transaction():
                await conn.execute(f"DELETE FROM weval_run_results WHERE created < {NOW} - %s", (retention_s,))
                await conn.execute(f"DELETE FROM weval_claims WHERE expires < {NOW} - 3600")
                await conn.execute(f"DELETE FROM weval_run_signals WHERE created < {NOW} - %s", (retention_s,))
                await conn.execute(f"DELETE FROM weval_run_spend WHERE updated < {NOW} - %s", (retention_s,))

        await self.db.run(cleanup)

    async def claim_many(
        self, run_id: str, keys: list[str], me: Owner, lease_s: float, dead: Dead
    ) -> tuple[dict[str, Landed | bool], int]:
        ordered = sorted(set(keys))  # rows locked in one order by everyone: no deadlock between claimers

        async def attempt(conn: psycopg.AsyncConnection[Any]) -> tuple[dict[str, Landed | bool], int]:
            takeovers = 0
            async with conn.transaction():
                cur = await conn.execute(
                    "INSERT INTO weval_claims (key, owner, host, pid, expires) "
                    f"SELECT k, %s, %s, %s, {NOW} + %s FROM unnest(%s::text[]) WITH ORDINALITY AS t(k, n) ORDER BY n "
                    "ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, host = excluded.host, "
                    "pid = excluded.pid, expires = excluded.expires "
                    f"WHERE weval_claims.expires < {NOW} OR weval_claims.owner = excluded.owner RETURNING key",
                    (me.owner, me.host, me.pid, lease_s, ordered),
                )
                taken = {row[0] for row in await cur.fetchall()}
                others = [key for key in ordered if key not in taken]
                if others:
                    cur = await conn.execute(
                        "SELECT key, owner, host, pid FROM weval_claims WHERE key = ANY(%s) ORDER BY key", (others,)
                    )
                    for key, owner, host, pid in await cur.fetchall():
                        if not dead(host, pid):
                            continue
                        cur = await conn.execute(
                            f"UPDATE weval_claims SET owner = %s, host = %s, pid = %s, expires = {NOW} + %s "
                            "WHERE key = %s AND owner = %s RETURNING key",
                            (me.owner, me.host, me.pid, lease_s, key, owner),
                        )
                        if await cur.fetchone():
                            taken.add(key)
                            takeovers += 1
                # Only now the outcomes: one recorded before we took a claim is visible here.
                landed = await _outcomes(conn, run_id, ordered)
                done_but_taken = [key for key in landed if key in taken]
                if done_but_taken:
                    await conn.execute(
                        "DELETE FROM weval_claims WHERE key = ANY(%s) AND owner = %s", (done_but_taken, me.owner)
                    )
            outcomes: dict[str, Landed | bool] = {}
            for key in keys:
                outcomes[key] = landed.get(key, key in taken)
            return outcomes, takeovers

        return await self.db.run(attempt)

    async def finish(self, run_id: str, key: str, owner: str, landed: Landed) -> None:
        async def record(conn: psycopg.AsyncConnection[Any]) -> None:
            async with conn.transaction():
                await conn.execute(
                    "INSERT INTO weval_run_results (run_id, key, in_store, text, input_tokens, output_tokens, "
                    f"error_kind, error_status, error_message, created) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, {NOW}) "
                    "ON CONFLICT (run_id, key) DO UPDATE SET in_store = excluded.in_store, text = excluded.text, "
                    "input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens, "
                    "error_kind = excluded.error_kind, error_status = excluded.error_status, "
                    "error_message = excluded.error_message, created = excluded.created",
                    (
                        run_id,
                        key,
                        landed.in_store,
                        landed.text,
                        landed.input_tokens,
                        landed.output_tokens,
                        landed.error_kind,
                        landed.error_status,
                        landed.error_message,
                    ),
                )
                await conn.execute("DELETE FROM weval_claims WHERE key = %s AND owner = %s", (key, owner))

        await self.db.run(record)

    async def forget(self, run_id: str, key: str) -> None:
        await self.db.run(
            lambda conn: conn.execute("DELETE FROM weval_run_results WHERE run_id = %s AND key = %s", (run_id, key))
        )

    async def abandon(self, key: str, owner: str) -> None:
        await self.db.run(
            lambda conn: conn.execute("DELETE FROM weval_claims WHERE key = %s AND owner = %s", (key, owner))
        )

    async def look(self, run_id: str, keys: list[str], dead: Dead) -> dict[str, Landed | None]:
        async def snapshot(conn: psycopg.AsyncConnection[Any]) -> dict[str, Landed | None]:
            # Claims first, outcomes second: a claim dropped before the first read had its
            # outcome committed already, so the second read sees it.
            cur = await conn.execute(
                f"SELECT key, host, pid, expires >= {NOW} FROM weval_claims WHERE key = ANY(%s)", (keys,)
            )
            live = {key: unexpired and not dead(host, pid) for key, host, pid, unexpired in await cur.fetchall()}
            found: dict[str, Landed | None] = dict(await _outcomes(conn, run_id, keys))
            for key in keys:
                if key not in found and not live.get(key, False):
                    found[key] = None  # no outcome and no live claim: claim it ourselves
            return found

        return await self.db.run(snapshot)

    async def renew(self, owner: str, lease_s: float) -> None:
        await self.db.run(
            lambda conn: conn.execute(
                f"UPDATE weval_claims SET expires = {NOW} + %s WHERE key IN "
                "(SELECT key FROM weval_claims WHERE owner = %s ORDER BY key FOR UPDATE)",
                (lease_s, owner),
            )
        )

    async def release(self, owner: str) -> None:
        async def release_all(conn: psycopg.AsyncConnection[Any]) -> None:
            await conn.execute(
                "DELETE FROM weval_claims WHERE key IN (SELECT key FROM weval_claims WHERE owner = %s ORDER BY key "
                "FOR UPDATE)",
                (owner,),
            )
            await conn.execute("UPDATE weval_run_spend SET reserved = 0, in_flight = 0 WHERE owner = %s", (owner,))

        await self.db.run(release_all)

    # -- signals -------------------------------------------------------------------------------
    async def signal(self, run_id: str, name: str, until: float) -> None:
        await self.db.run(lambda conn: _record_signal(conn, run_id, name, until))

    async def signals_since(self, run_id: str, since: float) -> list[tuple[str, float, float]]:
        async def look(conn: psycopg.AsyncConnection[Any]) -> list[tuple[str, float, float]]:
            cur = await conn.execute(
                "SELECT name, until, created FROM weval_run_signals WHERE run_id = %s AND created > %s", (run_id, since)
            )
            return [(str(name), float(until), float(created)) for name, until, created in await cur.fetchall()]

        return await self.db.run(look)

    # -- the run's spend -----------------------------------------------------------------------
    async def reserve(self, run_id: str, me: Owner, amount: float, limit: float, dead: Dead) -> Spend:
        async def attempt(conn: psycopg.AsyncConnection[Any]) -> Spend:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_id(run_id),))
                spent, reserved, in_flight = await _tally(conn, run_id, dead, release_dead=True)
                admitted = admits(spent, reserved, in_flight, amount, limit)
                if admitted:
                    await conn.execute(
                        "INSERT INTO weval_run_spend (run_id, owner, host, pid, reserved, in_flight, updated) "
                        f"VALUES (%s, %s, %s, %s, %s, 1, {NOW}) ON CONFLICT (run_id, owner) DO UPDATE SET "
                        "reserved = weval_run_spend.reserved + excluded.reserved, "
                        "in_flight = weval_run_spend.in_flight + 1, updated = excluded.updated",
                        (run_id, me.owner, me.host, me.pid, amount),
                    )
            return Spend(admitted, spent, reserved, in_flight)

        return await self.db.run(attempt)

    async def settle(self, run_id: str, owner: str, reserved: float, cost: float) -> None:
        await self.db.run(
            lambda conn: conn.execute(
                "UPDATE weval_run_spend SET spent = spent + %s, in_flight = greatest(0, in_flight - 1), "
                "reserved = CASE WHEN in_flight <= 1 THEN 0 ELSE greatest(0, reserved - %s) END, "
                f"updated = {NOW} WHERE run_id = %s AND owner = %s",
                (cost, reserved, run_id, owner),
            )
        )

    async def tally(self, run_id: str, dead: Dead, *, release_dead: bool) -> tuple[float, float, int]:
        return await self.db.run(lambda conn: _tally(conn, run_id, dead, release_dead=release_dead))


async def _tally(
    conn: psycopg.AsyncConnection[Any], run_id: str, dead: Dead, *, release_dead: bool
) -> tuple[float, float, int]:
    spent = reserved = 0.0
    in_flight = 0
    cur = await conn.execute(
        "SELECT owner, host, pid, spent, reserved, in_flight FROM weval_run_spend WHERE run_id = %s", (run_id,)
    )
    for owner, host, pid, row_spent, row_reserved, row_in_flight in await cur.fetchall():
        spent += row_spent
        if row_in_flight and dead(host, pid):
            if release_dead:
                await conn.execute(
                    "UPDATE weval_run_spend SET reserved = 0, in_flight = 0 WHERE run_id = %s AND owner = %s",
                    (run_id, owner),
                )
            continue
        reserved += row_reserved
        in_flight += row_in_flight
    return spent, reserved, in_flight


async def _record_signal(conn: psycopg.AsyncConnection[Any], run_id: str, name: str, until: float) -> None:
    await conn.execute(
        f"INSERT INTO weval_run_signals (run_id, name, until, created) VALUES (%s, %s, %s, {NOW}) "
        "ON CONFLICT (run_id, name) DO UPDATE SET until = greatest(weval_run_signals.until, excluded.until), "
        "created = excluded.created",
        (run_id, name, until),
    )


# -- from outside a run: the session-start check, a stop, stats and pruning ---------------------
@contextlib.asynccontextmanager
async def _checked(url: str, *, create: bool = True) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    conn = await connect(url)
    try:
        await ensure_schema(conn, url, create=create)
        yield conn
    finally:
        await conn.close()


async def check(url: str, *, create: bool = True) -> None:
    async with _checked(url, create=create):
        pass


async def record_signal(url: str, run_id: str, name: str) -> None:
    async with _checked(url) as conn:
        await _record_signal(conn, run_id, name, 0.0)


async def stats(url: str) -> StoreStats:
    pg = _psycopg(url)
    try:
        async with _checked(url) as conn:
            cur = await conn.execute("SELECT count(*), min(created), max(created) FROM weval_responses")
            row = await cur.fetchone()
            assert row is not None
            entries, oldest, newest = row
            cur = await conn.execute(
                "SELECT model, count(*) FROM weval_responses GROUP BY model ORDER BY count(*) DESC, model"
            )
            models = [(str(model), int(count)) for model, count in await cur.fetchall()]
            cur = await conn.execute("SELECT pg_total_relation_size('weval_responses')")
            size = await cur.fetchone()
    except pg.Error as exc:
        raise StoreError(f"cache store {redact_url(url)}: {scrub(one_line(exc), url)}") from None
    return StoreStats(redact_url(url), int(entries), int(size[0] if size else 0), oldest, newest, models)


async def prune(url: str, cutoff: float, *, dry_run: bool = False) -> int:
    pg = _psycopg(url)
    try:
        async with _checked(url) as conn:
            if dry_run:
                cur = await conn.execute("SELECT count(*) FROM weval_responses WHERE created < %s", (cutoff,))
                row = await cur.fetchone()
                return int(row[0]) if row else 0
            cur = await conn.execute("DELETE FROM weval_responses WHERE created < %s", (cutoff,))
            return cur.rowcount
    except pg.Error as exc:
        raise StoreError(f"cache store {redact_url(url)}: {scrub(one_line(exc), url)}") from None
