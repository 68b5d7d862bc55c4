"""Fixtures that give hand-written tests the same models, cache, limits and judges."""

from __future__ import annotations

import pytest

from pytest_weval.api import Weval
from pytest_weval.plugin.registration import engine_of


@pytest.fixture(scope="session")
def weval_client(pytestconfig: pytest.Config) -> Weval:
    """Generate replies from any model id the plugin knows: ``weval_client.generate(model, prompt)``
    (or ``await weval_client.agenerate(...)``), through the run's cache and rate limits."""
    return engine_of(pytestconfig).weval()


@pytest.fixture(scope="session")
def weval_judge(pytestconfig: pytest.Config) -> Weval:
    """Score text against points in blueprint syntax with the configured judges and threshold:
    ``assert weval_judge(reply, should=["..."]).passed`` (or ``await weval_judge.ajudge(...)``)."""
    return engine_of(pytestconfig).weval()
