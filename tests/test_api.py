"""``Weval`` and ``Judgement`` (pytest_weval/api.py), for plain Python and the fixtures."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pytest_weval.api import Judgement, Weval
from pytest_weval.engine import EngineSettings
from pytest_weval.engine.errors import EmptyReplyError, MissingKeyError
from pytest_weval.errors import WevalError
from pytest_weval.report._fmt import fmt_score
from pytest_weval.results import JudgeVerdict, PointAssessment
from tests.fakeserver import FakeServer, Rule


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


def _weval(tmp_path: Path, env: dict[str, str]) -> Weval:
    return Weval(engine_settings=EngineSettings(cache_mode="off", cache_dir=tmp_path / "cache", env=env))


def test_generate_without_a_key_raises_the_missing_key_error(tmp_path: Path) -> None:
    with _weval(tmp_path, env={}) as weval:
        with pytest.raises(MissingKeyError) as caught:
            weval.generate("openai:gpt-4o-mini", "hi")
        assert caught.value.error_kind == "missing_key" and caught.value.variable == "OPENAI_API_KEY"

        async def agenerate() -> str:
            return await weval.agenerate("openai:gpt-4o-mini", "hi")

        with pytest.raises(MissingKeyError):
            asyncio.run(agenerate())


def test_generate_of_an_empty_reply_raises_the_empty_reply_error(tmp_path: Path) -> None:
    with FakeServer() as server, _weval(tmp_path, env=server.env()) as weval:
        server.rules.append(Rule(reply="   "))
        with pytest.raises(EmptyReplyError) as caught:
            weval.generate("openai:gpt-4o-mini", "hi")
    assert caught.value.error_kind == "empty_reply"
    assert isinstance(caught.value, WevalError)


def test_judge_keeps_the_verdicts_error_kind(tmp_path: Path) -> None:
    """A mistaken point errors the judgement with kind "blueprint", as it errors a pytest item;
    a scored judgement has no kind."""
    weval = _weval(tmp_path, {})
    mistaken = weval.judge("hello", should=[{"$no_such_function": "x"}])
    assert mistaken.error and mistaken.error_kind == "blueprint"
    scored = weval.judge("hello", should=[{"$contains": "hell"}])
    assert scored.error is None and scored.error_kind is None and scored.passed
