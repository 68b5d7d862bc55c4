"""The history's typed record (report/history_record.py) against what the store really holds.

``data/history-record/`` was captured from real runs of the code before the record was typed
(``python -m tests.report.test_report_history_record`` made it, at commit 09db410): the run and
item JSON the files store and the SQLite store were handed for a small suite against the fake
server (two models, a system prompt, a weighted prompt, an inverted point, a judged point, a
prompt threshold, a point no judge could score, two samples each). A run of the same suite today must hand the stores the very
same bytes, but for the run's start, end and host, which no two runs share.

``data/history-record/oldest/`` is a files-store record written by the first code that recorded
a history (commit c73d148), before figures said their ``selection`` and items their ``digest``
and ``samples``: it still reads, with the defaults today's readers gave the missing fields.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from pytest_weval.engine.store.history import history_for
from pytest_weval.report.history import result_of, run_selections
from pytest_weval.report.history_record import DamagedRecord, RecordedHistory, read_item, read_run
from tests.fakeserver import FakeServer, Rule
from tests.store.test_store_history import INI, _env, cli, pytest_run

DATA = Path(__file__).resolve().parent / "data" / "history-record"
RUN_ID = "record-fixture"
SUITE = """\
title: Records
models: [openai:gpt-a, openai:gpt-b]
system: Answer in one line.
---
- id: q1
  prompt: Say alpha and beta. (q1)
  weight: 2
  should:
    - $contains: alpha
    - $contains: beta
  should_not:
    - $contains: gamma
- id: q2
  prompt: Say alpha. (q2)
  threshold: 0.9
  should:
    - $contains: alpha
    - $contains: delta
- id: q3
  prompt: Be polite about alpha. (q3)
  should:
    - Is polite.
    - Is short.
"""
JUDGE_REPLY = "<reflection>Polite enough.</reflection><classification>CLASS_MAJOR</classification>"
# The run's own facts, different in every run: masked on both sides before the bytes compare.
VOLATILE = re.compile(r'^(\s*"(?:started|ended|host)": )(?:[0-9.e+]+|"[^"]*")(,?)$', re.MULTILINE)


def _masked(text: str) -> str:
    return VOLATILE.sub(r"\1<varies>\2", text)


def record_suite(folder: Path, store: str) -> Path:
    """Run the suite into ``store`` (files or sqlite) under ``folder``; the store's cache folder."""
    (folder / "blueprints").mkdir(parents=True, exist_ok=True)
    (folder / "blueprints" / "records.yml").write_text(SUITE)
    (folder / "pytest.ini").write_text(INI)
    with FakeServer() as server:
        server.rules = [Rule(model="judge-model", contains="<CRITERION>\nIs polite.\n</CRITERION>", reply=JUDGE_REPLY)]
        done = pytest_run(
            folder,
            _env(server),
            f"--weval-cache-store={store}",
            f"--weval-run-id={RUN_ID}",
            "--weval-judges=openai:judge-model",
            "--weval-repeat=2",
        )
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    assert "weval history:" not in done.stdout, done.stdout[-3000:]
    return folder / ".weval_cache"


def files_record(cache: Path) -> str:
    """The files store's record of the run, as written, the run's own facts masked."""
    (path,) = (cache / "history").glob("*.json")
    return _masked(path.read_text(encoding="utf-8"))


def sqlite_rows(cache: Path) -> str:
    """The SQLite store's rows of the run, each column as stored, the run's own facts masked."""
    with sqlite3.connect(cache / "weval-cache.sqlite") as conn:
        runs = conn.execute("SELECT * FROM history_runs").fetchall()
        items = conn.execute("SELECT * FROM history_items ORDER BY nodeid").fetchall()
    columns = ("id", "started", "ended", "commit", "branch", "host", "models", "judges", "figures")
    shown = [dict(zip(columns, row)) for row in runs]
    return _masked(json.dumps({"runs": shown, "items": items}, indent=1, ensure_ascii=False)) + "\n"


def test_a_run_hands_the_stores_the_bytes_the_untyped_record_did(tmp_path: Path):
    files = record_suite(tmp_path / "files", "files")
    assert files_record(files) == (DATA / "files-record.json").read_text(encoding="utf-8")
    sqlite = record_suite(tmp_path / "sqlite", "sqlite")
    assert sqlite_rows(sqlite) == (DATA / "sqlite-rows.json").read_text(encoding="utf-8")


