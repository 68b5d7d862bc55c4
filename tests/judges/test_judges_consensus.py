"""Consensus, backup judge, failures and inversion (docs/judges.md, 'Consensus'; docs/rulings.md, rulings 10-11)."""

from __future__ import annotations

import asyncio

import pytest

from pytest_weval.blueprint.model import EvalPoint
from pytest_weval.judges import (
    ALL_FAILED,
    BACKUP_JUDGE,
    DEFAULT_JUDGES,
    JudgeOutcome,
    JudgeSpec,
    consensus_assessment,
    judge_points,
    judge_points_with,
    select_judges,
)

GEMINI, GPT, CLAUDE = DEFAULT_JUDGES
POINT = EvalPoint(text="Mentions the deadline", display_text="Mentions the deadline")
NOT_POINT = EvalPoint(text="Is rude", display_text="Is rude", is_inverted=True, path_id="path_0")
A = JudgeSpec("judge-a", "test:a", "holistic")
B = JudgeSpec(None, "test:b", "standard")


def ok(judge, score, reflection="r"):
    return JudgeOutcome(judge, score=score, reflection=reflection)


def fail(judge, error="Client/Network error: boom"):
    return JudgeOutcome(judge, error=error)


# ---------------------------------------------------------------- pure consensus


def test_mean_of_successes_rounded_like_tofixed():
    # 0.125 and 0.5 average to 0.3125 -> 0.31; 0.625 + 0.75 -> 0.6875 -> 0.69
    a = consensus_assessment(POINT, [ok(A, 0.125), ok(B, 0.5)], uses_defaults=False)
    assert a.coverage_extent == 0.31
    b = consensus_assessment(POINT, [ok(A, 0.625), ok(B, 0.75)], uses_defaults=False)
    assert b.coverage_extent == 0.69
    assert b.reflection == ("Consensus from 2 judge(s). Average score: 0.69. See breakdown for individual reflections.")
    assert b.error is None and b.kind == "judged"
    assert b.consensus_note is None and b.failed_judges == []  # the sentence alone: nothing to add


def test_labels_and_individual_judgements_keep_completion_order():
    a = consensus_assessment(POINT, [ok(B, 1.0, "fine"), ok(A, 0.5, "meh")], uses_defaults=False)
    assert a.judge_model_id == "consensus(standard(test:b), judge-a(test:a))"
    assert [(j.judge_model_id, j.coverage_extent, j.reflection) for j in a.individual_judgements] == [
        ("standard(test:b)", 1.0, "fine"),
        ("judge-a(test:a)", 0.5, "meh"),
    ]


def test_partial_failure_keeps_score_and_records_warning():
    a = consensus_assessment(POINT, [ok(A, 1.0), fail(B)], uses_defaults=False)
    expected = (
        "1 of 2 judges failed to return a valid assessment. The backup judge was not used or also "
        "failed. The final score is based on a partial consensus."
    )
    assert a.coverage_extent == 1.0
    assert a.error == expected
    assert f"\n\nWARNING: {expected}" in a.reflection
    assert "standard(test:b): Client/Network error: boom" in a.reflection  # which judge, and why
    assert len(a.individual_judgements) == 1
    # typed, so reports never read the sentences back
    assert a.failed_judges == ["standard(test:b): Client/Network error: boom"]
    assert a.consensus_note is not None and a.consensus_note.startswith(f"WARNING: {expected}")
    assert a.reflection.endswith("\n\n" + a.consensus_note)


def test_all_fail_has_no_score_and_says_why():
    a = consensus_assessment(POINT, [fail(A, "Empty response"), fail(B)], uses_defaults=False)
    assert a.coverage_extent is None
    assert a.error == ALL_FAILED == "All judges failed in consensus mode."
    assert a.judge_model_id is None and a.individual_judgements is None
    assert "judge-a(test:a): Empty response" in a.reflection
    assert a.failed_judges == ["judge-a(test:a): Empty response", "standard(test:b): Client/Network error: boom"]


