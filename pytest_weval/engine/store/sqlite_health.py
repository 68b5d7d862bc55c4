"""Is the SQLite cache usable, and what is left of it when it is not (issue 31, item 3).

A damaged file used to cost money in silence: a page of garbage made its entries unreadable,
each read a logged miss, and every run bought them again. Here: the faults a store meets,
told apart by SQLite's result code (damaged, full, read-only, cannot be opened), each with
what to do; ``PRAGMA quick_check`` when the file changed since it was last known good (a stamp
beside it, written after a check or a clean close, holds its size and time); and a salvage
that reads every entry it still can, by row, so a damaged page costs only its own entries
(``python -m pytest_weval cache check|repair``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import re
import sqlite3
import struct
from collections.abc import Iterator
from pathlib import Path

from pytest_weval.engine.store.common import StoreDown, StoreError
from pytest_weval.engine.store.db import (
    BUSY_TIMEOUT_MS,
    CANTOPEN,
    CORRUPT,
    FULL,
    NOTADB,
    READONLY,
    SCHEMA,
    open_readonly,
    prepare_shared,
    sqlite_code,
)

STAMP_SUFFIX = ".checked"
_HEADER_SIZE = 100  # every SQLite database file starts with a header of this size
_KEY = re.compile(r"[0-9a-f]{64}\Z")


def is_damage(exc: BaseException) -> bool:
    """The file is not (or no longer) a sound SQLite database."""
    return isinstance(exc, sqlite3.DatabaseError) and sqlite_code(exc) in (CORRUPT, NOTADB)


def _sqlstate(exc: BaseException) -> str | None:
    """A PostgreSQL error's SQLSTATE (psycopg's, or the one a ``StoreError`` wraps)."""
    for cause in (exc, exc.__cause__, exc.__context__):
        state = getattr(cause, "sqlstate", None)
        if isinstance(state, str):
            return state
    return None


def is_full(exc: BaseException) -> bool:
    """A write failed for want of space (SQLite's, the files store's ENOSPC / quota, or
    PostgreSQL's disk_full)."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if _sqlstate(exc) == "53100":
        return True
    return isinstance(exc, sqlite3.DatabaseError) and sqlite_code(exc) == FULL


def is_unwritable(exc: BaseException) -> bool:
    """No write can succeed: read-only file, folder, file system or database, or a store that
    stayed unreachable past its retry time."""
    if isinstance(exc, StoreDown):
        return True
    if isinstance(exc, OSError):
        return exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM)
    if _sqlstate(exc) == "25006":  # read_only_sql_transaction
        return True
    return isinstance(exc, sqlite3.DatabaseError) and sqlite_code(exc) == READONLY


# What ``cache repair`` does when not one entry can be read (said instead of "keeps them").
NOTHING_KEPT = "sets the damaged file aside (as <name>.damaged) and the next run starts an empty cache"


def fix_command(cache_dir: Path | str) -> str:
    return f"python -m pytest_weval cache repair --cache-dir {cache_dir}"


def open_error(path: Path, exc: BaseException, *, readonly: bool) -> StoreError:
    """One line for a store that cannot be used: which file, what is wrong, what to do."""
    folder = path.parent
    if is_damage(exc):
        return StoreError(
            f"the SQLite cache {path} is damaged ({exc}): {fix_command(folder)} keeps every entry it can "
            "still read (or delete the file to start an empty cache)"
        )
    if isinstance(exc, FileExistsError) or (folder.exists() and not folder.is_dir()):
        return StoreError(
            f"the cache folder {folder} is a file, not a folder: move it away, or choose another folder "
            "with --weval-cache-dir"
        )
    if readonly:
        return StoreError(f"cannot read the SQLite cache {path} ({_why(exc)}): check the file and its folder")
    if is_full(exc):
        return StoreError(f"no space left for the cache at {path}: free space, or choose another --weval-cache-dir")
    return StoreError(
        f"cannot write the cache at {path} ({_why(exc)}): make the folder writable, choose another with "
        "--weval-cache-dir, or replay it without writing with --weval-cache=ro"
    )


