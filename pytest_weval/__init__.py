"""pytest-weval: Weval blueprints as pytest test files.

The public API: what users and plugin authors use. Everything else is private, by package or by
name, and may change. Names are loaded on first use, so that ``import pytest_weval`` (which
pytest does at start-up, through the plugin's entry point) costs nothing for the ones a run does
not touch.

- Results, as every reporter and the ``pytest_weval_result(item, result)`` hook see them:
  ``ItemResult``, ``PointAssessment``, ``JudgeVerdict``, ``Usage``, ``Outcome``.
- Errors: ``WevalError`` (the base of every exception raised here), ``ErrorKind`` (what an
  item's error is), ``BlueprintError`` (a file that cannot be used, with its location).
- Warnings: ``PytestWevalWarning`` (their base), ``WevalWarning``, ``WevalPointError``.
- Plain Python and the ``weval_client``/``weval_judge`` fixtures: ``Weval`` (generate and
  judge through the run's engine) and the ``Judgement`` it returns; ``load_blueprint``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_weval.errors import ErrorKind, PytestWevalWarning, WevalError, WevalPointError, WevalWarning
from pytest_weval.lazy import names_on_first_use

__version__ = "0.1.0"

__all__ = [
    "BlueprintError",
    "ErrorKind",
    "ItemResult",
    "JudgeVerdict",
    "Judgement",
    "Outcome",
    "PointAssessment",
    "PytestWevalWarning",
    "Usage",
    "Weval",
    "WevalError",
    "WevalPointError",
    "WevalWarning",
    "load_blueprint",
]

_WHERE = {
    "BlueprintError": "pytest_weval.blueprint.model",
    "ItemResult": "pytest_weval.results",
    "JudgeVerdict": "pytest_weval.results",
    "Judgement": "pytest_weval.api",
    "Outcome": "pytest_weval.results",
    "PointAssessment": "pytest_weval.results",
    "Usage": "pytest_weval.results",
    "Weval": "pytest_weval.api",
    "load_blueprint": "pytest_weval.blueprint",
}

if TYPE_CHECKING:
    from pytest_weval.api import Judgement, Weval
    from pytest_weval.blueprint import load_blueprint
    from pytest_weval.blueprint.model import BlueprintError
    from pytest_weval.results import ItemResult, JudgeVerdict, Outcome, PointAssessment, Usage


__getattr__ = names_on_first_use(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
