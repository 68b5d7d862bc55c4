"""The engine: providers over httpx, retries, limits, the response cache and cross-process
claims, run on a background event loop (docs/engine.md).

The names below load their modules when first asked for: a process that reads only the store
or the settings' types (``engine.store``, ``engine.request``; the xdist controller) does not
load the engine itself, httpx and the providers."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_WHERE = {
    "Engine": "engine",
    "CircuitOpenError": "errors",
    "ConfigError": "errors",
    "MissingKeyError": "errors",
    "ModelCallError": "errors",
    "ProviderError": "errors",
    "ReplayMissError": "errors",
    "ChatMessage": "request",
    "EngineSettings": "request",
    "ModelClient": "request",
    "ModelReply": "request",
    "ModelRequest": "request",
}

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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
