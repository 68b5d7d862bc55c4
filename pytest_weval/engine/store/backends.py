"""Where the cache and the claims live, by the ``cache_store`` setting (docs/rulings.md, ruling 19):
``sqlite`` (default), ``files`` (recordings committed with examples) or a
``postgresql://user@host:port/database`` URL, a server shared by several machines.

One backend object per kind, chosen in one place (``backend_for``). Each opens what a run needs
(``open``: the response store and the claims store, as the settings ask) and does what works on
a store from outside a run: the session-start check (``check``), the stop signal of an
interrupted xdist controller (``request_stop``) and the operations of ``python -m pytest_weval
cache`` (``stats``, ``prune``). PostgreSQL's driver (psycopg, extra ``pytest-weval[postgres]``) is
imported only when such a URL is used.

A URL may hold a password; it never reaches any output: every text naming the store shows it
through ``redact_url``, and errors are scrubbed of it. libpq's ``PGPASSWORD`` and ``~/.pgpass``
are the places for it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import hashlib
import json
import logging
import os
import sqlite3
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from pytest_weval.engine.claims import request_stop as _sqlite_request_stop
from pytest_weval.engine.request import EngineSettings
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.store import postgres as store_pg
from pytest_weval.engine.store.batches import BatchStore, PgBatches, SqliteBatches
from pytest_weval.engine.store.cache import Store
from pytest_weval.engine.store.claims_sqlite import SqliteClaims
from pytest_weval.engine.store.claims_store import ClaimsStore
from pytest_weval.engine.store.common import (
    PASSWORD_MASK,
    POSTGRES_SCHEMES,
    StoreError,
    StoreStats,
    is_postgres,
    one_line,
    redact_url,
    scrub,
    store_kind,
    url_password,
)
from pytest_weval.engine.store.db import SqliteDB
from pytest_weval.engine.store.files import FilesStore
from pytest_weval.engine.store.outage import Outage, Spool
from pytest_weval.engine.store.outage import flush as flush_spool
from pytest_weval.engine.store.sqlite import FILENAME as SQLITE_FILENAME
from pytest_weval.engine.store.sqlite import SqliteStore
from pytest_weval.engine.store.sqlite_health import (
    emptied,
    emptied_line,
    fix_command,
    forget_good,
    inspect,
    is_damage,
    mark_good,
    open_error,
    raw_entries,
    set_aside_emptied,
    unopenable_line,
)
from pytest_weval.engine.store.sqlite_health import repair as repair_sqlite
from pytest_weval.files import write_atomic

log = logging.getLogger("pytest_weval.engine")

__all__ = [
    "PASSWORD_MASK",
    "POSTGRES_SCHEMES",
    "OpenStore",
    "StoreBackend",
    "StoreError",
    "StoreHealth",
    "StoreRepair",
    "StoreStats",
    "backend_for",
    "batch_store",
    "check_store",
    "claims_path",
    "is_postgres",
    "mark_store_checked",
    "one_line",
    "prune_store",
    "redact_url",
    "repair_store",
    "request_stop",
    "scrub",
    "store_health",
    "store_shown",
    "store_stats",
    "url_password",
]


@dataclasses.dataclass
class OpenStore:
    """What a run opened: its response store and its claims store (each None when the settings
    need none), and how to close them."""

    responses: Store | None = None
    claims: ClaimsStore | None = None
    close: Callable[[], Awaitable[None]] = dataclasses.field(default=lambda: _nothing())
    # A store that can be unreachable for a while (a server): its outage state, and where the
    # replies go that it could not take (docs/engine.md, 'When the store is unreachable').
    outage: Outage | None = None
    spool: Spool | None = None


async def _nothing() -> None:
    return None


class StoreBackend(Protocol):
    async def open(self, settings: EngineSettings, redactor: Redactor) -> OpenStore: ...

    def check(self, settings: EngineSettings) -> None: ...

    def request_stop(self, settings: EngineSettings, run_id: str, name: str) -> None: ...

    def stats(self) -> StoreStats: ...

    def prune(self, cutoff: float, *, dry_run: bool) -> int: ...

    def health(self) -> StoreHealth: ...

    def repair(self) -> StoreRepair: ...


def _ignored_by_git(folder: Path) -> None:
    # A database of replies is run-time state, never committed: as pytest does for
    # .pytest_cache/. (The files store holds recordings meant to be committed.)
    write_atomic(folder / ".gitignore", b"# Created by pytest-weval automatically.\n*\n")


def state_file(store: str, cache_dir: Path | str, name: str) -> Path | None:
    """A small file of run-time state kept beside the SQLite cache (the providers' model lists),
    or None for the other stores: a files store holds recordings meant to be committed, and a
    PostgreSQL store has no local folder. A folder made for it is ignored by git, as the
    SQLite store's own is."""
    if store != "sqlite":
        return None
    folder = Path(cache_dir)
    if not folder.exists():
        folder.mkdir(parents=True, exist_ok=True)
        _ignored_by_git(folder)
    return folder / name


def backend_for(store: str, cache_dir: Path | str) -> StoreBackend:
    """The one place a ``cache_store`` setting becomes a backend."""
    kind = store_kind(store)
    if kind == "postgres":
        return PostgresBackend(store)
    if kind == "sqlite":
        return SqliteBackend(Path(cache_dir))
    return FilesBackend(Path(cache_dir))


class SqliteBackend:
    """The default: one SQLite file in the cache folder holds the replies and the claims."""

    def __init__(self, cache_dir: Path):
        self.cache_dir = cache_dir
        self.path = cache_dir / SQLITE_FILENAME

    async def open(self, settings: EngineSettings, redactor: Redactor) -> OpenStore:
        if settings.cache_mode == "off" and not settings.coordinating:
            return OpenStore()
        readonly = settings.cache_mode == "ro"
        # Checked here too (not only at session start), for every process that opens it: quick
        # when the file is as the last check or clean close left it (the stamp).
        known_good = await asyncio.to_thread(self.verify, readonly) if settings.cache_mode != "off" else False
        if readonly:
            return await self._open_readonly(settings)
        new_folder = not self.cache_dir.exists()
        db = SqliteDB(self.path)
        try:
            await db.run(lambda conn: None)  # create the file and schema now
        except (sqlite3.Error, OSError) as exc:
            db.close()
            raise open_error(self.path, exc, readonly=False) from None
        if new_folder:
            _ignored_by_git(self.cache_dir)
        responses = SqliteStore(db) if settings.cache_mode != "off" else None

        async def close() -> None:
            db.close()
            # This run wrote to a file known good at open and met no damage: the next run
            # need not check it again.
            if responses is not None and known_good and not responses.damaged:
                await asyncio.to_thread(mark_good, self.path)
            elif responses is not None and responses.damaged:
                await asyncio.to_thread(forget_good, self.path)

        return OpenStore(
            responses=responses,
            claims=SqliteClaims(db) if settings.coordinating else None,
            close=close,
        )

    async def _open_readonly(self, settings: EngineSettings) -> OpenStore:
        """Replay: the file is read, never written or created (no file: every request is a
        replay miss); a run's claims go to a file of their own outside the cache."""
        dbs: list[SqliteDB] = []
        responses = None
        if self.path.exists():
            db = SqliteDB(self.path, readonly=True)
            dbs.append(db)
            try:
                await db.run(lambda conn: conn.execute("SELECT 1 FROM responses LIMIT 1").fetchall())
            except (sqlite3.Error, OSError) as exc:
                db.close()
                raise open_error(self.path, exc, readonly=True) from None
            responses = SqliteStore(db)
        claims = None
        if settings.coordinating:
            claims_db = SqliteDB(claims_path(settings))
            dbs.append(claims_db)
            await claims_db.run(lambda conn: None)
            claims = SqliteClaims(claims_db)

        async def close() -> None:
            for db in dbs:
                db.close()

        return OpenStore(responses=responses, claims=claims, close=close)

    def verify(self, readonly: bool, *, accept_loss: bool = False) -> bool:
        """The file can be used as the mode needs, and is not damaged (``PRAGMA quick_check``
        when it changed since it was last known good) nor emptied since. Returns whether it is
        known good; raises ``StoreError``, one line naming the file and what to do. ``readonly``
        writes and creates nothing, and a missing file is no error (every request is then a
        replay miss). ``accept_loss`` (``refresh``): an emptied file starts a new cache."""
        if self.cache_dir.exists() and not self.cache_dir.is_dir():
            raise open_error(self.path, FileExistsError(), readonly=readonly)
        if readonly and not self.path.exists():
            return False
        if not readonly and not self.cache_dir.exists():
            try:
                self.cache_dir.mkdir(parents=True, exist_ok=True)
                _ignored_by_git(self.cache_dir)
            except OSError as exc:
                raise open_error(self.path, exc, readonly=False) from None
        had = emptied(self.path)
        if had is not None:
            if not accept_loss:
                raise StoreError(emptied_line(self.path, had))
            forget_good(self.path)
        try:
            health = inspect(self.path, readonly=readonly)
        except (sqlite3.Error, OSError) as exc:
            if is_damage(exc):  # cannot be opened as a database: what its pages still hold
                raise StoreError(unopenable_line(self.path, exc, len(raw_entries(self.path)))) from None
            raise open_error(self.path, exc, readonly=readonly) from None
        if health.damaged:
            raise StoreError(health.line())
        return True

    def check(self, settings: EngineSettings) -> None:
        if settings.cache_mode == "off":
            if settings.coordinating and self.cache_dir.exists() and not self.cache_dir.is_dir():
                raise open_error(self.path, FileExistsError(), readonly=False)
            return
        self.verify(settings.cache_mode == "ro", accept_loss=settings.cache_mode == "refresh")

    def request_stop(self, settings: EngineSettings, run_id: str, name: str) -> None:
        _sqlite_request_stop(claims_path(settings), run_id, name)

    def stats(self) -> StoreStats:
        if not self.path.exists():
            raise StoreError(f"no SQLite cache at {self.path}")
        with _sqlite(self.path) as conn:
            entries, oldest, newest = conn.execute(
                "SELECT count(*), min(created), max(created) FROM responses"
            ).fetchone()
            models = conn.execute(
                "SELECT model, count(*) FROM responses GROUP BY model ORDER BY count(*) DESC, model"
            ).fetchall()
        size = sum(p.stat().st_size for p in self.path.parent.glob(SQLITE_FILENAME + "*") if p.is_file())
        return StoreStats(str(self.path), entries, size, oldest, newest, [(m, c) for m, c in models])

    def prune(self, cutoff: float, *, dry_run: bool) -> int:
        if not self.path.exists():
            raise StoreError(f"no SQLite cache at {self.path}")
        with _sqlite(self.path) as conn:
            if dry_run:
                return int(conn.execute("SELECT count(*) FROM responses WHERE created < ?", (cutoff,)).fetchone()[0])
            removed = conn.execute("DELETE FROM responses WHERE created < ?", (cutoff,)).rowcount
            conn.commit()
            if removed:
                conn.execute("VACUUM")  # give the space back (it waits for concurrent writers)
        return int(removed)

    def health(self) -> StoreHealth:
        if not self.path.exists():
            raise StoreError(f"no SQLite cache at {self.path}")
        had = emptied(self.path)
        if had is not None:
            return StoreHealth(
                str(self.path), 0, 0, [emptied_line(self.path, had)], fix_command(self.cache_dir), emptied=True
            )
        try:
            found = inspect(self.path, readonly=True, full=True)
        except sqlite3.Error as exc:
            salvable = len(raw_entries(self.path))
            return StoreHealth(str(self.path), salvable, 0, [str(exc)], fix_command(self.cache_dir), unopenable=True)
        return StoreHealth(str(self.path), found.readable, found.lost, found.problems, fix_command(self.cache_dir))

    def repair(self) -> StoreRepair:
        if self.path.exists() and emptied(self.path) is not None:
            return StoreRepair(str(self.path), 0, None, str(set_aside_emptied(self.path)))
        kept, lost, damaged = repair_sqlite(self.path)
        return StoreRepair(str(self.path), kept, lost, str(damaged))


class FilesBackend:
    """Recordings committed with a project: one JSON file per reply; the claims, run-time
    state, in a SQLite file outside the folder (``claims_path``)."""

    def __init__(self, cache_dir: Path):
        self.cache_dir = cache_dir

    async def open(self, settings: EngineSettings, redactor: Redactor) -> OpenStore:
        responses = FilesStore(self.cache_dir) if settings.cache_mode != "off" else None
        if not settings.coordinating:
            return OpenStore(responses=responses)
        db = SqliteDB(claims_path(settings))
        await db.run(lambda conn: None)

        async def close() -> None:
            db.close()

        return OpenStore(responses=responses, claims=SqliteClaims(db), close=close)

    def check(self, settings: EngineSettings) -> None:
        """The folder of recordings can be used as the mode needs: read (``ro``, which creates
        nothing) or written."""
        folder = self.cache_dir
        if settings.cache_mode == "off":
            return
        if folder.exists() and not folder.is_dir():
            raise StoreError(
                f"the cache folder {folder} is a file, not a folder: move it away, or choose another folder "
                "with --weval-cache-dir"
            )
        if settings.cache_mode == "ro":
            if folder.exists() and not os.access(folder, os.R_OK | os.X_OK):
                raise StoreError(f"cannot read the files cache {folder}: check the folder's permissions")
            return
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".weval-probe-"):
                pass
        except OSError as exc:
            raise StoreError(
                f"cannot write the files cache in {folder} ({exc.strerror or type(exc).__name__}): make the "
                "folder writable, choose another with --weval-cache-dir, or replay it without writing with "
                "--weval-cache=ro"
            ) from None

    def request_stop(self, settings: EngineSettings, run_id: str, name: str) -> None:
        _sqlite_request_stop(claims_path(settings), run_id, name)

    def stats(self) -> StoreStats:
        folder = self.cache_dir
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

    def prune(self, cutoff: float, *, dry_run: bool) -> int:
        folder = self.cache_dir
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

    def _unreadable(self) -> tuple[int, list[Path]]:
        folder = self.cache_dir
        if not folder.is_dir():
            raise StoreError(f"no files cache at {folder}")
        readable, bad = 0, []
        for path in sorted(folder.glob("??/*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                ok = isinstance(data, dict) and isinstance((data.get("reply") or {}).get("text"), str)
            except (OSError, ValueError):
                ok = False
            if ok:
                readable += 1
            else:
                bad.append(path)
        return readable, bad

    def health(self) -> StoreHealth:
        readable, bad = self._unreadable()
        problems = [f"{path.relative_to(self.cache_dir)}: not a readable entry" for path in bad]
        fix = f"python -m pytest_weval cache repair --cache-store files --cache-dir {self.cache_dir}"
        return StoreHealth(f"files store in {self.cache_dir}", readable, len(bad), problems, fix)

    def repair(self) -> StoreRepair:
        """Unreadable entry files are moved aside (``<name>.damaged``): a recording is in git, so
        nothing is deleted."""
        readable, bad = self._unreadable()
        for path in bad:
            os.replace(path, path.with_name(path.name + ".damaged"))
        return StoreRepair(f"files store in {self.cache_dir}", readable, len(bad), "beside each, as <name>.damaged")


class PostgresBackend:
    """One database shared by machines: the cache and the claims (docs/engine.md, 'Claims
    across machines'). The URL's password, if any, is a secret like a key."""

    def __init__(self, url: str):
        self.url = url

    async def open(self, settings: EngineSettings, redactor: Redactor) -> OpenStore:
        redactor.add(url_password(self.url))
        if settings.cache_mode == "off" and not settings.coordinating:
            return OpenStore()
        pg = store_pg.PgDB(self.url, retry_s=settings.store_retry_s)
        # StoreError: no psycopg, unreachable, refused, another schema version, ro and no tables
        await pg.open(create=settings.cache_mode != "ro")
        responses = store_pg.PgStore(pg) if settings.cache_mode != "off" else None
        if responses is not None and settings.cache_mode in ("rw", "refresh"):
            # Replies an earlier run kept when this store was down (the session-start check
            # flushed them already under pytest; this is for the engine used on its own).
            await flush_spool(settings.cache_dir, self.url, responses.put)
        return OpenStore(
            responses=responses,
            claims=store_pg.PgClaims(pg) if settings.coordinating else None,
            close=pg.aclose,
            outage=pg.outage,
            spool=Spool(settings.cache_dir, self.url) if responses is not None else None,
        )

    def check(self, settings: EngineSettings) -> None:
        asyncio.run(store_pg.check(self.url, create=settings.cache_mode != "ro"))
        if settings.cache_mode in ("rw", "refresh"):
            asyncio.run(self._flush(settings))

    async def _flush(self, settings: EngineSettings) -> None:
        pg = store_pg.PgDB(self.url, size=1, retry_s=settings.store_retry_s)
        await pg.open()
        try:
            stored = await flush_spool(settings.cache_dir, self.url, store_pg.PgStore(pg).put)
        finally:
            await pg.aclose()
        if stored:
            log.warning("weval: stored %d replies an earlier run kept while %s was down", stored, redact_url(self.url))

    def request_stop(self, settings: EngineSettings, run_id: str, name: str) -> None:
        try:
            asyncio.run(store_pg.record_signal(self.url, run_id, name))
        except Exception as exc:  # noqa: BLE001 - the workers stop when their controller goes anyway
            log.warning("weval claims: could not ask the workers to stop: %s", scrub(str(exc), self.url))

    def stats(self) -> StoreStats:
        return asyncio.run(store_pg.stats(self.url))

    def prune(self, cutoff: float, *, dry_run: bool) -> int:
        return asyncio.run(store_pg.prune(self.url, cutoff, dry_run=dry_run))

    def health(self) -> StoreHealth:
        raise StoreError("cache check and repair are for the sqlite and files stores: PostgreSQL checks its own pages")

    def repair(self) -> StoreRepair:
        return self.health()  # type: ignore[return-value]  # raises


@dataclasses.dataclass
class StoreHealth:
    store: str  # as shown
    readable: int
    lost: int  # entries the store knows of that cannot be read
    problems: list[str]
    fix: str
    unopenable: bool = False  # not a database any more: ``readable`` is what its pages still hold
    emptied: bool = False  # cut to nothing since it was last checked: ``problems[0]`` says it all

    @property
    def damaged(self) -> bool:
        return bool(self.problems) or self.lost > 0 or self.unopenable or self.emptied

    def lines(self) -> list[str]:
        if self.emptied:
            return self.problems[:1]
        if not self.damaged:
            return [f"{self.store}: sound, {self.readable} entries"]
        # Not one entry readable: repair keeps nothing, and says what it does instead.
        nothing = f"{self.fix} sets what cannot be read aside (as <name>.damaged); every reply is bought again"
        if self.unopenable:
            return [
                f"{self.store}: damaged: it cannot be opened as a database ({self.problems[0]}); "
                f"{self.readable} entries can still be read from its pages",
                f"{self.fix} keeps them (the others are bought again when next needed)" if self.readable else nothing,
            ]
        return [
            f"{self.store}: damaged: {self.lost} of {self.readable + self.lost} entries cannot be read",
            *(f"  {problem}" for problem in self.problems[:10]),
            f"{self.fix} keeps the {self.readable} others (the lost ones are bought again when next needed)"
            if self.readable
            else nothing,
        ]


@dataclasses.dataclass
class StoreRepair:
    store: str
    kept: int
    lost: int | None  # None: the file no longer says how many entries it had
    damaged_copy: str  # where the damaged file (or files) went


def store_health(store: str, cache_dir: Path | str) -> StoreHealth:
    """Every entry of the cache read back (``python -m pytest_weval cache check``)."""
    return backend_for(store, cache_dir).health()


def repair_store(store: str, cache_dir: Path | str) -> StoreRepair:
    """Keep every entry that can still be read, set the damaged rest aside (``cache repair``)."""
    return backend_for(store, cache_dir).repair()


def batch_store(claims: ClaimsStore) -> BatchStore:
    """The batch tables (docs/batch.md) live beside the claims: the same file or database."""
    if isinstance(claims, SqliteClaims):
        return BatchStore(SqliteBatches(claims.db))
    assert isinstance(claims, store_pg.PgClaims)
    return BatchStore(PgBatches(claims.db))


def claims_path(settings: EngineSettings) -> Path:
    """The SQLite file holding a run's claims and signals: the cache's own database, or, with
    the files store, one outside the folder of committed recordings (claims are run-time state)."""
    cache_dir = Path(settings.cache_dir)
    if settings.cache_store == "sqlite" and settings.cache_mode != "ro":  # replay writes nothing there
        return cache_dir / SQLITE_FILENAME
    where = (
        Path(settings.coordination_dir) if settings.coordination_dir else Path(tempfile.gettempdir()) / "pytest-weval"
    )
    digest = hashlib.sha256(str(cache_dir.resolve()).encode()).hexdigest()[:16]
    return where / f"claims-{digest}.sqlite"


def store_shown(settings: EngineSettings) -> str:
    """The store as messages name it: the SQLite file, the folder of recordings, or the URL
    with its password masked."""
    if is_postgres(settings.cache_store):
        return redact_url(settings.cache_store)
    if settings.cache_store == "files":
        return str(settings.cache_dir)
    return str(Path(settings.cache_dir) / SQLITE_FILENAME)


def mark_store_checked(settings: EngineSettings) -> None:
    """A session that checked the SQLite cache at start and met no damage has ended, every
    writer with it: stamp the file as it is now, so the next run's check is skipped unless the
    file changes meanwhile."""
    if settings.cache_store == "sqlite" and settings.cache_mode in ("rw", "refresh"):
        mark_good(Path(settings.cache_dir) / SQLITE_FILENAME)


def check_store(settings: EngineSettings) -> None:
    """Before anything is sent: a PostgreSQL store is reachable, its tables are made if missing
    and of this version; a SQLite or files cache can be read (``ro``, which creates nothing) or
    written, and a SQLite file is not damaged. Raises ``StoreError``, one line naming the store
    and what to do."""
    backend_for(settings.cache_store, settings.cache_dir).check(settings)


def request_stop(settings: EngineSettings, run_id: str, name: str = "stop") -> None:
    """Record signal ``name`` (``stop`` or ``stop:<session>``) for run ``run_id`` in the store
    its processes read signals from; failures are logged, never raised (an interrupt goes on)."""
    backend_for(settings.cache_store, settings.cache_dir).request_stop(settings, run_id, name)


def store_stats(store: str, cache_dir: Path | str) -> StoreStats:
    """Entries, size and age of the response cache (``StoreError`` when there is none)."""
    return backend_for(store, cache_dir).stats()


def prune_store(store: str, cache_dir: Path | str, older_than_s: float, *, dry_run: bool = False) -> int:
    """Delete response entries created more than ``older_than_s`` ago; returns how many
    (``dry_run``: only counts them)."""
    return backend_for(store, cache_dir).prune(time.time() - older_than_s, dry_run=dry_run)


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
