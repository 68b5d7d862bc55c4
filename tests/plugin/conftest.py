"""End-to-end tests of the plugin: real pytest runs (pytester) over real loopback HTTP to the
fake server. Nothing of ours is patched; only the environment points the providers at it."""

from __future__ import annotations

import pytest
from plugin_helpers import CANARY, PROVIDER_VARS, Project

from tests.fakeserver import FakeServer


@pytest.fixture
def fake():
    with FakeServer() as server:
        yield server


@pytest.fixture
def project(pytester: pytest.Pytester, fake: FakeServer, monkeypatch: pytest.MonkeyPatch) -> Project:
    """A project directory whose providers all point at the fake server; only OpenAI has a key
    (the canary), so a leak of it anywhere is detectable."""
    for name in PROVIDER_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    for name, value in fake.env(keys=False).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    return Project(pytester, fake, monkeypatch)
