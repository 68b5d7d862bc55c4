"""The claims store in SQLite: one machine's processes (xdist workers, or several pytest runs
sharing a cache folder), in the cache's own file or a claims file beside it (``claims.py``).

SQLite serialises write transactions (``BEGIN IMMEDIATE``), so checking for an outcome and
taking the claim are one transaction, and recording an outcome and dropping the claim another:
no waiter can see "no claim" without also seeing the outcome. Times are this machine's clock.
"""

from __future__ import annotations

import sqlite3
import time

from pytest_weval.engine.store.claims_store import SPEND_SCHEMA, Dead, Landed, Owner, Spend, admits, landed_from_row
from pytest_weval.engine.store.db import SqliteDB, rows_as_dicts, transaction

_BATCH = 400  # keys per IN (...) query


class SqliteClaims:
    def __init__(self, db: SqliteDB):
        self.db = db

    async def prepare(self, retention_s: float) -> None:
        cutoff = time.time() - retention_s

        def cleanup(conn: sqlite3.Connection) -> None:
            conn.execute(SPEND_SCHEMA)
            conn.execute("DELETE FROM run_results WHERE created < ?", (cutoff,))
            conn.execute("DELETE FROM claims WHERE expires < ?", (time.time() - 3600,))
            conn.execute("DELETE FROM run_signals WHERE created < ?", (cutoff,))
            conn.execute("DELETE FROM run_spend WHERE updated < ?", (cutoff,))

        await self.db.run(cleanup)

    # -- claims and outcomes -------------------------------------------------------------
    async def claim_many(
        self, run_id: str, keys: list[str], me: Owner, lease_s: float, dead: Dead
    ) -> tuple[dict[str, Landed | bool], int]:
        takeovers = 0

        def claim_one(conn: sqlite3.Connection, key: str) -> Landed | bool:
            nonlocal takeovers
            rows = rows_as_dicts(conn.execute("SELECT * FROM run_results WHERE run_id = ? AND key = ?", (run_id, key)))
            if rows:
                return landed_from_row(rows[0])
            now = time.time()
            taken = conn.execute(
                "INSERT INTO claims (key, owner, host, pid, expires) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET owner = excluded.owner, host = excluded.host, "
                "pid = excluded.pid, expires = excluded.expires "
                "WHERE claims.expires < ? OR claims.owner = excluded.owner RETURNING owner",
                (key, me.owner, me.host, me.pid, now + lease_s, now),
            ).fetchall()
            if taken:
                return True
            holder = conn.execute("SELECT owner, host, pid FROM claims WHERE key = ?", (key,)).fetchone()
            if holder and dead(holder[1], holder[2]):
                conn.execute(
                    "UPDATE claims SET owner = ?, host = ?, pid = ?, expires = ? WHERE key = ? AND owner = ?",
                    (me.owner, me.host, me.pid, now + lease_s, key, holder[0]),
                )
                takeovers += 1
                return True
            return False

        def attempt(conn: sqlite3.Connection) -> dict[str, Landed | bool]:
            return {key: claim_one(conn, key) for key in keys}

        outcomes = await self.db.run(lambda conn: transaction(conn, attempt))
        return outcomes, takeovers

    async def finish(self, run_id: str, key: str, owner: str, landed: Landed) -> None:
        def record(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO run_results (run_id, key, in_store, text, input_tokens, "
                "output_tokens, error_kind, error_status, error_message, created) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    key,
                    int(landed.in_store),
                    landed.text,
                    landed.input_tokens,
                    landed.output_tokens,
                    landed.error_kind,
                    landed.error_status,
                    landed.error_message,
                    time.time(),
                ),
            )
            conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, owner))

        await self.db.run(lambda conn: transaction(conn, record))

    async def forget(self, run_id: str, key: str) -> None:
        await self.db.run(
            lambda conn: conn.execute("DELETE FROM run_results WHERE run_id = ? AND key = ?", (run_id, key))
        )

    async def abandon(self, key: str, owner: str) -> None:
        await self.db.run(lambda conn: conn.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, owner)))

    async def look(self, run_id: str, keys: list[str], dead: Dead) -> dict[str, Landed | None]:
        """One snapshot: outcomes for awaited keys, and which claims have lapsed."""

        def snapshot(conn: sqlite3.Connection) -> dict[str, Landed | None]:
            found: dict[str, Landed | None] = {}
            now = time.time()
            for start in range(0, len(keys), _BATCH):
                chunk = keys[start : start + _BATCH]
                marks = ",".join("?" * len(chunk))
                for row in rows_as_dicts(
                    conn.execute(f"SELECT * FROM run_results WHERE run_id = ? AND key IN ({marks})", (run_id, *chunk))
                ):
                    found[row["key"]] = landed_from_row(row)
                live = {}
                for key, host, pid, expires in conn.execute(
                    f"SELECT key, host, pid, expires FROM claims WHERE key IN ({marks})", chunk
                ):
                    live[key] = expires >= now and not dead(host, pid)
                for key in chunk:
                    if key not in found and not live.get(key, False):
                        found[key] = None  # no outcome and no live claim: claim it ourselves
            return found

        return await self.db.run(lambda conn: transaction(conn, snapshot, immediate=False))

    async def renew(self, owner: str, lease_s: float) -> None:
        expires = time.time() + lease_s
        await self.db.run(lambda conn: conn.execute("UPDATE claims SET expires = ? WHERE owner = ?", (expires, owner)))

    async def release(self, owner: str) -> None:
        def release_all(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM claims WHERE owner = ?", (owner,))
            conn.execute("UPDATE run_spend SET reserved = 0, in_flight = 0 WHERE owner = ?", (owner,))

        await self.db.run(release_all)

    # -- signals ---------------------------------------------------------------------------
    async def signal(self, run_id: str, name: str, until: float) -> None:
        now = time.time()
        await self.db.run(
            lambda conn: conn.execute(
                "INSERT INTO run_signals (run_id, name, until, created) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(run_id, name) DO UPDATE SET until = max(until, excluded.until), "
                "created = excluded.created",
                (run_id, name, until, now),
            )
        )

    async def signals_since(self, run_id: str, since: float) -> list[tuple[str, float, float]]:
        return await self.db.run(
            lambda conn: conn.execute(
                "SELECT name, until, created FROM run_signals WHERE run_id = ? AND created > ?", (run_id, since)
            ).fetchall()
        )

    # -- the run's spend -------------------------------------------------------------------
    async def reserve(self, run_id: str, me: Owner, amount: float, limit: float, dead: Dead) -> Spend:
        def attempt(conn: sqlite3.Connection) -> Spend:
            spent, reserved, in_flight = _tally(conn, run_id, dead, release_dead=True)
            admitted = admits(spent, reserved, in_flight, amount, limit)
            if admitted:
                conn.execute(
                    "INSERT INTO run_spend (run_id, owner, host, pid, reserved, in_flight, updated) "
                    "VALUES (?, ?, ?, ?, ?, 1, ?) ON CONFLICT(run_id, owner) DO UPDATE SET "
                    "reserved = reserved + excluded.reserved, in_flight = in_flight + 1, updated = excluded.updated",
                    (run_id, me.owner, me.host, me.pid, amount, time.time()),
                )
            return Spend(admitted, spent, reserved, in_flight)

        return await self.db.run(lambda conn: transaction(conn, attempt))

    async def settle(self, run_id: str, owner: str, reserved: float, cost: float) -> None:
        await self.db.run(
            lambda conn: conn.execute(
                "UPDATE run_spend SET spent = spent + ?, in_flight = max(0, in_flight - 1), "
                "reserved = CASE WHEN in_flight <= 1 THEN 0 ELSE max(0, reserved - ?) END, updated = ? "
                "WHERE run_id = ? AND owner = ?",
                (cost, reserved, time.time(), run_id, owner),
            )
        )

    async def tally(self, run_id: str, dead: Dead, *, release_dead: bool) -> tuple[float, float, int]:
        return await self.db.run(lambda conn: _tally(conn, run_id, dead, release_dead=release_dead))


def _tally(conn: sqlite3.Connection, run_id: str, dead: Dead, *, release_dead: bool) -> tuple[float, float, int]:
    """(spent, reserved, in flight) over the run's rows. The reservations of a process that
    died (``dead``) do not count; ``release_dead`` clears them."""
    spent = reserved = 0.0
    in_flight = 0
    rows = conn.execute(
        "SELECT owner, host, pid, spent, reserved, in_flight FROM run_spend WHERE run_id = ?", (run_id,)
    ).fetchall()
    for owner, host, pid, row_spent, row_reserved, row_in_flight in rows:
        spent += row_spent
        if row_in_flight and dead(host, pid):
            if release_dead:
                conn.execute(
                    "UPDATE run_spend SET reserved = 0, in_flight = 0 WHERE run_id = ? AND owner = ?", (run_id, owner)
                )
            continue
        reserved += row_reserved
        in_flight += row_in_flight
    return spent, reserved, in_flight
