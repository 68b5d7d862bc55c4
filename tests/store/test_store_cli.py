"""``python -m pytest_weval merge|cache ...`` (pytest_weval/cli.py): merging the --weval-out
folders of static shards, and the cache's stats and pruning for SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_weval.engine import Engine, EngineSettings
from tests.engine.engine_helpers import complete_sync, request
from tests.fakeserver import FakeServer, Rule
from tests.store.pg_server import PASSWORD, PostgresServer

ROOT = Path(__file__).resolve().parents[2]
BLUEPRINT = """\
title: {title}
models: [openai:model-a, openai:model-b]
---
- id: capital
  prompt: What is the capital of France, {title}?
  should:
    - names Paris
    - $icontains: paris
- id: number
  prompt: Name a prime number, {title}.
  should:
    - $matches: "\\\\d"
"""
RULES = [
    Rule(model="judge", reply="<reflection>ok</reflection><classification>CLASS_MAJOR</classification>"),
    Rule(contains="capital", reply="Paris, of course."),
    Rule(contains="prime", reply="Seven (7)."),
]


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest_weval", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def _strip_times(data):
    if isinstance(data, dict):
        return {k: _strip_times(v) for k, v in data.items() if k != "timestamp"}
    if isinstance(data, list):
        return [_strip_times(v) for v in data]
    return data


def _files(folder: Path) -> dict[str, object]:
    return {p.name: _strip_times(json.loads(p.read_text())) for p in sorted(folder.glob("*.json"))}


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project run three times: one shard per blueprint folder (-k) and whole, each into
    its own --weval-out folder (out-1, out-2, out-all), cache off so each run sends."""
    project = tmp_path_factory.mktemp("shards")
    (project / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    for folder, title in (("north", "North"), ("south", "South")):
        path = project / "blueprints" / folder / f"{folder}.yml"
        path.parent.mkdir(parents=True)
        path.write_text(BLUEPRINT.format(title=title))
    _run_shards(project, "out", (), expect=0)
    return project


def _run_shards(project: Path, prefix: str, options: tuple[str, ...], *, expect: int) -> None:
    """Run the project three times into <prefix>-1 (north), <prefix>-2 (south) and <prefix>-all,
    cache off so that each run sends."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL")) and k != "PYTEST_ADDOPTS"}
    with FakeServer(RULES) as server:
        env.update(server.env())
        common = ("-p", "no:cacheprovider", "--weval-judges=openai:judge", "--weval-cache=off", *options)
        for out, selection in (("1", ("-k", "north")), ("2", ("-k", "south")), ("all", ())):
            done = subprocess.run(
                [sys.executable, "-m", "pytest", *common, f"--weval-out={prefix}-{out}", *selection],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == expect, done.stdout + done.stderr


def test_merge_rebuilds_the_files_one_run_over_every_shard_writes(shards: Path):
    done = cli("merge", str(shards / "out-1"), str(shards / "out-2"), "--out", str(shards / "merged"))
    assert done.returncode == 0, done.stderr
    assert "merged 2 folders" in done.stdout
    merged, whole = _files(shards / "merged"), _files(shards / "out-all")
    # every file alike (the usage too: the shards' requests are distinct, as the whole run's)
    assert sorted(merged) == ["north__north.json", "south__south.json", "summary.json"] == sorted(whole)
    assert merged == whole
    # merging a merge (and a shard in it twice, with the same results) changes nothing
    again = cli("merge", str(shards / "merged"), str(shards / "out-2"), "--out", str(shards / "again"))
    assert again.returncode == 0, again.stderr
    assert _files(shards / "again")["summary.json"]["items"] == whole["summary.json"]["items"]


def test_merge_writes_the_gates_a_single_run_writes(shards: Path):
    """Two shards held to --weval-min-score and --weval-baseline (the whole run of before): the
    merged summary.json is the single run's, `minScore` and `baseline` included."""
    # the min-score gate fails each run (its means are 0.88-0.94)
    _run_shards(shards, "gated", ("--weval-min-score=0.95", f"--weval-baseline={shards / 'out-all'}"), expect=1)
    done = cli("merge", str(shards / "gated-1"), str(shards / "gated-2"), "--out", str(shards / "gated-merged"))
    assert done.returncode == 0, done.stderr
    merged, whole = _files(shards / "gated-merged"), _files(shards / "gated-all")
    assert merged["summary.json"]["minScore"]["threshold"] == 0.95
    assert merged["summary.json"]["minScore"]["failures"]  # the blueprints below the bar
    assert merged["summary.json"]["baseline"]["models"]  # compared with the earlier run, per model
    assert merged == whole
    # runs held to different gates cannot be merged into one
    mixed = cli("merge", str(shards / "gated-1"), str(shards / "out-2"), "--out", str(shards / "gated-mixed"))
    assert mixed.returncode == 1 and "different gates" in mixed.stderr


def test_merge_stops_on_conflicting_results_and_names_the_item(shards: Path):
    changed = shards / "changed"
    shutil.copytree(shards / "out-1", changed)
    items = (changed / ".weval" / "items.jsonl").read_text().splitlines()
    first = json.loads(items[0])
    assert (first["outcome"], first["score"]) == ("passed", 0.88)
    first["score"], first["outcome"] = 0.1, "failed"
    items[0] = json.dumps(first)
    (changed / ".weval" / "items.jsonl").write_text("\n".join(items) + "\n")
    done = cli("merge", str(shards / "out-1"), str(changed), "--out", str(shards / "merged-2"))
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"merge: conflicting results for {first['nodeid']}: {shards / 'out-1'} has passed, score 0.88, "
        f"{changed} has failed, score 0.1"
    )
    assert not (shards / "merged-2").exists()
    missing = cli("merge", str(shards / "blueprints"), "--out", str(shards / "merged-2"))
    assert missing.returncode == 1 and "no .weval/items.jsonl" in missing.stderr


