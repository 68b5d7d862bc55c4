"""The SQLite store decides by SQLite's result codes, and one function decides which store a
setting means (issue 42)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import pytest

from pytest_weval.engine.store.backends import FilesBackend, PostgresBackend, SqliteBackend, backend_for
from pytest_weval.engine.store.common import StoreError, store_kind
from pytest_weval.engine.store.db import CANTOPEN, SqliteDB, open_readonly
from pytest_weval.engine.store.history import FilesHistory, PostgresHistory, SqliteHistory, history_for


def test_a_missing_file_opened_read_only_is_sqlites_cantopen_by_its_code(tmp_path):
    with pytest.raises(sqlite3.OperationalError) as caught:
        open_readonly(tmp_path / "absent.sqlite")
    assert getattr(caught.value, "sqlite_errorcode", None) == CANTOPEN


def test_opening_waits_while_another_process_holds_the_file(tmp_path):
    # SQLite answers SQLITE_BUSY while another process holds an exclusive lock: the open waits
    # for it (decided by that code) and then switches the file to WAL.
    path = tmp_path / "cache.sqlite"
    sqlite3.connect(path).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
                import sqlite3, sys, time
                conn = sqlite3.connect({str(path)!r}, isolation_level=None)
                conn.execute("BEGIN EXCLUSIVE")
                print("held", flush=True)
                time.sleep(1.0)
                conn.execute("COMMIT")
            """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        db = SqliteDB(path)
        try:
            conn = db._connection()
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            db.close()
    finally:
        holder.wait(timeout=30)


@pytest.mark.parametrize(
    ("setting", "kind", "backend", "history"),
    [
        ("sqlite", "sqlite", SqliteBackend, SqliteHistory),
        ("files", "files", FilesBackend, FilesHistory),
        ("postgresql://u@localhost/db", "postgres", PostgresBackend, PostgresHistory),
    ],
)
def test_the_backend_and_the_history_follow_one_decision(tmp_path, setting, kind, backend, history):
    assert store_kind(setting) == kind
    assert isinstance(backend_for(setting, tmp_path), backend)
    assert isinstance(history_for(setting, tmp_path), history)


def test_an_unknown_store_is_refused_the_same_way_by_both(tmp_path):
    with pytest.raises(StoreError) as by_backend:
        backend_for("redis", tmp_path)
    with pytest.raises(StoreError) as by_history:
        history_for("redis", tmp_path)
    assert str(by_backend.value) == str(by_history.value)
    assert "sqlite, files or a postgresql:// URL" in str(by_backend.value)
