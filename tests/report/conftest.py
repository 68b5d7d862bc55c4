"""Fixtures for the reporter tests; the hand-built data is in ``report_data``."""

from __future__ import annotations

import pytest
from report_data import (
    PRIVACY,
    TONE,
    TOP,
    TRIAGE,
    make_results,
    make_simple_blueprint,
    make_tone_blueprint,
    make_triage_blueprint,
)

from pytest_weval.blueprint.model import Blueprint
from pytest_weval.results import ItemResult


@pytest.fixture
def results() -> list[ItemResult]:
    return make_results()


@pytest.fixture
def blueprints() -> dict[str, Blueprint]:
    return {
        TRIAGE: make_triage_blueprint(),
        PRIVACY: make_simple_blueprint(PRIVACY, "evals__safety__privacy", ["ssn", "address"]),
        TONE: make_tone_blueprint(),
        TOP: make_simple_blueprint(TOP, "top", ["hello"]),
    }
