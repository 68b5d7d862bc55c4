"""The response cache through pytest: a second run costs nothing, `ro` replays with the server
gone, and xdist workers share one run's requests (none sent twice)."""

from __future__ import annotations

import pytest
from plugin_helpers import JUDGE_ID, MODEL_ID, Project, answer_rule, judge_rule, outcomes_by_id

BLUEPRINT = f"""\
title: Cached
models: [{MODEL_ID}]
temperatures: [0, 0.5]
---
- id: one
  prompt: Question one?
  should:
    - answers question one
    - $icontains: answer one
- id: two
  prompt: Question two?
  should:
    - answers question two
- id: three
  prompt: Question three?
  should:
    - $icontains: answer three
"""

RULES = (
    answer_rule("Question one?", "This is answer one."),
    answer_rule("Question two?", "This is answer two."),
    answer_rule("Question three?", "This is answer three."),
    judge_rule("answers question one", "CLASS_EXACT"),
    judge_rule("answers question two", "CLASS_MAJOR"),
)


def _setup(project: Project, blueprints: int = 1) -> None:
    """``blueprints`` copies of BLUEPRINT, each with its own prompts and criteria."""
    rules = list(RULES)
    project.write("blueprints/cached.yml", BLUEPRINT)
    for i in range(2, blueprints + 1):
        project.write(
            f"blueprints/more/c{i}.yml",
            BLUEPRINT.replace("Question", f"Q{i} question").replace("answers question", f"q{i} answers question"),
        )
        for n in ("one", "two", "three"):
            rules.append(answer_rule(f"Q{i} question {n}?", f"This is answer {n}."))
        rules.append(judge_rule(f"q{i} answers question one", "CLASS_EXACT"))
        rules.append(judge_rule(f"q{i} answers question two", "CLASS_MAJOR"))
    project.rules(*rules)


def _distinct(project: Project) -> int:
    return project.server.distinct_bodies()


@pytest.mark.parametrize("store", ["sqlite", "files"])
def test_a_second_run_is_served_from_the_cache(project: Project, store: str):
    _setup(project)
    project.ini(f"weval_cache_store = {store}")
    first = project.run(f"--weval-judges={JUDGE_ID}", "-rA")
    first.assert_outcomes(passed=6)
    sent = project.server.count
    # 3 prompts x 2 temperatures generated; 2 judged points, each the same request at both
    # temperatures (the fake model gives the same answer)
    assert sent == 6 + 2
    assert sent == _distinct(project)
    second = project.run(f"--weval-judges={JUDGE_ID}", "-rA")
    second.assert_outcomes(passed=6)
    assert project.server.count == sent  # nothing sent
    # the SQLite cache is kept out of git, as .pytest_cache/ is; recordings (files) are not
    ignore = project.path / ".weval_cache" / ".gitignore"
    assert ignore.exists() == (store == "sqlite")
    if store == "sqlite":
        assert ignore.read_text().splitlines()[-1] == "*"
    usage = [line for line in second.outlines if line.startswith("total ")]
    # 8 distinct requests (6 answers, 2 verdicts shared by the items), all 8 from the cache
    assert usage and usage[0].split()[1:3] == ["8", "8"], second.outlines


@pytest.mark.parametrize("store", ["sqlite", "files"])
def test_ro_replays_with_the_server_stopped(project: Project, store: str):
    _setup(project)
    project.ini(f"weval_cache_store = {store}")
    project.run(f"--weval-judges={JUDGE_ID}").assert_outcomes(passed=6)
    project.server.stop()
    replay = project.run(f"--weval-judges={JUDGE_ID}", "--weval-cache=ro", "-rA")
    replay.assert_outcomes(passed=6)
    # a prompt that was never recorded errors; the rest still replay
    with open(project.path / "blueprints/cached.yml", "a", encoding="utf-8") as handle:
        handle.write("- id: new\n  prompt: A brand new question?\n  should:\n    - $contains: x\n")
    replay = project.run(f"--weval-judges={JUDGE_ID}", "--weval-cache=ro", "-rA")
    outcomes = outcomes_by_id(replay)
    assert outcomes[f"blueprints/cached.yml::new[{MODEL_ID},temp=0]"] == "ERROR"
    assert list(outcomes.values()).count("PASSED") == 6
    assert "never recorded" in replay.stdout.str()


def test_refresh_sends_again_and_off_never_stores(project: Project):
    _setup(project)
    project.run(f"--weval-judges={JUDGE_ID}").assert_outcomes(passed=6)
    project.run(f"--weval-judges={JUDGE_ID}", "--weval-cache=refresh").assert_outcomes(passed=6)
    assert project.server.count == 16
    project.run(f"--weval-judges={JUDGE_ID}", "--weval-cache=off", "--weval-cache-dir=nocache").assert_outcomes(
        passed=6
    )
    assert project.server.count == 24
    assert not (project.path / "nocache").exists() or not any((project.path / "nocache").rglob("*.json"))


@pytest.mark.parametrize("mode", ["rw", "off"])
def test_xdist_workers_share_the_cache_and_send_nothing_twice(project: Project, mode: str):
    _setup(project, blueprints=6)
    result = project.run(f"--weval-judges={JUDGE_ID}", "-n", "2", f"--weval-cache={mode}", "-rA", sub=True)
    result.assert_outcomes(passed=36)
    requests = project.server.requests
    assert len(requests) == 6 * 8, len(requests)
    assert len(requests) == _distinct(project)  # no request sent twice
    if mode == "rw":
        again = project.run(f"--weval-judges={JUDGE_ID}", "-n", "2", "-rA", sub=True)
        again.assert_outcomes(passed=36)
        assert project.server.count == 6 * 8


@pytest.mark.parametrize("dist", ["each", "loadfile"])
def test_xdist_workers_share_item_evaluations_whatever_the_distribution(project: Project, dist: str):
    # --dist each: both workers report every item, one evaluation each; loadfile: a worker
    # reports whole files, some of which the other evaluated.
    _setup(project, blueprints=4)
    result = project.run(f"--weval-judges={JUDGE_ID}", "-n", "2", "--dist", dist, "--weval-cache=off", sub=True)
    result.assert_outcomes(passed=24 * (2 if dist == "each" else 1))
    assert project.server.count == 4 * 8 == _distinct(project)


@pytest.mark.parametrize("workers", [0, 2])
def test_concurrency_caps_the_whole_run(project: Project, workers: int):
    _setup(project, blueprints=2)
    project.server.latency_ms = 50
    xdist = ("-n", str(workers)) if workers else ()
    result = project.run(f"--weval-judges={JUDGE_ID}", "--weval-concurrency=4", *xdist, sub=bool(workers))
    result.assert_outcomes(passed=12)
    assert 2 <= project.server.max_in_flight <= 4
    # the provider cap (ini) applies too
    project.server.reset()
    project.ini("weval_provider_concurrency = openai:2")
    result = project.run(f"--weval-judges={JUDGE_ID}", "--weval-cache=refresh", *xdist, sub=bool(workers))
    result.assert_outcomes(passed=12)
    assert project.server.max_in_flight <= 2
