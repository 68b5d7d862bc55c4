"""Classification scales and judge-reply parsing (docs/judges.md, 'Scales' and 'Parsing a reply').

A judge answers ``<reflection>...</reflection><classification>NAME</classification>``; the class
name maps to a score on the active scale.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_weval.errors import WevalError
from pytest_weval.jsvalues import js_trim

__all__ = [
    "SCALE_5",
    "SCALE_9",
    "JudgeReplyError",
    "Scale",
    "ScaleClass",
    "get_scale",
    "parse_judge_reply",
]


@dataclass(frozen=True)
class ScaleClass:
    name: str
    score: float
    description: str


@dataclass(frozen=True)
class Scale:
    name: str  # "9" or "5"
    classes: tuple[ScaleClass, ...]

    def score_of(self, class_name: str) -> float | None:
        for entry in self.classes:
            if entry.name == class_name:
                return entry.score
        return None

    def class_for(self, score: float) -> ScaleClass:
        """The class whose score is exactly ``score`` (KeyError when there is none)."""
        for entry in self.classes:
            if entry.score == score:
                return entry
        raise KeyError(score)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(entry.name for entry in self.classes)

    def __len__(self) -> int:
        return len(self.classes)


# The scores are the reference's; the descriptions are ours.
SCALE_9 = Scale(
    "9",
    (
        ScaleClass(
            "CLASS_UTTERLY_UNMET",
            0.0,
            "The criterion is absent to the point that the text contradicts or works against it.",
        ),
        ScaleClass("CLASS_UNMET", 0.001, "The criterion is not met."),
        ScaleClass("CLASS_TRACE", 0.125, "No more than a faint trace or hint of the criterion."),
        ScaleClass("CLASS_SLIGHT", 0.25, "The criterion is slightly present."),
        ScaleClass("CLASS_PARTIAL", 0.375, "Partly met; important parts are missing."),
        ScaleClass("CLASS_MODERATE", 0.5, "Moderately met; clearly present but with notable gaps."),
        ScaleClass("CLASS_SUBSTANTIAL", 0.625, "Substantially met; most of the key aspects are there."),
        ScaleClass("CLASS_MAJOR", 0.75, "Largely met; only minor omissions."),
        ScaleClass("CLASS_VERY_NEARLY", 0.875, "Very nearly fully met; only negligible details are missing."),
        ScaleClass("CLASS_EXACT", 1.0, "Fully and exactly met."),
    ),
)

SCALE_5 = Scale(
    "5",
    (
        ScaleClass("CLASS_UNMET", 0.0, "The criterion is not met."),
        ScaleClass("CLASS_PARTIALLY_MET", 0.25, "The criterion is met only in part."),
        ScaleClass("CLASS_MODERATELY_MET", 0.5, "The criterion is moderately met."),
        ScaleClass("CLASS_MAJORLY_MET", 0.75, "The criterion is mostly met."),
        ScaleClass("CLASS_EXACTLY_MET", 1.0, "The criterion is fully met."),
    ),
)

_SCALES = {"9": SCALE_9, "5": SCALE_5}


def get_scale(scale: str | int | Scale) -> Scale:
    """``"9"``/``"5"`` (or 9/5, or a :class:`Scale`) to the scale table."""
    if isinstance(scale, Scale):
        return scale
    try:
        return _SCALES[str(scale)]
    except KeyError:
        raise ValueError(f"unknown classification scale {scale!r}: expected '9' or '5'") from None


class JudgeReplyError(WevalError, ValueError):
    """A judge reply that yields no score; the message says why (docs/judges.md, 'Parsing a reply')."""


_REFLECTION = re.compile(r"<reflection>([\s\S]*?)</reflection>")
_CLASSIFICATION = re.compile(r"<classification>([\s\S]*?)</classification>")


def parse_judge_reply(text: str | None, scale: str | int | Scale = "9") -> tuple[float, str]:
    """``(score, reflection)`` from a judge's reply.

    * an empty or blank reply is an error;
    * both tags must be present (the first of each, non-greedy, tag names case-sensitive);
    * the class is trimmed, upper-cased and given a ``CLASS_`` prefix when it lacks one, and must
      then name a class of the active scale.
    """
    table = get_scale(scale)
    if text is None or not js_trim(text):
        raise JudgeReplyError("Empty response")
    reflection = _REFLECTION.search(text)
    classification = _CLASSIFICATION.search(text)
    if reflection is None or classification is None:
        raise JudgeReplyError(f"Failed to parse XML. Response: {text[:100]}...")
    raw_class = js_trim(classification.group(1))
    name = raw_class.upper()
    if not name.startswith("CLASS_"):
        name = f"CLASS_{name}"
    score = table.score_of(name)
    if score is None:
        raise JudgeReplyError(f"Invalid classification value: '{raw_class}'")
    return score, js_trim(reflection.group(1))
