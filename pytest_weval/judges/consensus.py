"""Consensus of a judge panel on each text point (docs/judges.md, 'Consensus'; docs/rulings.md, rulings 10-11).

``consensus_assessment`` is a pure function of the verdicts (docs/rulings.md, ruling 10: tests feed it data).
``judge_points`` runs the panel: every primary judge of every text point concurrently, then the
backup judge of a point once that point's primaries are done. The model call itself is the
caller's ``ask``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pytest_weval.blueprint.model import EvalPoint
from pytest_weval.errors import ErrorKind
from pytest_weval.jsvalues import to_fixed
from pytest_weval.results import JudgeVerdict, PointAssessment
from pytest_weval.scoring import round2  # the scoring layer owns JS toFixed(2)

from .config import JUDGE_MAX_TOKENS, JUDGE_TEMPERATURE, JudgePanel, JudgeSpec
from .parse import JudgeReplyError, parse_judge_reply
from .prompts import build_judge_messages, build_transcript

__all__ = [
    "ALL_FAILED",
    "Ask",
    "JudgeOne",
    "JudgeOutcome",
    "backup_needed",
    "consensus_assessment",
    "judge_points",
    "judge_points_with",
]

ALL_FAILED = "All judges failed in consensus mode."

T = TypeVar("T")

Ask = Callable[[JudgeSpec, list, float, int], Awaitable[str]]
JudgeOne = Callable[[JudgeSpec, EvalPoint], Awaitable["JudgeOutcome"]]


@dataclass(frozen=True)
class JudgeOutcome:
    """One judge's answer on one point: a score (raw, before inversion) or an error."""

    judge: JudgeSpec
    score: float | None = None
    reflection: str = ""
    error: str | None = None
    error_kind: ErrorKind | None = None  # the request's failure, as the engine classified it

    @property
    def ok(self) -> bool:
        return self.error is None and self.score is not None


def backup_needed(panel_uses_defaults: bool, primaries: Sequence[JudgeOutcome], backup: JudgeSpec | None) -> bool:
    """Whether the backup judge should be asked (docs/rulings.md, ruling 11).

    Only for the default panel, only when fewer than all primaries succeeded, and never when
    the backup's model already gave a successful verdict (the reference asks it anyway and
    counts that model twice).
    """
    if backup is None or not panel_uses_defaults:
        return False
    successes = [o for o in primaries if o.ok]
    if len(successes) >= len(primaries):
        return False
    return all(o.judge.model != backup.model for o in successes)


def _score(outcome: JudgeOutcome) -> float:
    """A successful outcome's score (``ok`` means there is one)."""
    assert outcome.score is not None
    return outcome.score


_FAILURES = "Judge failures:"


def _failures(outcomes: Iterable[JudgeOutcome]) -> list[str]:
    """ "judge: why" for each judge that failed."""
    return [f"{o.judge.label}: {o.error}" for o in outcomes if not o.ok]


def _failures_text(failures: list[str]) -> str:
    return _FAILURES + "\n" + "\n".join(f"- {failure}" for failure in failures)


def _error_kind(exc: BaseException) -> ErrorKind | None:
    """The failure's kind when the engine's error carries one (this layer does not import the
    engine: ``ModelCallError.error_kind`` is read by name)."""
    kind: ErrorKind | None = getattr(exc, "error_kind", None)
    return kind


def consensus_assessment(
    point: EvalPoint,
    verdicts: Sequence[JudgeOutcome],
    *,
    uses_defaults: bool,
    backup_outcome: JudgeOutcome | None = None,
) -> PointAssessment:
    """The point's assessment from its primary judges' outcomes (in completion order).

    ``backup_outcome`` counts only for the default panel, when fewer than all primaries
    succeeded, and when its model has not already given a successful verdict (docs/rulings.md, ruling 11).
    """
    successes = [o for o in verdicts if o.ok]
    attempted = len(verdicts)
    considered = list(verdicts)  # for the failure details
    backup_used = False
    if (
        backup_outcome is not None
        and uses_defaults
        and len(successes) < attempted
        and all(o.judge.model != backup_outcome.judge.model for o in successes)
    ):
        considered.append(backup_outcome)
        if backup_outcome.ok:
            successes.append(backup_outcome)
            backup_used = True

    common: dict[str, Any] = dict(
        key_point_text=point.display_text,
        multiplier=point.multiplier,
        citation=point.citation,
        is_inverted=point.is_inverted,
        path_id=point.path_id,
        kind="judged",
        line=point.location.line if point.location else None,
    )

    if not successes:
        failures = _failures(considered)
        reflection = _failures_text(failures) if failures else None
        kinds = sorted({o.error_kind for o in considered if o.error_kind is not None})
        return PointAssessment(
            error=ALL_FAILED, reflection=reflection, judge_error_kinds=kinds, failed_judges=failures, **common
        )

    average = sum(_score(o) for o in successes) / len(successes)
    reflection = (
        f"Consensus from {len(successes)} judge(s). Average score: {to_fixed(average)}. "
        "See breakdown for individual reflections."
    )
    error = None
    note: str | None = None
    failures = []
    if len(successes) < attempted and not backup_used:
        failed = attempted - len(successes)
        error = (
            f"{failed} of {attempted} judges failed to return a valid assessment. The backup judge "
            "was not used or also failed. The final score is based on a partial consensus."
        )
        note = f"WARNING: {error}"
        failures = _failures(considered)
        if failures:
            note += "\n\n" + _failures_text(failures)
    elif backup_used:
        note = "NOTE: Backup judge was used to supplement failed primary judges."
    if note is not None:
        reflection += "\n\n" + note

    score = round2(average)
    if point.is_inverted:
        score = 1.0 - score  # not re-rounded, as the reference
        reflection = f"[INVERTED] {reflection}"

    return PointAssessment(
        coverage_extent=score,
        reflection=reflection,
        error=error,
        judge_model_id="consensus(" + ", ".join(o.judge.label for o in successes) + ")",
        individual_judgements=[
            JudgeVerdict(judge_model_id=o.judge.label, coverage_extent=_score(o), reflection=o.reflection)
            for o in successes
        ],
        consensus_note=note,
        failed_judges=failures,
        **common,
    )