def _fill(settings: EngineSettings, server: FakeServer, texts: list[str]) -> None:
    engine = Engine(settings).start()
    try:
        for text in texts:
            complete_sync(engine, request("openai:m", text))
    finally:
        engine.close()


def test_cache_stats_and_prune_for_sqlite(tmp_path: Path):
    with FakeServer() as server:
        _fill(EngineSettings(cache_dir=tmp_path / "cache", env=server.env()), server, ["a", "b", "c"])
    with sqlite3.connect(tmp_path / "cache" / "weval-cache.sqlite") as conn:
        conn.execute("UPDATE responses SET created = ? WHERE text = 'echo: a'", (time.time() - 40 * 86400,))
    stats = cli("cache", "stats", "--cache-dir", str(tmp_path / "cache"))
    assert stats.returncode == 0, stats.stderr
    assert "entries: 3" in stats.stdout and "openai:m" in stats.stdout
    dry = cli("cache", "prune", "--older-than", "30d", "--dry-run", "--cache-dir", str(tmp_path / "cache"))
    assert dry.stdout.startswith("would remove 1 entry older than 30d")
    pruned = cli("cache", "prune", "--older-than", "30d", "--cache-dir", str(tmp_path / "cache"))
    assert pruned.returncode == 0 and pruned.stdout.startswith("removed 1 entry older than 30d")
    data = json.loads(cli("cache", "stats", "--json", "--cache-dir", str(tmp_path / "cache")).stdout)
    assert data["entries"] == 2 and data["by_model"] == {"openai:m": 2}
    bad = cli("cache", "prune", "--older-than", "soon", "--cache-dir", str(tmp_path / "cache"))
    assert bad.returncode == 2 and "an age is a number and a unit" in bad.stderr
    none = cli("cache", "stats", "--cache-dir", str(tmp_path / "nothing"))
    assert none.returncode == 1 and "no SQLite cache" in none.stderr


def test_cache_stats_and_prune_for_postgresql(postgres: PostgresServer, pg_url: str, tmp_path: Path):
    with FakeServer() as server:
        _fill(EngineSettings(cache_store=pg_url, env=server.env()), server, ["a", "b", "c", "d"])
    database = pg_url.rsplit("/", 1)[1]
    postgres.sql(
        database, f"UPDATE weval_responses SET created = {time.time() - 3 * 3600} WHERE text IN ('echo: a', 'echo: b')"
    )
    # as the weval role, its password in the URL: it works, and is never printed
    url = pg_url.replace("postgres@", f"weval:{PASSWORD}@")
    postgres.sql(database, "GRANT ALL ON ALL TABLES IN SCHEMA public TO weval")
    env = {k: v for k, v in os.environ.items() if k != "PGPASSWORD"}
    stats = cli("cache", "stats", "--cache-store", url, env=env)
    assert stats.returncode == 0, stats.stderr
    assert "entries: 4" in stats.stdout and "weval:***@" in stats.stdout
    pruned = cli("cache", "prune", "--older-than", "2h", "--cache-store", url, env=env)
    assert pruned.returncode == 0, pruned.stderr
    assert pruned.stdout.startswith("removed 2 entries older than 2h from postgresql://weval:***@")
    assert "entries: 2" in cli("cache", "stats", "--cache-store", url, env=env).stdout
    wrong = cli("cache", "stats", "--cache-store", url.replace(PASSWORD, "nope"), env=env)
    assert wrong.returncode == 1 and "password authentication failed" in wrong.stderr
    for done in (stats, pruned, wrong):
        assert PASSWORD not in done.stdout + done.stderr
