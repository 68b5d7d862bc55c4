"""Typed result records: what running one item produces, whatever file format it came from.

Every reporter (terminal, junit, Weval JSON, HTML) reads only these. They cross process
boundaries under pytest-xdist as JSON (``ItemResult.model_dump(mode="json")``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

import pytest_weval.defaults as defaults
from pytest_weval.errors import STORE_KINDS, ErrorKind

Outcome = Literal["passed", "failed", "error", "skipped"]
Source = Literal["blueprint", "agent eval file", "promptfoo suite"]  # what an item comes from


def passes(score: float | None, threshold: float) -> bool:
    """The pass rule, its one home: a score (an item's, or one sample's) reaches its threshold
    (docs/scoring.md). run/outcome.py decides outcomes with it; sampling and the flaky report
    count passing samples with it."""
    return score is not None and score >= threshold


# Each record's validator is built when the first one is made (the engine's first result, or
# the first report read back), not when the plugin is activated: ~15 ms of every process's start.
_BUILT_ON_FIRST_USE = ConfigDict(defer_build=True)


class JudgeVerdict(BaseModel):
    model_config = _BUILT_ON_FIRST_USE

    judge_model_id: str
    coverage_extent: float  # raw, before should_not inversion
    reflection: str = ""


class PointAssessment(BaseModel):
    """One point's assessment; fields mirror Weval's ``pointAssessments[]`` entry."""

    model_config = _BUILT_ON_FIRST_USE

    key_point_text: str  # the text, or "Function: name(args)" for a function point
    coverage_extent: float | None = None  # None when the point errored
    reflection: str | None = None
    error: str | None = None
    multiplier: float = 1.0
    citation: Any = None
    is_inverted: bool = False
    path_id: str | None = None
    judge_model_id: str | None = None
    individual_judgements: list[JudgeVerdict] | None = None
    kind: Literal["function", "judged"] = "function"
    # True when the error is the blueprint's fault (unknown function, bad regex syntax,
    # missing $ref): the item errors instead of failing (docs/rulings.md, ruling 9).
    authoring_error: bool = False
    line: int | None = None  # where the point is written in the blueprint, so messages can name it
    # A judged point no judge scored: what the judges' requests failed of (a missing key, a refused
    # one, ...), so the item's error can say what to do without reading the reasons back.
    judge_error_kinds: list[ErrorKind] = Field(default_factory=list, exclude_if=lambda kinds: not kinds)
    # The reflection only restates the score ("Function 'f' evaluated to 0.50.", the reference's
    # words when a function explains nothing): reports that show the score leave it out.
    default_reflection: bool = Field(default=False, exclude_if=lambda flag: not flag)
    # A panel's point: what its reflection adds to the reference's fixed consensus sentence (a
    # partial consensus's warning, the backup's note), shown beside the judges' own reflections.
    consensus_note: str | None = Field(default=None, exclude_if=lambda note: note is None)
    # A panel's point: the judges whose requests failed, "judge: why" (the reflection lists them
    # under "Judge failures:", as the reference's does not; the roll-up names them).
    failed_judges: list[str] = Field(default_factory=list, exclude_if=lambda judges: not judges)


class Usage(BaseModel):
    model_config = _BUILT_ON_FIRST_USE

    requests: int = 0  # responses obtained (network or cache)
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    refused: int = 0  # times a provider refused a request (rate limits) before answering it
    rate_wait_s: float = 0.0  # seconds requests waited on rate limits
    cost_usd: float | None = None  # of the requests sent (cached replies cost nothing); None: no known price

    def add(self, other: Usage) -> None:
        self.requests += other.requests
        self.cache_hits += other.cache_hits
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.refused += other.refused
        self.rate_wait_s += other.rate_wait_s
        if other.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + other.cost_usd


class ResultReading:
    """What an item's result says of itself, whole (``ItemResult``) or kept (``KeptResult``)."""

    __slots__ = ()
    if TYPE_CHECKING:  # the fields both kinds have (not pydantic fields here)
        error_kind: ErrorKind | None
        not_run: bool
        sample_scores: Sequence[float]
        threshold: float

    @property
    def stopped(self) -> bool:
        """The run stopped before the item's requests were sent (the budget, a store that keeps
        no reply): the stop's own words are its error, and its points failed for that alone."""
        return self.error_kind == "budget" or self.error_kind in STORE_KINDS

    @property
    def said_by_summary(self) -> bool:
        """Its error is the run's, said once in full by the terminal summary (a key it needs is
        not set, or the run stopped): the item's own report repeats it in one line, no more."""
        return self.not_run or self.stopped

    @property
    def flaky(self) -> bool:
        """Its samples fall on both sides of its threshold (``passes``): the outcome is still its
        mean's (docs/sampling.md)."""
        return {passes(s, self.threshold) for s in self.sample_scores} == {True, False}