def unopenable_line(path: Path, exc: BaseException, salvable: int) -> str:
    """A file SQLite cannot open any more (an overwritten header, a truncated file)."""
    return (
        f"the SQLite cache {path} is damaged ({exc}): it cannot be opened as a database, and "
        f"{salvable} entries can still be read from its pages; {fix_command(path.parent)} "
        f"{'keeps them (or delete the file to start an empty cache)' if salvable else NOTHING_KEPT}"
    )


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    if sqlite_code(exc) == CANTOPEN:
        return "unable to open or create the file there"
    if sqlite_code(exc) == READONLY:
        return "the file or its folder is read-only"
    return str(exc) or type(exc).__name__


# -- the stamp: when the file was last known good ----------------------------------------------
def _signature(path: Path) -> dict[str, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    wal = Path(str(path) + "-wal")
    wal_size = wal.stat().st_size if wal.exists() else 0
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "wal": wal_size}


def unchanged_since_check(path: Path) -> bool:
    try:
        stamp = json.loads(Path(str(path) + STAMP_SUFFIX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return stamp == _signature(path)


def mark_good(path: Path) -> None:
    """The file as it is now was checked (or written by a run that met no damage)."""
    signature = _signature(path)
    if signature is None:
        return
    with contextlib.suppress(OSError):  # a stamp not written only means the next run checks again
        Path(str(path) + STAMP_SUFFIX).write_text(json.dumps(signature), encoding="utf-8")


def emptied(path: Path) -> int | None:
    """The size the file had when it was last known good, when it has since been cut to less
    than a SQLite header (a truncated copy, a failed restore): opened as it is, SQLite would take
    it for a new, empty database and every reply and the history would be gone in silence.
    None when it was not (a file that shrank but is still a database, say after a VACUUM, is
    checked as any changed file is)."""
    try:
        stamp = json.loads(Path(str(path) + STAMP_SUFFIX).read_text(encoding="utf-8"))
        size = path.stat().st_size
    except (OSError, ValueError):
        return None
    had = stamp.get("size") if isinstance(stamp, dict) else None
    if isinstance(had, int) and had >= _HEADER_SIZE > size:
        return had
    return None


def emptied_line(path: Path, had: int) -> str:
    return (
        f"the SQLite cache {path} is empty ({path.stat().st_size} bytes) but held {had:,} bytes when it was last "
        "checked: its replies and the run history are gone, and every reply would be bought again; restore "
        f"the file, or accept the loss with {fix_command(path.parent)} or --weval-cache=refresh"
    )


def set_aside_emptied(path: Path) -> Path:
    """Accept an emptied file's loss (``cache repair``): it goes aside as ``<name>.damaged`` and
    the next run starts an empty cache."""
    aside = path.with_name(path.name + ".damaged")
    path.replace(aside)
    forget_good(path)
    return aside


def forget_good(path: Path) -> None:
    with contextlib.suppress(OSError):
        Path(str(path) + STAMP_SUFFIX).unlink()


# -- checking and salvaging ----------------------------------------------------------------------
@dataclasses.dataclass
class Health:
    path: Path
    problems: list[str]  # quick_check's findings (empty: sound)
    readable: int  # entries read back whole
    lost: int  # entries the file knows of that cannot be read

    @property
    def damaged(self) -> bool:
        return bool(self.problems) or self.lost > 0

    def line(self) -> str:
        """The finding in one line, with the fix when there is something to fix."""
        if not self.damaged:
            return f"the SQLite cache {self.path} is sound: {self.readable} entries"
        first = self.problems[0] if self.problems else "entries cannot be read"
        keeps = f"keeps the {self.readable} others" if self.readable else NOTHING_KEPT
        return (
            f"the SQLite cache {self.path} is damaged ({first}): {self.lost} of {self.readable + self.lost} entries "
            f"cannot be read and would be bought again; {fix_command(self.path.parent)} {keeps}"
        )


def connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    if readonly:
        return open_readonly(path)
    return sqlite3.connect(str(path), timeout=30, isolation_level=None)


def quick_check(conn: sqlite3.Connection, limit: int = 20) -> list[str]:
    try:
        rows = conn.execute(f"PRAGMA quick_check({int(limit)})").fetchall()
    except sqlite3.DatabaseError as exc:  # some damage stops the check itself
        if not is_damage(exc):
            raise
        return [str(exc)]
    found = [line for row in rows for line in str(row[0]).splitlines() if line.strip() and not line.startswith("***")]
    return [] if found == ["ok"] else found


def entries(conn: sqlite3.Connection) -> Iterator[tuple | None]:
    """Every entry row (key, model, request, text, input_tokens, output_tokens, created) that
    can be read, and None for each one that cannot: read row by row, so that a damaged page
    costs only the rows on it. How many rows there were comes from the key index when it can
    be read, else from the row ids (a row id that fails to read counts as lost)."""
    try:
        indexed = int(
            conn.execute("SELECT count(*) FROM responses INDEXED BY sqlite_autoindex_responses_1").fetchone()[0]
        )
    except sqlite3.DatabaseError:
        indexed = None
    top = _top_rowid(conn)
    good = failed = 0
    for rowid in range(1, top + 1):
        try:
            row = conn.execute(
                "SELECT key, model, request, text, input_tokens, output_tokens, created FROM responses "
                "NOT INDEXED WHERE rowid = ?",
                (rowid,),
            ).fetchone()
        except sqlite3.DatabaseError:
            failed += 1
            continue
        if row is None:
            continue
        if _valid(row):
            good += 1
            yield row
        else:
            failed += 1
    lost = max(failed, indexed - good) if indexed is not None else failed
    for _ in range(lost):
        yield None


def _top_rowid(conn: sqlite3.Connection) -> int:
    for statement in (
        "SELECT max(rowid) FROM responses NOT INDEXED",
        "SELECT max(rowid) FROM responses INDEXED BY sqlite_autoindex_responses_1",
    ):
        try:
            return int(conn.execute(statement).fetchone()[0] or 0)
        except sqlite3.DatabaseError:
            continue
    # Neither tree can be walked to its end: row ids are at most a few per page.
    return int(conn.execute("PRAGMA page_count").fetchone()[0]) * 64


def _valid(row: tuple) -> bool:
    key, model, request, text, input_tokens, output_tokens, created = row
    if not (isinstance(key, str) and _KEY.match(key) and isinstance(text, str) and isinstance(model, str)):
        return False
    try:
        json.loads(request)
    except (TypeError, ValueError):
        return False
    return isinstance(input_tokens, int) and isinstance(output_tokens, int) and isinstance(created, (int, float))


def inspect(path: Path, *, readonly: bool, full: bool = False) -> Health:
    """Open the cache, and check it when it changed since it was last known good (``full``:
    always, and count every readable entry). Raises sqlite3 errors the caller words
    (``open_error``); a sound file is stamped unless ``readonly``."""
    conn = connect(path, readonly=readonly)
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if not readonly:
            _prepare(conn)
        if not full and unchanged_since_check(path):
            return Health(path, [], 0, 0)
        problems = quick_check(conn)
        readable = lost = 0
        if problems or full:
            for row in entries(conn):
                if row is None:
                    lost += 1
                else:
                    readable += 1
    finally:
        conn.close()
    health = Health(path, problems, readable, lost)
    if not readonly and not health.damaged:
        mark_good(path)
    return health


def _prepare(conn: sqlite3.Connection) -> None:
    prepare_shared(conn, ("PRAGMA journal_mode=WAL",), SCHEMA)


def repair(path: Path) -> tuple[int, int | None, Path]:
    """Copy every entry that can still be read into a new file (with every other table's
    readable rows), keep the damaged one beside it (``<name>.damaged``) and put the new one in
    its place. Entries are read through SQLite where the file's structure holds, and straight
    from its pages where it does not (``raw_entries``: an overwritten header, a damaged interior
    page that hides intact leaves). Returns (entries kept, entries lost or None when the file no
    longer says how many it had, where the damaged file went). Run it while no pytest run uses
    the cache."""
    if not path.exists():
        raise StoreError(f"no SQLite cache at {path}")
    fresh = path.with_name(path.name + ".repairing")
    fresh.unlink(missing_ok=True)
    rows: dict[str, tuple] = {}
    known: int | None = None
    old: sqlite3.Connection | None = None
    try:
        old = open_readonly(path)
        failed = 0
        for row in entries(old):
            if row is None:
                failed += 1
            else:
                rows[row[0]] = row
        known = len(rows) + failed
    except sqlite3.DatabaseError:  # not even the table can be found: the pages may still hold entries
        known = None
    for key, row in raw_entries(path).items():
        rows.setdefault(key, row)
    if not rows:
        # Nothing to keep: the file goes aside, as an emptied one does, and the next run starts
        # an empty cache (what ``cache check`` and the run's line said this would do).
        if old is not None:
            old.close()
        damaged = path.with_name(path.name + ".damaged")
        os.replace(path, damaged)
        for suffix in ("-wal", "-shm", STAMP_SUFFIX):
            Path(str(path) + suffix).unlink(missing_ok=True)
        return 0, known, damaged
    new = sqlite3.connect(str(fresh), isolation_level=None)
    try:
        new.executescript(SCHEMA)
        new.execute("BEGIN")
        new.executemany(
            "INSERT OR REPLACE INTO responses (key, model, request, text, input_tokens, output_tokens, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows.values(),
        )
        if old is not None:
            _copy_other_tables(old, new)
        new.execute("COMMIT")
    except BaseException:
        new.close()
        fresh.unlink(missing_ok=True)
        raise
    finally:
        if old is not None:
            old.close()
        new.close()
    damaged = path.with_name(path.name + ".damaged")
    os.replace(path, damaged)
    for suffix in ("-wal", "-shm", STAMP_SUFFIX):
        Path(str(path) + suffix).unlink(missing_ok=True)
    os.replace(fresh, path)
    mark_good(path)
    return len(rows), None if known is None else max(0, known - len(rows)), damaged


# -- reading entries straight from the pages ---------------------------------------------------
# The file format (https://www.sqlite.org/fileformat2.html): pages of a size the header gives;
# a table's rows sit in its leaf pages (flag 0x0D), each cell a payload size, a row id and a
# record, the record's end on a chain of overflow pages when it does not fit.
_PAGE_SIZES = (4096, 1024, 2048, 8192, 16384, 32768, 65536, 512)


def raw_entries(path: Path) -> dict[str, tuple]:
    """Every entry found in the file's table leaf pages, by key, read without SQLite (the newest
    of a key's copies: a page freed by a later write may still hold an older one)."""
    data = path.read_bytes()
    sizes = list(_PAGE_SIZES)
    reserved = 0
    if data[:16] == b"SQLite format 3\x00":
        stated = int.from_bytes(data[16:18], "big")
        stated = 65536 if stated == 1 else stated
        if stated in sizes:
            sizes.remove(stated)
            sizes.insert(0, stated)
        reserved = data[20]
    best: dict[str, tuple] = {}
    for size in sizes:
        found = _scan(data, size, reserved)
        if len(found) > len(best):
            best = found
        if best and size == sizes[0]:
            break  # the header's page size read entries: the file is laid out as it says
    return best


def _scan(data: bytes, size: int, reserved: int) -> dict[str, tuple]:
    found: dict[str, tuple] = {}
    usable = size - reserved
    for number in range(1, len(data) // size + 1):
        start = (number - 1) * size
        header = start + (100 if number == 1 else 0)
        if data[header] != 0x0D:
            continue
        cells = int.from_bytes(data[header + 3 : header + 5], "big")
        if not 0 < cells <= size // 6:
            continue
        for n in range(cells):
            pointer = int.from_bytes(data[header + 8 + 2 * n : header + 10 + 2 * n], "big")
            if not header - start + 8 <= pointer < size:
                continue
            try:
                row = _cell(data, start + pointer, size, usable)
            except (IndexError, ValueError, UnicodeDecodeError):
                continue
            if row is not None and _valid(row):
                earlier = found.get(row[0])
                if earlier is None or float(row[6]) >= float(earlier[6]):
                    found[row[0]] = row
    return found


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = 0
    for n in range(9):
        byte = data[at + n]
        if n == 8:
            return (value << 8) | byte, 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, n + 1
    raise ValueError("varint")


def _cell(data: bytes, at: int, size: int, usable: int) -> tuple | None:
    length, used = _varint(data, at)
    _rowid, more = _varint(data, at + used)
    at += used + more
    limit = usable - 35
    if length <= limit:
        payload = data[at : at + length]
    else:
        least = (usable - 12) * 32 // 255 - 23
        local = least + (length - least) % (usable - 4)
        if local > limit:
            local = least
        parts = [data[at : at + local]]
        page = int.from_bytes(data[at + local : at + local + 4], "big")
        got, hops = local, 0
        while got < length and page and hops < len(data) // size:
            begin = (page - 1) * size
            page = int.from_bytes(data[begin : begin + 4], "big")
            chunk = data[begin + 4 : begin + 4 + min(usable - 4, length - got)]
            if not chunk:
                return None
            parts.append(chunk)
            got += len(chunk)
            hops += 1
        payload = b"".join(parts)
    if len(payload) != length:
        return None
    return _record(payload)


def _record(payload: bytes) -> tuple | None:
    header, at = _varint(payload, 0)
    types = []
    while at < header:
        kind, used = _varint(payload, at)
        types.append(kind)
        at += used
    if len(types) != 7:
        return None
    values: list[object] = []
    at = header
    for kind in types:
        if kind == 0:
            values.append(None)
        elif 1 <= kind <= 6:
            width = (1, 2, 3, 4, 6, 8)[kind - 1]
            values.append(int.from_bytes(payload[at : at + width], "big", signed=True))
            at += width
        elif kind == 7:
            values.append(struct.unpack(">d", payload[at : at + 8])[0])
            at += 8
        elif kind in (8, 9):
            values.append(kind - 8)
        elif kind >= 12:
            width = (kind - 12) // 2
            chunk = payload[at : at + width]
            values.append(chunk.decode("utf-8") if kind % 2 else bytes(chunk))
            at += width
        else:
            return None
    return tuple(values)


def _copy_other_tables(old: sqlite3.Connection, new: sqlite3.Connection) -> None:
    """Tables beside the responses (run history, claims, ...), row by row as far as they can be
    read; run-time state lost here is only a run's claims."""
    try:
        tables = old.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
        indexes = old.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").fetchall()
    except sqlite3.DatabaseError:
        return
    for name, sql in tables:
        if name == "responses" or name.startswith("sqlite_") or not sql:
            continue
        with contextlib.suppress(sqlite3.DatabaseError):
            new.execute(sql.replace("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ", 1))
        quoted = '"' + name.replace('"', '""') + '"'
        try:
            columns = len(new.execute(f"SELECT * FROM {quoted} LIMIT 0").description or ())
            cursor = old.execute(f"SELECT * FROM {quoted}")
            marks = ",".join("?" * columns)
            while True:
                try:
                    row = cursor.fetchone()
                except sqlite3.DatabaseError:
                    break
                if row is None:
                    break
                with contextlib.suppress(sqlite3.DatabaseError):
                    new.execute(f"INSERT OR REPLACE INTO {quoted} VALUES ({marks})", row)
        except sqlite3.DatabaseError:
            continue
    for (sql,) in indexes:
        with contextlib.suppress(sqlite3.DatabaseError):
            new.execute(sql.replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1))
