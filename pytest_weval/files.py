"""Writing files so that a reader (or a run killed mid-write) never sees half of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# mkstemp creates files readable by their owner only; a result file or a recording is an
# ordinary file, so it gets the mode the user's umask gives any new file (read once, at
# import, while nothing else runs: reading the umask means setting it).
_UMASK = os.umask(0o022)
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK


def write_atomic(path: Path, payload: bytes, *, durable: bool = False) -> None:
    """Write ``payload`` to a temporary file beside ``path``, then rename it into place.

    ``durable`` also fsyncs before the rename, for entries that must survive a power cut.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
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
