"""The atomic file writer: whole files only, with the mode the user's umask gives new files."""

from __future__ import annotations

import os
import stat

import pytest

from pytest_weval.files import FILE_MODE, each_file_tried, unwritable, write_atomic


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


def test_unwritable_says_why_and_leaves_nothing_behind(tmp_path):
    (tmp_path / "afile").write_text("x")
    assert unwritable(tmp_path / "afile" / "out", folder=True) == f"{tmp_path / 'afile'} is not a folder"
    assert unwritable(tmp_path / "afile" / "deeper" / "r.html", folder=False) == f"{tmp_path / 'afile'} is not a folder"
    assert unwritable(tmp_path, folder=False) == f"{tmp_path} is a folder"
    assert unwritable(tmp_path / "new" / "deep" / "out", folder=True) is None
    assert unwritable(tmp_path / "new2" / "r.html", folder=False) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # the folders it made are gone


def test_inside_each_file_tried_a_file_that_cannot_be_written_is_recorded_and_the_next_is_tried(tmp_path):
    (tmp_path / "afile").write_text("x")
    with each_file_tried() as unwritten:
        write_atomic(tmp_path / "afile" / "a.json", b"{}")
        write_atomic(tmp_path / "b.json", b"{}")
    assert [u.path for u in unwritten] == [tmp_path / "afile" / "a.json"]
    assert unwritten[0].reason
    assert (tmp_path / "b.json").read_bytes() == b"{}"
    with pytest.raises(OSError):  # outside, a failure raises as before (the store relies on it)
        write_atomic(tmp_path / "afile" / "c.json", b"{}")
