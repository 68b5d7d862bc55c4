"""The run's own record in a ``--weval-out`` folder (pytest_weval/report/run_record.py): its
blueprints file, written a blueprint at a time, holds one line per blueprint the results came
from, in path order, and reads back as the blueprints it was written from."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_weval.report.run_record import BLUEPRINTS, RECORD_DIR, read_run_record, write_run_record


def test_the_blueprints_file_is_a_line_per_blueprint_in_path_order(tmp_path: Path, results, blueprints):
    used = sorted({r.blueprint_path for r in results} & set(blueprints))
    write_run_record(tmp_path, blueprints, results, gates="{}")
    written = (tmp_path / RECORD_DIR / BLUEPRINTS).read_bytes()
    expected = "".join(
        json.dumps({"path": path, "blueprint": json.loads(blueprints[path].model_dump_json())}) + "\n" for path in used
    ).encode("utf-8")
    assert written == expected
    record = read_run_record(tmp_path)
    assert sorted(record.blueprints) == used
    assert all(record.blueprints[path].content_hash == blueprints[path].content_hash for path in used)


def test_no_blueprint_makes_an_empty_blueprints_file(tmp_path: Path, results):
    write_run_record(tmp_path, {}, results, gates="{}")
    assert (tmp_path / RECORD_DIR / BLUEPRINTS).read_bytes() == b""
