"""AgentV / AgentEvals LLM judges: replies and retries (agent-formats.md §1.9, §2.9, §5.4; ruling
26). ``ask`` is a fake coroutine here: it is the judges' own boundary."""

from __future__ import annotations

import json

import pytest
from agent_judge_helpers import CHECKLIST, FREEFORM, RANGES, make_case, make_output

from pytest_weval.formats.model import Evaluator
from pytest_weval.judges.agent import (
    AgentJudgeReplyError,
    extract_json_object,
    judge_agent_evaluator,
    parse_checklist_reply,
    parse_freeform_reply,
    parse_score_range_reply,
)
from pytest_weval.judges.agent_prompts import checklist_messages, freeform_messages, score_range_messages
from pytest_weval.scoring.agent import score_rubric_checks

# --- replies -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        '{"score": 0.7, "hits": ["a"], "misses": [], "reasoning": "ok"}',
        '```json\n{"score": 0.7, "hits": ["a"], "misses": [], "reasoning": "ok"}\n```',
        'Here you go:\n```\n{"score": 0.7, "hits": ["a"], "misses": [], "reasoning": "ok"}\n```\nDone.',
        'Sure. {"score": 0.7, "hits": ["a"], "misses": [], "reasoning": "ok"} Hope {this} helps',
    ],
)
def test_freeform_reply_fenced_or_not(reply):
    assert parse_freeform_reply(reply) == {"score": 0.7, "hits": ["a"], "misses": [], "reasoning": "ok"}


def test_freeform_reply_keeps_four_nonblank_hits_and_allows_missing_lists():
    parsed = parse_freeform_reply('{"score": 1, "hits": ["a", " ", "b", "c", "d", "e"]}')
    assert parsed == {"score": 1.0, "hits": ["a", "b", "c", "d"], "misses": [], "reasoning": None}


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("I think it is good.", "no JSON object"),
        ("{score: 0.5}", "does not parse"),
        ("[1, 2]", "no JSON object"),
        ('{"hits": []}', "'score'"),
        ('{"score": "0.5"}', "'score'"),
        ('{"score": true}', "'score'"),
        ('{"score": 1.5}', "from 0 to 1"),
        ('{"score": -0.1}', "from 0 to 1"),
        ('{"score": 0.5, "hits": "a"}', "'hits'"),
        ('{"score": 0.5, "misses": [1]}', "'misses'"),
        ('{"score": 0.5, "reasoning": 3}', "'reasoning'"),
    ],
)
def test_freeform_reply_invalid(reply, why):
    with pytest.raises(AgentJudgeReplyError, match=why):
        parse_freeform_reply(reply)


def test_extract_json_object_takes_the_object_not_a_list():
    assert extract_json_object('x {"a": {"b": 1}} y') == {"a": {"b": 1}}
    with pytest.raises(AgentJudgeReplyError):
        extract_json_object("```json\n[1]\n```")


def test_checklist_reply():
    reply = json.dumps(
        {
            "checks": [
                {"id": "explains", "satisfied": False, "reasoning": "no"},
                {"id": "names-fn", "satisfied": True, "reasoning": "yes"},
                {"id": "names-fn", "satisfied": False, "reasoning": "repeat ignored"},
                {"id": "other", "satisfied": True, "reasoning": "unknown id dropped"},
                {"id": "brief", "satisfied": True},
            ],
            "overall_reasoning": "fine",
        }
    )
    assert parse_checklist_reply(reply, CHECKLIST.rubrics) == {
        "checks": [
            {"id": "names-fn", "satisfied": True, "reasoning": "yes"},
            {"id": "explains", "satisfied": False, "reasoning": "no"},
            {"id": "brief", "satisfied": True, "reasoning": ""},
        ],
        "overall_reasoning": "fine",
    }


@pytest.mark.parametrize(
    ("checks", "why"),
    [
        ("nope", "'checks' must be a list"),
        ([{"satisfied": True}], "string 'id'"),
        ([{"id": "names-fn", "satisfied": True}], r"no check for \[explains\], \[brief\]"),
        (
            [{"id": i, "satisfied": "yes"} for i in ("names-fn", "explains", "brief")],
            "'satisfied' must be true or false",
        ),
    ],
)
def test_checklist_reply_invalid(checks, why):
    with pytest.raises(AgentJudgeReplyError, match=why):
        parse_checklist_reply(json.dumps({"checks": checks}), CHECKLIST.rubrics)