REQUIRED_CHECK = "failed a required check: "  # how a failed gate of an agent eval case starts its ``error``


class ItemResult(ResultReading, BaseModel):
    model_config = _BUILT_ON_FIRST_USE

    nodeid: str = ""
    blueprint_id: str
    blueprint_path: str  # relative to the rootdir, "/" separated
    blueprint_title: str = ""
    prompt_id: str
    prompt_line: int | None = None  # where the prompt is written in the blueprint
    prompt_weight: float | None = None
    model_id: str  # as listed in the blueprint (after placeholder resolution)
    effective_model_id: str  # Weval's id: model[temp:T][sp_idx:N]
    temperature: float | None = None
    system_index: int | None = None
    system_prompt: str | None = None
    outcome: Outcome
    score: float | None = None  # round2'd aggregate, None when it could not be computed
    threshold: float = defaults.THRESHOLD
    # Which sample of the item this is: 0 first; a rerun (pytest-rerunfailures, or any plugin
    # that runs the item again) asks the model again as sample 1, 2, ... (docs/engine.md, 'Reruns').
    sample: int = 0
    # --weval-repeat=N: the scores of the item's N samples, when N > 1 (``score`` is their mean,
    # the other fields are those of the lowest-scoring sample; docs/statistics.md, 'Repeats');
    # under --weval-repeat=auto as many as it took (docs/sampling.md).
    sample_scores: list[float] = Field(default_factory=list)
    # What its answers and scores depend on (model, system prompt, prompt, points, threshold), so
    # the history tells runs of the same item content from others (docs/sampling.md, 'History').
    content_digest: str | None = None
    # Agent eval files only: AgentV's verdict, pass (>= 0.8), borderline (>= 0.6) or fail; a
    # borderline case passes with a warning unless --weval-borderline=fail.
    verdict: Literal["pass", "borderline", "fail"] | None = None
    # What the item comes from: a Weval blueprint's prompt, an agent eval file's case, or a
    # promptfoo-shaped suite's test row (docs/promptfoo.md).
    source: Source = "blueprint"
    error: str | None = None  # why the item errored (provider, key, replay miss, judges)
    # What the error is, set where it was made: reports say it from this, never by reading `error` back.
    error_kind: ErrorKind | None = None
    # The line of the blueprint (or eval file) an error of kind "blueprint" is at, when no point holds it.
    error_line: int | None = None
    # Agent eval files only: the required checks (gates) a failed case did not pass; ``error`` says
    # them after ``REQUIRED_CHECK``. Left out of the records when empty, as before it was a field.
    required_checks_failed: list[str] = Field(default_factory=list, exclude_if=lambda checks: not checks)
    not_run: bool = False  # the pre-flight kept it from running (a key it needs is missing): ``error`` says why
    response: str | None = None  # final assistant text
    # --weval-eval-methods with embedding: this answer's row of its prompt's similarity matrix,
    # every model id of the blueprint's run -> the cosine (None: a side has no embedding);
    # the comparison file's perPromptSimilarities are these rows (docs/options.md).
    similarities: dict[str, float | None] | None = None
    # The answer (final) or some turns (turns) came from --weval-fixtures, not the model (docs/fixtures.md).
    fixture: Literal["final", "turns"] | None = None
    generated_texts: list[str] = Field(default_factory=list)
    history: list[dict[str, Any]] = Field(default_factory=list)  # full conversation
    points: list[PointAssessment] = Field(default_factory=list)
    # Usage per model id that served this item (generation and judges).
    usage: dict[str, Usage] = Field(default_factory=dict)
    judge_agreement: dict[str, Any] | None = None
    # promptfoo-shaped suites only: the row as promptfoo's `-o results.json` holds it (prompt,
    # provider, vars, response, gradingResult, namedScores), for report/promptfoo_json.py.
    promptfoo: dict[str, Any] | None = Field(default=None, exclude_if=lambda row: row is None)
    duration_s: float = 0.0

    def without_texts(self) -> ItemResult:
        """This result without its texts (``BULKY_FIELDS``), as a worker sends what the run
        keeps (``KeptResult``) to the xdist controller: its size does not grow with the answers'."""
        return self.model_copy(
            update={
                "response": None,
                "generated_texts": [],
                "history": [],
                "points": [_point_without_texts(p) for p in self.points],
            }
        )

    def compact(self) -> KeptResult:
        """What a run keeps of this result until its end (``KeptResult``)."""
        return KeptResult(self)

    @property
    def point_errors(self) -> list[PointAssessment]:
        return [p for p in self.points if p.error and p.coverage_extent is None]


