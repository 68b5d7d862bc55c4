"""Fixtures that give hand-written tests the same models, cache, limits and judges.

pytest finds them in the plugin's entry module, loaded in every run: the engine and the API
they return are imported when a test asks for one (``activation.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_weval.plugin import activation

if TYPE_CHECKING:
    from pytest_weval.api import Weval


@pytest.fixture(scope="session")
def weval_client(request: pytest.FixtureRequest) -> Weval:
    """Generate replies from any model id the plugin knows: ``weval_client.generate(model, prompt)``
    (or ``await weval_client.agenerate(...)``), through the run's cache and rate limits."""
    return activation.engine_for(request)


@pytest.fixture(scope="session")
def weval_judge(request: pytest.FixtureRequest) -> Weval:
    """Score text against points in blueprint syntax with the configured judges and threshold:
    ``assert weval_judge(reply, should=["..."]).passed`` (or ``await weval_judge.ajudge(...)``)."""
    return activation.engine_for(request)
