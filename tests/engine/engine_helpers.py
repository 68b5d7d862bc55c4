"""Helpers shared by the engine tests."""

from __future__ import annotations


def request(model, text="hello", *, system=None, custom=None, **kw):
    """A ModelRequest for ``model`` (an id, or a ModelSpec) with an optional system message."""
    from pytest_weval.blueprint.model import ModelSpec
    from pytest_weval.engine import ChatMessage, ModelRequest

    spec = model if isinstance(model, ModelSpec) else ModelSpec(id=model, custom=custom)
    messages = ([ChatMessage("system", system)] if system is not None else []) + [ChatMessage("user", text)]
    kw.setdefault("temperature", 0)
    return ModelRequest(model=spec, messages=tuple(messages), **kw)


def complete_sync(engine, request, timeout=None):
    """``engine.complete(request)`` from a test's thread (the engine runs its own loop)."""
    return engine.run_coroutine(engine.complete(request)).result(timeout)
