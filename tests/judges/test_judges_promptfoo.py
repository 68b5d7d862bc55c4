"""promptfoo's model-graded assertions: the requests sent to the grader, identical to promptfoo
0.123.1's, and how the replies are read.

``data/promptfoo_grading_requests.json`` holds the grading prompts as promptfoo 0.123.1 renders
them: its published templates (``promptfoo`` 0.123.1 on npm) rendered by its
``renderLlmRubricPrompt`` steps with nunjucks 3.2.4, for the inputs named in each key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_weval.judges.promptfoo import (
    EmbeddingRequest,
    GraderRequest,
    chat_messages,
    grading_for,
    is_model_graded,
    render_grading_prompt,
)
from pytest_weval.judges.promptfoo_prompts import (
    ANSWER_RELEVANCY_GENERATE,
    CLOSED_QA_PROMPT,
    FACTUALITY_PROMPT,
    GEVAL_PROMPT_EVALUATE,
    GEVAL_PROMPT_STEPS,
    LLM_RUBRIC_PROMPT,
)
from pytest_weval.scoring.promptfoo import (
    AssertionContext,
    ComponentResult,
    grade_test,
    parse_assertion,
    score_assertion,
)

GOLDEN: dict[str, str] = json.loads((Path(__file__).parent / "data" / "promptfoo_grading_requests.json").read_text())
VARS = {"name": "Ada", "obj": {"k": [1, 2]}, "list": ["a", {"b": 1}]}


def drive(raw: dict[str, Any], replies: list[Any], **ctx: Any) -> tuple[list[Any], ComponentResult]:
    """Run a grading to its end with the given replies; the requests it sent and its result."""
    grading = grading_for(parse_assertion(raw, "promptfooconfig.yaml"), AssertionContext(**ctx))
    sent = []
    for reply in replies:
        request = grading.next_request()
        assert request is not None, "the grading asked fewer questions than replies given"
        sent.append(request)
        grading.take_reply(reply)
    assert grading.next_request() is None
    return sent, grading.result()


# --- request content ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "output",
    ['Hello <b>there</b> {"x": 1}', '{"a": [1, {"b": 2}], "c": "ü"}', "[1, 2]", '"quoted"', "3.0", "null"],
)
def test_llm_rubric_request_is_promptfoos(output: str) -> None:
    sent, _ = drive(
        {"type": "llm-rubric", "value": "Is polite to {{ name }}"},
        ['{"pass": true, "score": 1, "reason": "ok"}'],
        output=output,
        vars=VARS,
    )
    request = sent[0]
    assert isinstance(request, GraderRequest)
    assert request.prompt == GOLDEN[f"llm-rubric {output}"]
    assert request.messages == json.loads(GOLDEN[f"llm-rubric {output}"])
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert (request.temperature, request.max_tokens) == (None, None)  # the grader's config decides


def test_factuality_request_is_promptfoos_with_the_trimmed_prompt() -> None:
    sent, _ = drive(
        {"type": "factuality", "value": "Paris"},
        ['{"category": "A", "reason": "subset"}'],
        output="It is Paris.",
        prompt="What is the capital of France?\n",
        vars=VARS,
    )
    assert sent[0].prompt == GOLDEN["factuality"]


def test_closed_qa_request_is_promptfoos() -> None:
    sent, _ = drive(
        {"type": "model-graded-closedqa", "value": "is a greeting"},
        ["reasoning...\nY\nY"],
        output='{"greeting": "hi"}',
        prompt="Say hi",
        vars=VARS,
    )
    assert sent[0].prompt == GOLDEN["closedqa"]
    assert sent[0].messages == json.loads(GOLDEN["closedqa"])


def test_g_eval_requests_are_promptfoos() -> None:
    sent, result = drive(
        {"type": "g-eval", "value": "Coherence"},
        ['{"steps": ["Read it", "Judge it"]}', '{"score": 7, "reason": "mostly coherent"}'],
        output="A story.",
        prompt="Tell me",
    )
    assert [r.prompt for r in sent] == [GOLDEN["geval-steps"], GOLDEN["geval-evaluate"]]
    # Not JSON: promptfoo's chat providers send the text as one user message.
    assert sent[0].messages == [{"role": "user", "content": GOLDEN["geval-steps"]}]
    assert (result.pass_, result.score, result.reason) == (True, 0.7, "mostly coherent")


def test_answer_relevance_asks_three_questions_then_embeds() -> None:
    replies: list[Any] = ["Which city is the capital?"] * 3 + [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]
    sent, result = drive(
        {"type": "answer-relevance", "threshold": 0.6},
        replies,
        output="Paris is the capital.",
        prompt="What is the capital of France?",
        vars={"query": "capital of France?"},
    )
    assert [r.prompt for r in sent[:3]] == [GOLDEN["answer-relevance"]] * 3
    embeds = sent[3:]
    assert all(isinstance(r, EmbeddingRequest) for r in embeds)
    assert [r.text for r in embeds] == ["capital of France?"] + ["Which city is the capital?"] * 3
    assert result.score == pytest.approx(2 / 3)
    assert (result.pass_, result.reason) == (True, "Relevance 0.67 is greater than threshold 0.6")


def test_custom_rubric_prompt_replaces_the_default() -> None:
    template = "Grade {{ output }} for {{ name }} against {{ rubric }}; obj={{ obj }} list={{ list }}"
    sent, _ = drive(
        {"type": "llm-rubric", "value": "R", "rubricPrompt": template},
        ['{"pass": true}'],
        output="ok",
        vars=VARS,
    )
    assert sent[0].prompt == GOLDEN["custom"]
    assert sent[0].messages == [{"role": "user", "content": GOLDEN["custom"]}]


def test_test_options_rubric_prompt_and_provider_apply() -> None:
    test = {
        "options": {"rubricPrompt": [{"role": "user", "content": "Judge {{ output }}"}], "provider": "openai:gpt-4o"}
    }
    sent, _ = drive({"type": "llm-rubric", "value": "x"}, ['{"pass": true}'], output="it", test=test)
    assert sent[0].messages == [{"role": "user", "content": "Judge it"}]
    assert sent[0].provider == "openai:gpt-4o"
    own, _ = drive(
        {"type": "llm-rubric", "value": "x", "provider": "anthropic:messages:claude"},
        ['{"pass": true}'],
        output="it",
        test=test,
    )
    assert own[0].provider == "anthropic:messages:claude"


def test_templates_are_promptfoos_dedented_text() -> None:
    # Spot checks that the constants are promptfoo's as published (the goldens hold them whole).
    assert (
        json.loads(LLM_RUBRIC_PROMPT)[1]["content"]
        == "<Output>\n{{ output }}\n</Output>\n<Rubric>\n{{ rubric }}\n</Rubric>"
    )
    assert json.loads(LLM_RUBRIC_PROMPT)[0]["content"].count("<Rubric>") == 2
    assert json.loads(FACTUALITY_PROMPT)[0]["content"].startswith("You are a precise factuality evaluator")
    assert json.loads(CLOSED_QA_PROMPT)[0]["content"].endswith("\n\n    Reasoning:")
    assert GEVAL_PROMPT_STEPS.startswith("\nGiven evaluation criteria") and GEVAL_PROMPT_EVALUATE.endswith("JSON:\n")
    assert ANSWER_RELEVANCY_GENERATE.endswith("Answer:{{answer}}\nQuestion:")
    assert (
        render_grading_prompt(ANSWER_RELEVANCY_GENERATE, {"answer": "Paris is the capital."})
        == GOLDEN["answer-relevance"]
    )


def test_chat_messages_parses_as_promptfoos_providers_do() -> None:
    assert chat_messages('[{"role": "user", "content": "hi"}]') == [{"role": "user", "content": "hi"}]
    assert chat_messages("- role: system\n  content: be kind") == [{"role": "system", "content": "be kind"}]
    assert chat_messages("plain") == [{"role": "user", "content": "plain"}]
    with pytest.raises(ValueError):
        chat_messages("[{broken]")


# --- reply reading: llm-rubric -----------------------------------------------------------------


RUBRIC = {"type": "llm-rubric", "value": "is polite"}


@pytest.mark.parametrize(
    ("raw", "reply", "expected"),
    [
        (RUBRIC, 'Here: {"reason": "polite", "pass": true, "score": 1}', (True, 1.0, "polite")),
        (RUBRIC, '{"reason": "rude", "pass": false, "score": 0}', (False, 0.0, "rude")),
        # pass defaults to true; a textual pass is read as yes/no; a missing score follows pass
        (RUBRIC, '{"reason": "ok"}', (True, 1.0, "ok")),
        (RUBRIC, '{"pass": "yes", "score": "0.9", "reason": "r"}', (True, 0.9, "r")),
        (RUBRIC, '{"pass": "nope", "reason": "r"}', (False, 0.0, "r")),
        # the assertion threshold: the grader's pass AND score >= threshold
        ({**RUBRIC, "threshold": 0.8}, '{"pass": true, "score": 0.7}', (False, 0.7, "Score 0.7 below threshold 0.8")),
        ({**RUBRIC, "threshold": 0.5}, '{"pass": true, "score": 0.7}', (True, 0.7, "Grading passed")),
        ({**RUBRIC, "threshold": 0.5}, '{"pass": false, "score": 0.9, "reason": "no"}', (False, 0.9, "no")),
        # not-llm-rubric inverts pass and the score
        ({**RUBRIC, "type": "not-llm-rubric"}, '{"pass": true, "score": 0.75, "reason": "x"}', (False, 0.25, "x")),
        ({**RUBRIC, "type": "not-llm-rubric"}, '{"pass": false, "score": 0, "reason": "x"}', (True, 1.0, "x")),
    ],
)
def test_llm_rubric_reply(raw: dict[str, Any], reply: str, expected: tuple[bool, float, str]) -> None:
    _, result = drive(raw, [reply], output="hello")
    assert (result.pass_, result.score, result.reason) == expected


def test_llm_rubric_without_json_fails_and_not_does_not_turn_it_into_a_pass() -> None:
    for kind in ("llm-rubric", "not-llm-rubric"):
        _, result = drive({**RUBRIC, "type": kind}, ["I think it is fine."], output="hello")
        assert (result.pass_, result.score, result.error) == (False, 0.0, False)
        assert result.reason == "Could not extract JSON from llm-rubric response"


def test_grader_error_fails_the_assertion() -> None:
    grading = grading_for(parse_assertion(RUBRIC, "f.yaml"), AssertionContext(output="hello"))
    grading.take_error("HTTP 500 from the grader")
    assert grading.next_request() is None
    assert (grading.result().pass_, grading.result().reason) == (False, "HTTP 500 from the grader")


# --- reply reading: closed QA, factuality, g-eval ----------------------------------------------

QA = {"type": "model-graded-closedqa", "value": "is a greeting"}


@pytest.mark.parametrize(
    ("reply", "passed", "start"),
    [
        ("It greets.\nY\nY  \n", True, "The submission meets the criterion:\n"),
        ("Not a greeting.\nN\nN", False, "The submission does not meet the criterion:\n"),
        ("Y\nmaybe", False, "Model grader produced a malformed response:\n"),
    ],
)
def test_closed_qa_passes_only_when_the_reply_ends_in_y(reply: str, passed: bool, start: str) -> None:
    _, result = drive(QA, [reply], output="hi", prompt="Say hi")
    assert (result.pass_, result.score) == (passed, 1.0 if passed else 0.0)
    assert result.reason == start + reply


FACT = {"type": "factuality", "value": "Paris"}


@pytest.mark.parametrize(
    ("reply", "passed", "reason"),
    [
        ('{"category": "A", "reason": "a subset"}', True, "a subset"),
        (
            '{"category": "c"}',
            True,
            "Category C: The submitted answer contains all the same details as the expert answer.",
        ),
        ('{"category": "D", "reason": "disagrees"}', False, "disagrees"),
        ('{"category": "Z"}', False, "Invalid category value: Z"),
        ("(B) It adds detail.", True, "It adds detail."),
        ("no idea", False, "Factuality checker output did not match expected format: no idea"),
    ],
)
def test_factuality_reads_the_category(reply: str, passed: bool, reason: str) -> None:
    _, result = drive(FACT, [reply], output="Paris", prompt="Capital?")
    assert (result.pass_, result.reason) == (passed, reason)


def test_factuality_scores_come_from_the_test_options() -> None:
    test = {"options": {"factuality": {"subset": 0, "superset": 0.5}}}
    _, subset = drive(FACT, ['{"category": "A"}'], output="Paris", prompt="Q", test=test)
    _, superset = drive(FACT, ['{"category": "B"}'], output="Paris", prompt="Q", test=test)
    assert (subset.pass_, subset.score) == (False, 0.0)
    assert (superset.pass_, superset.score) == (True, 0.5)


@pytest.mark.parametrize(
    ("replies", "passed", "score", "reason"),
    [
        (['{"steps": ["a"]}', '{"score": 9, "reason": "good"}'], True, 0.9, "good"),
        (['{"steps": ["a"]}', '{"score": 3, "reason": "weak"}'], False, 0.3, "weak"),
        (['{"steps": []}'], False, 0.0, "LLM does not propose any evaluation step"),
        (
            ['{"steps": ["a"]}', '{"score": 11, "reason": "x"}'],
            False,
            0.0,
            "G-Eval result score 11 is outside the expected 0-10 range",
        ),
    ],
)
def test_g_eval_replies(replies: list[str], passed: bool, score: float, reason: str) -> None:
    _, result = drive({"type": "g-eval", "value": "Coherence"}, replies, output="x", prompt="p")
    assert (result.pass_, result.score, result.reason) == (passed, score, reason)


def test_g_eval_list_of_criteria_averages() -> None:
    replies = ['{"steps": ["a"]}', '{"score": 10, "reason": "r1"}', '{"steps": ["b"]}', '{"score": 4, "reason": "r2"}']
    _, result = drive({"type": "g-eval", "value": ["A", "B"]}, replies, output="x", prompt="p")
    assert (result.pass_, result.score, result.reason) == (True, pytest.approx(0.7), "r1\n\nr2")


def test_g_eval_without_a_prompt_is_a_row_error() -> None:
    _, result = drive({"type": "g-eval", "value": "Coherence"}, [], output="x", prompt="")
    assert result.error is True


# --- assert-sets and the row -------------------------------------------------------------------


def test_assert_set_with_a_graded_child_is_driven_through_it() -> None:
    raw = {
        "type": "assert-set",
        "threshold": 0.5,
        "assert": [{"type": "contains", "value": "hello"}, {"type": "llm-rubric", "value": "is rude"}],
    }
    assertion = parse_assertion(raw, "f.yaml")
    assert is_model_graded(assertion)
    sent, result = drive(raw, ['{"pass": false, "score": 0, "reason": "polite"}'], output="hello")
    assert len(sent) == 1
    assert (result.pass_, result.score) == (True, 0.5)
    row = grade_test([assertion], [result], None)
    assert [c.assertion.type for c in row.component_results if c.assertion] == ["assert-set", "contains", "llm-rubric"]
    assert (row.success, row.score) == (True, 0.5)


def test_llm_rubric_in_a_row_with_weights() -> None:
    contains = parse_assertion({"type": "contains", "value": "hello"}, "f.yaml")
    rubric = parse_assertion({"type": "llm-rubric", "value": "x", "weight": 3, "metric": "tone"}, "f.yaml")
    ctx = AssertionContext(output="hello")
    grading = grading_for(rubric, ctx)
    grading.take_reply('{"pass": false, "score": 0.2, "reason": "flat"}')
    row = grade_test([contains, rubric], [score_assertion(contains, ctx), grading.result()], None)
    assert row.score == pytest.approx((1 + 0.6) / 4)
    assert (row.success, row.reason) == (False, "flat")
    assert row.named_scores == {"tone": pytest.approx(0.2)}


# Generated replies read by promptfoo 0.123.1 itself: its published reply reading for llm-rubric
# (runJsonGradingPrompt's tail and handleLlmRubric's inversion) and factuality
# (parseFactualityJsonResponse, the legacy pattern, buildFactualityResult).
REPLIES = json.loads((Path(__file__).parent / "data" / "promptfoo_0.123.1_grader_replies.json").read_text())


@pytest.mark.parametrize("case", REPLIES, ids=lambda case: case["assertion"]["type"])
def test_replies_are_read_as_promptfoo_0_123_1_reads_them(case: dict[str, Any]) -> None:
    _, result = drive(case["assertion"], [case["reply"]], output="o", prompt="p", test=case.get("test", {}))
    expected = case["promptfoo"]
    assert (result.pass_, result.reason) == (expected["pass"], expected["reason"])
    assert result.score == pytest.approx(expected["score"])


# --- similar (embeddings) ----------------------------------------------------------------------


def test_similar_embeds_the_expected_text_then_the_output() -> None:
    sent, result = drive(
        {"type": "similar", "value": "Paris is the capital", "threshold": 0.8},
        [[1.0, 0.0], [0.6, 0.8]],
        output="The capital is Paris",
    )
    assert [(type(r).__name__, r.text) for r in sent] == [
        ("EmbeddingRequest", "Paris is the capital"),
        ("EmbeddingRequest", "The capital is Paris"),
    ]
    assert (result.pass_, result.score) == (False, pytest.approx(0.6))
    assert result.reason == "Similarity 0.60 is less than threshold 0.8"
    _, close = drive({"type": "similar", "value": "x"}, [[1.0, 0.0], [0.8, 0.6]], output="y")
    assert (close.pass_, close.reason) == (True, "Similarity 0.80 is greater than or equal to threshold 0.75")


def test_not_similar_inverts() -> None:
    _, result = drive({"type": "not-similar", "value": "x"}, [[1.0, 0.0], [0.6, 0.8]], output="y")
    assert (result.pass_, result.score) == (True, pytest.approx(0.4))
    assert result.reason == "Similarity 0.60 is less than threshold 0.75"


def test_similar_list_passes_on_the_first_close_value() -> None:
    sent, result = drive(
        {"type": "similar", "value": ["far", "near", "never asked"]},
        [[0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0]],
        output="y",
    )
    assert [r.text for r in sent] == ["far", "y", "near", "y"]
    assert (result.pass_, result.score) == (True, 1.0)
    _, none = drive(
        {"type": "similar", "value": ["a", "b"]}, [[0.0, 1.0], [1.0, 0.0], [0.6, 0.8], [1.0, 0.0]], output="y"
    )
    assert (none.pass_, none.score) == (False, pytest.approx(0.6))
    assert none.reason == "None of the provided values met the similarity threshold"


def test_similar_euclidean_and_dot() -> None:
    _, euclid = drive({"type": "similar:euclidean", "value": "x", "threshold": 1}, [[0.0, 0.0], [0.6, 0.8]], output="y")
    assert (euclid.pass_, euclid.score) == (True, pytest.approx(0.5))
    assert euclid.reason == "Distance 1.00 is less than or equal to threshold 1"
    _, dot = drive({"type": "similar:dot", "value": "x", "threshold": 2}, [[1.0, 2.0], [1.0, 0.5]], output="y")
    assert (dot.pass_, dot.score) == (True, 2.0)


def test_similar_uses_the_embedding_provider_of_a_typed_provider() -> None:
    raw = {
        "type": "similar",
        "value": "x",
        "provider": {"text": "openai:gpt-4o", "embedding": "openai:text-embedding-3-small"},
    }
    sent, _ = drive(raw, [[1.0], [1.0]], output="y")
    assert {r.provider for r in sent} == {"openai:text-embedding-3-small"}
