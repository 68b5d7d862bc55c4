"""An item's work at another request priority (``ItemWork.at_priority``, which the scheduler
asks of every item it starts) is what ``dataclasses.replace`` makes: every other field kept."""

from __future__ import annotations

import dataclasses

from pytest_weval.blueprint import parse_blueprint_text
from pytest_weval.run.pipeline import ItemWork


def test_at_priority_keeps_every_other_field():
    # A distinct object in every field (a field added later and not passed on fails here).
    values = {field.name: object() for field in dataclasses.fields(ItemWork)}
    work = ItemWork(**values)
    moved = work.at_priority(7)
    assert type(moved) is ItemWork and moved is not work
    assert moved.priority == 7 and work.priority is values["priority"]
    for field in dataclasses.fields(ItemWork):
        if field.name != "priority":
            assert getattr(moved, field.name) is values[field.name], field.name


def test_at_priority_is_dataclasses_replace():
    blueprint = parse_blueprint_text(
        "models: [openai:a]\n---\n- id: p0\n  prompt: question 0\n  should: [names it]\n", fmt="yaml", rel_path="w.yml"
    )
    work = ItemWork(
        "w.yml::p0",
        blueprint,
        blueprint.prompts[0],
        blueprint.models[0],
        0.5,
        0,
        priority=3,
        blocked="no key",
        blocked_outcome="skipped",
        sample=2,
    )
    for priority in (-1, 0, 3, 10_000):
        assert work.at_priority(priority) == dataclasses.replace(work, priority=priority)