def test_backup_supplements_default_panel():
    a = consensus_assessment(
        POINT,
        [ok(GEMINI, 0.75), fail(GPT), fail(CLAUDE)],
        uses_defaults=True,
        backup_outcome=ok(BACKUP_JUDGE, 0.25),
    )
    assert a.coverage_extent == 0.5
    assert a.error is None
    assert a.reflection.endswith("\n\nNOTE: Backup judge was used to supplement failed primary judges.")
    assert a.consensus_note == "NOTE: Backup judge was used to supplement failed primary judges."
    assert a.judge_model_id.endswith(", backup-claude-4-5-haiku(openrouter:anthropic/claude-haiku-4.5))")


def test_backup_alone_rescues_all_failed_primaries():
    a = consensus_assessment(
        POINT, [fail(GEMINI), fail(GPT), fail(CLAUDE)], uses_defaults=True, backup_outcome=ok(BACKUP_JUDGE, 1.0)
    )
    assert a.coverage_extent == 1.0 and a.error is None
    assert "NOTE: Backup judge" in a.reflection


def test_failed_backup_leaves_the_partial_warning():
    a = consensus_assessment(
        POINT,
        [ok(GEMINI, 0.75), fail(GPT), fail(CLAUDE)],
        uses_defaults=True,
        backup_outcome=fail(BACKUP_JUDGE),
    )
    assert a.coverage_extent == 0.75
    assert a.error.startswith("2 of 3 judges failed")


def test_backup_whose_model_already_answered_adds_nothing():
    # Ruling 11 (a fix): the reference counts Claude twice here and gets 0.67.
    a = consensus_assessment(
        POINT,
        [ok(GEMINI, 0.8), fail(GPT), ok(CLAUDE, 0.6)],
        uses_defaults=True,
        backup_outcome=ok(BACKUP_JUDGE, 0.6),
    )
    assert a.coverage_extent == 0.7
    assert len(a.individual_judgements) == 2
    assert a.error.startswith("1 of 3 judges failed")


def test_backup_ignored_for_custom_panels_and_when_all_succeeded():
    custom = consensus_assessment(
        POINT, [ok(A, 1.0), fail(B)], uses_defaults=False, backup_outcome=ok(BACKUP_JUDGE, 0.0)
    )
    assert custom.coverage_extent == 1.0 and "backup" not in custom.judge_model_id
    full = consensus_assessment(
        POINT,
        [ok(GEMINI, 1.0), ok(GPT, 1.0), ok(CLAUDE, 1.0)],
        uses_defaults=True,
        backup_outcome=ok(BACKUP_JUDGE, 0.0),
    )
    assert full.coverage_extent == 1.0 and len(full.individual_judgements) == 3


def test_should_not_inverts_after_rounding():
    a = consensus_assessment(NOT_POINT, [ok(A, 0.125), ok(B, 0.5)], uses_defaults=False)
    assert a.coverage_extent == pytest.approx(1 - 0.31)
    assert a.is_inverted and a.path_id == "path_0"
    assert a.reflection.startswith("[INVERTED] Consensus from 2 judge(s). Average score: 0.31.")
    # individual judgements stay raw
    assert [j.coverage_extent for j in a.individual_judgements] == [0.125, 0.5]


def test_inverted_all_fail_has_no_reflection_prefix_and_no_score():
    a = consensus_assessment(NOT_POINT, [fail(A)], uses_defaults=False)
    assert a.coverage_extent is None and a.error == ALL_FAILED


def test_point_fields_are_carried():
    point = EvalPoint(text="t", display_text="t", multiplier=2.5, citation={"doc": 1}, path_id="path_3")
    a = consensus_assessment(point, [ok(A, 1.0)], uses_defaults=False)
    assert (a.key_point_text, a.multiplier, a.citation, a.path_id) == ("t", 2.5, {"doc": 1}, "path_3")