def test_a_record_written_before_selection_digest_and_samples_still_reads(tmp_path: Path):
    shutil.copytree(DATA / "oldest", tmp_path / ".weval_cache")
    history = RecordedHistory(history_for("files", tmp_path / ".weval_cache"))
    (run,) = history.runs()
    items = history.items(run.id)
    assert history.damaged == []
    assert run.id == "oldest-shape" and run.judges == ["openai:judge-model"]
    assert [figure.selection for figure in run.figures.values()] == [None, None]  # not said then
    assert len(items) == 6 and all(item.detail.digest is None and item.detail.samples is None for item in items)
    assert [p.kind for p in items[-1].detail.points] == ["judged", "judged"]
    assert [result_of(item).score for item in items] == [item.score for item in items]
    # The selection comes from the items, as it did: the same node ids as today's record of the suite.
    today = json.loads(re.sub(r": <varies>", ": null", (DATA / "files-record.json").read_text()))
    said = {model: figure["selection"] for model, figure in today["run"]["figures"].items()}
    assert run_selections(run, history.items) == said
    listed = cli(tmp_path, _env(None), "history", "--json", "--cache-store", "files")
    assert listed.returncode == 0 and listed.stderr == "", listed.stderr
    (row,) = json.loads(listed.stdout)["runs"]
    assert {model: figure["selection"] for model, figure in row["models"].items()} == said


def test_missing_fields_read_as_the_readers_always_took_them_and_a_wrong_one_is_located():
    item = read_item(
        {"nodeid": "b.yml::p[m]", "blueprint": "b", "prompt": "p", "model": "openai:m", "outcome": "passed"}
        | {"score": 1, "answer": None, "detail": {"blueprintPath": None, "points": [{"text": "x"}]}}
    )
    assert (item.score, item.detail.blueprint_path, item.effective_model, item.detail.threshold) == (
        1,
        "",
        "openai:m",
        0.5,
    )
    assert (item.detail.source, item.detail.samples, item.detail.digest, item.scored) == ("blueprint", None, None, True)
    assert item.detail.points[0].score is None and item.detail.points[0].kind == "function"
    run = read_run({"id": "r", "started": 1, "ended": 2})
    assert (run.host, run.models, run.judges, run.figures) == (None, [], [], {})
    for raw, where in (
        ({"outcome": "maybe"}, "outcome"),
        ({"detail": {"promptLine": "7"}}, "detail.promptLine"),
        ({"detail": {"points": [{"text": "x", "score": True}]}}, "detail.points.0.score"),
    ):
        with pytest.raises(DamagedRecord, match=rf"^{re.escape(where)}: "):
            read_item({"nodeid": "n", "blueprint": "b", "prompt": "p", "model": "m", "outcome": "passed"} | raw)
    with pytest.raises(DamagedRecord, match=r"^figures\.m\.ci95: "):
        read_run({"id": "r", "started": 1, "ended": 2, "figures": {"m": {"mean": 1, "ci95": [0]}}})


def test_an_item_the_store_keeps_but_the_report_cannot_read_is_skipped_and_named(tmp_path: Path):
    """The store checks what it needs to keep a record; a point's score that is not a number
    (edited by hand) passes it, and the one reader skips that item, naming where and why,
    while the run and ``history`` go on with the rest."""
    cache = record_suite(tmp_path, "files")
    (path,) = (cache / "history").glob("*.json")
    document = json.loads(path.read_text())
    nodeid = "blueprints/records.yml::q1[openai:gpt-a]"
    (item,) = [item for item in document["items"] if item["nodeid"] == nodeid]
    item["detail"]["points"][0]["score"] = "high"
    path.write_text(json.dumps(document))
    with FakeServer() as server:
        server.rules = [Rule(model="judge-model", contains="<CRITERION>\nIs polite.\n</CRITERION>", reply=JUDGE_REPLY)]
        again = pytest_run(tmp_path, _env(server), "--weval-cache-store=files", "--weval-judges=openai:judge-model")
    assert again.returncode == 1 and "Traceback" not in again.stdout + again.stderr, again.stdout[-3000:]
    notes = [line for line in again.stdout.splitlines() if line.startswith("weval history:")]
    assert len(notes) == 1, notes
    assert f"{path}: run {RUN_ID!r}: item {nodeid!r} skipped: detail.points.0.score" in notes[0]
    assert "cache repair" not in notes[0]  # the store keeps it: repair would not remove it
    # The other five items still compare with the recorded run.
    assert "since the last run: 0 of 5 items changed" in again.stdout, again.stdout[-3000:]
    pains = cli(tmp_path, _env(None), "history", "--cache-store", "files", "pain-points", "--json")
    assert pains.returncode == 0 and "Traceback" not in pains.stderr, pains.stderr
    assert f"item {nodeid!r} skipped: detail.points.0.score" in pains.stderr
    assert [p["prompt"] for p in json.loads(pains.stdout)["painPoints"]] == ["q2", "q2"]  # 0.5, from the newer run


def _capture(commit: str) -> None:
    """Write data/history-record/ from the code on sys.path (run it on the commit it names)."""
    import tempfile

    DATA.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        (DATA / "files-record.json").write_text(files_record(record_suite(Path(folder) / "f", "files")))
        (DATA / "sqlite-rows.json").write_text(sqlite_rows(record_suite(Path(folder) / "s", "sqlite")))
    print(f"captured at {commit}")


if __name__ == "__main__":
    _capture(sys.argv[1] if len(sys.argv) > 1 else "HEAD")
