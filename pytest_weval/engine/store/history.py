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
import math
import os
import re
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from pytest_weval.engine.store import postgres as store_pg
from pytest_weval.engine.store.common import StoreError, one_line, redact_url, scrub, store_kind
from pytest_weval.engine.store.sqlite import FILENAME as SQLITE_FILENAME
from pytest_weval.errors import WevalError

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

    def record(self, run: Mapping[str, Any], items: Iterable[Mapping[str, Any]]) -> bool:
        """Record a run; False when its id was recorded already (by another machine of the run).
        ``items`` is read once, as it is written: a run's items need not all be in memory."""

    def runs(self) -> list[dict[str, Any]]:
        """Every recorded run, oldest first (by start, then id)."""

    def items(self, run_id: str) -> list[dict[str, Any]]:
        """The items of one run, by node id."""

    def each_item(self, run_id: str) -> Iterator[dict[str, Any]]:
        """``items``, one at a time: a reader that keeps something smaller of each never has
        the run's items all in memory (the SQLite store reads its rows as they are asked for)."""

    def items_of(self, run_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """The items of several runs at once (one connection), by run id."""

    @property
    def damaged(self) -> list[str]:
        """What the reads so far skipped, one line each: a record that is not what this
        pytest-weval writes (edited by hand, cut short, written by something else)."""

    def location(self, run_id: str) -> str:
        """Where the run's record is kept, as the lines of ``damaged`` name it (for a reader
        that skips what the store kept, to say where)."""

    def repair(self) -> list[str]:
        """Drop the damaged records (``cache repair``); returns what went, one line each."""

    def prune(self, keep: int, *, dry_run: bool = False) -> int:
        """Forget all but the ``keep`` newest runs; returns how many runs go."""


def history_for(store: str, cache_dir: Path | str) -> History:
    """The history of the store a ``cache_store`` setting names."""
    kind = store_kind(store)
    if kind == "postgres":
        return PostgresHistory(store)
    if kind == "sqlite":
        return SqliteHistory(Path(cache_dir) / SQLITE_FILENAME)
    return FilesHistory(Path(cache_dir))


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


class Damaged(WevalError, ValueError):
    """A record that is not what this pytest-weval writes: the reads skip it and say so."""


def _loaded(field: str, value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        raise Damaged(f"{field} is not JSON") from None


def _time(field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise Damaged(f"{field} is not a time ({str(value)[:40]!r})")
    return float(value)


def _number_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value))


def _strings(field: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise Damaged(f"{field} is not a list of names")
    return value


def _figures(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Damaged("figures is not an object")
    for model, figure in value.items():
        ci95 = figure.get("ci95") if isinstance(figure, dict) else None
        if (
            not isinstance(figure, dict)
            or not _number_or_none(figure.get("mean"))
            or not (ci95 is None or (isinstance(ci95, list) and len(ci95) == 2 and all(map(_number_or_none, ci95))))
            or not _number_or_none(figure.get("items"))
            or not isinstance(figure.get("selection", ""), str)
        ):
            raise Damaged(f"figures of {model} are not a mean, an interval and a count")
    return value


def _run_from(row: Sequence[Any]) -> dict[str, Any]:
    """A stored run, checked: ``Damaged`` says what is wrong with it."""
    if len(row) != 9:
        raise Damaged("not a run record")
    id_, started, ended, commit, branch, host, models, judges, figures = row
    if not isinstance(id_, str) or not id_:
        raise Damaged("it has no run id")
    for field, value in (("commit", commit), ("branch", branch), ("host", host)):
        if value is not None and not isinstance(value, str):
            raise Damaged(f"{field} is not text")
    return {
        "id": id_,
        "started": _time("started", started),
        "ended": _time("ended", ended),
        "commit": commit,
        "branch": branch,
        "host": host,
        "models": _strings("models", _loaded("models", models)),
        "judges": _strings("judges", _loaded("judges", judges)),
        "figures": _figures(_loaded("figures", figures)),
    }


def _item_from(row: Sequence[Any]) -> dict[str, Any]:
    """A stored item, checked: ``Damaged`` says what is wrong with it."""
    if len(row) != len(_ITEM_FIELDS):
        raise Damaged("not an item record")
    item = dict(zip(_ITEM_FIELDS, row))
    for field in ("nodeid", "blueprint", "prompt", "model", "outcome"):
        if not isinstance(item[field], str):
            raise Damaged(f"{field} is not text")
    if not item["nodeid"]:
        raise Damaged("it has no node id")
    if not _number_or_none(item["score"]):
        raise Damaged(f"score is not a number ({str(item['score'])[:40]!r})")
    if item["answer"] is not None and not isinstance(item["answer"], str):
        raise Damaged("answer is not text")
    item["detail"] = _loaded("detail", item["detail"])
    if not isinstance(item["detail"], dict):
        raise Damaged("detail is not an object")
    return item


def _version_of(where: str, value: Any) -> int:
    try:
        version = int(value)
    except (TypeError, ValueError):
        raise StoreError(
            f"{where}: the history's version {str(value)[:40]!r} is not a number: "
            "`python -m pytest_weval cache repair` sets it again"
        ) from None
    if version > HISTORY_VERSION:
        raise _newer(where, version)
    return version


class _Checked:
    """Reads that skip damaged records and remember each one, for the line that names it."""

    def __init__(self) -> None:
        self._damaged: list[str] = []

    @property
    def damaged(self) -> list[str]:
        return list(self._damaged)

    def _note(self, line: str) -> None:
        if line not in self._damaged:
            self._damaged.append(line)

    def _runs_checked(self, rows: Iterable[Sequence[Any]], where: str) -> list[dict[str, Any]]:
        runs = []
        for row in rows:
            try:
                runs.append(_run_from(row))
            except Damaged as exc:
                self._note(f"{where}: run {str(row[0])[:80]!r} skipped: {exc}")
        return _ordered(runs)

    def _items_checked(self, rows: Iterable[Sequence[Any]], where: str, run_id: str) -> list[dict[str, Any]]:
        return list(self._each_checked(rows, where, run_id))

    def _each_checked(self, rows: Iterable[Sequence[Any]], where: str, run_id: str) -> Iterator[dict[str, Any]]:
        for row in rows:
            try:
                item = _item_from(row)
            except Damaged as exc:
                self._note(f"{where}: run {run_id[:80]!r}: item {str(row[0])[:120]!r} skipped: {exc}")
                continue
            yield item


_RUN_FIELDS = ("id", "started", "ended", "commit", "branch", "host", "models", "judges", "figures")
_RUN_COLUMNS = "id, started, ended, commit_sha, branch, host, models, judges, figures"
_ITEM_COLUMNS = "nodeid, blueprint, prompt, model, score, outcome, answer, detail"


# ---------------------------------------------------------------- SQLite


class SqliteHistory(_Checked):
    """Tables ``history_runs`` and ``history_items`` in the cache's SQLite file, versioned in
    ``history_meta``."""

    def __init__(self, path: Path):
        super().__init__()
        self.path = path

    def exists(self) -> bool:
        return self.path.is_file()

    def location(self, run_id: str) -> str:
        return str(self.path)

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
        return _version_of(str(self.path), row[0]) if row else 0

    def _upgrade(self, conn: sqlite3.Connection) -> None:
        """Runs inside a write transaction: the tables are of this version afterwards."""
        conn.execute("CREATE TABLE IF NOT EXISTS history_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        version = self._version(conn)
        for step in _SQLITE_STEPS[version:]:
            for statement in step:
                conn.execute(statement)
        conn.execute("INSERT OR REPLACE INTO history_meta (name, value) VALUES ('version', ?)", (str(HISTORY_VERSION),))

    def record(self, run: Mapping[str, Any], items: Iterable[Mapping[str, Any]]) -> bool:
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
                        (_item_row(str(run["id"]), item) for item in items),
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
        return self._runs_checked(rows, str(self.path))

    def items(self, run_id: str) -> list[dict[str, Any]]:
        return self.items_of([run_id]).get(run_id, [])

    def each_item(self, run_id: str) -> Iterator[dict[str, Any]]:
        if not self.exists():
            return
        with self._connect(readonly=True) as conn:
            if not self._version(conn):
                return
            rows = conn.execute(
                f"SELECT {_ITEM_COLUMNS} FROM history_items WHERE run_id = ? ORDER BY nodeid", (run_id,)
            )
            yield from self._each_checked(rows, str(self.path), run_id)

    def items_of(self, run_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        found: dict[str, list[dict[str, Any]]] = {run_id: [] for run_id in run_ids}
        if not self.exists() or not run_ids:
            return found
        with self._connect(readonly=True) as conn:
            if not self._version(conn):
                return found
            for run_id in run_ids:
                # row by row: a run's rows and their records are never all in memory together
                rows = conn.execute(
                    f"SELECT {_ITEM_COLUMNS} FROM history_items WHERE run_id = ? ORDER BY nodeid", (run_id,)
                )
                found[run_id] = self._items_checked(rows, str(self.path), run_id)
        return found

    def repair(self) -> list[str]:
        if not self.exists():
            return []
        gone: list[str] = []
        with self._connect() as conn:
            found = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'history_meta'"
            ).fetchone()
            if not found:
                return []
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute("SELECT value FROM history_meta WHERE name = 'version'").fetchone()
                try:
                    self._version(conn)
                except StoreError:
                    if str(row[0]).strip().isdigit():
                        raise  # a newer history: not damage
                    # Version 1 is the only one there has been: the tables are of it.
                    conn.execute("UPDATE history_meta SET value = ? WHERE name = 'version'", (str(HISTORY_VERSION),))
                    gone.append(f"{self.path}: the history's version {str(row[0])[:40]!r} set to {HISTORY_VERSION}")
                for rowid, *run in conn.execute(f"SELECT rowid, {_RUN_COLUMNS} FROM history_runs").fetchall():
                    try:
                        _run_from(run)
                    except Damaged as exc:
                        conn.execute("DELETE FROM history_items WHERE run_id = ?", (run[0],))
                        conn.execute("DELETE FROM history_runs WHERE rowid = ?", (rowid,))
                        gone.append(f"{self.path}: run {str(run[0])[:80]!r} removed: {exc}")
                for rowid, run_id, *item in conn.execute(
                    f"SELECT rowid, run_id, {_ITEM_COLUMNS} FROM history_items"
                ).fetchall():
                    try:
                        _item_from(item)
                    except Damaged as exc:
                        conn.execute("DELETE FROM history_items WHERE rowid = ?", (rowid,))
                        gone.append(
                            f"{self.path}: run {str(run_id)[:80]!r}: item {str(item[0])[:120]!r} removed: {exc}"
                        )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        return gone

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


def _dumped(value: Any, indent: str) -> str:
    """``value`` as ``json.dump(indent=1, sort_keys=True)`` writes it ``indent`` deep (a JSON
    text holds no raw newline inside a string, so each of its lines moves over alike)."""
    return json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True).replace("\n", "\n" + indent)


def _write_document(out: IO[str], run: Mapping[str, Any], items: Iterable[Mapping[str, Any]]) -> None:
    """A run's record file, byte for byte what ``json.dump({"historyVersion", "items", "run"},
    indent=1, sort_keys=True, ensure_ascii=False)`` writes, with its items written one at a time
    as they come (a run's items, answers included, are never all in memory)."""
    out.write(f'{{\n "historyVersion": {json.dumps(HISTORY_VERSION)},\n "items": ')
    opened = False
    for item in items:
        out.write(",\n  " if opened else "[\n  ")
        out.write(_dumped(item, "  "))
        opened = True
    out.write("\n ]" if opened else "[]")
    out.write(f',\n "run": {_dumped(run, " ")}\n}}')


class FilesHistory(_Checked):
    """One JSON file per run in ``<cache dir>/history/``, diff-friendly like the replies beside it."""

    def __init__(self, cache_dir: Path):
        super().__init__()
        self.cache_dir = cache_dir
        self.folder = cache_dir / FOLDER

    def exists(self) -> bool:
        return self.cache_dir.is_dir()

    def location(self, run_id: str) -> str:
        return str(self.path_for(run_id))

    def path_for(self, run_id: str) -> Path:
        # A run id is anyone's text (--weval-run-id): a readable, safe stem plus a digest of the id.
        stem = _UNSAFE.sub("_", run_id)[:80].strip("._") or "run"
        digest = hashlib.sha256(run_id.encode()).hexdigest()[:12]
        return self.folder / f"{stem}-{digest}.json"

    def record(self, run: Mapping[str, Any], items: Iterable[Mapping[str, Any]]) -> bool:
        try:
            return self._record(run, items)
        except OSError as exc:  # a full disk or a read-only folder: the store's error, not a crash
            raise StoreError(f"cannot record the run in {self.folder}: {exc}") from None

    def _record(self, run: Mapping[str, Any], items: Iterable[Mapping[str, Any]]) -> bool:
        checked_run = _run_from(_run_row(run))
        run_id = str(run["id"])
        target = self.path_for(run_id)
        self.folder.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                _write_document(out, checked_run, (_item_from(_item_row(run_id, item)[1:]) for item in items))
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

    def _files(self) -> list[Path]:
        # A name starting with a dot is a record being written (``.tmp-``), or not ours.
        return sorted(path for path in self.folder.glob("*.json") if not path.name.startswith("."))

    @staticmethod
    def _document(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The run of a record file and its items, checked; ``Damaged`` when it is not one."""
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            raise Damaged("not a run record (not UTF-8 text)") from None
        except ValueError:
            raise Damaged("not a run record (not JSON)") from None
        if not isinstance(document, dict) or not isinstance(document.get("run"), dict):
            raise Damaged("not a run record (no 'run' object)")
        version = document.get("historyVersion")
        if isinstance(version, bool) or not isinstance(version, int):
            raise Damaged(f"its historyVersion {str(version)[:40]!r} is not a number")
        if version > HISTORY_VERSION:
            raise _newer(str(path), version)
        run = document["run"]
        checked = _run_from(tuple(run.get(field) for field in _RUN_FIELDS))
        items = document.get("items")
        if not isinstance(items, list):
            raise Damaged("its items are not a list")
        return checked, items

    def _documents(self) -> Iterator[tuple[Path, dict[str, Any], list[dict[str, Any]]]]:
        for path in self._files():
            try:
                run, items = self._document(path)
            except OSError as exc:
                self._note(f"{path}: cannot be read: {exc.strerror or exc}")
                continue
            except Damaged as exc:
                self._note(f"{path}: skipped: {exc}")
                continue
            yield path, run, items

    def _items_checked_of(self, path: Path, run_id: str, items: list[Any]) -> list[dict[str, Any]]:
        rows = [
            tuple(item.get(field) for field in _ITEM_FIELDS) if isinstance(item, dict) else (str(item),)
            for item in items
        ]
        return sorted(self._items_checked(rows, str(path), run_id), key=lambda item: item["nodeid"])

    def runs(self) -> list[dict[str, Any]]:
        return _ordered([run for _, run, _ in self._documents()])

    def items(self, run_id: str) -> list[dict[str, Any]]:
        path = self.path_for(run_id)
        if not path.exists():
            return []
        try:
            _, items = self._document(path)
        except OSError as exc:
            raise StoreError(f"cannot read the run record {path}: {exc.strerror or exc}") from None
        except Damaged as exc:
            self._note(f"{path}: skipped: {exc}")
            return []
        return self._items_checked_of(path, run_id, items)

    def items_of(self, run_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        return {run_id: self.items(run_id) for run_id in run_ids}

    def each_item(self, run_id: str) -> Iterator[dict[str, Any]]:
        yield from self.items(run_id)  # one JSON document: read whole

    def repair(self) -> list[str]:
        """A damaged record file is set aside (renamed ``<name>.damaged``, no longer read);
        a record with damaged items is written again without them."""
        gone: list[str] = []
        try:
            for path in self._files():
                try:
                    run, items = self._document(path)
                except Damaged as exc:
                    aside = path.with_name(path.name + ".damaged")
                    os.replace(path, aside)
                    gone.append(f"{path}: set aside as {aside.name}: {exc}")
                    continue
                kept = self._items_checked_of(path, run["id"], items)
                if len(kept) == len(items):
                    continue
                document = {"historyVersion": HISTORY_VERSION, "run": run, "items": kept}
                handle, temp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".json")
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    json.dump(document, out, ensure_ascii=False, indent=1, sort_keys=True)
                os.replace(temp, path)
                gone.append(f"{path}: {len(items) - len(kept)} damaged item(s) removed")
        except OSError as exc:
            raise StoreError(f"cannot repair the history in {self.folder}: {exc}") from None
        return gone

    def prune(self, keep: int, *, dry_run: bool = False) -> int:
        gone = set(_newest_first_beyond(self.runs(), keep))
        if not dry_run:
            for path, run, _ in list(self._documents()):
                if run["id"] in gone:
                    path.unlink(missing_ok=True)
        return len(gone)


# ---------------------------------------------------------------- PostgreSQL


class PostgresHistory(_Checked):
    """Tables ``weval_history_runs`` and ``weval_history_items``, versioned in ``weval_meta``
    (``history_version``) apart from the cache's own schema version, so adding the history did
    not change what machines sharing the cache must agree on."""

    def __init__(self, url: str):
        super().__init__()
        self.url = url

    def exists(self) -> bool:
        return True  # a server: unreachable is an error, not an empty history

    def location(self, run_id: str) -> str:
        return f"cache store {redact_url(self.url)}"

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
        return _version_of(f"cache store {redact_url(self.url)}", row[0]) if row else 0

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

    def record(self, run: Mapping[str, Any], items: Iterable[Mapping[str, Any]]) -> bool:
        row = _run_row(run)
        rows = (_item_row(str(run["id"]), item) for item in items)

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
            return list(await cur.fetchall())

        return self._runs_checked(self._run(go), f"cache store {redact_url(self.url)}")

    def items(self, run_id: str) -> list[dict[str, Any]]:
        return self.items_of([run_id]).get(run_id, [])

    def each_item(self, run_id: str) -> Iterator[dict[str, Any]]:
        yield from self.items(run_id)  # fetched in one round trip

    def items_of(self, run_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        wanted = list(run_ids)

        async def go(conn: psycopg.AsyncConnection[Any]) -> list[Any]:
            if not wanted or not await self._version(conn):
                return []
            cur = await conn.execute(
                f"SELECT run_id, {_ITEM_COLUMNS} FROM weval_history_items WHERE run_id = ANY(%s) "
                "ORDER BY run_id, nodeid",
                (wanted,),
            )
            return list(await cur.fetchall())

        rows: dict[str, list[Any]] = {run_id: [] for run_id in wanted}
        for run_id, *row in self._run(go):
            rows[run_id].append(row)
        where = f"cache store {redact_url(self.url)}"
        return {run_id: self._items_checked(found, where, run_id) for run_id, found in rows.items()}

    def repair(self) -> list[str]:
        where = f"cache store {redact_url(self.url)}"

        async def go(conn: psycopg.AsyncConnection[Any]) -> list[str]:
            gone: list[str] = []
            cur = await conn.execute("SELECT value FROM weval_meta WHERE name = 'history_version'")
            row = await cur.fetchone()
            if row is None:
                return gone
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_PG_LOCK,))
                if not str(row[0]).strip().isdigit():
                    # Version 1 is the only one there has been: the tables are of it.
                    await conn.execute(
                        "UPDATE weval_meta SET value = %s WHERE name = 'history_version'", (str(HISTORY_VERSION),)
                    )
                    gone.append(f"{where}: the history's version {str(row[0])[:40]!r} set to {HISTORY_VERSION}")
                cur = await conn.execute(f"SELECT {_RUN_COLUMNS} FROM weval_history_runs")
                for run in await cur.fetchall():
                    try:
                        _run_from(run)
                    except Damaged as exc:
                        await conn.execute("DELETE FROM weval_history_runs WHERE id = %s", (run[0],))
                        gone.append(f"{where}: run {str(run[0])[:80]!r} removed: {exc}")
                cur = await conn.execute(f"SELECT run_id, {_ITEM_COLUMNS} FROM weval_history_items")
                for run_id, *item in await cur.fetchall():
                    try:
                        _item_from(item)
                    except Damaged as exc:
                        await conn.execute(
                            "DELETE FROM weval_history_items WHERE run_id = %s AND nodeid = %s", (run_id, item[0])
                        )
                        gone.append(f"{where}: run {str(run_id)[:80]!r}: item {str(item[0])[:120]!r} removed: {exc}")
            return gone

        return list(self._run(go))

    def prune(self, keep: int, *, dry_run: bool = False) -> int:
        gone = _newest_first_beyond(self.runs(), keep)
        if dry_run or not gone:
            return len(gone)

        async def go(conn: psycopg.AsyncConnection[Any]) -> None:
            await conn.execute("DELETE FROM weval_history_runs WHERE id = ANY(%s)", (gone,))

        self._run(go)
        return len(gone)


__all__ = ["HISTORY_VERSION", "Damaged", "FilesHistory", "History", "PostgresHistory", "SqliteHistory", "history_for"]
