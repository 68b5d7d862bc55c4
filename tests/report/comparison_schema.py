"""The shape of a Weval comparison file, as pydantic models: a check for our writer and tests.

Field names are Weval's (camelCase). Unknown keys are refused, and so is ``null`` where the
reference writes nothing (``JSON.stringify`` drops ``undefined``); the few places where the
reference does write ``null`` (a system prompt, a placeholder assistant turn, a citation)
allow it. ``validate_comparison`` also checks what a type cannot: sorted lists, consistent
maps, counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


def _in_unit(value: float | None, what: str) -> None:
    if value is not None and not 0 <= value <= 1:
        raise ValueError(f"{what} {value} is outside 0..1")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)
    nullable: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _absent_not_null(cls, data: Any) -> Any:
        if isinstance(data, dict):
            bad = [k for k, v in data.items() if v is None and k not in cls.nullable]
            if bad:
                raise ValueError(f"null where the reference writes nothing: {', '.join(bad)}")
        return data


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")  # tool-call fields may ride along
    role: str
    content: str | None


class IndividualJudgement(_Strict):
    judgeModelId: str
    coverageExtent: float
    reflection: str

    @model_validator(mode="after")
    def _bounds(self) -> IndividualJudgement:
        _in_unit(self.coverageExtent, "judge score")
        return self


class PointAssessmentJson(_Strict):
    nullable: ClassVar[frozenset[str]] = frozenset({"citation"})
    keyPointText: str
    coverageExtent: float | None = None  # absent when the point errored
    reflection: str | None = None
    error: str | None = None
    multiplier: float = 1
    citation: Any = None
    isInverted: bool | None = None
    pathId: str | None = None
    judgeModelId: str | None = None
    individualJudgements: list[IndividualJudgement] | None = None
    stdDev: float | None = None
    sampleCount: int | None = None

    @model_validator(mode="after")
    def _score_or_error(self) -> PointAssessmentJson:
        _in_unit(self.coverageExtent, "coverageExtent")
        if self.coverageExtent is None and not self.error:
            raise ValueError(f"point {self.keyPointText!r} has neither coverageExtent nor error")
        if not 0.1 <= self.multiplier <= 10:
            raise ValueError(f"multiplier {self.multiplier} is outside 0.1..10")
        return self


class JudgeUsed(_Strict):
    judgeId: str
    model: str
    approach: str
    assessmentCount: int


class JudgeAgreement(_Strict):
    krippendorffsAlpha: float
    numItems: int = Field(ge=1)
    numJudges: int = Field(ge=0)
    numComparisons: int = Field(ge=0)
    interpretation: Literal["reliable", "tentative", "unreliable", "unstable"]
    judgeSetFingerprint: str = Field(pattern=r"^[0-9a-f]{12}$")
    judgesUsed: list[JudgeUsed]
    perPointAlphas: list[dict[str, Any]] | None = None


class CoverageError(_Strict):
    error: str


class CoverageScores(_Strict):
    keyPointsCount: int = Field(ge=0)
    avgCoverageExtent: float | None = None
    pointAssessments: list[PointAssessmentJson]
    judgeAgreement: JudgeAgreement | None = None
    sampleCount: int | None = None
    stdDev: float | None = None

    @model_validator(mode="after")
    def _counts(self) -> CoverageScores:
        if self.keyPointsCount != len(self.pointAssessments):
            raise ValueError("keyPointsCount differs from the number of pointAssessments")
        if self.pointAssessments and self.avgCoverageExtent is None:
            raise ValueError("avgCoverageExtent is missing although there are assessments")
        _in_unit(self.avgCoverageExtent, "avgCoverageExtent")
        if self.avgCoverageExtent is not None and round(self.avgCoverageExtent, 2) != self.avgCoverageExtent:
            raise ValueError("avgCoverageExtent is not rounded to 2 decimals")
        return self


CoverageResult = CoverageError | CoverageScores


class EvaluationResults(_Strict):
    llmCoverageScores: dict[str, dict[str, CoverageResult]] | None = None
    similarityMatrix: dict[str, dict[str, float | None]] | None = None
    perPromptSimilarities: dict[str, dict[str, dict[str, float | None]]] | None = None
    promptWeights: dict[str, float] | None = Field(default=None, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _weights(cls, data: Any) -> Any:
        # ``__promptWeights`` sits inside llmCoverageScores beside the prompt ids (docs/scoring.md, 'Prompt weights and roll-ups').
        if isinstance(data, dict) and isinstance(data.get("llmCoverageScores"), dict):
            scores = dict(data["llmCoverageScores"])
            weights = scores.pop("__promptWeights", None)
            data = {**data, "llmCoverageScores": scores}
            if weights is not None:
                data["promptWeights"] = weights
        return data


class ComparisonFile(_Strict):
    configId: str = Field(min_length=1)
    configTitle: str = Field(min_length=1)
    runLabel: str = Field(min_length=1)
    timestamp: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
    description: str | None = None
    sourceCommitSha: str | None = None
    sourceBlueprintFileName: str | None = None
    config: dict[str, Any]
    evalMethodsUsed: list[Literal["embedding", "llm-coverage"]]
    effectiveModels: list[str]
    modelSystemPrompts: dict[str, str | None]
    promptIds: list[str]
    promptContexts: dict[str, list[Message] | str]
    extractedKeyPoints: dict[str, list[str]] | None = None
    allFinalAssistantResponses: dict[str, dict[str, str]]
    fullConversationHistories: dict[str, dict[str, list[Message]]] | None = None
    evaluationResults: EvaluationResults
    errors: dict[str, dict[str, str]] | None = None
    executiveSummary: Any = None


def _js_sorted(items: list[str]) -> bool:
    keys = [s.encode("utf-16-be", "surrogatepass") for s in items]
    return keys == sorted(keys)


def validate_comparison(data: dict[str, Any]) -> ComparisonFile:
    """Parse ``data`` as a comparison file and check its cross-field rules; raises ValueError."""
    model = ComparisonFile.model_validate(data)
    problems = []
    if not _js_sorted(model.promptIds):
        problems.append("promptIds are not sorted")
    if not _js_sorted(model.effectiveModels):
        problems.append("effectiveModels are not sorted")
    models = set(model.effectiveModels)
    prompts = set(model.promptIds)
    if not isinstance(model.config.get("models"), list) or not all(isinstance(m, str) for m in model.config["models"]):
        problems.append("config.models is not a list of model ids")
    if model.config.get("id") != model.configId:
        problems.append("config.id differs from configId")
    by_prompt: list[tuple[str, Mapping[str, Any]]] = [
        ("promptContexts", model.promptContexts),
        ("allFinalAssistantResponses", model.allFinalAssistantResponses),
        ("llmCoverageScores", model.evaluationResults.llmCoverageScores or {}),
        ("fullConversationHistories", model.fullConversationHistories or {}),
        ("errors", model.errors or {}),
    ]
    for name, mapping in by_prompt:
        extra = set(mapping) - prompts
        if extra:
            problems.append(f"{name} has prompt ids not in promptIds: {sorted(extra)}")
    by_prompt_and_model: list[tuple[str, Mapping[str, Mapping[str, Any]]]] = [
        ("allFinalAssistantResponses", model.allFinalAssistantResponses),
        ("llmCoverageScores", model.evaluationResults.llmCoverageScores or {}),
        ("errors", model.errors or {}),
    ]
    for name, by_model in by_prompt_and_model:
        for pid, per_model in by_model.items():
            extra = set(per_model) - models
            if extra:
                problems.append(f"{name}[{pid}] has models not in effectiveModels: {sorted(extra)}")
    if "IDEAL_BENCHMARK" in set(model.modelSystemPrompts):
        problems.append("modelSystemPrompts lists IDEAL_BENCHMARK")
    if problems:
        raise ValueError("; ".join(problems))
    return model
