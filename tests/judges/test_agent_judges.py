"""AgentV / AgentEvals LLM judges: requests, replies and retries (agent-formats.md §1.9, §2.9, §4, §5.4;
ruling 26). ``ask`` is a fake coroutine here: it is the judges' own boundary."""

from __future__ import annotations

import json

import pytest

from pytest_weval.blueprint.model import Location
from pytest_weval.formats.model import (
    AgentCase,
    AgentMessage,
    AgentOutput,
    ContentBlock,
    Evaluator,
    Rubric,
    ScoreRange,
    ToolCall,
)
from pytest_weval.judges.agent import (
    DEFAULT_FREEFORM_TEMPLATE,
    AgentJudgeFailed,
    AgentJudgeReplyError,
    ask_rubric_checks,
    ask_rubric_reply,
    checklist_messages,
    extract_json_object,
    freeform_messages,
    judge_agent_evaluator,
    judge_messages,
    judge_mode,
    parse_checklist_reply,
    parse_freeform_reply,
    parse_score_range_reply,
    render_template,
    retry_messages,
    score_range_messages,
    template_variables,
)

LOC = Location(path="evals/dataset.yaml", line=3)


def make_case(**kw) -> AgentCase:
    values = dict(
        id="case-1",
        criteria="  Explains the fix and names the function  ",
        input=(
            AgentMessage(role="system", text="Be brief."),
            AgentMessage(
                role="user",
                text="Why does parse() fail?\n\nfile body",
                blocks=(
                    ContentBlock(type="text", value="Why does parse() fail?"),
                    ContentBlock(type="file", value="file body", path="/abs/evals/parse.py"),
                ),
            ),
        ),
        expected=(AgentMessage(role="assistant", text="It reads past the end of the buffer."),),
        note="written by hand",
        location=LOC,
    )
    values.update(kw)
    return AgentCase(**values)


def make_output(answer: str = "  The loop reads one byte too many in parse().  ") -> AgentOutput:
    return AgentOutput(
        messages=(
            AgentMessage(
                role="assistant",
                text="",
                tool_calls=(ToolCall(name="read_file", args={"filePath": "parse.py"}, output="...", duration_ms=12.0),),
            ),
            AgentMessage(role="assistant", text=answer),
        ),
        duration_ms=1500.0,
        input_tokens=100,
        output_tokens=20,
        cost_usd=0.001,
    )


FREEFORM = Evaluator(name="quality", type="llm_judge")
CHECKLIST = Evaluator(
    name="rubric",
    type="rubric",
    rubrics=(
        Rubric(id="names-fn", outcome="Names the function parse()", required=True),
        Rubric(id="explains", outcome="Explains the off-by-one", weight=2.0),
        Rubric(id="brief", outcome="Is brief", weight=0.5, required=False),
    ),
)
RANGES = Evaluator(
    name="analytic",
    type="rubric",
    rubrics=(
        Rubric(
            id="accuracy",
            outcome="Technical accuracy",
            weight=3.0,
            required_min_score=7,
            score_ranges=(
                ScoreRange(low=0, high=3, outcome="Wrong"),
                ScoreRange(low=4, high=6, outcome="Partly right"),
                ScoreRange(low=7, high=9, outcome="Right"),
                ScoreRange(low=10, high=10, outcome="Exact"),
            ),
        ),
        Rubric(id="clarity", outcome="", score_ranges=(ScoreRange(low=0, high=10, outcome="Any"),)),
    ),
)


# --- modes and requests --------------------------------------------------------------------------


def test_mode_follows_the_rubrics():
    assert judge_mode(FREEFORM) == "freeform"
    assert judge_mode(CHECKLIST) == "checklist"
    assert judge_mode(RANGES) == "score_ranges"
    mixed = Evaluator(name="m", type="llm_judge", rubrics=(*CHECKLIST.rubrics, *RANGES.rubrics))
    assert judge_mode(mixed) == "score_ranges"  # one rubric with ranges switches the evaluator


