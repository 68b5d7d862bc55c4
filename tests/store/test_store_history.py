"""Every run is a point in its store's history (docs/history.md), on each store: SQLite, files and
PostgreSQL. Real pytest processes against the loopback fake server: three runs, the second and
third with ``--weval-cache=refresh`` (the second under ``-n 2``), the third against a model that
got worse on half its prompts. ``python -m pytest_weval history --json`` gives the three runs with
each run's ``summary.json`` means; the changes are exactly the items whose score moved; the old
answers outlive the refreshed cache; ``--weval-baseline=last`` flags the regression.

Every prompt asks for "alpha" and "beta" and is scored by ``$contains`` points only (no judge):
the echo scores 1, "alpha only" 0.5.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_weval.engine.store.history import history_for
from tests.fakeserver import FakeServer, Rule

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
A, B = "openai:gpt-a", "openai:gpt-b"
PROMPTS = 20
WORSE = range(1, 11)  # gpt-b's answers to these prompts lose "beta" in the third run
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def _suite(folder: Path, prompts: int = PROMPTS) -> None:
    lines = ["title: Letters", f"models: [{A}, {B}]", "---"]
    for j in range(1, prompts + 1):
        lines += [f"- id: q{j}", f"  prompt: Say alpha and beta. (q{j})", "  should:"]
        lines += ["    - $contains: alpha", "    - $contains: beta"]
    (folder / "blueprints").mkdir(parents=True, exist_ok=True)
    (folder / "blueprints" / "letters.yml").write_text("\n".join(lines) + "\n")
    (folder / "pytest.ini").write_text(INI)


def _env(server: FakeServer | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("WEVAL_RUN_ID", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    if server is not None:
        env.update(server.env(keys=False))
    else:  # nothing listens: every reply must come from the cache
        env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
    env["OPENAI_API_KEY"] = "sk-test-history"
    return env


def pytest_run(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q", *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def cli(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest_weval", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=120
    )


def _store_args(store: str) -> tuple[str, ...]:
    return ("--cache-store", store) if store != "sqlite" else ()


@pytest.fixture(params=["sqlite", "files", "postgres"])
def store(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        return request.getfixturevalue("pg_url")
    return request.param


def test_three_runs_are_recorded_and_the_third_shows_what_got_worse(store: str, tmp_path: Path):
    _suite(tmp_path)
    option = f"--weval-cache-store={store}"
    with FakeServer() as server:
        env = _env(server)
        first = pytest_run(tmp_path, env, option, "--weval-out=out1")
        assert first.returncode == 0, first.stdout[-3000:]
        assert "since the last run" not in first.stdout  # nothing recorded before it
        second = pytest_run(tmp_path, env, option, "--weval-cache=refresh", "--weval-out=out2", "-n", "2")
        assert second.returncode == 0, second.stdout[-3000:]
        assert f"since the last run: 0 of {2 * PROMPTS} items changed (0 better, 0 worse) [run " in second.stdout
        server.rules = [Rule(model="gpt-b", contains=f"(q{j})", reply=f"alpha only, q{j}") for j in WORSE]
        third = pytest_run(
            tmp_path, env, option, "--weval-cache=refresh", "--weval-out=out3", "--weval-baseline=last", "-rN"
        )
    # Every item passed its own threshold (0.5), but the paired gate sees gpt-b regress.
    assert third.returncode == 1, third.stdout[-3000:]
    assert f"{B} regressed: 1.00 -> 0.75 on {PROMPTS} paired items" in third.stdout, third.stdout[-3000:]
    assert f"{A} regressed" not in third.stdout

    listed = cli(tmp_path, env, "history", "--json", *_store_args(store))
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)["runs"]
    assert len(runs) == 3  # the xdist run once, not once per worker
    for run, out in zip(runs, ("out1", "out2", "out3")):
        summary = json.loads((tmp_path / out / "summary.json").read_text())
        assert set(run) >= {"id", "started", "ended", "commit", "models"}
        for model in (A, B):
            figures = summary["models"][model]
            shown = run["models"][model]
            assert shown == {"mean": figures["mean"], "ci95": figures["ci95"], "items": figures["items"]} | {
                "selection": shown["selection"]
            }
    assert len({run["models"][B]["selection"] for run in runs}) == 1  # the same items every time
    assert [run["models"][B]["mean"] for run in runs] == [1, 1, 0.75]
    assert [run["models"][A]["mean"] for run in runs] == [1, 1, 1]

    # What changed: exactly gpt-b's ten worse prompts, named by node id, with both scores.
    changes = json.loads((tmp_path / "out3" / "summary.json").read_text())["changes"]
    assert changes["previousRun"] == runs[1]["id"]
    assert sorted((c["nodeid"], c["old"], c["new"]) for c in changes["items"]) == sorted(
        (f"blueprints/letters.yml::q{j}[{B}]", 1, 0.5) for j in WORSE
    )
    assert f"1 model regressed against the baseline last (run {runs[1]['id']}, " in third.stdout
    line = [x for x in third.stdout.splitlines() if x.startswith("since the last run:")]
    assert len(line) == 1 and line[0].startswith(
        f"since the last run: 10 of {2 * PROMPTS} items changed (0 better, 10 worse) [run {runs[1]['id']}, "
    ), line
    assert json.loads((tmp_path / "out2" / "summary.json").read_text())["changes"] == {
        "previousRun": runs[0]["id"],
        "compared": 2 * PROMPTS,
        "better": 0,
        "worse": 0,
        "items": [],
    }

    # The first run's answers outlive the refreshed cache.
    history = history_for("sqlite" if store == "sqlite" else store, tmp_path / ".weval_cache")
    first_items = {item["nodeid"]: item for item in history.items(runs[0]["id"])}
    third_items = {item["nodeid"]: item for item in history.items(runs[2]["id"])}
    q1 = f"blueprints/letters.yml::q1[{B}]"
    assert first_items[q1]["answer"].startswith("echo: Say alpha and beta. (q1)")
    assert third_items[q1]["answer"] == "alpha only, q1"
    assert (first_items[q1]["score"], third_items[q1]["score"]) == (1, 0.5)
    assert (first_items[q1]["outcome"], first_items[q1]["model"], first_items[q1]["prompt"]) == ("passed", B, "q1")
    assert first_items[q1]["blueprint"] == "letters"
    # No key reaches the store.
    assert "sk-test-history" not in json.dumps([first_items, third_items, runs])

    # The table: oldest first, gpt-b's drop beyond noise is marked.
    table = cli(tmp_path, env, "history", *_store_args(store))
    assert table.returncode == 0, table.stderr
    rows = table.stdout.splitlines()
    assert [row.split()[0] for row in rows[1:4]] == [run["id"] for run in runs]
    assert "0.75 -0.25 *" in rows[3] and rows[-1].startswith("* a change beyond noise")
    only_a = json.loads(
        cli(tmp_path, env, "history", "--json", "--model", A, "--last", "2", *_store_args(store)).stdout
    )
    assert [list(run["models"]) for run in only_a["runs"]] == [[A], [A]]
    assert [run["id"] for run in only_a["runs"]] == [run["id"] for run in runs[1:]]
    # Over one blueprint's recorded items, the same figures (the run has no other blueprint).
    for blueprint in ("letters", "blueprints/letters.yml"):
        by_blueprint = cli(tmp_path, env, "history", "--json", "--blueprint", blueprint, *_store_args(store))
        assert [run["models"] for run in json.loads(by_blueprint.stdout)["runs"]] == [run["models"] for run in runs]
    # A filter that matches nothing is said, with the names it could have meant, and fails.
    nope = cli(tmp_path, env, "history", "--json", "--blueprint", "leters", *_store_args(store))
    assert nope.returncode == 1 and nope.stdout == ""
    assert (
        "--blueprint leters: no recorded run has that blueprint (3 runs recorded); did you mean letters" in nope.stderr
    )
    nope = cli(tmp_path, env, "history", "--model", "openai:gpt-bb", *_store_args(store))
    assert nope.returncode == 1 and f"did you mean {B}" in nope.stderr, nope.stderr


def test_a_baseline_of_last_with_no_earlier_run_says_so_and_passes(tmp_path: Path):
    _suite(tmp_path, prompts=2)
    with FakeServer() as server:
        result = pytest_run(tmp_path, _env(server), "--weval-baseline=last:main", "--weval-out=out")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "--weval-baseline=last:main: the history holds no earlier run of branch main" in result.stdout
    assert "baseline" not in json.loads((tmp_path / "out" / "summary.json").read_text())


def test_cache_prune_keeps_the_history_unless_asked(tmp_path: Path):
    _suite(tmp_path, prompts=2)
    with FakeServer() as server:
        env = _env(server)
        for _ in range(3):
            assert pytest_run(tmp_path, env, "--weval-cache=refresh").returncode == 0
    pruned = cli(tmp_path, env, "cache", "prune", "--older-than", "0s")
    assert pruned.returncode == 0, pruned.stderr
    assert "removed 4 entries" in pruned.stdout
    runs = json.loads(cli(tmp_path, env, "history", "--json").stdout)["runs"]
    assert len(runs) == 3
    kept = cli(tmp_path, env, "cache", "prune", "--history-keep", "1")
    assert kept.returncode == 0, kept.stderr
    assert "removed 2 recorded runs" in kept.stdout
    assert [run["id"] for run in json.loads(cli(tmp_path, env, "history", "--json").stdout)["runs"]] == [runs[-1]["id"]]
    history = history_for("sqlite", tmp_path / ".weval_cache")
    assert history.items(runs[0]["id"]) == [] and len(history.items(runs[-1]["id"])) == 4


def test_a_read_only_run_records_nothing(tmp_path: Path):
    _suite(tmp_path, prompts=2)
    with FakeServer() as server:
        env = _env(server)
        assert pytest_run(tmp_path, env, "--weval-out=out1").returncode == 0
        replay = pytest_run(tmp_path, env, "--weval-cache=ro", "--weval-out=out2")
    assert replay.returncode == 0, replay.stdout[-3000:]
    assert "since the last run: 0 of 4 items changed" in replay.stdout
    assert len(json.loads(cli(tmp_path, env, "history", "--json").stdout)["runs"]) == 1


def test_without_a_cache_there_is_no_history(tmp_path: Path):
    _suite(tmp_path, prompts=2)
    with FakeServer() as server:
        env = _env(server)
        for _ in range(2):
            run = pytest_run(tmp_path, env, "--weval-cache=off", "--weval-out=out")
            assert run.returncode == 0 and "since the last run" not in run.stdout, run.stdout[-3000:]
    assert not (tmp_path / ".weval_cache").exists()
    assert "changes" not in json.loads((tmp_path / "out" / "summary.json").read_text())


def test_two_machines_sharing_a_postgres_run_record_it_once(pg_url: str, tmp_path: Path):
    machines = [tmp_path / "m1", tmp_path / "m2"]
    with FakeServer() as server:
        env = _env(server) | {"WEVAL_RUN_ID": "nightly-42"}
        processes = []
        for folder in machines:
            _suite(folder)
            command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2"]
            command += [f"--weval-cache-store={pg_url}", "--weval-out=out"]
            processes.append(subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, text=True))
        outputs = [p.communicate(timeout=300)[0] for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    runs = json.loads(cli(tmp_path, env, "history", "--json", "--cache-store", pg_url).stdout)["runs"]
    assert [run["id"] for run in runs] == ["nightly-42"]
    assert runs[0]["models"][B] | {"selection": None} == {
        "mean": 1,
        "ci95": [1, 1],
        "items": PROMPTS,
        "selection": None,
    }
    assert len(history_for(pg_url, tmp_path).items("nightly-42")) == 2 * PROMPTS


# ---------------------------------------------------------------- stores written before the history

# Made by pytest-weval at commit 24e96f5 (before the history existed) from tests/store/data/
# before-history/suite (as blueprints/), against the fake server's echo: 2 prompts x 2 models, 4 replies.
BEFORE = DATA / "before-history"


@pytest.mark.parametrize("kind", ["sqlite", "files"])
def test_a_store_written_before_the_history_gains_one_and_keeps_its_cache(kind: str, tmp_path: Path):
    shutil.copytree(BEFORE / "suite", tmp_path / "blueprints")
    (tmp_path / "pytest.ini").write_text(INI)
    cache = tmp_path / ".weval_cache"
    shutil.copytree(BEFORE / ("sqlite" if kind == "sqlite" else "files"), cache)
    if kind == "sqlite":
        with sqlite3.connect(cache / "weval-cache.sqlite") as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "responses" in tables and not any(name.startswith("history") for name in tables)
    env = _env(None)  # no server: a reply not in the cache would error
    option = f"--weval-cache-store={kind}"
    run = pytest_run(tmp_path, env, option, "--weval-out=out")  # rw: may write, so it records
    assert run.returncode == 0, run.stdout[-3000:]
    assert "4 passed" in run.stdout
    replay = pytest_run(tmp_path, env, option, "--weval-cache=ro")
    assert replay.returncode == 0 and "4 passed" in replay.stdout, replay.stdout[-3000:]
    runs = json.loads(cli(tmp_path, env, "history", "--json", *_store_args(kind)).stdout)["runs"]
    assert len(runs) == 1
    assert (
        runs[0]["models"][A]["mean"] == json.loads((tmp_path / "out" / "summary.json").read_text())["models"][A]["mean"]
    )
    stats = cli(tmp_path, env, "cache", "stats", "--json", *_store_args(kind))
    assert json.loads(stats.stdout)["entries"] == 4
