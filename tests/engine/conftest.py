"""Engine tests talk real HTTP to the loopback fake server (tests/fakeserver)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pytest_weval.engine import Engine, EngineSettings  # noqa: E402
from tests.fakeserver import FakeServer  # noqa: E402


@pytest.fixture
def server():
    with FakeServer() as fake:
        yield fake


@pytest.fixture
def make_engine(tmp_path, server):
    """make_engine(**settings) -> a started Engine pointed at the fake server, closed after."""
    engines: list[Engine] = []

    def make(env: dict | None = None, **overrides) -> Engine:
        values = dict(
            cache_dir=tmp_path / "cache",
            env=server.env() if env is None else env,
            backoff_base_s=0.01,
            backoff_max_s=0.05,
            timeout_s=5.0,
        )
        values.update(overrides)
        engine = Engine(EngineSettings(**values)).start()
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close()