# What an item's result holds that only the files written at the run's end show, however long:
# its answers, its conversation and its judges' reflections (``KeptResult`` holds the rest).
BULKY_FIELDS = ("response", "generated_texts", "history", "points")


def _kept_reflection(point: PointAssessment) -> str | None:
    """A point keeps its own reflection only when it errored: it names the judges that failed
    (the roll-up's point problems say them); the judges' reflections stay in the spool."""
    return point.reflection if point.error else None


def _point_without_texts(p: PointAssessment) -> PointAssessment:
    return p.model_copy(
        update={
            "reflection": _kept_reflection(p),
            "individual_judgements": None
            if p.individual_judgements is None
            else [j.model_copy(update={"reflection": ""}) for j in p.individual_judgements],
        }
    )


class KeptVerdict:
    """A judge's verdict on a kept point: its score, not its reflection."""

    __slots__ = ("coverage_extent", "judge_model_id")
    reflection: str = ""  # read as a JudgeVerdict's: never kept

    def __init__(self, verdict: JudgeVerdict):
        self.judge_model_id = verdict.judge_model_id
        self.coverage_extent = verdict.coverage_extent


class KeptPoint:
    """A point's assessment as a run keeps it: ``PointAssessment``'s fields, the judges'
    reflections left out (a point that errored keeps its own, which names the judges that
    failed: the roll-up's point problems say them)."""

    __slots__ = _POINT_FIELDS = (
        "key_point_text",
        "coverage_extent",
        "reflection",
        "error",
        "multiplier",
        "citation",
        "is_inverted",
        "path_id",
        "judge_model_id",
        "individual_judgements",
        "kind",
        "authoring_error",
        "line",
        "judge_error_kinds",
        "default_reflection",
        "consensus_note",
        "failed_judges",
    )
    key_point_text: str
    coverage_extent: float | None
    reflection: str | None
    error: str | None
    multiplier: float
    citation: Any
    is_inverted: bool
    path_id: str | None
    judge_model_id: str | None
    individual_judgements: tuple[KeptVerdict, ...] | None
    kind: Literal["function", "judged"]
    authoring_error: bool
    line: int | None
    judge_error_kinds: tuple[ErrorKind, ...]
    default_reflection: bool
    consensus_note: str | None
    failed_judges: tuple[str, ...]

    def __init__(self, point: PointAssessment):
        values = point.__dict__
        for name in self._POINT_FIELDS:
            object.__setattr__(self, name, values[name])
        self.reflection = _kept_reflection(point)
        if point.individual_judgements is not None:
            self.individual_judgements = tuple(KeptVerdict(j) for j in point.individual_judgements)
        self.judge_error_kinds = tuple(point.judge_error_kinds)
        self.failed_judges = tuple(point.failed_judges)