# ---------------------------------------------------------------- orchestration


async def test_all_primaries_of_all_points_run_concurrently_then_backup():
    panel = select_judges(None, None)
    points = [EvalPoint(text=f"p{i}", display_text=f"p{i}") for i in range(3)]
    in_flight = 0
    peak = 0
    events: list[str] = []
    release = asyncio.Event()

    async def judge_one(judge, point):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if judge is not BACKUP_JUDGE:
            if in_flight == 9:
                release.set()
            await release.wait()
        in_flight -= 1
        events.append(f"{point.text}:{judge.id}")
        if judge is GPT:
            return fail(judge)
        if judge is CLAUDE:
            return fail(judge)
        return ok(judge, 1.0)

    result = await asyncio.wait_for(judge_points_with(points, panel=panel, judge_one=judge_one), 30)
    assert peak == 9  # 3 points x 3 default judges at once
    for point in points:  # each point's backup comes after its own primaries
        mine = [e for e in events if e.startswith(point.text + ":")]
        assert mine[-1] == f"{point.text}:backup-claude-4-5-haiku"
        assert len(mine) == 4
    assert [a.key_point_text for a in result] == ["p0", "p1", "p2"]
    assert all(a.coverage_extent == 1.0 and "NOTE: Backup" in a.reflection for a in result)


async def test_completion_order_not_judge_order():
    panel = select_judges(
        None,
        {
            "llm-coverage": {
                "judges": [
                    {"id": "slow", "model": "t:slow", "approach": "holistic"},
                    {"id": "fast", "model": "t:fast", "approach": "holistic"},
                ]
            }
        },
    )

    async def judge_one(judge, point):
        await asyncio.sleep(0.05 if judge.id == "slow" else 0)
        return ok(judge, 1.0)

    [a] = await judge_points_with([POINT], panel=panel, judge_one=judge_one)
    assert a.judge_model_id == "consensus(fast(t:fast), slow(t:slow))"


async def test_function_points_are_not_judged_and_authoring_errors_are_passed_through():
    fn = EvalPoint(fn="contains", fn_args="x", has_args=True, display_text='Function: contains("x")')
    broken = EvalPoint(text="t", display_text="t", authoring_error="bad $ref")

    async def judge_one(judge, point):
        raise AssertionError("must not be called")

    result = await judge_points_with([fn, broken], panel=select_judges(None, None), judge_one=judge_one)
    assert len(result) == 1
    assert result[0].error == "bad $ref" and result[0].authoring_error and result[0].coverage_extent is None


async def test_judge_one_exception_becomes_failure():
    async def judge_one(judge, point):
        raise RuntimeError("socket closed")

    panel = select_judges(["test:a"], None)
    [a] = await judge_points_with([POINT], panel=panel, judge_one=judge_one)
    assert a.error == ALL_FAILED
    assert "Client/Network error: socket closed" in a.reflection


async def test_one_judge_of_one_point_is_cancelled_with_its_caller():
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def judge_one(judge, point):
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return ok(judge, 1.0)

    panel = select_judges(["test:a"], None)
    task = asyncio.ensure_future(judge_points_with([POINT], panel=panel, judge_one=judge_one))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()  # the judge's request is not left running


def _reply(name):
    return f"<reflection>why</reflection><classification>{name}</classification>"


async def test_judge_points_ask_failures_and_parse_errors():
    panel = select_judges(
        None,
        {
            "llm-coverage": {
                "judges": [
                    {"id": "net", "model": "t:net", "approach": "holistic"},
                    {"id": "junk", "model": "t:junk", "approach": "holistic"},
                    {"id": "good", "model": "t:good", "approach": "standard"},
                ]
            }
        },
    )

    async def ask(judge, messages, temperature, max_tokens):
        if judge.id == "net":
            raise TimeoutError("timed out after 45s")
        if judge.id == "junk":
            return "I think it is fine."
        return _reply("substantial")

    [a] = await judge_points(
        [POINT],
        subject_text="s",
        history=None,
        generated_indices=None,
        description=None,
        panel=panel,
        ask=ask,
    )
    assert a.coverage_extent == 0.63  # 0.625 -> toFixed(2) "0.63"
    assert a.error.startswith("2 of 3 judges failed")
    assert "net(t:net): Client/Network error: timed out after 45s" in a.reflection
    assert "junk(t:junk): Failed to parse XML. Response: I think it is fine...." in a.reflection


