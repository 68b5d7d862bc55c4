"""Inter-judge agreement, hand-computed (docs/judges.md, 'Agreement')."""

from __future__ import annotations

import hashlib
import math

import pytest

from pytest_weval.judges import agreement as agreement_module
from pytest_weval.judges import judge_agreement, krippendorff_interval, run_judge_agreement
from pytest_weval.results import JudgeVerdict, PointAssessment


def item(*pairs, text="p"):
    return PointAssessment(
        key_point_text=text,
        coverage_extent=0.5,
        kind="judged",
        individual_judgements=[JudgeVerdict(judge_model_id=label, coverage_extent=v) for label, v in pairs],
    )


def two(a, b):
    return item(("judge-a(t:a)", a), ("judge-b(t:b)", b))


@pytest.mark.parametrize(
    "items,alpha,interpretation,comparisons",
    [
        # all scores equal: De = 0 -> 1, reliable
        ([[0.75, 0.75], [0.75, 0.75]], 1.0, "reliable", 2),
        # Do = 0 (each item agrees), De > 0 -> 1
        ([[1, 1], [0, 0]], 1.0, "reliable", 2),
        # Do = (0.0625+0.0625)/2 = 0.0625; pooled {1,.75,0,.25}: pair sum 2.5 / 6 -> alpha = 1 - 0.15 = 0.85
        ([[1, 0.75], [0, 0.25]], 0.85, "reliable", 2),
        # Do = (0.25+0)/2 = 0.125; pooled {1,.5,0,0}: 2.75/6 -> alpha = 1 - 3/11 = 0.727
        ([[1, 0.5], [0, 0]], 0.727, "tentative", 2),
        # Do = 1; pooled {0,1,0,1}: 4/6 -> alpha = -0.5
        ([[0, 1], [0, 1]], -0.5, "unreliable", 2),
        # one item: Do = De -> alpha 0; pooled variance 0.0025 < 0.02 -> unstable
        ([[0.8, 0.7]], 0.0, "unstable", 1),
        # one item: alpha 0, variance 0.25 -> unreliable
        ([[1, 0]], 0.0, "unreliable", 1),
        # three judges: Do = (0 + .01 + .01)/3, De the same -> 0, variance .00222 -> unstable
        ([[0.5, 0.5, 0.6]], 0.0, "unstable", 3),
    ],
)
def test_hand_computed(items, alpha, interpretation, comparisons):
    got = krippendorff_interval(items)
    assert got == (alpha, interpretation, comparisons)
    assert math.copysign(1, got[0]) == math.copysign(1, alpha) or alpha == 0


def test_output_fields_and_fingerprint():
    result = judge_agreement([two(0.75, 0.875), two(0.625, 0.75), two(0.5, 0.625)])
    assert result == {
        "krippendorffsAlpha": 0.545,
        "numItems": 3,
        "numJudges": 2,
        "numComparisons": 3,
        "interpretation": "unreliable",
        "judgeSetFingerprint": hashlib.sha256(b"judge-a,judge-b").hexdigest()[:12],
        "judgesUsed": [
            {"judgeId": "judge-a", "model": "t:a", "approach": "unknown", "assessmentCount": 3},
            {"judgeId": "judge-b", "model": "t:b", "approach": "unknown", "assessmentCount": 3},
        ],
    }
    assert list(result) == [
        "krippendorffsAlpha",
        "numItems",
        "numJudges",
        "numComparisons",
        "interpretation",
        "judgeSetFingerprint",
        "judgesUsed",
    ]


def test_absent_without_multi_judge_items():
    single = item(("judge-a(t:a)", 1.0))
    function_point = PointAssessment(key_point_text="Function: contains(\"x\")", coverage_extent=1.0)
    failed = PointAssessment(key_point_text="t", error="All judges failed in consensus mode.", kind="judged")
    assert judge_agreement([]) is None
    assert judge_agreement([single, function_point, failed]) is None
    assert judge_agreement([item(("a(t:a)", 1.0), ("b(t:b)", float("nan")))]) is None  # NaN dropped


def test_judges_used_sorted_by_count_and_resolved():
    assessments = [
        item(
            ("holistic-gemini-2-5-flash(openrouter:google/gemini-2.5-flash)", 1.0),
            ("backup-claude-4-5-haiku(openrouter:anthropic/claude-haiku-4.5)", 1.0),
        ),
        item(("holistic-gemini-2-5-flash(openrouter:google/gemini-2.5-flash)", 1.0), ("standard(custom:judge1)", 0.5)),
        item(
            ("holistic-gemini-2-5-flash(openrouter:google/gemini-2.5-flash)", 1.0), ("holistic-smol(local:smol)", 1.0)
        ),
    ]
    used = judge_agreement(assessments)["judgesUsed"]
    assert used == [
        {
            "judgeId": "holistic-gemini-2-5-flash",
            "model": "openrouter:google/gemini-2.5-flash",
            "approach": "holistic",
            "assessmentCount": 3,
        },
        {
            "judgeId": "backup-claude-4-5-haiku",
            "model": "openrouter:anthropic/claude-haiku-4.5",
            "approach": "holistic",
            "assessmentCount": 1,
        },
        {"judgeId": "standard", "model": "custom:judge1", "approach": "standard", "assessmentCount": 1},
        {"judgeId": "holistic-smol", "model": "local:smol", "approach": "holistic", "assessmentCount": 1},
    ]
    assert judge_agreement(assessments)["numJudges"] == 2


def test_run_level_pools_items_across_results():
    per_item = [[two(1, 0.75)], [two(0, 0.25)], []]
    pooled = run_judge_agreement(per_item)
    assert pooled["krippendorffsAlpha"] == 0.85 and pooled["numItems"] == 2
    assert run_judge_agreement([[], []]) is None


def test_closed_form_matches_pairwise(monkeypatch):
    values = [((i * 37) % 11) / 10 for i in range(60)]
    items = [values[i : i + 3] for i in range(0, 60, 3)]
    exact = krippendorff_interval(items)
    monkeypatch.setattr(agreement_module, "_PAIRWISE_LIMIT", 5)
    assert krippendorff_interval(items) == exact
    assert krippendorff_interval([[0.5, 0.5]] * 4) == (1.0, "reliable", 4)
