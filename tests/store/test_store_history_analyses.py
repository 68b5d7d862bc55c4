"""``python -m pytest_weval history regressions`` over a hand-worked history of two runs, on every
store: a model that lost a point, and one whose scores did not move."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_weval.engine.store.history import History, history_for

ROOT = Path(__file__).resolve().parents[2]


def _run(run_id: str, started: float) -> dict[str, Any]:
    return {
        "id": run_id,
        "started": started,
        "ended": started + 1,
        "host": "ci",
        "models": ["openai:a", "openai:b"],
        "judges": [],
        "figures": {},
    }


def _item(model: str, prompt: str, points: list[float]) -> dict[str, Any]:
    return {
        "nodeid": f"bp.yml::{prompt}[{model}]",
        "blueprint": "bp",
        "prompt": prompt,
        "model": model,
        "score": sum(points) / len(points),
        "outcome": "passed",
        "answer": "...",
        "detail": {"points": [{"text": f"point {n}", "score": s} for n, s in enumerate(points, 1)]},
    }


@pytest.fixture(params=["sqlite", "files", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, History]:
    name = request.getfixturevalue("pg_url") if request.param == "postgres" else request.param
    return name, history_for(name, tmp_path / ".weval_cache")


def test_regressions_between_the_last_two_runs(store: tuple[str, History], tmp_path: Path):
    name, history = store
    # openai:a loses point 2 of q1 (1 -> 0.5: the prompt's score 1 -> 0.75), and point 1 of q2
    # moves by less than 0.05; openai:b gains point 1 of q1 (0.9 -> 1: an improvement of 0.1).
    assert history.record(_run("r1", 1_700_000_000.0), [
        _item("openai:a", "q1", [1, 1]), _item("openai:a", "q2", [1.0, 0.5]), _item("openai:b", "q1", [0.9, 1]),
    ])  # fmt: skip
    assert history.record(_run("r2", 1_700_000_100.0), [
        _item("openai:a", "q1", [1, 0.5]), _item("openai:a", "q2", [0.97, 0.5]), _item("openai:b", "q1", [1, 1]),
    ])  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    shown = subprocess.run(
        [sys.executable, "-m", "pytest_weval", "history", "--cache-store", name, "regressions", "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    body = json.loads(shown.stdout)
    assert (body["older"], body["newer"], body["minScoreDelta"]) == ("r1", "r2", 0.05)
    got = [(r["type"], r["model"], r["prompt"], r.get("point"), r["older"], r["newer"], r["delta"], r["severity"])
           for r in body["regressions"]]  # fmt: skip
    assert got == [
        ("point", "openai:a", "q1", "point 2", 1, 0.5, -0.5, "major"),
        ("prompt", "openai:a", "q1", None, 1, 0.75, -0.25, "major"),
    ]
    better = [(r["type"], r["model"], r.get("point"), r["delta"], r["severity"]) for r in body["improvements"]]
    assert better == [("point", "openai:b", "point 1", 0.1, "moderate"), ("prompt", "openai:b", None, 0.05, "minor")]

    text = subprocess.run(
        [sys.executable, "-m", "pytest_weval", "history", "--cache-store", name, "regressions", "--min-score-delta", "0.3"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0] == "1 regression from run r1 to run r2, worst first:"
    assert "major" in text.stdout and "point: point 2" in text.stdout

    unknown = subprocess.run(
        [sys.executable, "-m", "pytest_weval", "history", "--cache-store", name, "regressions", "--since", "r9"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert unknown.returncode == 1 and "--since r9" in unknown.stderr


def test_pain_points_of_each_blueprints_latest_run(store: tuple[str, History], tmp_path: Path):
    name, history = store
    # Run 1 holds blueprint "other" (0.3: in the window) and bp; run 2 only bp: its items replace
    # run 1's bp items, "other" stays from run 1. In bp: 0.25 and 0.45 are in [0.1, 0.5], 0.05 is a
    # breakdown below the window, 0.75 above it.
    other = _item("openai:a", "q9", [0.3]) | {"blueprint": "other", "nodeid": "other.yml::q9[openai:a]"}
    assert history.record(_run("r1", 1_700_000_000.0), [other, _item("openai:a", "q1", [0.3, 0.3])])
    assert history.record(_run("r2", 1_700_000_100.0), [
        _item("openai:a", "q1", [0.0, 0.5]), _item("openai:a", "q2", [0.4, 0.5]),
        _item("openai:b", "q1", [0.1, 0.0]), _item("openai:b", "q2", [1.0, 0.5]),
    ])  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    shown = subprocess.run(
        [sys.executable, "-m", "pytest_weval", "history", "--cache-store", name, "pain-points", "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    got = [(p["run"], p["nodeid"], p["score"], [(f["point"], f["score"]) for f in p["failedPoints"]])
           for p in json.loads(shown.stdout)["painPoints"]]  # fmt: skip
    assert got == [
        ("r2", "bp.yml::q1[openai:a]", 0.25, [("point 1", 0.0)]),
        ("r1", "other.yml::q9[openai:a]", 0.3, [("point 1", 0.3)]),
        ("r2", "bp.yml::q2[openai:a]", 0.45, [("point 1", 0.4)]),
    ]
    limited = subprocess.run(
        [sys.executable, "-m", "pytest_weval", "history", "--cache-store", name, "pain-points", "--limit", "1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert limited.stdout.splitlines()[:2] == ["1 pain point, worst first:", "  0.25  bp.yml::q1[openai:a]  (run r2)"]


def test_deltas_against_three_peers_each_averaged_over_its_variants(store: tuple[str, History], tmp_path: Path):
    name, history = store
    # q1: a 0.2; b at two temperatures 1.0 and 0.6 (its base: 0.8, counted once); c 0.5; d 0.8.
    # a against its three peers: 0.2 - (0.8 + 0.5 + 0.8) / 3 = -0.5. A second blueprint has a and
    # one peer only: --min-peers 3 leaves it out.
    hot = _item("openai:b", "q1", [0.6]) | {"nodeid": "bp.yml::q1[openai:b[temp:0.9]]"}
    lone = [
        _item(m, "q5", [s]) | {"blueprint": "two", "nodeid": f"two.yml::q5[{m}]"}
        for m, s in (("openai:a", 0.0), ("openai:b", 1.0))
    ]
    assert history.record(_run("r1", 1_700_000_000.0), [
        _item("openai:a", "q1", [0.2]), _item("openai:b", "q1", [1.0]), hot,
        _item("openai:c", "q1", [0.5]), _item("openai:d", "q1", [0.8]), *lone,
    ])  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    shown = subprocess.run(
        [sys.executable, "-m", "pytest_weval", "history", "--cache-store", name,
         "deltas", "--model", "openai:a", "--min-peers", "3", "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    got = [(d["blueprint"], d["prompt"], d["model"], d["peers"], d["rank"]) for d in json.loads(shown.stdout)["deltas"]]
    assert got == [("bp", "q1", "a", 3, 4)]
    row = json.loads(shown.stdout)["deltas"][0]
    assert row["peerMean"] == pytest.approx(0.7) and row["delta"] == pytest.approx(-0.5)

    every = subprocess.run(
        [sys.executable, "-m", "pytest_weval", "history", "--cache-store", name, "deltas", "--json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    worst_first = [(d["blueprint"], d["model"], d["delta"]) for d in json.loads(every.stdout)["deltas"]]
    assert worst_first[0] == ("two", "a", -1.0) and worst_first[-1] == ("two", "b", 1.0)
    b = next(d for d in json.loads(every.stdout)["deltas"] if d["blueprint"] == "bp" and d["model"] == "b")
    assert b["score"] == pytest.approx(0.8) and b["peerMean"] == pytest.approx(0.5)
