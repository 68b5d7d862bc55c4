"""The plan streams its totals (run/plan.py): the example suite's plan.json is the one the
earlier plan, which kept an object per request, wrote (tests/run/data/examples_plan.json,
recorded before the change; its `unusable_models`, added since, is empty for the examples)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_weval.api import Weval
from pytest_weval.blueprint import load_blueprint
from pytest_weval.engine import EngineSettings
from pytest_weval.engine.prices import PriceBook
from pytest_weval.run import plan as planning
from pytest_weval.run.pipeline import ItemWork, Pipeline, PipelineSettings

ROOT = Path(__file__).resolve().parents[2]
RECORDED = Path(__file__).parent / "data" / "examples_plan.json"


def test_the_examples_plan_is_what_the_earlier_plan_computed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(ROOT / "example_blueprints", project / "example_blueprints")
    shutil.copy(ROOT / "pyproject.toml", project / "pyproject.toml")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "example_blueprints",
            f"--weval-out={tmp_path / 'out'}",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((tmp_path / "out" / "plan.json").read_text()) == json.loads(RECORDED.read_text())


# Counted directly (run/plan.py, DirectCount) or through the pipeline's own steps, a plan with no
# cache to read comes to the same figures. The suite has what the direct count must get right:
# temperatures and system prompts, multi-turn prompts, a prompt whose answer is written in it,
# an ideal answer without points (key points extracted), function points only, nothing to
# score, a point repeated, the same prompt twice in a blueprint (some points shared) and in
# another blueprint with other points and description (the same answers, judged on other
# criteria), a tested model that also judges, a model with its own max tokens, and models the
# pipeline plans itself (built-ins, an id no provider takes).
_FIRST = """\
title: First
description: the first
models:
  - openai:gpt-4o-mini
  - openrouter:openai/gpt-4.1-mini
  - ideal
  - echo
  - consumer:chatgpt_client
  - id: custom:terse
    url: http://127.0.0.1:9/v1/chat/completions
    modelName: terse
    inherit: openai
    parameters: {max_tokens: 60}
temperatures: [0, 0.7]
systems: [null, Be brief.]
---
- id: sky
  prompt: What colour is the sky?
  should:
    - names a colour
    - names a colour
    - $icontains: blue
- id: sky-twin
  prompt: What colour is the sky?
  should:
    - names a colour
    - is short
- id: grass
  prompt: What colour is grass?
  ideal: Grass is green.
- id: turns
  messages:
    - user: Name an animal.
    - assistant: null
    - user: And another?
    - assistant: null
    - user: Which is bigger?
  should: [compares the two animals]
- id: written
  messages:
    - user: Let's count. One.
    - assistant: Two.
  should: [counts on]
- id: functions
  prompt: Say yes.
  should: [{$icontains: "yes"}]
- id: nothing
  prompt: Nothing to score here.
"""
_SECOND = """\
title: Second
description: the second
models: [openai:gpt-4o-mini, openrouter:openai/gpt-4.1-mini]
---
- id: sky-again
  prompt: What colour is the sky?
  should:
    - is short
    - names a colour
- id: turns-again
  messages:
    - user: Name an animal.
    - assistant: null
    - user: And another?
    - assistant: null
    - user: Which is bigger?
  should: [names two animals]
- id: grass-again
  prompt: What colour is grass?
  ideal: Green.
"""


# Many prompts of several points each, under several variants: long runs of costs added to the
# judges' rows, where adding them in another order or grouping would change their sums' last bits.
_MANY = (
    "title: Many\nmodels: [openai:gpt-4o-mini, openrouter:openai/gpt-4.1-mini]\ntemperatures: [0, 0.3, 0.7, 1]\n---\n"
    + (
        "".join(
            f"- id: p{i}\n  prompt: {'Question ' * (1 + i * 7 % 13)}{i}?\n  should:\n"
            + "".join(f"    - {'criterion ' * (1 + (i * j) % 11)}{j}\n" for j in range(1 + i % 6))
            for i in range(40)
        )
    )
)


def _works(tmp_path: Path) -> list[ItemWork]:
    works = []
    for name, text in (("first.yml", _FIRST), ("second.yml", _SECOND), ("many.yml", _MANY)):
        path = tmp_path / name
        path.write_text(text)
        blueprint = load_blueprint(path)
        works += [
            ItemWork(f"{name}::{p.id}[{m.id},{t},{s}]", blueprint, p, m, t, s)
            for p in blueprint.prompts
            for m in blueprint.models
            for t in blueprint.temperatures
            for s in range(len(blueprint.systems))
        ]
    return works


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"judges": ("openai:gpt-4o-mini", "openrouter:anthropic/claude-haiku-4.5")},
        {"repeat": 3},
        {"repeat": 5, "repeat_auto": True},
    ],
    ids=["default-judges", "tested-model-judges", "repeat", "repeat-auto"],
)
def test_counted_directly_the_plan_comes_to_what_the_pipeline_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: dict
) -> None:
    works = _works(tmp_path)
    weval = Weval(
        engine_settings=EngineSettings(cache_mode="off", cache_dir=tmp_path / "cache", env={}),
        pipeline_settings=PipelineSettings(**settings),
    )
    generated: set[tuple[str, str]] = set()
    generate = Pipeline.generate

    async def spy(self: Pipeline, work: ItemWork, usage: dict) -> object:
        generated.add((work.prompt.id, work.model.id))
        return await generate(self, work, usage)

    monkeypatch.setattr(Pipeline, "generate", spy)
    try:
        assert weval.engine.cache.store is None
        direct_plan = planning.make_plan(weval.engine, weval.pipeline.settings, works, prices=PriceBook())
        direct = direct_plan.to_dict()
        # the pipeline plans only what the direct count leaves to it
        assert generated
        assert all(
            model in ("ideal", "echo", "consumer:chatgpt_client") or prompt == "written" for prompt, model in generated
        )
        monkeypatch.setattr(planning.DirectCount, "direct", lambda self, work: None)
        pipeline_plan = planning.make_plan(weval.engine, weval.pipeline.settings, works, prices=PriceBook())
        through_pipeline = pipeline_plan.to_dict()
    finally:
        weval.close()
    assert direct == through_pipeline
    assert direct["requests"]["total"] > 100
    # Not only as rounded in plan.json: every sum the same, bit for bit (the costs are float
    # sums, which come out the same only when each request's are added in the same order).
    assert _exact_rows(direct_plan) == _exact_rows(pipeline_plan)


def _exact_rows(plan: planning.Plan) -> list[tuple[object, ...]]:
    return [
        (model, row.requests, row.cached, sorted(row.by_purpose.items()), row.input_tokens)
        + tuple(x.hex() if isinstance(x, float) else x for x in (row.cost_low, row.cost_high))
        + (row.prefix_reads.hex(), row.prefix_writes.hex())
        for model, row in plan.by_model.items()
    ]
