"""SQLite response store: ``<cache_dir>/weval-cache.sqlite`` (the claims live in it too)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from pytest_weval.engine.store.common import NOT_NOW, NotNow
from pytest_weval.engine.store.db import SqliteDB, rows_as_dicts
from pytest_weval.engine.store.sqlite_health import is_damage

FILENAME = "weval-cache.sqlite"


def get_entry(conn: sqlite3.Connection, key: str) -> dict[str, Any] | None:
    rows = rows_as_dicts(
        conn.execute(
            "SELECT key, model, request, text, input_tokens, output_tokens, created FROM responses WHERE key = ?",
            (key,),
        )
    )
    if not rows:
        return None
    row = rows[0]
    row["request"] = json.loads(row["request"])
    return row


# What a reply is made of: every column but the request, which only people read (the engine
# never does, and decoding it was a sixth of a replayed request's store read).
_REPLY_COLUMNS = ("key", "model", "text", "input_tokens", "output_tokens", "created")
_REPLY_QUERY = f"SELECT {', '.join(_REPLY_COLUMNS)} FROM responses WHERE key = ?"


def get_reply_entry(conn: sqlite3.Connection, key: str) -> dict[str, Any] | None:
    """``get_entry`` without the request: one statement, one row, no JSON decoded."""
    row = conn.execute(_REPLY_QUERY, (key,)).fetchone()
    return None if row is None else dict(zip(_REPLY_COLUMNS, row))


def put_entry(conn: sqlite3.Connection, entry: dict[str, Any]) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO responses (key, model, request, text, input_tokens, output_tokens, created) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            entry["key"],
            entry["model"],
            json.dumps(entry["request"], ensure_ascii=False, sort_keys=True),
            entry["text"],
            int(entry.get("input_tokens") or 0),
            int(entry.get("output_tokens") or 0),
            float(entry["created"]),
        ),
    )


class SqliteStore:
    def __init__(self, db: SqliteDB):
        self.db = db
        self.damaged = False  # a read or write met a damaged file: it is checked again next run
        self.where = str(db.path)

    async def get(self, key: str) -> dict[str, Any] | None:
        try:
            return await self.db.run(lambda conn: get_entry(conn, key))
        except sqlite3.DatabaseError as exc:
            self._note(exc)
            raise

    async def get_reply(self, key: str) -> dict[str, Any] | None:
        try:
            return await self.db.run(lambda conn: get_reply_entry(conn, key))
        except sqlite3.DatabaseError as exc:
            self._note(exc)
            raise

    def get_reply_now(self, key: str) -> dict[str, Any] | NotNow | None:
        """``get_reply`` without awaiting, when the file is read where it is asked (a replay of
        a file no writer has open: ``SqliteDB.reads_inline``), else ``NOT_NOW``. A read that
        fails is ``NOT_NOW`` too: ``get_reply`` reads it again and notes what went wrong."""
        if not self.db.reads_inline:
            return NOT_NOW
        try:
            return self.db.run_inline(lambda conn: get_reply_entry(conn, key))
        except sqlite3.Error:
            return NOT_NOW

    async def put(self, entry: dict[str, Any]) -> None:
        try:
            await self.db.run(lambda conn: put_entry(conn, entry))
        except sqlite3.DatabaseError as exc:
            self._note(exc)
            raise

    def _note(self, exc: sqlite3.DatabaseError) -> None:
        if is_damage(exc):
            self.damaged = True

    def close(self) -> None:
        pass  # the engine closes the shared SqliteDB
