from __future__ import annotations

from collections.abc import Iterator

import pytest
from scoring_helpers import LoopbackService, run_loopback


@pytest.fixture(scope="session")
def _loopback_server() -> Iterator[LoopbackService]:
    yield from run_loopback()


@pytest.fixture
def loopback(_loopback_server: LoopbackService) -> LoopbackService:
    """The loopback service, with no routes and no recorded requests."""
    _loopback_server.reset()
    return _loopback_server
