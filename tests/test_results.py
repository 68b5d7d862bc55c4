"""What a run keeps of an item's result (``KeptResult``): every field an ``ItemResult`` has but
its texts, read the same way, so that the roll-up, the gates, the terminal and junit read a kept
record as they read a whole one; and the whole result is made again from the spooled one with
what was kept after it."""

from __future__ import annotations

from pytest_weval.results import (
    BULKY_FIELDS,
    ItemResult,
    JudgeVerdict,
    KeptPoint,
    KeptResult,
    PointAssessment,
    Usage,
    with_texts,
)


def _whole() -> ItemResult:
    return ItemResult(
        nodeid="b.yml::p[m]",
        blueprint_id="b",
        blueprint_path="b.yml",
        prompt_id="p",
        model_id="openai:m",
        effective_model_id="openai:m[temp:0]",
        outcome="failed",
        score=0.25,
        sample_scores=[0.2, 0.3],
        required_checks_failed=["no-tools"],
        response="a long answer",
        generated_texts=["a long answer"],
        history=[{"role": "user", "content": "q"}, {"role": "assistant", "content": "a long answer"}],
        points=[
            PointAssessment(
                key_point_text="is kind",
                coverage_extent=0.25,
                reflection="Consensus ...",
                kind="judged",
                individual_judgements=[JudgeVerdict(judge_model_id="j", coverage_extent=0.25, reflection="why")],
                failed_judges=["k: refused"],
            ),
            PointAssessment(key_point_text="Function: x()", error="bad regex", reflection="the error's own words"),
        ],
        usage={"openai:m": Usage(requests=1, input_tokens=3, output_tokens=5)},
    )


def test_a_kept_result_has_every_field_of_a_whole_one_but_its_texts():
    whole = _whole()
    kept = whole.compact()
    assert isinstance(kept, KeptResult)
    for name in ItemResult.model_fields:
        if name in BULKY_FIELDS:
            continue
        value = getattr(kept, name)
        expected = getattr(whole, name)
        assert (list(value) if isinstance(value, tuple) else value) == expected, name
    assert kept.response is None and not kept.generated_texts and not kept.history
    assert not kept.flaky and kept.said_by_summary is False


def test_a_kept_point_has_every_field_of_an_assessment_but_the_judges_reflections():
    judged, errored = _whole().compact().points
    assert isinstance(judged, KeptPoint)
    for name in PointAssessment.model_fields:
        assert hasattr(judged, name), name
    assert judged.reflection is None  # the judges' words stay in the spool
    assert judged.individual_judgements is not None
    assert [(j.judge_model_id, j.coverage_extent, j.reflection) for j in judged.individual_judgements] == [
        ("j", 0.25, "")
    ]
    assert list(judged.failed_judges) == ["k: refused"]
    assert errored.reflection == "the error's own words"  # names what failed: the roll-up says it


def test_the_whole_result_comes_back_with_what_was_kept_after_it_was_spooled():
    spooled = _whole().model_copy(update={"nodeid": ""})
    kept = spooled.compact()
    kept.nodeid = "b.yml::p[m]"  # its report's, when the result had none
    kept.similarities = {"openai:m[temp:0]": 1.0}
    whole = with_texts(kept, spooled)
    assert whole == _whole().model_copy(update={"similarities": {"openai:m[temp:0]": 1.0}})