def test_score_range_reply():
    reply = (
        '```json\n{"checks": [{"id": "clarity", "score": 10.0}, {"id": "accuracy", "score": 7, "reasoning": "r"}]}\n```'
    )
    assert parse_score_range_reply(reply, RANGES.rubrics) == {
        "checks": [
            {"id": "accuracy", "score": 7, "reasoning": "r"},
            {"id": "clarity", "score": 10, "reasoning": ""},
        ],
        "overall_reasoning": None,
    }


@pytest.mark.parametrize("score", [11, -1, 6.5, "7", None, True])
def test_score_range_reply_invalid_score(score):
    reply = json.dumps({"checks": [{"id": "accuracy", "score": score}, {"id": "clarity", "score": 5}]})
    with pytest.raises(AgentJudgeReplyError, match=r"\[accuracy\]: 'score' must be an integer from 0 to 10"):
        parse_score_range_reply(reply, RANGES.rubrics)


# --- asking and retrying -------------------------------------------------------------------------


class FakeAsk:
    """Replies in turn; records every request."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.requests: list[tuple] = []

    async def __call__(self, judge, messages, temperature, max_tokens):
        self.requests.append((judge, messages, temperature, max_tokens))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


async def test_freeform_judge_result():
    ask = FakeAsk('{"score": 0.75, "hits": ["names parse()"], "misses": ["no test"], "reasoning": "mostly"}')
    evaluator = Evaluator(name="quality", type="llm_judge", weight=2.0, required=0.8)
    result = await judge_agent_evaluator(make_case(), evaluator, make_output(), ask, "openai:gpt-4o-mini")
    assert result.error is None
    assert (result.name, result.type, result.weight, result.required) == ("quality", "llm_judge", 2.0, 0.8)
    assert result.score == 0.75 and result.verdict == "borderline"
    assert result.hits == ("names parse()",) and result.misses == ("no test",) and result.reasoning == "mostly"
    judge, messages, temperature, max_tokens = ask.requests[0]
    assert judge.model == "openai:gpt-4o-mini" and temperature == 0.0 and max_tokens >= 1000
    assert messages == freeform_messages(make_case(), evaluator, make_output())


@pytest.mark.parametrize(("score", "verdict"), [(0.8, "pass"), (0.6, "borderline"), (0.59, "fail"), (0, "fail")])
async def test_freeform_verdicts(score, verdict):
    result = await judge_agent_evaluator(make_case(), FREEFORM, make_output(), FakeAsk(f'{{"score": {score}}}'), "m")
    assert result.verdict == verdict


async def test_retry_differs_and_then_succeeds():
    ask = FakeAsk("not json", '{"score": 2}', '{"score": 1, "hits": ["x"]}')
    result = await judge_agent_evaluator(make_case(), FREEFORM, make_output(), ask, "m")
    assert result.error is None and result.score == 1.0 and result.details == {"judge": "m", "attempts": 3}
    first, second, third = (r[1] for r in ask.requests)
    assert first == freeform_messages(make_case(), FREEFORM, make_output())
    # each retry is a different request (the engine caches identical ones), same roles
    assert first != second != third and first != third
    assert [m["role"] for m in second] == ["system", "user"]
    assert second[0] == first[0]
    assert second[1]["content"].startswith(first[1]["content"])
    assert "Attempt 2 of 3" in second[1]["content"] and "no JSON object" in second[1]["content"]
    assert "Attempt 3 of 3" in third[1]["content"] and "from 0 to 1" in third[1]["content"]
    assert "Attempt 2" not in third[1]["content"]


async def test_all_attempts_fail_is_an_error_not_a_zero():
    ask = FakeAsk("no", "still no", "{}")
    result = await judge_agent_evaluator(make_case(), FREEFORM, make_output(), ask, "judge-x")
    assert len(ask.requests) == 3
    assert result.error is not None and "judge-x" in result.error and "3 attempt" in result.error
    assert "'score'" in result.error  # the last reason


async def test_attempts_is_configurable():
    ask = FakeAsk("no")
    result = await judge_agent_evaluator(make_case(), FREEFORM, make_output(), ask, "m", attempts=1)
    assert len(ask.requests) == 1 and result.error


async def test_transport_failure_is_an_error_at_once():
    ask = FakeAsk(RuntimeError("HTTP 500 after retries"), '{"score": 1}')
    result = await judge_agent_evaluator(make_case(), FREEFORM, make_output(), ask, "m")
    assert len(ask.requests) == 1
    assert result.error == "judge m failed: HTTP 500 after retries"


async def test_freeform_negate_is_applied():
    evaluator = Evaluator(name="not-rude", type="llm_judge", negate=True)
    result = await judge_agent_evaluator(make_case(), evaluator, make_output(), FakeAsk('{"score": 0.1}'), "m")
    assert result.error is None and result.score == pytest.approx(0.9) and result.verdict == "pass"


async def test_rubric_evaluator_results_through_the_scoring_layer():
    reply = json.dumps(
        {
            "checks": [
                {"id": "names-fn", "satisfied": True, "reasoning": "a"},
                {"id": "explains", "satisfied": True, "reasoning": "b"},
                {"id": "brief", "satisfied": False, "reasoning": "c"},
            ],
            "overall_reasoning": "good",
        }
    )
    result = await judge_agent_evaluator(make_case(), CHECKLIST, make_output(), FakeAsk(reply), "judge-m")
    assert result.error is None and result.score == pytest.approx(3 / 3.5) and result.verdict == "pass"
    assert result.reasoning == "good" and (result.name, result.type) == ("rubric", "rubric")
    assert result.details["judge"] == "judge-m" and result.details["attempts"] == 1
    # a required item not met fails the evaluator
    failing = reply.replace('"names-fn", "satisfied": true', '"names-fn", "satisfied": false')
    result = await judge_agent_evaluator(make_case(), CHECKLIST, make_output(), FakeAsk(failing), "m")
    assert result.verdict == "fail" and "names-fn" in result.details["required_failed"]
    # score ranges: 0-10 scores / 10, weighted
    ranges = '{"checks": [{"id": "accuracy", "score": 8}, {"id": "clarity", "score": 3}]}'
    result = await judge_agent_evaluator(make_case(), RANGES, make_output(), FakeAsk(ranges), "m")
    assert result.error is None and result.score == pytest.approx((0.8 * 3 + 0.3) / 4)


async def test_rubric_evaluator_that_never_parses_is_an_error():
    result = await judge_agent_evaluator(make_case(), RANGES, make_output(), FakeAsk("a", "b", "c"), "m")
    assert result.error and "3 attempt" in result.error
    assert result.details == {"judge": "m", "attempts": 3} and result.name == "analytic"


async def test_rubric_checks_checklist_with_a_retry():
    checks = [
        {"id": "names-fn", "satisfied": True, "reasoning": "a"},
        {"id": "explains", "satisfied": True, "reasoning": "b"},
        {"id": "brief", "satisfied": False, "reasoning": "c"},
    ]
    good = json.dumps({"checks": checks, "overall_reasoning": "ok"})
    ask = FakeAsk('{"checks": [{"id": "names-fn", "satisfied": true}]}', good)
    result = await judge_agent_evaluator(make_case(), CHECKLIST, make_output(), ask, "m")
    assert result.error is None and result.details["attempts"] == 2
    assert result.score == score_rubric_checks(CHECKLIST, checks, reasoning="ok").score
    assert ask.requests[0][1] == checklist_messages(make_case(), CHECKLIST, make_output())
    assert "no check for [explains], [brief]" in ask.requests[1][1][1]["content"]


async def test_rubric_reply_score_ranges():
    ask = FakeAsk(
        '{"checks": [{"id": "accuracy", "score": 8}, {"id": "clarity", "score": 3}], "overall_reasoning": "s"}'
    )
    result = await judge_agent_evaluator(make_case(), RANGES, make_output(), ask, "m")
    assert result.error is None and result.details["attempts"] == 1 and result.reasoning == "s"
    assert ask.requests[0][1] == score_range_messages(make_case(), RANGES, make_output())
