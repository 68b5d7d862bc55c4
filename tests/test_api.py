"""``Weval`` and ``Judgement`` (pytest_weval/api.py), for plain Python and the fixtures."""

from __future__ import annotations

from pytest_weval.api import Judgement
from pytest_weval.report._fmt import fmt_score
from pytest_weval.results import JudgeVerdict, PointAssessment


def test_explain_shows_scores_as_the_reports_do():
    # 0.625: ':.2f' rounds it to even (0.62); the terminal, HTML and failure text show 0.63.
    verdict = JudgeVerdict(judge_model_id="holistic(openai:gpt-4o-mini)", coverage_extent=0.625, reflection="most")
    point = PointAssessment(key_point_text="is kind", coverage_extent=0.625, individual_judgements=[verdict])
    text = Judgement(score=0.625, threshold=0.7, points=[point]).explain()
    assert fmt_score(0.625) == "0.63"
    assert text.splitlines() == [
        "score 0.63 (threshold 0.7)",
        "  [0.63] is kind",
        "      holistic(openai:gpt-4o-mini): 0.63 - most",
    ]
