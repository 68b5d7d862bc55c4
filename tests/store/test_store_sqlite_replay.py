"""A replay (``--weval-cache=ro``) of a SQLite file no writer has open reads it where the read
is awaited, on the engine's thread, not through the store's thread (``store/db.py``,
``SqliteDB.run``): the file is opened ``immutable``, so nothing is locked or waited for. Beside
a writer, and for every ``rw`` store, each statement still runs on the store's own thread. What
is read, a missing entry, and damage met during the run are as they were."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from pytest_weval.engine.store.common import NOT_NOW
from pytest_weval.engine.store.db import SqliteDB
from pytest_weval.engine.store.sqlite import SqliteStore

ENTRIES = 400
TEXT = "a recorded answer, long enough to fill pages " * 20


def entry(n: int) -> dict:
    return {
        "key": f"key-{n:04d}",
        "model": "openai:m",
        "request": {"prompt": f"question {n}"},
        "text": f"{n}: {TEXT}",
        "input_tokens": n,
        "output_tokens": 2 * n,
        "created": 1_700_000_000.0 + n,
    }


def record(path: Path) -> None:
    """A cache as an ``rw`` run leaves it: written, then closed (no ``-wal`` left)."""

    async def write() -> None:
        store = SqliteStore(db)
        for n in range(ENTRIES):
            await store.put(entry(n))

    db = SqliteDB(path)
    try:
        asyncio.run(write())
    finally:
        db.close()
    assert not Path(str(path) + "-wal").exists()


def current_thread(_conn: sqlite3.Connection) -> str:
    return threading.current_thread().name


def replay(path: Path, reads):
    """Opens ``path`` as an ``ro`` run does (the first statement opens the file), then awaits
    ``reads(db, store)``."""
    db = SqliteDB(path, readonly=True)
    store = SqliteStore(db)

    async def run():
        await db.run(lambda conn: conn.execute("SELECT 1 FROM responses LIMIT 1").fetchall())
        return await reads(db, store)

    try:
        return asyncio.run(run()), store
    finally:
        db.close()


def test_a_replay_of_a_file_no_writer_has_open_reads_it_on_the_engines_thread(tmp_path):
    path = tmp_path / "weval-cache.sqlite"
    record(path)

    async def reads(db, store):
        return await db.run(current_thread), [await store.get(f"key-{n:04d}") for n in range(ENTRIES)]

    (thread, got), _ = replay(path, reads)
    assert thread == threading.current_thread().name
    # Every entry read back as it was written (the request decoded from its JSON).
    assert [dict(row) for row in got] == [{**entry(n)} for n in range(ENTRIES)]
    assert not Path(str(path) + "-wal").exists() and not Path(str(path) + "-shm").exists()


def test_a_replay_miss_is_still_none(tmp_path):
    path = tmp_path / "weval-cache.sqlite"
    record(path)

    async def reads(db, store):
        return await store.get("never-recorded"), await store.get("key-0001")

    (missing, found), store = replay(path, reads)
    assert missing is None
    assert found is not None and found["text"].startswith("1: ")
    assert not store.damaged


def test_a_replay_beside_a_writer_reads_on_the_stores_thread_and_sees_its_writes(tmp_path):
    path = tmp_path / "weval-cache.sqlite"
    record(path)
    writer = sqlite3.connect(path, isolation_level=None)  # another run writing: WAL, -wal beside it
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("INSERT INTO responses VALUES ('late', 'openai:m', '{}', 'late text', 0, 0, 0)")
        assert Path(str(path) + "-wal").exists()

        async def reads(db, store):
            first = await db.run(current_thread)
            writer.execute("INSERT INTO responses VALUES ('later', 'openai:m', '{}', 'later text', 0, 0, 0)")
            return first, await store.get("late"), await store.get("later")

        (thread, late, later), _ = replay(path, reads)
    finally:
        writer.close()
    assert thread.startswith("weval-sqlite")
    assert late is not None and late["text"] == "late text"
    assert later is not None and later["text"] == "later text"


def test_an_rw_store_runs_every_statement_on_its_own_thread(tmp_path):
    path = tmp_path / "weval-cache.sqlite"
    record(path)
    db = SqliteDB(path)

    async def reads():
        return [await db.run(current_thread) for _ in range(3)]

    try:
        threads = asyncio.run(reads())
    finally:
        db.close()
    assert all(name.startswith("weval-sqlite") for name in threads)


def test_damage_met_during_a_replay_is_the_stores_damage(tmp_path):
    """A file damaged after the run opened it (the start saw it sound) fails the read that
    meets the damage with SQLite's error, and the store notes it (the run says so and its
    stamp is dropped, docs/engine.md 'When the store fails')."""
    path = tmp_path / "weval-cache.sqlite"
    record(path)
    size = path.stat().st_size
    page = 4096

    async def reads(db, store):
        before = await store.get("key-0000")
        with open(path, "r+b") as f:  # every page but the first two overwritten
            f.seek(2 * page)
            f.write(b"\xa5" * (size - 2 * page))
        with pytest.raises(sqlite3.DatabaseError):
            for n in range(ENTRIES - 1, 0, -1):
                await store.get(f"key-{n:04d}")
        return before

    before, store = replay(path, reads)
    assert before is not None and before["key"] == "key-0000"
    assert store.damaged


def test_a_reply_is_read_without_its_request(tmp_path):
    """``get_reply`` (what the engine reads) leaves out the request, which nothing in a run
    reads; ``get`` still gives the whole entry."""
    path = tmp_path / "weval-cache.sqlite"
    record(path)

    async def reads(db, store):
        return await store.get_reply("key-0007"), await store.get("key-0007"), await store.get_reply("missing")

    (reply, whole, missing), _ = replay(path, reads)
    assert reply == {k: v for k, v in entry(7).items() if k != "request"}
    assert whole == entry(7) and missing is None


def test_a_replay_answers_at_once_where_it_reads_inline(tmp_path):
    """``get_reply_now``: the entry, or None, without awaiting, from a file no writer has open;
    ``NOT_NOW`` where statements go through the store's thread (beside a writer, an rw store)."""
    path = tmp_path / "weval-cache.sqlite"
    record(path)

    async def reads(db, store):
        return store.get_reply_now("key-0003"), store.get_reply_now("missing")

    (now, missing), _ = replay(path, reads)
    assert now == {k: v for k, v in entry(3).items() if k != "request"} and missing is None

    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("INSERT INTO responses VALUES ('late', 'openai:m', '{}', 'late text', 0, 0, 0)")
        (beside, later), _ = replay(path, lambda db, store: _now_then_awaited(store, "late"))
    finally:
        writer.close()
    assert beside is NOT_NOW and later is not None and later["text"] == "late text"

    db = SqliteDB(path)
    try:
        rw = asyncio.run(_now_then_awaited(SqliteStore(db), "key-0003"))
    finally:
        db.close()
    assert rw[0] is NOT_NOW and rw[1] is not None and rw[1]["key"] == "key-0003"


async def _now_then_awaited(store, key):
    await store.db.run(lambda conn: None)  # opened, as a run's first statement does
    return store.get_reply_now(key), await store.get_reply(key)


def test_damage_met_at_once_is_left_to_the_awaited_read(tmp_path):
    """A read at once that meets damage says ``NOT_NOW`` and notes nothing: the awaited read
    that follows meets it again and is the one that counts (the store notes the damage once)."""
    path = tmp_path / "weval-cache.sqlite"
    record(path)
    size = path.stat().st_size
    page = 4096

    async def reads(db, store):
        with open(path, "r+b") as f:
            f.seek(2 * page)
            f.write(b"\xa5" * (size - 2 * page))
        answers = [store.get_reply_now(f"key-{n:04d}") for n in range(ENTRIES - 1, 0, -1)]
        damaged_before = store.damaged
        with pytest.raises(sqlite3.DatabaseError):
            await store.get_reply(f"key-{ENTRIES - 1:04d}")
        return answers, damaged_before

    (answers, damaged_before), store = replay(path, reads)
    assert NOT_NOW in answers and not damaged_before
    assert store.damaged
