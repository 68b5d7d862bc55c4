"""The run's own record in a ``--weval-out`` folder (pytest_weval/report/run_record.py): its
blueprints file, written a blueprint at a time, holds one line per blueprint the results came
from, in path order, and reads back as the blueprints it was written from."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_weval.report.run_record import BLUEPRINTS, ITEMS, RECORD_DIR, read_run_record, write_run_record
from pytest_weval.report.spool import FullResults, SpoolWriter
from pytest_weval.results import with_texts


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


def test_the_items_file_from_the_spool_is_what_the_whole_results_write(tmp_path: Path, results):
    """The items file holds each spooled result's own line when its record gained nothing
    since, and the record's result with its texts back when it gained similarity rows or a node
    id after its result was spooled: in every case what the whole results write."""
    whole = [r.model_copy(update={"nodeid": f"t.yml::{r.prompt_id}[{r.effective_model_id}]"}) for r in results]
    whole[1] = whole[1].model_copy(update={"nodeid": ""})  # its node id set after it was spooled
    spool = SpoolWriter(lambda: tmp_path / "spool")
    refs = [spool.add(r) for r in whole]
    spool.close()
    records = [r.compact() for r in whole]  # what the run keeps of each
    records[1].nodeid = "t.yml::late"
    records[2].similarities = {"ideal": 0.5}  # rows added at the end
    expected = [with_texts(record, result) for record, result in zip(records, whole)]
    full = FullResults({record.nodeid: ref for record, ref in zip(records, refs)})
    try:
        write_run_record(tmp_path / "out", {}, records, gates="{}", full=full)
        assert [r.model_dump_json() for r in full.each(records)] == [r.model_dump_json() for r in expected]
    finally:
        full.close()
    write_run_record(tmp_path / "expected", {}, expected, gates="{}")
    items = (tmp_path / "out" / RECORD_DIR / ITEMS).read_bytes()
    assert items == (tmp_path / "expected" / RECORD_DIR / ITEMS).read_bytes()
    assert b'"similarities":{"ideal":0.5}' in items and b'"nodeid":"t.yml::late"' in items
    # the answers the compact records had not, read back from the spool
    assert all(json.dumps(r.response, ensure_ascii=False) in items.decode("utf-8") for r in whole if r.response)
