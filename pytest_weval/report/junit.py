"""junit ``user_properties`` of an item, with exactly the names of docs/options.md, 'junit properties'."""

from __future__ import annotations

from pytest_weval.report._fmt import js_number
from pytest_weval.results import Result

JUNIT_NAMES = frozenset(
    {
        "weval_score",
        "weval_threshold",
        "weval_model",
        "weval_prompt_id",
        "weval_blueprint_id",
        "weval_attempt",
        "weval_fixture",
        "weval_samples",
        "weval_flaky",
    }
)


# Each distinct property once: a run's thousands of items repeat a few thresholds, scores,
# models and blueprint ids, and pytest keeps every item's properties till the session ends.
# Bounded, as a process may run many sessions (pytest's own tests run it in-process).
_SHARED: dict[tuple[str, str], tuple[str, str]] = {}
_SHARED_MOST = 1 << 16


def junit_properties(result: Result) -> list[tuple[str, str]]:
    """``weval_score`` (omitted when the item has no score, e.g. it errored), ``weval_threshold``,
    ``weval_model`` (the effective id), ``weval_prompt_id``, ``weval_blueprint_id``, and
    ``weval_attempt`` (2, 3, ...) when a rerun asked the model again, and ``weval_fixture``
    (``final`` or ``turns``) when the answer came from --weval-fixtures; with --weval-repeat,
    ``weval_samples`` (how many samples the score is the mean of) and ``weval_flaky`` (``true``
    when they fall on both sides of the threshold, else ``false``).

    Numbers are printed as JavaScript prints them (``0.42``, ``1``), like the Weval JSON.
    """
    props: list[tuple[str, str]] = []
    if result.score is not None:
        props.append(("weval_score", js_number(result.score)))
    props += [
        ("weval_threshold", js_number(result.threshold)),
        ("weval_model", result.effective_model_id),
        ("weval_prompt_id", result.prompt_id),
        ("weval_blueprint_id", result.blueprint_id),
    ]
    if result.sample:
        props.append(("weval_attempt", str(result.sample + 1)))
    if result.fixture is not None:
        props.append(("weval_fixture", result.fixture))
    if result.sample_scores:
        props.append(("weval_samples", str(len(result.sample_scores))))
        props.append(("weval_flaky", "true" if result.flaky else "false"))
    if len(_SHARED) >= _SHARED_MOST:
        _SHARED.clear()
    return [_SHARED.setdefault(prop, prop) for prop in props]
