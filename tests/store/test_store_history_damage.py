"""A damaged history never fails a run (docs/engine.md, 'When the store fails'), on each store:
rows damaged from outside (the sqlite3 and psql command-line tools, files written by hand) are
skipped, each named in one line with the fix, and the run ends as it would have: its summary, its
``--weval-out`` and its record. ``python -m pytest_weval history`` says the same and shows the
rest; ``cache repair`` removes the damaged records (a damaged file of the files store is set
aside, not deleted), after which nothing is said.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.fakeserver import FakeServer
from tests.store.test_store_history import _env, _store_args, _suite, cli, pytest_run

REPAIR = "`python -m pytest_weval cache repair` removes it"


@pytest.fixture(params=["sqlite", "files", "postgres"])
def store(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        return request.getfixturevalue("pg_url")
    return request.param


def _sql(store: str, folder: Path, statement: str, request: pytest.FixtureRequest) -> None:
    """One statement run from outside pytest-weval: the sqlite3 or psql command-line tool."""
    if store == "sqlite":
        done = subprocess.run(
            ["sqlite3", str(folder / ".weval_cache" / "weval-cache.sqlite"), statement], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
    else:
        postgres = request.getfixturevalue("postgres")
        postgres.sql(store.rsplit("/", 1)[1], statement)


def _runs_file(folder: Path, run_id: str) -> Path:
    found = [
        p
        for p in (folder / ".weval_cache" / "history").glob("*.json")
        if json.loads(p.read_text())["run"]["id"] == run_id
    ]
    assert len(found) == 1
    return found[0]


def _damage(store: str, folder: Path, ids: list[str], request: pytest.FixtureRequest) -> list[str]:
    """Damage the first run's figures, the second's start and one item of the second; returns
    what each said line must name."""
    first, second = ids
    if store == "files":
        path = _runs_file(folder, first)
        document = json.loads(path.read_text())
        document["run"]["figures"] = "{not json"
        path.write_text(json.dumps(document))
        path = _runs_file(folder, second)
        document = json.loads(path.read_text())
        document["run"]["started"] = "yesterday"
        path.write_text(json.dumps(document))
        (folder / ".weval_cache" / "history" / "notes.json").write_text("{ half a file")
        return [first, second, "notes.json"]
    if store == "sqlite":
        _sql(store, folder, f"UPDATE history_runs SET figures = '{{not json' WHERE id = '{first}'", request)
        _sql(store, folder, f"UPDATE history_runs SET started = 'yesterday' WHERE id = '{second}'", request)
    else:
        _sql(
            store, folder, f"UPDATE weval_history_runs SET figures = '\"not an object\"' WHERE id = '{first}'", request
        )
        _sql(store, folder, f"UPDATE weval_history_runs SET started = 'NaN' WHERE id = '{second}'", request)
    return [first, second]


def _ok(result: subprocess.CompletedProcess, folder: Path, out: str) -> None:
    """The run ended as it would have: passed, summarised, its files written."""
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Traceback" not in result.stdout + result.stderr
    assert "weval scores" in result.stdout and "4 passed" in result.stdout
    assert (folder / out / "summary.json").exists()


def test_damaged_run_records_are_skipped_named_and_repaired(store: str, tmp_path: Path, request: pytest.FixtureRequest):
    _suite(tmp_path, prompts=2)
    option = f"--weval-cache-store={store}"
    with FakeServer() as server:
        env = _env(server)
        for n in (1, 2):
            assert pytest_run(tmp_path, env, option, f"--weval-out=out{n}").returncode == 0
        ids = [
            run["id"] for run in json.loads(cli(tmp_path, env, "history", "--json", *_store_args(store)).stdout)["runs"]
        ]
        named = _damage(store, tmp_path, ids, request)

        third = pytest_run(tmp_path, env, option, "--weval-out=out3", "--junitxml=junit.xml", "--weval-baseline=last")
        _ok(third, tmp_path, "out3")
        assert (tmp_path / "junit.xml").exists()
        notes = [line for line in third.stdout.splitlines() if line.startswith("weval history:")]
        for name in named:
            assert any(name in line and line.endswith(f"({REPAIR})") for line in notes), (name, notes)
        assert len(notes) == len(named), notes
        # With both earlier runs damaged, there is nothing to compare with, and it is said.
        assert "the history holds no earlier run: nothing to compare with" in third.stdout

        listed = cli(tmp_path, env, "history", "--json", *_store_args(store))
        assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
        assert len(json.loads(listed.stdout)["runs"]) == 1  # the third: recorded in spite of the others
        for name in named:
            assert name in listed.stderr and REPAIR in listed.stderr

        if store in ("sqlite", "files"):  # PostgreSQL checks its own pages: no `cache check` there
            checked = cli(tmp_path, env, "cache", "check", *_store_args(store))
            assert checked.returncode == 1 and all(name in checked.stderr for name in named), checked.stderr
        repaired = cli(tmp_path, env, "cache", "repair", *_store_args(store))
        assert repaired.returncode == 0, repaired.stdout + repaired.stderr
        for name in named:
            assert name in repaired.stdout, repaired.stdout
        if store == "files":  # set aside, not deleted: the files store is committed with a project
            assert len(list((tmp_path / ".weval_cache" / "history").glob("*.damaged"))) == 3

        if store in ("sqlite", "files"):
            assert cli(tmp_path, env, "cache", "check", *_store_args(store)).returncode == 0
        fourth = pytest_run(tmp_path, env, option, "--weval-out=out4")
        _ok(fourth, tmp_path, "out4")
        assert "weval history:" not in fourth.stdout
        assert "since the last run: 0 of 4 items changed" in fourth.stdout
    assert len(json.loads(cli(tmp_path, env, "history", "--json", *_store_args(store)).stdout)["runs"]) == 2


def test_a_damaged_item_is_skipped_and_its_run_still_counts(store: str, tmp_path: Path, request: pytest.FixtureRequest):
    _suite(tmp_path, prompts=2)
    option = f"--weval-cache-store={store}"
    with FakeServer() as server:
        env = _env(server)
        assert pytest_run(tmp_path, env, option).returncode == 0
        nodeid = "blueprints/letters.yml::q1[openai:gpt-a]"
        if store == "files":
            (path,) = list((tmp_path / ".weval_cache" / "history").glob("*.json"))
            document = json.loads(path.read_text())
            for item in document["items"]:
                if item["nodeid"] == nodeid:
                    item["score"] = "high"
            path.write_text(json.dumps(document))
        elif store == "sqlite":
            _sql(store, tmp_path, f"UPDATE history_items SET detail = 'not json' WHERE nodeid = '{nodeid}'", request)
        else:
            _sql(store, tmp_path, f"UPDATE weval_history_items SET detail = '[1]' WHERE nodeid = '{nodeid}'", request)
        second = pytest_run(tmp_path, env, option, "--weval-out=out2")
        _ok(second, tmp_path, "out2")
        notes = [line for line in second.stdout.splitlines() if line.startswith("weval history:")]
        assert len(notes) == 1 and nodeid in notes[0] and notes[0].endswith(f"({REPAIR})"), notes
        # The three other items still compare with the damaged run.
        assert "since the last run: 0 of 3 items changed" in second.stdout


def test_a_history_version_that_is_not_a_number_fails_no_run(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
):
    _suite(tmp_path, prompts=2)
    option = f"--weval-cache-store={store}"
    with FakeServer() as server:
        env = _env(server)
        assert pytest_run(tmp_path, env, option).returncode == 0
        if store == "files":
            (path,) = list((tmp_path / ".weval_cache" / "history").glob("*.json"))
            document = json.loads(path.read_text())
            document["historyVersion"] = "one"
            path.write_text(json.dumps(document))
        elif store == "sqlite":
            _sql(store, tmp_path, "UPDATE history_meta SET value = 'one' WHERE name = 'version'", request)
        else:
            _sql(store, tmp_path, "UPDATE weval_meta SET value = 'one' WHERE name = 'history_version'", request)
        second = pytest_run(tmp_path, env, option, "--weval-out=out2")
        _ok(second, tmp_path, "out2")
        notes = [line for line in second.stdout.splitlines() if line.startswith("weval history:")]
        assert notes and all("'one'" in line and "cache repair" in line for line in notes), notes
        listed = cli(tmp_path, env, "history", *_store_args(store))
        assert "Traceback" not in listed.stderr and "'one'" in listed.stderr, listed.stderr
        assert cli(tmp_path, env, "cache", "repair", *_store_args(store)).returncode == 0
        third = pytest_run(tmp_path, env, option, "--weval-out=out3")
        _ok(third, tmp_path, "out3")
        assert "weval history:" not in third.stdout