async def test_judge_points_uses_the_panel_scale():
    panel = select_judges(["t:j"], {"llm-coverage": {"useExperimentalScale": False}})
    assert panel.scale == "5"
    seen = []

    async def ask(judge, messages, temperature, max_tokens):
        seen.append(messages)
        return _reply("CLASS_MAJORLY_MET")

    [a] = await judge_points(
        [POINT], subject_text="s", history=None, generated_indices=None, description=None, panel=panel, ask=ask
    )
    assert a.coverage_extent == 0.75
    assert "- CLASS_MAJORLY_MET:" in seen[0][1]["content"]


async def test_a_judge_whose_ask_raises_has_failed_without_a_retry_here():
    """Retries belong to the transport (the engine's one policy), not to the judges layer."""
    calls = []

    async def ask(judge, messages, temperature, max_tokens):
        calls.append(judge.model)
        if judge.model == "t:flaky":
            raise ConnectionError("reset")
        return _reply("EXACT")

    panel = select_judges(["t:flaky", "t:fine"], None)
    [a] = await judge_points(
        [POINT], subject_text="s", history=None, generated_indices=None, description=None, panel=panel, ask=ask
    )
    assert calls.count("t:flaky") == 1 and calls.count("t:fine") == 1
    assert a.coverage_extent == 1.0 and a.error.startswith("1 of 2")
    assert "Client/Network error: reset" in a.reflection


async def test_backup_not_asked_when_its_model_already_answered():
    asked = []

    async def judge_one(judge, point):
        asked.append(judge.id)
        return fail(judge) if judge is GPT else ok(judge, 0.5)

    [a] = await judge_points_with([POINT], panel=select_judges(None, None), judge_one=judge_one)
    assert BACKUP_JUDGE.id not in asked and len(asked) == 3
    assert a.coverage_extent == 0.5


async def test_backup_asked_when_claude_primary_failed():
    asked = []

    async def judge_one(judge, point):
        asked.append(judge.id)
        return fail(judge) if judge is CLAUDE else ok(judge, 0.5)

    [a] = await judge_points_with([POINT], panel=select_judges(None, None), judge_one=judge_one)
    assert asked[-1] == BACKUP_JUDGE.id and len(asked) == 4
    assert a.error is None and len(a.individual_judgements) == 3


def test_a_point_no_judge_scored_keeps_what_the_judges_failed_of():
    """The judges' failure kinds (a missing key here) are a field of the point, and the item's
    error adds the key hint from that field, never from the reasons' words."""
    from pytest_weval.run.outcome import NO_JUDGE_HINT, decide

    class MissingKey(Exception):
        error_kind = "missing_key"

    async def judge_one(judge, point):
        raise MissingKey("the key is not set")

    from pytest_weval.judges.config import JudgePanel

    panel = JudgePanel(judges=(A,), uses_defaults=False)
    [point] = asyncio.run(judge_points_with([POINT], panel=panel, judge_one=judge_one))
    assert point.coverage_extent is None and point.judge_error_kinds == ["missing_key"]
    assert NO_JUDGE_HINT in (decide([point], None, 0.5).error or "")
    # A reason that merely names an API key is no missing key.
    worded = consensus_assessment(
        POINT, [JudgeOutcome(A, error="bad OPENAI_API_KEY format in reply")], uses_defaults=False
    )
    assert worded.judge_error_kinds == [] and NO_JUDGE_HINT not in (decide([worded], None, 0.5).error or "")
