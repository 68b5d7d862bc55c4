"""Judge-reply parsing on both scales (docs/judges.md, 'Scales' and
'Parsing a reply'). The ``judgeParse`` vectors do not ship (docs/rulings.md, ruling 25): these cases are
written from the rules in docs/judges.md."""

from __future__ import annotations

import pytest

from pytest_weval.judges import SCALE_5, SCALE_9, JudgeReplyError, get_scale, parse_judge_reply

NINE = [
    ("CLASS_UTTERLY_UNMET", 0.0),
    ("CLASS_UNMET", 0.001),
    ("CLASS_TRACE", 0.125),
    ("CLASS_SLIGHT", 0.25),
    ("CLASS_PARTIAL", 0.375),
    ("CLASS_MODERATE", 0.5),
    ("CLASS_SUBSTANTIAL", 0.625),
    ("CLASS_MAJOR", 0.75),
    ("CLASS_VERY_NEARLY", 0.875),
    ("CLASS_EXACT", 1.0),
]
FIVE = [
    ("CLASS_UNMET", 0.0),
    ("CLASS_PARTIALLY_MET", 0.25),
    ("CLASS_MODERATELY_MET", 0.5),
    ("CLASS_MAJORLY_MET", 0.75),
    ("CLASS_EXACTLY_MET", 1.0),
]


def reply(cls: str, reflection: str = "Because.") -> str:
    return f"<reflection>{reflection}</reflection>\n<classification>{cls}</classification>"


def test_scale_tables_match_section_3_2():
    assert [(c.name, c.score) for c in SCALE_9.classes] == NINE
    assert [(c.name, c.score) for c in SCALE_5.classes] == FIVE
    assert get_scale("9") is SCALE_9 and get_scale(5) is SCALE_5
    with pytest.raises(ValueError):
        get_scale("7")


@pytest.mark.parametrize("name,score", NINE)
def test_every_9_point_class(name, score):
    assert parse_judge_reply(reply(name), "9") == (score, "Because.")


@pytest.mark.parametrize("name,score", FIVE)
def test_every_5_point_class(name, score):
    assert parse_judge_reply(reply(name), "5") == (score, "Because.")


@pytest.mark.parametrize(
    "raw,scale,score",
    [
        ("class_exact", "9", 1.0),  # lower case
        ("  Class_Major \n", "9", 0.75),  # trimmed, mixed case
        ("EXACT", "9", 1.0),  # CLASS_ prefix missing
        ("very_nearly", "9", 0.875),  # both at once
        ("majorly_met", "5", 0.75),
        ("class_unmet", "5", 0.0),
        ("unmet", "9", 0.001),  # UNMET is a 9-point class too, with score 0.001
    ],
)
def test_forgiving_class_names(raw, scale, score):
    assert parse_judge_reply(reply(raw), scale)[0] == score


@pytest.mark.parametrize(
    "raw,scale",
    [
        ("CLASS_EXACTLY_MET", "9"),  # a 5-point name on the 9-point scale
        ("CLASS_MAJOR", "5"),  # a 9-point name on the 5-point scale
        ("CLASS_FULLY_PRESENT", "9"),  # the docs' old names
        ("", "9"),
        ("0.75", "9"),
        ("CLASS EXACT", "9"),
    ],
)
def test_class_not_in_active_scale(raw, scale):
    with pytest.raises(JudgeReplyError, match=r"^Invalid classification value: '"):
        parse_judge_reply(reply(raw), scale)


def test_invalid_class_message_shows_the_trimmed_raw_value():
    with pytest.raises(JudgeReplyError) as info:
        parse_judge_reply(reply("  bogus  "), "9")
    assert str(info.value) == "Invalid classification value: 'bogus'"


@pytest.mark.parametrize("text", ["", "   \n\t", None])
def test_empty_reply(text):
    with pytest.raises(JudgeReplyError, match=r"^Empty response$"):
        parse_judge_reply(text, "9")


@pytest.mark.parametrize(
    "text",
    [
        "<classification>CLASS_EXACT</classification>",  # no reflection
        "<reflection>fine</reflection>",  # no classification
        "The answer is CLASS_EXACT.",  # no tags at all
        "<Reflection>x</Reflection><Classification>CLASS_EXACT</Classification>",  # tag case matters
        "<reflection>x<classification>CLASS_EXACT</classification>",  # unclosed reflection
    ],
)
def test_missing_tags(text):
    with pytest.raises(JudgeReplyError, match=r"^Failed to parse XML\. Response: "):
        parse_judge_reply(text, "9")


def test_missing_tags_message_quotes_the_first_100_characters():
    text = "x" * 150
    with pytest.raises(JudgeReplyError) as info:
        parse_judge_reply(text, "9")
    assert str(info.value) == f"Failed to parse XML. Response: {'x' * 100}..."


def test_first_tags_win_and_match_is_not_greedy():
    text = (
        "<reflection> first </reflection><classification>CLASS_TRACE</classification>\n"
        "<reflection>second</reflection><classification>CLASS_EXACT</classification>"
    )
    assert parse_judge_reply(text, "9") == (0.125, "first")


def test_multiline_reflection_and_surrounding_prose():
    text = "Sure.\n<reflection>\nLine one.\nLine two.\n</reflection>\n\n<classification>\nmoderate\n</classification>\nDone."
    assert parse_judge_reply(text, "9") == (0.5, "Line one.\nLine two.")


def test_tags_in_either_order():
    text = "<classification>CLASS_SLIGHT</classification><reflection>r</reflection>"
    assert parse_judge_reply(text, "9") == (0.25, "r")
