"""Where the cache and the claims live, by the ``cache_store`` setting (docs/rulings.md, ruling 19):
``sqlite`` (default), ``files`` (recordings committed with examples) or a
``postgresql://user@host:port/database`` URL, a server shared by several machines.

Also what works on a store from outside a run: the session-start check (``check_store``), the
stop signal of an interrupted xdist controller (``request_stop``) and the operations of
``python -m pytest_weval cache`` (``store_stats``, ``prune_store``). PostgreSQL's driver
(psycopg, extra ``pytest-weval[postgres]``) is imported only when such a URL is used.

A URL may hold a password; it never reaches any output: every text naming the store shows it
through ``redact_url``, and errors are scrubbed of it. libpq's ``PGPASSWORD`` and ``~/.pgpass``
are the places for it.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import hashlib
import json
import logging
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_weval.engine.claims import request_stop as _sqlite_request_stop
from pytest_weval.engine.request import EngineSettings
from pytest_weval.engine.store import postgres as store_pg
from pytest_weval.engine.store.common import (
    PASSWORD_MASK,
    POSTGRES_SCHEMES,
    StoreError,
    StoreStats,
    is_postgres,
    one_line,
    redact_url,
    scrub,
    url_password,
)
from pytest_weval.engine.store.sqlite import FILENAME as SQLITE_FILENAME

log = logging.getLogger("pytest_weval.engine")

__all__ = [
    "PASSWORD_MASK",
    "POSTGRES_SCHEMES",
    "StoreError",
    "StoreStats",
    "check_store",
    "claims_path",
    "is_postgres",
    "one_line",
    "prune_store",
    "redact_url",
    "request_stop",
    "scrub",
    "store_stats",
    "url_password",
]


def claims_path(settings: EngineSettings) -> Path:
    """The SQLite file holding a run's claims and signals: the cache's own database, or, with
    the files store, one outside the folder of committed recordings (claims are run-time state)."""
    cache_dir = Path(settings.cache_dir)
    if settings.cache_store == "sqlite":
        return cache_dir / SQLITE_FILENAME
    where = (
        Path(settings.coordination_dir) if settings.coordination_dir else Path(tempfile.gettempdir()) / "pytest-weval"
    )
    digest = hashlib.sha256(str(cache_dir.resolve()).encode()).hexdigest()[:16]
    return where / f"claims-{digest}.sqlite"


def check_store(settings: EngineSettings) -> None:
    """Before anything is sent: a PostgreSQL store is reachable, its tables are made if missing
    and of this version. Raises ``StoreError`` (one line). SQLite and files need no check."""
    if not is_postgres(settings.cache_store):
        return
    asyncio.run(store_pg.check(settings.cache_store))


def request_stop(settings: EngineSettings, run_id: str, name: str = "stop") -> None:
    """Record signal ``name`` (``stop`` or ``stop:<session>``) for run ``run_id`` in the store
    its processes read signals from; failures are logged, never raised (an interrupt goes on)."""
    if is_postgres(settings.cache_store):
        try:
            asyncio.run(store_pg.record_signal(settings.cache_store, run_id, name))
        except Exception as exc:  # noqa: BLE001 - the workers stop when their controller goes anyway
            log.warning("weval claims: could not ask the workers to stop: %s", scrub(str(exc), settings.cache_store))
        return
    _sqlite_request_stop(claims_path(settings), run_id, name)


def store_stats(store: str, cache_dir: Path | str) -> StoreStats:
    """Entries, size and age of the response cache (``StoreError`` when there is none)."""
    if is_postgres(store):
        return asyncio.run(store_pg.stats(store))
    if store == "sqlite":
        path = Path(cache_dir) / SQLITE_FILENAME
        if not path.exists():
            raise StoreError(f"no SQLite cache at {path}")
        with _sqlite(path) as conn:
            entries, oldest, newest = conn.execute(
                "SELECT count(*), min(created), max(created) FROM responses"
            ).fetchone()
            models = conn.execute(
                "SELECT model, count(*) FROM responses GROUP BY model ORDER BY count(*) DESC, model"
            ).fetchall()
        size = sum(p.stat().st_size for p in path.parent.glob(SQLITE_FILENAME + "*") if p.is_file())
        return StoreStats(str(path), entries, size, oldest, newest, [(m, c) for m, c in models])
    if store == "files":
        folder = Path(cache_dir)
        if not folder.is_dir():
            raise StoreError(f"no files cache at {folder}")
        counts: dict[str, int] = {}
        times: list[float] = []
        size = 0
        for path, data in _entry_files(folder):
            size += path.stat().st_size
            counts[str(data.get("model"))] = counts.get(str(data.get("model")), 0) + 1
            created = _created(data.get("created"))
            if created is not None:
                times.append(created)
        models = sorted(counts.items(), key=lambda mc: (-mc[1], mc[0]))
        return StoreStats(
            f"files store in {folder}",
            sum(counts.values()),
            size,
            min(times, default=None),
            max(times, default=None),
            models,
        )
    raise StoreError(f"unknown cache store {store!r}: choose sqlite, files or a postgresql:// URL")


def prune_store(store: str, cache_dir: Path | str, older_than_s: float, *, dry_run: bool = False) -> int:
    """Delete response entries created more than ``older_than_s`` ago; returns how many
    (``dry_run``: only counts them)."""
    cutoff = time.time() - older_than_s
    if is_postgres(store):
        return asyncio.run(store_pg.prune(store, cutoff, dry_run=dry_run))
    if store == "sqlite":
        path = Path(cache_dir) / SQLITE_FILENAME
        if not path.exists():
            raise StoreError(f"no SQLite cache at {path}")
        with _sqlite(path) as conn:
            if dry_run:
                return int(conn.execute("SELECT count(*) FROM responses WHERE created < ?", (cutoff,)).fetchone()[0])
            removed = conn.execute("DELETE FROM responses WHERE created < ?", (cutoff,)).rowcount
            conn.commit()
            if removed:
                conn.execute("VACUUM")  # give the space back (it waits for concurrent writers)
        return int(removed)
    if store == "files":
        folder = Path(cache_dir)
        if not folder.is_dir():
            raise StoreError(f"no files cache at {folder}")
        removed = 0
        for path, data in _entry_files(folder):
            created = _created(data.get("created"))
            if created is not None and created < cutoff:
                removed += 1
                if not dry_run:
                    path.unlink(missing_ok=True)
        return removed
    raise StoreError(f"unknown cache store {store!r}: choose sqlite, files or a postgresql:// URL")


class _sqlite:
    def __init__(self, path: Path):
        self.conn = sqlite3.connect(str(path), timeout=30)

    def __enter__(self) -> sqlite3.Connection:
        try:
            self.conn.execute("SELECT 1 FROM responses LIMIT 1")
        except sqlite3.Error as exc:
            self.conn.close()
            raise StoreError(f"cannot read the SQLite cache: {exc}") from None
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


def _entry_files(folder: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    for path in sorted(folder.glob("??/*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and "key" in data:
            yield path, data


def _created(value: object) -> float | None:
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return _dt.datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        return None
