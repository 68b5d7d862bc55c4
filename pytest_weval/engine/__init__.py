"""The engine: providers over httpx, retries, limits, the response cache and cross-process
claims, run on a background event loop (docs/engine.md)."""

from pytest_weval.engine.engine import Engine
from pytest_weval.engine.errors import (
    CircuitOpenError,
    ConfigError,
    MissingKeyError,
    ModelCallError,
    ProviderError,
    ReplayMissError,
)
from pytest_weval.engine.request import ChatMessage, EngineSettings, ModelClient, ModelReply, ModelRequest

__all__ = [
    "ChatMessage",
    "CircuitOpenError",
    "ConfigError",
    "Engine",
    "EngineSettings",
    "MissingKeyError",
    "ModelCallError",
    "ModelClient",
    "ModelReply",
    "ModelRequest",
    "ProviderError",
    "ReplayMissError",
]
