"""The engine: providers over httpx, retries, limits, the response cache and cross-process
claims, run on a background event loop (docs/engine.md).

The names below load their modules when first asked for: a process that reads only the store
or the settings' types (``engine.store``, ``engine.request``; the xdist controller) does not
load the engine itself, httpx and the providers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_weval.lazy import names_on_first_use

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


__getattr__ = names_on_first_use(__name__, {name: f"{__name__}.{module}" for name, module in _WHERE.items()})
