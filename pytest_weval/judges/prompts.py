"""The content of a judge request (docs/judges.md, 'The judge request' and 'Transcript').

The protocol (blocks, labels, output format) follows the reference; the wording is our own.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_weval.jsvalues import js_trim

from .parse import Scale, get_scale

__all__ = [
    "TRANSCRIPT_SEPARATOR",
    "build_judge_messages",
    "build_system_prompt",
    "build_transcript",
    "build_user_prompt",
    "prompt_context_text",
]

TRANSCRIPT_SEPARATOR = "\n--------------------\n"
GENERATED_LABEL = "assistant (generated)"
FIXED_LABEL = "assistant (fixed)"
PLACEHOLDER_LABEL = "assistant (placeholder-null)"
PLACEHOLDER_CONTENT = "<TO_BE_GENERATED>"


def _role_content(message: Any) -> tuple[str, Any]:
    if isinstance(message, Mapping):
        return str(message.get("role")), message.get("content")
    return str(message.role), getattr(message, "content", None)


def _js_str(value: Any) -> str:
    # How a JS template literal shows a message's content.
    if value is None:
        return "null"
    return value if isinstance(value, str) else str(value)


def prompt_context_text(messages: Iterable[Any] | None, prompt_text: str | None = None) -> str:
    """The prompt as the judges (and key-point extraction) see it before any generation.

    One ``role: content`` line per message joined by the separator; an authored null assistant
    turn is ``assistant (placeholder-null): <TO_BE_GENERATED>``. Without messages, the plain
    ``prompt_text``.
    """
    lines = []
    for message in messages or ():
        role, content = _role_content(message)
        if role == "assistant" and content is None:
            lines.append(f"{PLACEHOLDER_LABEL}: {PLACEHOLDER_CONTENT}")
        else:
            lines.append(f"{role}: {_js_str(content)}")
    if lines:
        return TRANSCRIPT_SEPARATOR.join(lines)
    if prompt_text:
        return prompt_text
    return "Error: No prompt context found."


def build_transcript(
    history: Sequence[Any] | None,
    generated_indices: Iterable[int] | None,
    *,
    initial_messages: Sequence[Any] | None = None,
    prompt_text: str | None = None,
) -> str:
    """The ``<TRANSCRIPT>`` text for one judged model.

    ``history`` is the full conversation (system turn included when there is one).
    ``generated_indices`` are positions among the *assistant* turns (0 = first assistant turn)
    that the candidate model produced; those are labelled ``assistant (generated)``, every other
    assistant turn ``assistant (fixed)``. Without a history, the prompt's own messages are used
    (:func:`prompt_context_text`).
    """
    if not history:
        return prompt_context_text(initial_messages, prompt_text)
    generated = set(generated_indices or ())
    lines = []
    assistant_index = 0
    for message in history:
        role, content = _role_content(message)
        if role == "assistant":
            label = GENERATED_LABEL if assistant_index in generated else FIXED_LABEL
            assistant_index += 1
            lines.append(f"{label}: {_js_str(content)}")
        else:
            lines.append(f"{role}: {_js_str(content)}")
    return TRANSCRIPT_SEPARATOR.join(lines)


def _has_description(description: str | None) -> bool:
    # The reference tests `description?.trim() !== ''`, which is true for a missing description
    # and then shows the literal "undefined". We leave the block out instead (docs/compatibility.md).
    return description is not None and js_trim(str(description)) != ""


# A run's judge calls share a few system prompts (one per scale, approach and blueprint
# description): each is written once, and is then the same string object for every call.
@functools.lru_cache(maxsize=256)
def build_system_prompt(scale: str | Scale, approach: str = "holistic", description: str | None = None) -> str:
    table = get_scale(scale)
    unmet = table.classes[0].name
    mostly = table.class_for(0.75).name
    exact = table.classes[-1].name

    parts = [
        "You are a meticulous expert examiner. Your job is to judge how well one specific criterion "
        "is satisfied by a given text, giving a short reflection and a precise classification.\n"
        "Consider only the criterion, the text and the classification guidelines. Answer in exactly "
        "the XML format the user message asks for, and keep it short.",
    ]
    if approach == "holistic" and _has_description(description):
        parts.append(
            "For background only, this check belongs to a larger evaluation suite described below. "
            "Treat the description as context; it is not itself something to evaluate.\n\n"
            f"<BROAD_EVALUATION_DESCRIPTION>\n{description}\n</BROAD_EVALUATION_DESCRIPTION>"
        )
    parts.append(
        "A criterion is a claim about the <TEXT>. It may speak of 'the response', meaning the <TEXT>, "
        "and it may be worded in many ways. For the text \"The bakery opens at 7am and closes at "
        "3pm.\", all of these state the same criterion:\n\n"
        "- \"The response should give the opening hours and be brief\"\n"
        "- \"Must state the opening hours and be brief\"\n"
        "- \"Brief, and gives the opening hours\"\n"
        "- \"Should not leave out the opening hours or ramble\"\n"
        "- \"Opening hours, briefly\""
    )
    parts.append(
        "Examples of correct answers:\n\n"
        "-----\n"
        "Input: <TEXT>Nobody at the meeting agreed with the proposal.</TEXT>"
        "<CRITERION>Everyone at the meeting agreed with the proposal.</CRITERION>\n"
        "Output: <reflection>The text says that nobody agreed, which is the opposite of the "
        f"criterion, so the criterion is not met at all.</reflection><classification>{unmet}</classification>\n"
        "-----\n"
        "Input: <TEXT>The bridge is about 1,200 metres long.</TEXT>"
        "<CRITERION>The bridge is 1,247 metres long.</CRITERION>\n"
        "Output: <reflection>The length given is close to the one in the criterion but not exact, "
        f"so the criterion is mostly met, i.e. {mostly}.</reflection><classification>{mostly}</classification>\n"
        "-----\n"
        "Input: <TEXT>A good onboarding plan pairs each new hire with a mentor, sets clear first-week "
        "goals and schedules regular check-ins.</TEXT><CRITERION>Mentions mentoring</CRITERION>\n"
        "Output: <reflection>The text explicitly mentions pairing new hires with a mentor, so the "
        f"criterion is met exactly.</reflection><classification>{exact}</classification>\n"
        "-----"
    )
    return "\n\n".join(parts)


# The line that asks for the judgement, by approach; all before it is the same for every
# criterion asked about one answer (``shared_prefix_chars``).
ASK_AWARE = "Judge how well THIS SPECIFIC <CRITERION> is satisfied by the generated assistant content:"
ASK_STANDARD = "Judge how well the following <CRITERION> is satisfied by the generated assistant content:"


def shared_prefix_chars(user_prompt: str) -> int:
    """How much of a judge's user prompt (``build_user_prompt``) every criterion asked about the
    same answer shares: the transcript and the text, up to and with the ask line (0: not a
    judge prompt). A provider's prompt cache can keep it for the next criterion."""
    for ask_line in (ASK_AWARE, ASK_STANDARD):
        marker = "\n</TEXT>\n\n" + ask_line + "\n"
        at = user_prompt.rfind(marker)
        if at >= 0:
            return at + len(marker)
    return 0


