"""The atomic file writer: whole files only, with the mode the user's umask gives new files."""

from __future__ import annotations

import os
import stat

from pytest_weval.files import FILE_MODE, write_atomic


def test_a_written_file_has_the_mode_of_any_new_file_not_owner_only(tmp_path):
    umask = os.umask(0)
    os.umask(umask)
    assert 0o666 & ~umask == FILE_MODE  # what open() would give a new file here
    target = tmp_path / "out" / "summary.json"
    write_atomic(target, b"{}")
    assert target.read_bytes() == b"{}"
    assert stat.S_IMODE(target.stat().st_mode) == FILE_MODE
    if umask == 0o022:
        assert FILE_MODE == 0o644  # mkstemp alone would have made it 0600
    assert [p.name for p in target.parent.iterdir()] == ["summary.json"]  # no temporary file left
