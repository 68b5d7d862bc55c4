"""``-x`` and ``--maxfail`` (issue 40, item 4): the plugin evaluates items ahead of pytest, and
started the next wave of items as the first wave's replies came in, before pytest had seen the
first failure: ``-x`` bought twice the concurrency's requests. Under ``-x``/``--maxfail`` it runs
no further ahead than the concurrency, and starts no item once that many evaluations failed."""

from __future__ import annotations

import pytest
from plugin_helpers import MODEL, MODEL_ID, Project

PROMPTS = 40
CONCURRENCY = 4


def _failing_suite(project: Project) -> None:
    """Every item fails on a function point: the answer never contains the text asked for."""
    lines = [f"models: [{MODEL_ID}]", "---"]
    for n in range(PROMPTS):
        lines += [f"- id: p{n}", f"  prompt: Question {n}, please answer.", "  should:", '    - $contains: "zzz-never"']
    project.write("blueprints/failing.yml", "\n".join(lines) + "\n")
    project.server.latency_ms = 300


@pytest.mark.parametrize("maxfail", [1, 2])
def test_a_stopping_session_buys_one_wave_of_requests_not_two(project: Project, maxfail: int):
    _failing_suite(project)
    stop = "-x" if maxfail == 1 else f"--maxfail={maxfail}"
    result = project.run(stop, "--weval-cache=off", f"--weval-concurrency={CONCURRENCY}", sub=True)
    assert result.parseoutcomes().get("failed", 0) == maxfail, result.stdout.str()[-3000:]
    sent = len(project.requests(MODEL))
    # The first wave (one slot each), and an item started in each slot a failure before the last
    # one freed; before, the whole second wave had gone out too (2 x CONCURRENCY = 8).
    assert sent <= CONCURRENCY + maxfail - 1, (sent, result.stdout.str()[-3000:])


def test_without_maxfail_every_item_runs(project: Project):
    _failing_suite(project)
    result = project.run("--weval-cache=off", f"--weval-concurrency={CONCURRENCY}", sub=True)
    assert result.parseoutcomes().get("failed", 0) == PROMPTS
    assert len(project.requests(MODEL)) == PROMPTS
