"""Judge panel selection (docs/judges.md, 'Choosing the judges'; docs/rulings.md, rulings 11-12)."""

from __future__ import annotations

import pytest

from pytest_weval.judges import (
    BACKUP_JUDGE,
    DEFAULT_JUDGES,
    DEFAULT_KEYPOINT_MODELS,
    JudgeConfigError,
    JudgeSpec,
    select_judges,
)


def test_defaults_and_backup_match_section_3_2():
    assert [(j.id, j.model, j.approach) for j in DEFAULT_JUDGES] == [
        ("holistic-gemini-2-5-flash", "openrouter:google/gemini-2.5-flash", "holistic"),
        ("holistic-gpt-4-1-mini", "openrouter:openai/gpt-4.1-mini", "holistic"),
        ("holistic-claude-haiku-4-5", "openrouter:anthropic/claude-haiku-4.5", "holistic"),
    ]
    assert (BACKUP_JUDGE.id, BACKUP_JUDGE.model, BACKUP_JUDGE.approach) == (
        "backup-claude-4-5-haiku",
        "openrouter:anthropic/claude-haiku-4.5",
        "holistic",
    )


def test_labels():
    assert JudgeSpec("x", "p:m", "holistic").label == "x(p:m)"
    assert JudgeSpec(None, "p:m", "standard").label == "standard(p:m)"
    assert JudgeSpec("", "p:m", "prompt-aware").label == "prompt-aware(p:m)"


@pytest.mark.parametrize(
    "config", [None, {}, {"llm-coverage": {}}, {"llm-coverage": {"judges": []}}, {"llm-coverage": None}]
)
def test_defaults_when_nothing_configured(config):
    panel = select_judges(None, config)
    assert panel.judges == DEFAULT_JUDGES and panel.uses_defaults
    assert panel.backup == BACKUP_JUDGE
    assert panel.scale == "9"
    assert panel.extraction_models == DEFAULT_KEYPOINT_MODELS


def test_blueprint_judges():
    panel = select_judges(
        [],
        {
            "llm-coverage": {
                "judges": [
                    {"id": "j1", "model": "openai:gpt-4.1", "approach": "prompt-aware"},
                    {"model": "anthropic:claude", "approach": "standard"},
                    {"model": "x:y"},
                ],
                "judgeModels": ["openai:gpt-4o"],
            }
        },
    )
    assert panel.judges == (
        JudgeSpec("j1", "openai:gpt-4.1", "prompt-aware"),
        JudgeSpec(None, "anthropic:claude", "standard"),
        JudgeSpec(None, "x:y", "standard"),  # a missing approach gets the standard prompt
    )
    assert not panel.uses_defaults and panel.backup is None
    assert panel.extraction_models == ("openai:gpt-4o",)


def test_cli_judges_win_and_extract_too():
    panel = select_judges(
        ["openrouter:google/gemini-2.5-flash", " local:smol ", "openrouter:google/gemini-2.5-flash"],
        {"llm-coverage": {"judges": [{"model": "a:b"}], "judgeModels": ["c:d"]}},
    )
    assert panel.judges == (
        JudgeSpec("holistic-gemini-2-5-flash", "openrouter:google/gemini-2.5-flash", "holistic"),
        JudgeSpec("holistic-smol", "local:smol", "holistic"),
    )
    assert not panel.uses_defaults and panel.backup is None
    assert panel.extraction_models == ("openrouter:google/gemini-2.5-flash", "local:smol")


def test_cli_judge_ids_stay_unique():
    panel = select_judges(["openai:gpt-4.1-mini", "openrouter:openai/gpt-4.1-mini"], None)
    assert [j.id for j in panel.judges] == ["holistic-gpt-4-1-mini", "holistic-gpt-4-1-mini-2"]


@pytest.mark.parametrize("flag,scale", [(False, "5"), (True, "9"), (None, "9"), ("false", "9")])
def test_scale_selection(flag, scale):
    section = {} if flag is None else {"useExperimentalScale": flag}
    assert select_judges(None, {"llm-coverage": section}).scale == scale
    assert select_judges(["a:b"], {"llm-coverage": section}).scale == scale


@pytest.mark.parametrize("entry", ["openai:gpt-4.1", {"id": "x"}, {"model": ""}, {"model": 3}])
def test_bad_judge_entries(entry):
    with pytest.raises(JudgeConfigError, match=r"judges\[0\]"):
        select_judges(None, {"llm-coverage": {"judges": [entry]}})
