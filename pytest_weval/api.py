"""The plain-Python API: generate replies and score text with Weval points, no pytest needed.

    from pytest_weval.api import Weval
    with Weval(judges=["openai:gpt-4o-mini"]) as weval:
        reply = weval.generate("openai:gpt-4o-mini", "Name a prime number.")
        verdict = weval.judge(reply, should=["names a prime number", {"$matches": "\\\\d+"}])
        assert verdict.passed, verdict.explain()

The pytest fixtures ``weval_client`` and ``weval_judge`` are this object, shared per session.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_weval import defaults, scoring
from pytest_weval import judges as judging
from pytest_weval.blueprint import parse_points
from pytest_weval.engine import Engine, EngineSettings
from pytest_weval.engine.errors import ModelCallError
from pytest_weval.errors import ErrorKind
from pytest_weval.results import PointAssessment, Usage
from pytest_weval.run.generation import generate_conversation
from pytest_weval.run.outcome import decide
from pytest_weval.run.pipeline import Pipeline, PipelineSettings
from pytest_weval.scoring.aggregate import fmt_score


@dataclasses.dataclass
class Judgement:
    """The outcome of ``Weval.judge``: per-point results and the aggregate."""

    score: float | None
    threshold: float
    points: list[PointAssessment]
    error: str | None = None
    error_kind: ErrorKind | None = None  # the verdict's: "blueprint" (a mistaken point) or "judges"

    @property
    def passed(self) -> bool:
        return self.score is not None and decide(self.points, self.score, self.threshold).outcome == "passed"

    def explain(self) -> str:
        lines = [f"score {fmt_score(self.score)} (threshold {self.threshold})"]
        if self.error:
            lines.append(f"error: {self.error}")
        for point in self.points:
            value = "error" if point.coverage_extent is None else fmt_score(point.coverage_extent)
            label = ("should not: " if point.is_inverted else "") + point.key_point_text
            lines.append(f"  [{value}] {label}" + (f" - {point.error}" if point.error else ""))
            # the judges' (or the function's) reasons: what a failing assert should show
            if point.individual_judgements:
                for verdict in point.individual_judgements:
                    lines.append(
                        f"      {verdict.judge_model_id}: {fmt_score(verdict.coverage_extent)} - "
                        f"{verdict.reflection or '(no reason given)'}"
                    )
            elif point.reflection and not point.error:
                lines.append(f"      {point.reflection}")
        return "\n".join(lines)


class Weval:
    def __init__(
        self,
        *,
        judges: Sequence[str] | None = None,
        threshold: float = defaults.THRESHOLD,
        cache_mode: str = defaults.CACHE_MODE,
        cache_dir: str | Path = defaults.CACHE_FOLDER,
        custom_models: dict[str, dict[str, Any]] | None = None,
        allowed_env: Sequence[str] = (),
        engine_settings: EngineSettings | None = None,
        pipeline_settings: PipelineSettings | None = None,
    ):
        """The keyword arguments are the common settings; ``engine_settings`` and
        ``pipeline_settings``, when given, are complete and take their place (the plugin makes
        both from its options)."""
        settings = engine_settings or EngineSettings(
            cache_mode=cache_mode, cache_dir=Path(cache_dir), allowed_env=frozenset(allowed_env)
        )
        self.engine = Engine(settings)
        self.engine.start()
        self.pipeline = Pipeline(
            self.engine,
            pipeline_settings
            or PipelineSettings(
                judges=tuple(judges) if judges else None,
                threshold=threshold,
                allowed_env=frozenset(allowed_env) | settings.allowed_env,
                custom_models=dict(custom_models or {}),
            ),
        )
        self.usage: dict[str, Usage] = {}

    # -- generation ---------------------------------------------------------------------------
    async def _generate(
        self, model_id: str, prompt: str | Sequence[dict], system: str | None, temperature: float
    ) -> str:
        messages = [dict(role="user", content=prompt)] if isinstance(prompt, str) else [dict(m) for m in prompt]
        conversation = await generate_conversation(
            self.engine,
            self.pipeline.model_spec(model_id),
            messages,
            system=system,
            temperature=temperature,
            no_cache=False,
        )
        if conversation.usage is not None:
            self.usage.setdefault(model_id, Usage()).add(conversation.usage)
        if conversation.failure is not None:
            # Its own class and kind (MissingKeyError, ProviderError...), its message redacted; raised
            # without the engine's frames, whose locals hold the request's headers (pytest -l shows them).
            raise conversation.failure.with_traceback(None) from None
        if conversation.error:
            raise ModelCallError(f"{model_id}: {conversation.error}", model_id=model_id)
        return conversation.final_text or ""

    def generate(
        self, model_id: str, prompt: str | Sequence[dict], *, system: str | None = None, temperature: float = 0.0
    ) -> str:
        """The model's reply to ``prompt`` (a user message, or a list of role/content dicts).
        A request that cannot be answered raises its ``ModelCallError`` (``MissingKeyError``,
        ``ProviderError``, ``EmptyReplyError``...), whose ``error_kind`` says what it is."""
        return self.engine.run_coroutine(self._generate(model_id, prompt, system, temperature)).result()

    async def agenerate(
        self, model_id: str, prompt: str | Sequence[dict], *, system: str | None = None, temperature: float = 0.0
    ) -> str:
        return await asyncio.wrap_future(
            self.engine.run_coroutine(self._generate(model_id, prompt, system, temperature))
        )

    # -- judging ------------------------------------------------------------------------------
    async def _judge(
        self,
        text: str,
        should: Sequence[Any],
        should_not: Sequence[Any],
        threshold: float | None,
        judges: Sequence[str] | None,
        description: str | None,
        prompt: str | None,
    ) -> Judgement:
        points = parse_points(should=list(should), should_not=list(should_not), source="weval_judge")
        panel = judging.select_judges(
            list(judges)
            if judges
            else (list(self.pipeline.settings.judges) if self.pipeline.settings.judges else None),
            None,
        )
        history = ([dict(role="user", content=prompt)] if prompt else []) + [dict(role="assistant", content=text)]
        assessments = await self.pipeline.assess(
            points,
            text=text,
            history=history,
            generated_indices=[0],
            model_id="weval_judge",
            prompt_id="weval_judge",
            config={},
            description=description,
            panel=panel,
            ask=self.pipeline.asker(0, self.usage, purpose="judge"),
        )
        limit = self.pipeline.settings.threshold if threshold is None else threshold
        score = scoring.round2(scoring.aggregate(assessments)) if assessments else None
        verdict = decide(assessments, score, limit)
        return Judgement(score=score, threshold=limit, points=assessments, error=verdict.error, error_kind=verdict.kind)

    def judge(
        self,
        text: str,
        *,
        should: Sequence[Any] = (),
        should_not: Sequence[Any] = (),
        threshold: float | None = None,
        judges: Sequence[str] | None = None,
        description: str | None = None,
        prompt: str | None = None,
    ) -> Judgement:
        """Score ``text`` against points written in blueprint syntax."""
        return self.engine.run_coroutine(
            self._judge(text, should, should_not, threshold, judges, description, prompt)
        ).result()

    async def ajudge(
        self,
        text: str,
        *,
        should: Sequence[Any] = (),
        should_not: Sequence[Any] = (),
        threshold: float | None = None,
        judges: Sequence[str] | None = None,
        description: str | None = None,
        prompt: str | None = None,
    ) -> Judgement:
        return await asyncio.wrap_future(
            self.engine.run_coroutine(self._judge(text, should, should_not, threshold, judges, description, prompt))
        )

    def __call__(self, text: str, **kwargs: Any) -> Judgement:
        return self.judge(text, **kwargs)

    # -- lifecycle ----------------------------------------------------------------------------
    def close(self) -> None:
        try:
            self.engine.run_coroutine(self.pipeline.external.aclose()).result(timeout=5)
        finally:
            self.engine.close()

    def __enter__(self) -> Weval:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