def _errored(point: EvalPoint, message: str, *, authoring: bool = False) -> PointAssessment:
    return PointAssessment(
        key_point_text=point.display_text,
        error=message,
        multiplier=point.multiplier,
        citation=point.citation,
        is_inverted=point.is_inverted,
        path_id=point.path_id,
        kind="judged",
        authoring_error=authoring,
        line=point.location.line if point.location else None,
    )


async def judge_points_with(
    points: Sequence[EvalPoint],
    *,
    panel: JudgePanel,
    judge_one: JudgeOne,
) -> list[PointAssessment]:
    """Run ``panel`` over the text ``points`` with ``judge_one(judge, point) -> JudgeOutcome``.

    Every primary judge of every point runs concurrently; a point's backup judge (default panel
    only) runs after that point's primaries. Results are in the order of ``points``; function
    points are not judged and not returned. ``judge_one`` must not raise (an exception becomes
    that judge's failure).
    """
    text_points = [p for p in points if not p.is_function]

    async def guarded(judge: JudgeSpec, point: EvalPoint, sink: list[JudgeOutcome]) -> None:
        try:
            outcome = await judge_one(judge, point)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a judge's failure is data
            outcome = JudgeOutcome(judge, error=f"Client/Network error: {exc}", error_kind=_error_kind(exc))
        sink.append(outcome)  # completion order (docs/judges.md, 'Consensus')

    async def one_point(point: EvalPoint) -> PointAssessment:
        if point.authoring_error:
            return _errored(point, point.authoring_error, authoring=True)
        if not panel.judges:
            return _errored(point, "No judge is configured for this text point.")
        primaries: list[JudgeOutcome] = []
        await _all([guarded(judge, point, primaries) for judge in panel.judges])
        backup_outcome = None
        backup = panel.backup
        if backup is not None and backup_needed(panel.uses_defaults, primaries, backup):
            sink: list[JudgeOutcome] = []
            await guarded(backup, point, sink)
            backup_outcome = sink[0]
        return consensus_assessment(point, primaries, uses_defaults=panel.uses_defaults, backup_outcome=backup_outcome)

    return await _all([one_point(p) for p in text_points])


async def _all(awaitables: list[Coroutine[Any, Any, T]]) -> list[T]:
    """``asyncio.gather``'s results; one awaitable is awaited as it is: a point with one judge,
    an item with one point (the common case) then makes no task and no gathering future."""
    if len(awaitables) == 1:
        return [await awaitables[0]]
    return list(await asyncio.gather(*awaitables))


def make_judge_one(
    *,
    subject_text: str,
    transcript: str,
    description: str | None,
    scale: str,
    ask: Ask,
) -> JudgeOne:
    """The ``judge_one`` that builds the request, calls ``ask`` and parses the reply."""

    async def judge_one(judge: JudgeSpec, point: EvalPoint) -> JudgeOutcome:
        messages = build_judge_messages(
            point.text or "",
            subject_text=subject_text,
            transcript=transcript,
            approach=judge.approach,
            scale=scale,
            description=description,
        )
        try:
            reply = await ask(judge, messages, JUDGE_TEMPERATURE, JUDGE_MAX_TOKENS)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - transport failure of this judge
            return JudgeOutcome(judge, error=f"Client/Network error: {exc}", error_kind=_error_kind(exc))
        try:
            score, reflection = parse_judge_reply(reply, scale)
        except JudgeReplyError as exc:
            return JudgeOutcome(judge, error=str(exc))
        return JudgeOutcome(judge, score=score, reflection=reflection)

    return judge_one


async def judge_points(
    points: Sequence[EvalPoint],
    *,
    subject_text: str,
    history: Sequence[Any] | None,
    generated_indices: Iterable[int] | None,
    description: str | None,
    panel: JudgePanel,
    ask: Ask,
    initial_messages: Sequence[Any] | None = None,
    prompt_text: str | None = None,
) -> list[PointAssessment]:
    """Judge every text point of one (prompt, model) response with ``panel``.

    ``ask(judge, messages, temperature, max_tokens) -> reply text`` performs one model call
    (``messages`` are ``{role, content}`` dicts, system first) and raises on transport failure;
    it owns timeouts and retries (the plugin's ``ask`` sends through the engine, whose retry
    policy every request shares), so a judge whose ``ask`` raises has failed.
    """
    transcript = build_transcript(
        history, generated_indices, initial_messages=initial_messages, prompt_text=prompt_text
    )
    judge_one = make_judge_one(
        subject_text=subject_text,
        transcript=transcript,
        description=description,
        scale=panel.scale,
        ask=ask,
    )
    return await judge_points_with(points, panel=panel, judge_one=judge_one)
