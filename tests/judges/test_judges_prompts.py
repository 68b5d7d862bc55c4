"""Judge request content (docs/judges.md, 'The judge request' and 'Transcript')."""

from __future__ import annotations

import re

import pytest

from pytest_weval.blueprint.model import Message
from pytest_weval.judges import SCALE_5, SCALE_9, build_judge_messages, build_transcript, prompt_context_text

SEP = "\n--------------------\n"


def test_transcript_labels_generated_and_fixed_assistant_turns():
    history = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello (authored)"},
        {"role": "user", "content": "And?"},
        {"role": "assistant", "content": "Generated one"},
        {"role": "user", "content": "More"},
        {"role": "assistant", "content": "Generated two"},
    ]
    # generated indices count assistant turns, not messages
    assert build_transcript(history, [1, 2]) == SEP.join(
        [
            "system: Be terse.",
            "user: Hi",
            "assistant (fixed): Hello (authored)",
            "user: And?",
            "assistant (generated): Generated one",
            "user: More",
            "assistant (generated): Generated two",
        ]
    )


def test_transcript_accepts_message_objects_and_no_generated_indices():
    history = [Message(role="user", content="q"), Message(role="assistant", content="a")]
    assert build_transcript(history, None) == "user: q" + SEP + "assistant (fixed): a"


def test_transcript_without_history_uses_the_prompt_messages():
    initial = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": None},
        {"role": "user", "content": "q2"},
    ]
    assert build_transcript([], [0], initial_messages=initial) == SEP.join(
        ["user: q1", "assistant (placeholder-null): <TO_BE_GENERATED>", "user: q2"]
    )
    assert build_transcript(None, None, prompt_text="plain prompt") == "plain prompt"
    assert prompt_context_text(None) == "Error: No prompt context found."


def _msgs(**kw):
    base = dict(subject_text="SUBJECT", transcript="user: hi" + SEP + "assistant (generated): SUBJECT")
    base.update(kw)
    return build_judge_messages("Mentions the deadline", **base)


def test_message_shape_and_user_blocks():
    system, user = _msgs(approach="holistic", scale="9")
    assert system["role"] == "system" and user["role"] == "user"
    text = user["content"]
    assert "assistant (generated)" in text and "assistant (fixed)" in text  # the instruction
    assert "<TRANSCRIPT>\nuser: hi" + SEP + "assistant (generated): SUBJECT\n</TRANSCRIPT>" in text
    assert "<TEXT>\nSUBJECT\n</TEXT>" in text
    assert "<CRITERION>\nMentions the deadline\n</CRITERION>" in text
    assert "<reflection>" in text and "<classification>" in text
    order = [text.index(tag) for tag in ("<TRANSCRIPT>", "<TEXT>", "<CRITERION>", "Classification guidelines")]
    assert order == sorted(order)


@pytest.mark.parametrize(
    "approach,phrase",
    [
        ("holistic", "THIS SPECIFIC <CRITERION>"),
        ("prompt-aware", "THIS SPECIFIC <CRITERION>"),
        ("standard", "the following <CRITERION>"),
        ("something-else", "the following <CRITERION>"),
    ],
)
def test_criterion_wording_depends_on_approach(approach, phrase):
    _, user = _msgs(approach=approach)
    assert phrase in user["content"]


@pytest.mark.parametrize("scale", [SCALE_9, SCALE_5])
def test_guideline_list_is_the_active_scale(scale):
    _, user = _msgs(scale=scale.name)
    lines = [line for line in user["content"].splitlines() if line.startswith("- CLASS_")]
    assert lines == [f"- {c.name}: {c.description}" for c in scale.classes]
    assert (
        f"Exactly one of the {len(scale.classes)} class names (for example {scale.classes[-1].name})" in user["content"]
    )


@pytest.mark.parametrize(
    "scale,expected",
    [
        (SCALE_9, ["CLASS_UTTERLY_UNMET", "CLASS_MAJOR", "CLASS_EXACT"]),
        (SCALE_5, ["CLASS_UNMET", "CLASS_MAJORLY_MET", "CLASS_EXACTLY_MET"]),
    ],
)
def test_worked_examples_use_active_scale_names(scale, expected):
    system, _ = _msgs(scale=scale.name)
    found = re.findall(r"<classification>(CLASS_\w+)</classification>", system["content"])
    assert found == expected
    other = SCALE_5 if scale is SCALE_9 else SCALE_9
    foreign = set(other.names) - set(scale.names)
    mentioned = set(re.findall(r"\bCLASS_[A-Z_]+\b", system["content"]))
    assert mentioned <= set(scale.names) and not mentioned & foreign


def test_holistic_description_block():
    system, _ = _msgs(approach="holistic", description="Checks advice on tenancy law.")
    assert (
        "<BROAD_EVALUATION_DESCRIPTION>\nChecks advice on tenancy law.\n</BROAD_EVALUATION_DESCRIPTION>"
        in system["content"]
    )


@pytest.mark.parametrize("approach", ["standard", "prompt-aware"])
def test_description_only_for_holistic(approach):
    system, _ = _msgs(approach=approach, description="Checks advice on tenancy law.")
    assert "BROAD_EVALUATION_DESCRIPTION" not in system["content"]


@pytest.mark.parametrize("description", [None, "", "   "])
def test_no_description_block_without_a_description(description):
    # The reference shows the literal "undefined" when there is no description: fixed
    # (docs/compatibility.md); an empty or blank description omits the block, as the reference.
    system, _ = _msgs(approach="holistic", description=description)
    assert "BROAD_EVALUATION_DESCRIPTION" not in system["content"]
    assert "undefined" not in system["content"]


def test_other_criteria_are_never_shown():
    _, user = _msgs()
    assert "[should" not in user["content"]
