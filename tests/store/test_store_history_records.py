"""The history's records in each store (pytest_weval/engine/store/history.py): a run id is recorded
once, runs come back oldest first with their items, pruning keeps the newest, a history of a newer
version is refused, reading writes nothing, and a run id of anyone's text stays inside the files
store's folder."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from pytest_weval.engine.store.common import StoreError
from pytest_weval.engine.store.history import HISTORY_VERSION, History, history_for


def _run(run_id: str, started: float, mean: float = 0.5) -> dict:
    return {
        "id": run_id,
        "started": started,
        "ended": started + 5,
        "commit": "0123456789abcdef",
        "branch": "main",
        "host": "ci-1",
        "models": ["openai:m"],
        "judges": ["openai:j"],
        "figures": {"openai:m": {"mean": mean, "ci95": [0.25, 0.75], "items": 2}},
    }


def _items(answer: str) -> list[dict]:
    return [
        {
            "nodeid": f"b.yml::p{n}[openai:m]",
            "blueprint": "b",
            "prompt": f"p{n}",
            "model": "openai:m",
            "score": 0.5 * n,
            "outcome": "passed",
            "answer": f"{answer} {n}",
            "detail": {"blueprintPath": "b.yml", "points": [{"text": "x", "score": 0.5}]},
        }
        for n in (1, 2)
    ]


@pytest.fixture(params=["sqlite", "files", "postgres"])
def history(request: pytest.FixtureRequest, tmp_path: Path) -> History:
    if request.param == "postgres":
        return history_for(request.getfixturevalue("pg_url"), tmp_path)
    return history_for(request.param, tmp_path / "cache")


def test_a_run_is_recorded_once_and_read_back_oldest_first(history: History):
    assert history.runs() == []
    assert history.record(_run("r2", 200.0, 0.75), _items("second")) is True
    assert history.record(_run("r1", 100.0), _items("first")) is True
    assert history.record(_run("r2", 300.0, 0.0), _items("another machine")) is False  # the first record stays
    runs = history.runs()
    assert [run["id"] for run in runs] == ["r1", "r2"]
    assert runs[1] == _run("r2", 200.0, 0.75)
    assert history.items("r2") == _items("second")
    assert history.items("nope") == []


def test_pruning_keeps_the_newest_runs(history: History):
    for n in range(1, 5):
        history.record(_run(f"r{n}", float(n)), _items(str(n)))
    assert history.prune(2, dry_run=True) == 2
    assert len(history.runs()) == 4
    assert history.prune(2) == 2
    assert [run["id"] for run in history.runs()] == ["r3", "r4"]
    assert history.items("r1") == [] and len(history.items("r4")) == 2
    assert history.prune(5) == 0


def test_a_history_of_a_newer_version_is_refused(tmp_path: Path):
    sqlite = history_for("sqlite", tmp_path / "a")
    sqlite.record(_run("r1", 1.0), _items("x"))
    with sqlite3.connect(tmp_path / "a" / "weval-cache.sqlite") as conn:
        conn.execute("UPDATE history_meta SET value = ? WHERE name = 'version'", (str(HISTORY_VERSION + 1),))
    with pytest.raises(StoreError, match=f"history version {HISTORY_VERSION + 1}, this pytest-weval knows up to"):
        sqlite.runs()
    files = history_for("files", tmp_path / "b")
    files.record(_run("r1", 1.0), _items("x"))
    [path] = (tmp_path / "b" / "history").glob("*.json")
    document = json.loads(path.read_text())
    path.write_text(json.dumps(document | {"historyVersion": HISTORY_VERSION + 1}))
    with pytest.raises(StoreError, match="use the newer pytest-weval"):
        files.runs()


def test_reading_a_sqlite_history_writes_nothing(tmp_path: Path):
    history = history_for("sqlite", tmp_path)
    history.record(_run("r1", 1.0), _items("x"))
    before = sorted(p.name for p in tmp_path.iterdir())
    stamp = (tmp_path / "weval-cache.sqlite").stat().st_mtime_ns
    assert [run["id"] for run in history.runs()] == ["r1"] and len(history.items("r1")) == 2
    assert (tmp_path / "weval-cache.sqlite").stat().st_mtime_ns == stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no -wal or -shm left


def test_a_run_id_of_any_text_stays_in_the_files_folder(tmp_path: Path):
    history = history_for("files", tmp_path / "cache")
    odd = "../../etc/passwd run #1 ünïcode"
    assert history.record(_run(odd, 1.0), _items("x")) is True
    [path] = (tmp_path / "cache" / "history").iterdir()
    assert path.parent == tmp_path / "cache" / "history"
    assert [run["id"] for run in history.runs()] == [odd] and len(history.items(odd)) == 2
    assert history.record(_run(odd, 2.0), []) is False


def test_a_files_history_without_hard_links_still_records_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def no_links(*args: object) -> None:
        raise PermissionError("hard links not supported")

    monkeypatch.setattr("os.link", no_links)
    history = history_for("files", tmp_path)
    assert history.record(_run("r1", 1.0), _items("x")) is True
    assert history.record(_run("r1", 2.0), _items("y")) is False
    assert history.runs() == [_run("r1", 1.0)] and history.items("r1") == _items("x")
    assert [p.name for p in (tmp_path / "history").iterdir() if p.name.startswith(".tmp")] == []


def test_a_history_that_cannot_be_written_is_a_store_error(tmp_path: Path):
    (tmp_path / "cache").write_text("a file where the folder should be")
    for kind in ("files", "sqlite"):
        with pytest.raises(StoreError, match="cannot record the run in"):
            history_for(kind, tmp_path / "cache").record(_run("r1", 1.0), _items("x"))


def test_a_postgres_store_from_before_the_history_gains_one_and_keeps_its_cache(pg_url: str, tmp_path: Path):
    import asyncio

    import psycopg

    from pytest_weval.engine.store import postgres as store_pg

    asyncio.run(store_pg.check(pg_url))  # the cache's tables, as every version so far makes them
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO weval_responses (key, model, request, text, created) VALUES ('k', 'openai:m', '{}', 'kept', 1)"
        )
    history = history_for(pg_url, tmp_path)
    assert history.runs() == []  # reading adds nothing
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('weval_history_runs')").fetchone() == (None,)
    assert history.record(_run("r1", 1.0), _items("x")) is True
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT text FROM weval_responses").fetchall() == [("kept",)]
        meta = dict(conn.execute("SELECT name, value FROM weval_meta").fetchall())
    assert meta == {"schema_version": str(store_pg.SCHEMA_VERSION), "history_version": str(HISTORY_VERSION)}
    asyncio.run(store_pg.check(pg_url))  # the cache's own version check still passes


def test_items_given_one_at_a_time_are_each_recorded_once(history: History):
    """The plugin hands a run's items as a generator, read back from the spool as the store
    writes them: the store reads it once and keeps every item."""
    handed: list[str] = []

    def one_at_a_time():
        for item in _items("streamed"):
            handed.append(item["nodeid"])
            yield item

    assert history.record(_run("r1", 1.0), one_at_a_time()) is True
    assert handed == ["b.yml::p1[openai:m]", "b.yml::p2[openai:m]"]
    items = history.items("r1")
    assert [(i["nodeid"], i["answer"]) for i in items] == [
        ("b.yml::p1[openai:m]", "streamed 1"),
        ("b.yml::p2[openai:m]", "streamed 2"),
    ]
    assert history.record(_run("r2", 2.0), iter(())) is True
    assert history.items("r2") == []


@pytest.mark.parametrize("count", [0, 1, 3])
def test_a_files_record_is_the_json_document_written_at_once(tmp_path: Path, count: int):
    """The files store writes its record item by item; the bytes are those one
    ``json.dump(indent=1, sort_keys=True)`` of the whole document writes, texts of any script
    and nested details included."""
    history = history_for("files", tmp_path / "cache")
    items = [
        {
            "nodeid": f"b.yml::p{n}[openai:m]",
            "blueprint": "b",
            "prompt": f"p{n}",
            "model": "openai:m",
            "score": None if n == 2 else 1,
            "outcome": "passed",
            "answer": "line one\nline two \u00e9\u4e2d \"quoted\" {braces} [1]",
            "detail": {"blueprintPath": "b.yml", "points": [{"text": "x", "score": 0.5}, {}], "samples": []},
        }
        for n in range(count)
    ]
    run = _run("r1", 1.0)
    assert history.record(run, iter(items)) is True
    expected = {
        "historyVersion": HISTORY_VERSION,
        "run": run,
        "items": [{**item, "score": None if item["score"] is None else float(item["score"])} for item in items],
    }
    written = history.path_for("r1").read_text(encoding="utf-8")
    assert written == json.dumps(expected, ensure_ascii=False, indent=1, sort_keys=True)


def test_a_runs_items_one_at_a_time_are_its_items(history: History):
    """``each_item`` gives what ``items`` gives, in its order (node ids); nothing for a run the
    store does not hold."""
    history.record(_run("r1", 1.0), _items("x"))
    history.record(_run("r2", 2.0), _items("y"))
    assert list(history.each_item("r1")) == history.items("r1")
    assert [item["answer"] for item in history.each_item("r2")] == ["y 1", "y 2"]
    assert list(history.each_item("nope")) == []
