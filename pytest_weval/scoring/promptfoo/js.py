"""JavaScript of promptfoo suites (``javascript`` assertions, ``transform``) in our V8 sandbox."""

from __future__ import annotations

from typing import Any

from pytest_weval.scoring.promptfoo.model import AssertionContext

__all__ = ["apply_transform", "run_transform"]


def run_transform(code: str, output: Any, ctx: AssertionContext) -> Any:
    raise NotImplementedError("transform: coming in the next commit")


def apply_transform(code: str, ctx: AssertionContext) -> Any:
    """``options.transform`` of a test: the output it makes from ``ctx.output``."""
    return run_transform(code, ctx.output, ctx)
