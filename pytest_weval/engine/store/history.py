"""The runs a store remembers (docs/history.md): one record per run, with its items' scores and
answers, beside the response cache and in the same store (SQLite, files or PostgreSQL).

The history is separate from the cache on purpose: ``--weval-cache=refresh`` overwrites replies
and ``cache prune`` deletes them, but a run's answers stay in its record until the history itself
is pruned (``cache prune --history-keep N``).

Records are plain JSON-able dicts (the report builds and reads them; the engine only keeps them):

- run: ``id``, ``started``, ``ended`` (epoch seconds), ``commit``, ``branch``, ``host``,
  ``models``, ``judges`` (lists of ids) and ``figures`` (model id -> ``mean``, ``ci95``, ``items``).
- item: ``nodeid``, ``blueprint`` (id), ``prompt`` (id), ``model``, ``score``, ``outcome``,
  ``answer`` and ``detail`` (what else the report needs to compare two runs; opaque here).

A run id is recorded once: the first process to record it wins and the others are told so (the
xdist controller records; machines sharing a run through ``--weval-run-id`` each try, one
succeeds). The tables carry their own schema version, so a store written before the history
existed gains it on first use, its cache untouched; a store of a newer version is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import sqlite3
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_weval.engine.store import postgres as store_pg
from pytest_weval.engine.store.common import StoreError, is_postgres, one_line, redact_url, scrub
from pytest_weval.engine.store.sqlite import FILENAME as SQLITE_FILENAME

if TYPE_CHECKING:
    import psycopg

HISTORY_VERSION = 1
FOLDER = "history"  # the files store's: beside the two-letter folders of replies, never one of them
_ITEM_FIELDS = ("nodeid", "blueprint", "prompt", "model", "score", "outcome", "answer", "detail")

# Each entry upgrades the history tables by one version; a store of version N runs entries N...
_SQLITE_STEPS: list[list[str]] = [
    [
        """CREATE TABLE IF NOT EXISTS history_runs (
            id TEXT PRIMARY KEY,
            started REAL NOT NULL,
            ended REAL NOT NULL,
            commit_sha TEXT,
            branch TEXT,
            host TEXT NOT NULL,
            models TEXT NOT NULL,
            judges TEXT NOT NULL,
            figures TEXT NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS history_runs_started ON history_runs (started)",
        """CREATE TABLE IF NOT EXISTS history_items (
            run_id TEXT NOT NULL,
            nodeid TEXT NOT NULL,
            blueprint TEXT NOT NULL,
            prompt TEXT NOT NULL,
            model TEXT NOT NULL,
            score REAL,
            outcome TEXT NOT NULL,
            answer TEXT,
            detail TEXT NOT NULL,
            PRIMARY KEY (run_id, nodeid))""",
    ],
]
_PG_STEPS: list[list[str]] = [
    [
        """CREATE TABLE IF NOT EXISTS weval_history_runs (
            id text PRIMARY KEY,
            started double precision NOT NULL,
            ended double precision NOT NULL,
            commit_sha text,
            branch text,
            host text NOT NULL,
            models jsonb NOT NULL,
            judges jsonb NOT NULL,
            figures jsonb NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS weval_history_runs_started ON weval_history_runs (started)",
        """CREATE TABLE IF NOT EXISTS weval_history_items (
            run_id text NOT NULL REFERENCES weval_history_runs (id) ON DELETE CASCADE,
            nodeid text NOT NULL,
            blueprint text NOT NULL,
            prompt text NOT NULL,
            model text NOT NULL,
            score double precision,
            outcome text NOT NULL,
            answer text,
            detail jsonb NOT NULL,
            PRIMARY KEY (run_id, nodeid))""",
    ],
]
_PG_LOCK = 0x7765_7661_6C02  # advisory lock held while the history tables are upgraded


class History(Protocol):
    def exists(self) -> bool:
        """The store is there (a history read from a store that is not says nothing)."""

    def record(self, run: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> bool:
        """Record a run; False when its id was recorded already (by another machine of the run)."""

    def runs(self) -> list[dict[str, Any]]:
        """Every recorded run, oldest first (by start, then id)."""

    def items(self, run_id: str) -> list[dict[str, Any]]:
        """The items of one run, by node id."""

    def prune(self, keep: int, *, dry_run: bool = False) -> int:
        """Forget all but the ``keep`` newest runs; returns how many runs go."""


def history_for(store: str, cache_dir: Path | str) -> History:
    """The history of the store a ``cache_store`` setting names."""
    if is_postgres(store):
        return PostgresHistory(store)
    if store == "sqlite":
        return SqliteHistory(Path(cache_dir) / SQLITE_FILENAME)
    if store == "files":
        return FilesHistory(Path(cache_dir))
    raise StoreError(f"unknown cache store {store!r}: choose sqlite, files or a postgresql:// URL")


def _newer(where: str, version: int) -> StoreError:
    return StoreError(
        f"{where}: its history is pytest-weval history version {version}, this pytest-weval knows up to "
        f"version {HISTORY_VERSION}: use the newer pytest-weval to read it"
    )


def _ordered(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(runs, key=lambda run: (run["started"], run["id"]))


def _newest_first_beyond(runs: list[dict[str, Any]], keep: int) -> list[str]:
    return [run["id"] for run in _ordered(runs)[: max(0, len(runs) - max(0, keep))]]


def _run_row(run: Mapping[str, Any]) -> tuple[Any, ...]:
    return (
        str(run["id"]),
        float(run["started"]),
        float(run["ended"]),
        run.get("commit"),
        run.get("branch"),
        str(run.get("host") or ""),
        json.dumps(list(run.get("models") or ()), ensure_ascii=False),
        json.dumps(list(run.get("judges") or ()), ensure_ascii=False),
        json.dumps(dict(run.get("figures") or {}), ensure_ascii=False, sort_keys=True),
    )


def _item_row(run_id: str, item: Mapping[str, Any]) -> tuple[Any, ...]:
    score = item.get("score")
    return (
        run_id,
        str(item["nodeid"]),
        str(item.get("blueprint") or ""),
        str(item.get("prompt") or ""),
        str(item.get("model") or ""),
        None if score is None else float(score),
        str(item.get("outcome") or ""),
        item.get("answer"),
        json.dumps(item.get("detail") or {}, ensure_ascii=False, sort_keys=True),
    )


def _run_from(row: Sequence[Any]) -> dict[str, Any]:
    id_, started, ended, commit, branch, host, models, judges, figures = row

    def loaded(value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value

    return {
        "id": id_,
        "started": float(started),
        "ended": float(ended),
        "commit": commit,
        "branch": branch,
        "host": host,
        "models": loaded(models),
        "judges": loaded(judges),
        "figures": loaded(figures),
    }


def _item_from(row: Sequence[Any]) -> dict[str, Any]:
    item = dict(zip(_ITEM_FIELDS, row))
    if isinstance(item["detail"], str):
        item["detail"] = json.loads(item["detail"])
    return item


_RUN_COLUMNS = "id, started, ended, commit_sha, branch, host, models, judges, figures"
_ITEM_COLUMNS = "nodeid, blueprint, prompt, model, score, outcome, answer, detail"


# ---------------------------------------------------------------- SQLite


class SqliteHistory:
    """Tables ``history_runs`` and ``history_items`` in the cache's SQLite file, versioned in
    ``history_meta``."""

    def __init__(self, path: Path):
        self.path = path

    def exists(self) -> bool:
        return self.path.is_file()

    @contextlib.contextmanager
    def _connect(self, *, readonly: bool = False) -> Iterator[sqlite3.Connection]:
        try:
            conn = (
                self._open_readonly() if readonly else sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the SQLite cache {self.path}: {exc}") from None
        try:
            conn.execute("PRAGMA busy_timeout=30000")
            yield conn
        except sqlite3.Error as exc:
            raise StoreError(f"the history in {self.path}: {exc}") from None
        finally:
            conn.close()

    def _open_readonly(self) -> sqlite3.Connection:
        """Reading leaves the file as it was (``--weval-cache=ro``, committed or read-only
        stores): read-only beside a writer; ``immutable`` when there is none, where a read-only
        open of a WAL file could not make its shared-memory file."""
        base = self.path.resolve().as_uri()
        if Path(str(self.path) + "-wal").exists():
            conn = sqlite3.connect(base + "?mode=ro", uri=True, timeout=30, isolation_level=None)
            try:
                conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
                return conn
            except sqlite3.OperationalError:
                conn.close()
        return sqlite3.connect(base + "?immutable=1", uri=True, timeout=30, isolation_level=None)

    def _version(self, conn: sqlite3.Connection) -> int:
        found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'history_meta'").fetchone()
        if not found:
            return 0
        row = conn.execute("SELECT value FROM history_meta WHERE name = 'version'").fetchone()
        version = int(row[0]) if row else 0
        if version > HISTORY_VERSION:
            raise _newer(str(self.path), version)
        return version

    def _upgrade(self, conn: sqlite3.Connection) -> None:
        """Runs inside a write transaction: the tables are of this version afterwards."""
        conn.execute("CREATE TABLE IF NOT EXISTS history_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        version = self._version(conn)
        for step in _SQLITE_STEPS[version:]:
            for statement in step:
                conn.execute(statement)
        conn.execute("INSERT OR REPLACE INTO history_meta (name, value) VALUES ('version', ?)", (str(HISTORY_VERSION),))

    def record(self, run: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> bool:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot record the run in {self.path}: {exc}") from None
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._upgrade(conn)
                added = conn.execute(
                    f"INSERT OR IGNORE INTO history_runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    _run_row(run),
                ).rowcount
                if added:
                    conn.executemany(
                        f"INSERT OR REPLACE INTO history_items (run_id, {_ITEM_COLUMNS}) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [_item_row(str(run["id"]), item) for item in items],
                    )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        return bool(added)

    def runs(self) -> list[dict[str, Any]]:
        if not self.exists():
            return []
        with self._connect(readonly=True) as conn:
            if not self._version(conn):
                return []  # a store from before the history: nothing recorded yet (and nothing written here)
            rows = conn.execute(f"SELECT {_RUN_COLUMNS} FROM history_runs").fetchall()
        return _ordered([_run_from(row) for row in rows])

    def items(self, run_id: str) -> list[dict[str, Any]]:
        if not self.exists():
            return []
        with self._connect(readonly=True) as conn:
            if not self._version(conn):
                return []
            rows = conn.execute(
                f"SELECT {_ITEM_COLUMNS} FROM history_items WHERE run_id = ? ORDER BY nodeid", (run_id,)
            ).fetchall()
        return [_item_from(row) for row in rows]

    def prune(self, keep: int, *, dry_run: bool = False) -> int:
        gone = _newest_first_beyond(self.runs(), keep)
        if dry_run or not gone:
            return len(gone)
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for run_id in gone:
                    conn.execute("DELETE FROM history_items WHERE run_id = ?", (run_id,))
                    conn.execute("DELETE FROM history_runs WHERE id = ?", (run_id,))
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        return len(gone)


# ---------------------------------------------------------------- files


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class FilesHistory:
    """One JSON file per run in ``<cache dir>/history/``, diff-friendly like the replies beside it."""

    def __init__(self, cache_dir: Path):
        self.cache_dir = cache_dir
        self.folder = cache_dir / FOLDER

    def exists(self) -> bool:
        return self.cache_dir.is_dir()

    def path_for(self, run_id: str) -> Path:
        # A run id is anyone's text (--weval-run-id): a readable, safe stem plus a digest of the id.
        stem = _UNSAFE.sub("_", run_id)[:80].strip("._") or "run"
        digest = hashlib.sha256(run_id.encode()).hexdigest()[:12]
        return self.folder / f"{stem}-{digest}.json"

    def record(self, run: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> bool:
        try:
            return self._record(run, items)
        except OSError as exc:  # a full disk or a read-only folder: the store's error, not a crash
            raise StoreError(f"cannot record the run in {self.folder}: {exc}") from None

    def _record(self, run: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> bool:
        document = {
            "historyVersion": HISTORY_VERSION,
            "run": _run_from(_run_row(run)),
            "items": [_item_from(_item_row(str(run["id"]), item)[1:]) for item in items],
        }
        target = self.path_for(str(run["id"]))
        self.folder.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(document, out, ensure_ascii=False, indent=1, sort_keys=True)
            try:
                os.link(temp, target)  # fails if the run is there: recorded once, whoever is first
            except FileExistsError:
                return False
            except OSError:  # a file system without hard links: exclusive creation instead
                try:
                    with open(target, "x", encoding="utf-8") as out:
                        out.write(Path(temp).read_text(encoding="utf-8"))
                except FileExistsError:
                    return False
            return True
        finally:
            Path(temp).unlink(missing_ok=True)

    def _documents(self) -> Iterator[tuple[Path, dict[str, Any]]]:
        for path in sorted(self.folder.glob("*.json")):
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # a file that is not a run record is not ours to read
            if not isinstance(document, dict) or not isinstance(document.get("run"), dict):
                continue
            version = document.get("historyVersion")
            if isinstance(version, int) and version > HISTORY_VERSION:
                raise _newer(str(path), version)
            yield path, document

    def runs(self) -> list[dict[str, Any]]:
        return _ordered([document["run"] for _, document in self._documents()])

    def items(self, run_id: str) -> list[dict[str, Any]]:
        path = self.path_for(run_id)
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise StoreError(f"cannot read the run record {path}: {exc}") from None
        return sorted(document.get("items") or [], key=lambda item: item["nodeid"])

    def prune(self, keep: int, *, dry_run: bool = False) -> int:
        gone = set(_newest_first_beyond(self.runs(), keep))
        if not dry_run:
            for path, document in list(self._documents()):
                if document["run"]["id"] in gone:
                    path.unlink(missing_ok=True)
        return len(gone)


# ---------------------------------------------------------------- PostgreSQL


class PostgresHistory:
    """Tables ``weval_history_runs`` and ``weval_history_items``, versioned in ``weval_meta``
    (``history_version``) apart from the cache's own schema version, so adding the history did
    not change what machines sharing the cache must agree on."""

    def __init__(self, url: str):
        self.url = url

    def exists(self) -> bool:
        return True  # a server: unreachable is an error, not an empty history

    def _run(self, what: Any) -> Any:
        async def go() -> Any:
            conn = await store_pg.connect(self.url)
            try:
                await store_pg.ensure_schema(conn, self.url)
                return await what(conn)
            finally:
                await conn.close()

        pg = store_pg._psycopg(self.url)
        try:
            return asyncio.run(go())
        except pg.Error as exc:
            raise StoreError(f"cache store {redact_url(self.url)}: history: {scrub(one_line(exc), self.url)}") from None

    async def _version(self, conn: psycopg.AsyncConnection[Any]) -> int:
        cur = await conn.execute("SELECT value FROM weval_meta WHERE name = 'history_version'")
        row = await cur.fetchone()
        version = int(row[0]) if row else 0
        if version > HISTORY_VERSION:
            raise _newer(f"cache store {redact_url(self.url)}", version)
        return version

    async def _upgrade(self, conn: psycopg.AsyncConnection[Any]) -> None:
        if await self._version(conn) == HISTORY_VERSION:
            return
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_PG_LOCK,))
            version = await self._version(conn)
            for step in _PG_STEPS[version:]:
                for statement in step:
                    await conn.execute(statement)
            await conn.execute(
                "INSERT INTO weval_meta (name, value) VALUES ('history_version', %s) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (str(HISTORY_VERSION),),
            )

    def record(self, run: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> bool:
        row = _run_row(run)
        rows = [_item_row(str(run["id"]), item) for item in items]

        async def go(conn: psycopg.AsyncConnection[Any]) -> bool:
            await self._upgrade(conn)
            async with conn.transaction():
                # A second machine of the run waits here on the first's row, then adds nothing.
                cur = await conn.execute(
                    f"INSERT INTO weval_history_runs ({_RUN_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (id) DO NOTHING RETURNING id",
                    row,
                )
                if await cur.fetchone() is None:
                    return False
                async with conn.cursor() as cursor:
                    await cursor.executemany(
                        f"INSERT INTO weval_history_items (run_id, {_ITEM_COLUMNS}) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                        rows,
                    )
            return True

        return bool(self._run(go))

    def runs(self) -> list[dict[str, Any]]:
        async def go(conn: psycopg.AsyncConnection[Any]) -> list[dict[str, Any]]:
            if not await self._version(conn):
                return []
            cur = await conn.execute(f"SELECT {_RUN_COLUMNS} FROM weval_history_runs")
            return [_run_from(row) for row in await cur.fetchall()]

        return _ordered(self._run(go))

    def items(self, run_id: str) -> list[dict[str, Any]]:
        async def go(conn: psycopg.AsyncConnection[Any]) -> list[dict[str, Any]]:
            if not await self._version(conn):
                return []
            cur = await conn.execute(
                f"SELECT {_ITEM_COLUMNS} FROM weval_history_items WHERE run_id = %s ORDER BY nodeid", (run_id,)
            )
            return [_item_from(row) for row in await cur.fetchall()]

        return list(self._run(go))

    def prune(self, keep: int, *, dry_run: bool = False) -> int:
        gone = _newest_first_beyond(self.runs(), keep)
        if dry_run or not gone:
            return len(gone)

        async def go(conn: psycopg.AsyncConnection[Any]) -> None:
            await conn.execute("DELETE FROM weval_history_runs WHERE id = ANY(%s)", (gone,))

        self._run(go)
        return len(gone)


__all__ = ["HISTORY_VERSION", "FilesHistory", "History", "PostgresHistory", "SqliteHistory", "history_for"]
