"""A replayed item (every request a hit of ``--weval-cache=ro`` on a file no writer has open) is
evaluated without waiting for anything: its generation and its judges are read where they are
asked (``Engine.complete``), and its judges are awaited in no task of their own
(``Pipeline.assess``), so the engine's thread spends no loop turn on it. Its result is the one
the recording run had."""

from __future__ import annotations

from typing import Any

from pytest_weval.blueprint import parse_blueprint_text
from pytest_weval.engine import Engine, EngineSettings
from pytest_weval.run.pipeline import ItemWork, Pipeline, PipelineSettings
from tests.fakeserver import FakeServer
from tests.plugin.plugin_helpers import JUDGE_ID, judge_rule
from tests.run.schedule_worker import works_of

BLUEPRINT = """\
models: [openai:replayed-model]
---
- id: p0
  prompt: question 0
  should:
    - names the question
    - $contains: question
- id: p1
  prompt: question 1
  should:
    - names the question
"""


def evaluate(engine: Engine, work: ItemWork, *, at_once: bool) -> tuple[bool, Any]:
    pipeline = Pipeline(engine, PipelineSettings(judges=(JUDGE_ID,)))

    async def step() -> tuple[bool, Any]:
        coro = pipeline.evaluate(work)
        if not at_once:
            return True, await coro
        try:
            coro.send(None)
        except StopIteration as done:
            return True, done.value
        coro.close()
        return False, None

    return engine.run_coroutine(step()).result(60)


def test_a_replayed_item_is_evaluated_without_waiting(tmp_path):
    blueprint = parse_blueprint_text(BLUEPRINT, fmt="yaml", rel_path="replay.yml")
    work, text_only = works_of(blueprint, "replay.yml::{id}")
    assert {p.is_function for p in work.prompt.points} == {True, False}
    assert not any(p.is_function for p in text_only.prompt.points)
    with FakeServer(rules=[judge_rule("names the question", "CLASS_MAJOR")]) as server:
        settings = dict(cache_dir=tmp_path / "cache", env=server.env())
        with Engine(EngineSettings(**settings)) as engine:
            recorded = [evaluate(engine, w, at_once=False)[1] for w in (work, text_only)]
        sent = server.count
        with Engine(EngineSettings(**settings, cache_mode="ro")) as engine:
            replayed = [evaluate(engine, w, at_once=True) for w in (work, text_only)]
            stats = engine.stats
        assert server.count == sent and stats["http_requests"] == 0
    # The item with a function point judges in a task beside it: it waits once, for that task.
    assert replayed[0][0] is False
    # A judged item alone waits for nothing, and its result is the recording's.
    finished, result = replayed[1]
    assert finished, "a replayed item waited for something"
    assert result.outcome == recorded[1].outcome == "passed", (result.error, recorded[1].error)
    assert result.model_dump(exclude={"duration_s", "usage"}) == recorded[1].model_dump(exclude={"duration_s", "usage"})
    assert result.usage[JUDGE_ID].cache_hits == 1