def test_freeform_default_request():
    system, user = freeform_messages(make_case(), FREEFORM, make_output())
    assert system["role"] == "system" and user["role"] == "user"
    for field in ('"score"', '"hits"', '"misses"', '"reasoning"', "single JSON object", "0.0 to 1.0", "up to 4"):
        assert field in system["content"]
    text = user["content"]
    sections = [
        "[[ ## expected_outcome ## ]]\nExplains the fix and names the function\n",
        "[[ ## question ## ]]\nBe brief. Why does parse() fail?\n",  # text parts of every message, not the file body
        "[[ ## reference_answer ## ]]\nIt reads past the end of the buffer.\n",
        "[[ ## candidate_answer ## ]]\nThe loop reads one byte too many in parse().",
    ]
    positions = [text.index(s) for s in sections]
    assert positions == sorted(positions)
    assert text.endswith("The loop reads one byte too many in parse().")  # trimmed
    assert "expert evaluator" in text and "gold standard" in text and "last message" in text
    assert "{{" not in text
    assert judge_messages(make_case(), FREEFORM, make_output()) == [system, user]


def test_freeform_custom_template_with_every_variable():
    names = [
        "candidate_answer",
        "answer",
        "expected_outcome",
        "criteria",
        "question",
        "reference_answer",
        "input_messages",
        "input",
        "expected_messages",
        "expected_output",
        "output_messages",
        "output",
        "note",
        "file_changes",
    ]
    template = "\n".join(f"<{n}>{{{{ {n} }}}}</{n}>" for n in names) + "\n{{ unknown_thing }} {{unknown}} {{ 1 x }}"
    evaluator = Evaluator(name="custom", type="llm_judge", prompt=template)
    system, user = freeform_messages(make_case(), evaluator, make_output())
    text = user["content"]
    assert '"score"' in system["content"]  # the contract stays in the system prompt
    assert "<candidate_answer>The loop reads one byte too many in parse().</candidate_answer>" in text
    assert "<answer>The loop reads one byte too many in parse().</answer>" in text
    assert "<criteria>Explains the fix and names the function</criteria>" in text
    assert "<expected_outcome>Explains the fix and names the function</expected_outcome>" in text
    assert "<question>Be brief. Why does parse() fail?</question>" in text
    assert "<reference_answer>It reads past the end of the buffer.</reference_answer>" in text
    assert "<note>written by hand</note>" in text
    assert "<file_changes></file_changes>" in text
    # message arrays as pretty JSON
    variables = template_variables(make_case(), make_output())
    assert json.loads(variables["input_messages"])[1] == {
        "role": "user",
        "content": "Why does parse() fail?\n\nfile body",
    }
    assert variables["input"] == variables["input_messages"]
    assert json.loads(variables["expected_messages"]) == [
        {"role": "assistant", "content": "It reads past the end of the buffer."}
    ]
    assert variables["expected_output"] == variables["expected_messages"]
    out = json.loads(variables["output_messages"])
    assert out[0]["tool_calls"] == [
        {"tool": "read_file", "input": {"filePath": "parse.py"}, "output": "...", "duration_ms": 12.0}
    ]
    assert variables["output"] == variables["output_messages"]
    assert '\n  {\n    "role": "user"' in variables["input_messages"]  # indent=2
    # unknown names untouched
    assert text.endswith("{{ unknown_thing }} {{unknown}} {{ 1 x }}")


def test_render_is_one_pass_and_keeps_unknown_names():
    assert render_template("{{a}}-{{ b }}-{{c}}", {"a": "{{b}}", "b": "B"}) == "{{b}}-B-{{c}}"
    assert render_template("{{  a\t}}", {"a": "x"}) == "x"
    assert render_template("{ {a} }", {"a": "x"}) == "{ {a} }"


def test_structured_expected_output_is_pretty_json():
    case = make_case(expected=(), expected_structured={"status": "ok", "n": 2})
    variables = template_variables(case, make_output())
    assert json.loads(variables["expected_messages"]) == [{"role": "assistant", "content": {"status": "ok", "n": 2}}]
    assert variables["reference_answer"] == json.dumps({"status": "ok", "n": 2}, indent=2)


def test_checklist_request():
    system, user = checklist_messages(make_case(), CHECKLIST, make_output())
    assert '"checks"' in system["content"] and '"satisfied": boolean' in system["content"]
    assert '"overall_reasoning"' in system["content"]
    text = user["content"]
    order = ["[[ ## question ## ]]", "[[ ## expected_outcome ## ]]", "[[ ## reference_answer ## ]]"]
    order += ["[[ ## candidate_answer ## ]]", "[[ ## rubrics ## ]]"]
    positions = [text.index(s) for s in order]
    assert positions == sorted(positions)
    lines = text.split("[[ ## rubrics ## ]]\n")[1].splitlines()
    assert lines[:3] == [
        "- [names-fn] (REQUIRED): Names the function parse()",
        "- [explains] (weight: 2): Explains the off-by-one",
        "- [brief] (weight: 0.5): Is brief",
    ]
    assert "satisfied" in lines[-1]