def build_user_prompt(
    criterion: str,
    *,
    subject_text: str,
    transcript: str,
    approach: str,
    scale: str | Scale,
) -> str:
    ask, tail = _user_prompt_parts(approach, scale)
    return (
        f"{_USER_PROMPT_HEAD}{transcript}\n</TRANSCRIPT>\n\n<TEXT>\n{subject_text}\n</TEXT>\n\n{ask}{criterion}{tail}"
    )


_USER_PROMPT_HEAD = (
    "Below are a conversation transcript and a criterion. Judge ONLY what the candidate model "
    f"wrote, the turns labelled \"{GENERATED_LABEL}\". Turns labelled \"{FIXED_LABEL}\" were "
    "written in advance as part of the test; give them no credit.\n\n"
    "<TRANSCRIPT>\n"
)


@functools.lru_cache(maxsize=64)
def _user_prompt_parts(approach: str, scale: str | Scale) -> tuple[str, str]:
    """The user prompt's text around the criterion for one approach and scale, written once:
    (the ask line and the criterion's opening tag, all after the criterion)."""
    table = get_scale(scale)
    if approach in ("prompt-aware", "holistic"):
        ask_line = ASK_AWARE
    else:  # 'standard' and anything unrecognised
        ask_line = ASK_STANDARD
    guidelines = "\n".join(f"- {entry.name}: {entry.description}" for entry in table.classes)
    return f"{ask_line}\n<CRITERION>\n", (
        "\n</CRITERION>\n\n"
        "Give a 'reflection' and a 'classification' following the guidelines below. The "
        "classification names the class the text falls into, read against the exact wording of "
        "the criterion.\n\n"
        "Classification guidelines:\n"
        f"{guidelines}\n\n"
        "Your answer MUST use exactly this XML format:\n"
        "<reflection>One or two sentences of reasoning: how far the criterion is met, if at all."
        "</reflection>\n"
        f"<classification>Exactly one of the {len(table)} class names (for example "
        f"{table.classes[-1].name})</classification>\n"
    )


def build_judge_messages(
    criterion: str,
    *,
    subject_text: str,
    transcript: str,
    approach: str = "holistic",
    scale: str | Scale = "9",
    description: str | None = None,
) -> list[dict[str, str]]:
    """``[{role: system, ...}, {role: user, ...}]`` for one judge and one criterion.

    ``transcript`` comes from :func:`build_transcript`; ``subject_text`` is the generated text
    being judged; ``description`` is the blueprint's, shown to holistic judges only.
    """
    return [
        {"role": "system", "content": build_system_prompt(scale, approach, description)},
        {
            "role": "user",
            "content": build_user_prompt(
                criterion, subject_text=subject_text, transcript=transcript, approach=approach, scale=scale
            ),
        },
    ]
