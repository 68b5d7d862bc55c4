"""Key-point extraction from the ideal answer (docs/judges.md, 'Key-point extraction')."""

from __future__ import annotations

from pytest_weval.judges import DEFAULT_KEYPOINT_MODELS, extract_key_points, parse_key_points, select_judges
from pytest_weval.judges.keypoints import build_keypoint_messages


def test_parse_is_case_insensitive_trimmed_and_skips_blanks():
    reply = "Here:\n<key_point> Boil water. </key_point>\n<KEY_POINT>Add\npasta</Key_Point>\n<key_point>  </key_point>"
    assert parse_key_points(reply) == ["Boil water.", "Add\npasta"]
    assert parse_key_points("") == [] and parse_key_points(None) == []


def test_messages_carry_prompt_and_ideal():
    system, user = build_keypoint_messages("user: How to cook pasta?", "Boil, salt, cook 10 min.")
    assert system["role"] == "system" and user["role"] == "user"
    assert "<PROMPT>\nuser: How to cook pasta?\n</PROMPT>" in user["content"]
    assert "<IDEAL_RESPONSE>\nBoil, salt, cook 10 min.\n</IDEAL_RESPONSE>" in user["content"]
    assert "<key_point>" in system["content"] and "<key_point>" in user["content"]


async def test_models_tried_in_order_until_one_yields_points():
    calls = []

    async def ask(judge, messages, temperature, max_tokens):
        calls.append((judge.model, temperature, max_tokens))
        if judge.model == DEFAULT_KEYPOINT_MODELS[0]:
            raise ConnectionError("no key")
        return "<key_point>Salt the water</key_point><key_point>Cook al dente</key_point>"

    errors: list[str] = []
    points = await extract_key_points(
        prompt_text="p", ideal="i", panel=select_judges(None, None), ask=ask, errors=errors
    )
    assert calls == [(DEFAULT_KEYPOINT_MODELS[0], 0.1, 2000), (DEFAULT_KEYPOINT_MODELS[1], 0.1, 2000)]
    assert [(p.text, p.display_text, p.multiplier, p.path_id, p.is_inverted, p.is_function) for p in points] == [
        ("Salt the water", "Salt the water", 1.0, None, False, False),
        ("Cook al dente", "Cook al dente", 1.0, None, False, False),
    ]
    assert errors == [f"key point extraction with {DEFAULT_KEYPOINT_MODELS[0]} failed: no key"]


async def test_judge_models_then_cli_judges_choose_the_extractor():
    seen = []

    async def ask(judge, messages, temperature, max_tokens):
        seen.append(judge.model)
        return "<key_point>x</key_point>"

    config = {"llm-coverage": {"judgeModels": ["openai:gpt-4o"]}}
    await extract_key_points(prompt_text="p", ideal="i", panel=select_judges(None, config), ask=ask)
    await extract_key_points(prompt_text="p", ideal="i", panel=select_judges(["local:smol"], config), ask=ask)
    assert seen == ["openai:gpt-4o", "local:smol"]


async def test_none_when_every_model_fails():
    async def ask(judge, messages, temperature, max_tokens):
        return "   " if judge.model.endswith("a") else "no tags here"

    errors: list[str] = []
    assert await extract_key_points(prompt_text="p", ideal="i", ask=ask, models=["m:a", "m:b"], errors=errors) is None
    assert errors[0].endswith("empty response") and "no <key_point> tags" in errors[1]