class KeptResult(ResultReading):
    """What a run keeps of an item's result until its end: ``ItemResult``'s fields but its texts
    (the answers, the conversation, the judges' reflections), in slots. The roll-up, the gates,
    the terminal and junit read these; the files written at the end get the texts back from the
    spool (``with_texts``). Its size does not grow with the answers' length: 1.1 KB for an item
    with one judged point and two models' usage, against 3.2 KB as an ``ItemResult``
    (docs/layout.md, 'Memory')."""

    __slots__ = _FIELDS = (
        "nodeid",
        "blueprint_id",
        "blueprint_path",
        "blueprint_title",
        "prompt_id",
        "prompt_line",
        "prompt_weight",
        "model_id",
        "effective_model_id",
        "temperature",
        "system_index",
        "system_prompt",
        "outcome",
        "score",
        "threshold",
        "sample",
        "sample_scores",
        "content_digest",
        "verdict",
        "source",
        "error",
        "error_kind",
        "error_line",
        "required_checks_failed",
        "not_run",
        "similarities",
        "fixture",
        "points",
        "usage",
        "judge_agreement",
        "promptfoo",
        "duration_s",
    )
    nodeid: str
    blueprint_id: str
    blueprint_path: str
    blueprint_title: str
    prompt_id: str
    prompt_line: int | None
    prompt_weight: float | None
    model_id: str
    effective_model_id: str
    temperature: float | None
    system_index: int | None
    system_prompt: str | None
    outcome: Outcome
    score: float | None
    threshold: float
    sample: int
    sample_scores: tuple[float, ...]
    content_digest: str | None
    verdict: Literal["pass", "borderline", "fail"] | None
    source: Source
    error: str | None
    error_kind: ErrorKind | None
    error_line: int | None
    required_checks_failed: tuple[str, ...]
    not_run: bool
    similarities: dict[str, float | None] | None
    fixture: Literal["final", "turns"] | None
    points: tuple[KeptPoint, ...]
    usage: dict[str, Usage]
    judge_agreement: dict[str, Any] | None
    promptfoo: dict[str, Any] | None
    duration_s: float

    def __init__(self, result: ItemResult):
        values = result.__dict__
        for name in self._FIELDS:
            object.__setattr__(self, name, values[name])
        self.sample_scores = tuple(result.sample_scores)
        self.required_checks_failed = tuple(result.required_checks_failed)
        self.points = tuple(KeptPoint(p) for p in result.points)

    # read as an ItemResult's: a kept result has no texts
    response: None = None
    generated_texts: tuple[str, ...] = ()
    history: tuple[dict[str, Any], ...] = ()


# An item's result as the reporters read it: whole, or as the run kept it; and its points.
Result = ItemResult | KeptResult
Point = PointAssessment | KeptPoint
AnyResult = TypeVar("AnyResult", ItemResult, KeptResult, Result)


def with_texts(kept: KeptResult, full: ItemResult) -> ItemResult:
    """``full`` (read back from the spool) with what the run kept after it was spooled: its
    node id, the similarity rows added after the items ran."""
    return full.model_copy(update={name: getattr(kept, name) for name in _AFTER_SPOOLING})


# What a kept result may hold that its spooled whole result does not (``with_texts``).
_AFTER_SPOOLING = ("nodeid", "similarities")


def weval_kept(results: Iterable[AnyResult]) -> list[AnyResult]:
    """The results Weval would keep: it keys a blueprint's results by prompt id, so of two
    prompts sharing an id only the later one's answer counts (docs/compatibility.md, 'Duplicate
    prompt ids'). pytest still runs and reports both; the means, the similarities and the
    comparison file hold one."""
    kept: dict[tuple[str, str, str, str], AnyResult] = {}
    for r in results:
        if r.source != "blueprint":
            kept[(r.blueprint_path, r.prompt_id, r.effective_model_id, r.nodeid)] = r
            continue
        key = (r.blueprint_path, r.prompt_id, r.effective_model_id, "")
        held = kept.get(key)
        if held is None or (r.prompt_line or 0, r.nodeid) > (held.prompt_line or 0, held.nodeid):
            kept[key] = r
    return list(kept.values())
