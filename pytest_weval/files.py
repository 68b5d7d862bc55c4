"""Writing files so that a reader (or a run killed mid-write) never sees half of one."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

# mkstemp creates files readable by their owner only; a result file or a recording is an
# ordinary file, so it gets the mode the user's umask gives any new file (read once, at
# import, while nothing else runs: reading the umask means setting it).
_UMASK = os.umask(0o022)
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK


@dataclasses.dataclass(frozen=True)
class Unwritten:
    """A file that could not be written (a full disk), and why."""

    path: Path
    reason: str


_UNWRITTEN: contextvars.ContextVar[list[Unwritten] | None] = contextvars.ContextVar("unwritten", default=None)


@contextlib.contextmanager
def each_file_tried() -> Iterator[list[Unwritten]]:
    """Inside, ``write_atomic`` records a file it cannot write (a full disk, a folder gone) in
    the list given, and the caller's next file is still tried: a run's report files are each
    worth having without the others, and one that fails must not cost the run its summary."""
    unwritten: list[Unwritten] = []
    token = _UNWRITTEN.set(unwritten)
    try:
        yield unwritten
    finally:
        _UNWRITTEN.reset(token)


def write_atomic(path: Path, payload: bytes | Iterable[bytes], *, durable: bool = False) -> None:
    """Write ``payload`` to a temporary file beside ``path``, then rename it into place.
    ``payload`` may come in pieces, written as they come (a large file never whole in memory).

    ``durable`` also fsyncs before the rename, for entries that must survive a power cut.
    Inside ``each_file_tried`` a file that cannot be written is recorded there, not raised.
    """
    try:
        _write_atomic(path, payload, durable=durable)
    except OSError as exc:
        unwritten = _UNWRITTEN.get()
        if unwritten is None:
            raise
        unwritten.append(Unwritten(path, exc.strerror or str(exc)))


def _write_atomic(path: Path, payload: bytes | Iterable[bytes], *, durable: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            if isinstance(payload, bytes):
                handle.write(payload)
            else:
                handle.writelines(payload)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def unwritable(path: Path, *, folder: bool) -> str | None:
    """Why files cannot be written at ``path`` (``folder``: a folder to write files into; else
    one file), or None when they can. Tried for real (the missing folders made, a file created
    in the last one), then undone, so a run learns it before it pays for anything: a parent that
    is a file, a read-only or pseudo filesystem, a missing permission all show up as they would
    at the end."""
    if not folder and path.is_dir():
        return f"{path} is a folder"
    target = path if folder else path.parent
    missing: list[Path] = []
    existing = target
    while not existing.exists():
        missing.append(existing)
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        return f"{existing} is not a folder"
    made: list[Path] = []
    where = target
    try:
        for parent in reversed(missing):
            where = parent
            parent.mkdir()
            made.append(parent)
        where = target
        fd, probe = tempfile.mkstemp(prefix=".weval-probe.", dir=target)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"cannot write in {where}: {exc.strerror or exc}"
    finally:
        for parent in reversed(made):
            try:
                parent.rmdir()
            except OSError:
                pass
    return None