def test_empty_reference_answer_section_is_left_out_of_rubric_prompts():
    case = make_case(expected=())
    _, user = checklist_messages(case, CHECKLIST, make_output())
    assert "reference_answer" not in user["content"]
    _, user = score_range_messages(case, RANGES, make_output())
    assert "reference_answer" not in user["content"]


def test_score_range_request():
    system, user = score_range_messages(make_case(), RANGES, make_output())
    assert '"score": integer (0-10)' in system["content"] and "score ranges" in system["content"]
    text = user["content"]
    assert "0 to 10" in text.splitlines()[1]
    body = text.split("[[ ## scoring_criteria ## ]]\n")[1]
    assert body.splitlines()[:8] == [
        "",
        "### Criterion: accuracy (weight: 3) [REQUIRED: min score 7]",
        "Description: Technical accuracy",
        "Score ranges:",
        "  - Score 0-3: Wrong",
        "  - Score 4-6: Partly right",
        "  - Score 7-9: Right",
        "  - Score 10: Exact",
    ]
    assert "### Criterion: clarity\nScore ranges:\n  - Score 0-10: Any" in body  # no description when empty
    assert judge_messages(make_case(), RANGES, make_output())[1]["content"] == text


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


async def test_ask_rubric_checks_needs_rubrics():
    with pytest.raises(ValueError, match="no rubrics"):
        await ask_rubric_checks(make_case(), FREEFORM, make_output(), FakeAsk(), "m")


async def test_rubric_checks_checklist_with_a_retry():
    good = json.dumps(
        {
            "checks": [
                {"id": "names-fn", "satisfied": True, "reasoning": "a"},
                {"id": "explains", "satisfied": True, "reasoning": "b"},
                {"id": "brief", "satisfied": False, "reasoning": "c"},
            ],
            "overall_reasoning": "ok",
        }
    )
    ask = FakeAsk('{"checks": [{"id": "names-fn", "satisfied": true}]}', good)
    checks = await ask_rubric_checks(make_case(), CHECKLIST, make_output(), ask, "m")
    assert checks == [
        {"id": "names-fn", "satisfied": True, "reasoning": "a"},
        {"id": "explains", "satisfied": True, "reasoning": "b"},
        {"id": "brief", "satisfied": False, "reasoning": "c"},
    ]
    assert ask.requests[0][1] == checklist_messages(make_case(), CHECKLIST, make_output())
    assert "no check for [explains], [brief]" in ask.requests[1][1][1]["content"]


async def test_rubric_reply_score_ranges():
    ask = FakeAsk(
        '{"checks": [{"id": "accuracy", "score": 8}, {"id": "clarity", "score": 3}], "overall_reasoning": "s"}'
    )
    reply = await ask_rubric_reply(make_case(), RANGES, make_output(), ask, "m")
    assert reply == {
        "mode": "score_ranges",
        "checks": [
            {"id": "accuracy", "score": 8, "reasoning": ""},
            {"id": "clarity", "score": 3, "reasoning": ""},
        ],
        "overall_reasoning": "s",
        "attempts": 1,
    }
    assert ask.requests[0][1] == score_range_messages(make_case(), RANGES, make_output())


async def test_rubric_checks_fail_after_all_attempts():
    ask = FakeAsk("x", "y", "z")
    with pytest.raises(AgentJudgeFailed, match="gave no usable reply in 3 attempt") as info:
        await ask_rubric_checks(make_case(), RANGES, make_output(), ask, "m")
    assert info.value.attempts == 3


def test_retry_messages_leave_the_original_alone():
    original = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert retry_messages(original, 1, 3, "r") is original
    again = retry_messages(original, 2, 3, "bad")
    assert original == [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert again[1]["content"].startswith("U\n\n(Attempt 2 of 3") and "bad" in again[1]["content"]


def test_default_template_uses_the_classic_names():
    for name in ("expected_outcome", "question", "reference_answer", "candidate_answer"):
        assert f"[[ ## {name} ## ]]\n{{{{{name}}}}}" in DEFAULT_FREEFORM_TEMPLATE
