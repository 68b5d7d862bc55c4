"""promptfoo's model-graded assertions (llm-rubric, model-graded-closedqa, factuality,
answer-relevance, g-eval): the requests promptfoo 0.123.1 sends its grader, and how it reads the
replies, as a small state machine the run layer drives. Reaches no engine.

    grading = grading_for(assertion, ctx)
    request = grading.next_request()
    while request is not None:
        grading.take_reply(<the grader's text, or the embedding for an EmbeddingRequest>)
        request = grading.next_request()
    component = grading.result()
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pytest_weval.scoring.promptfoo.model import MODEL_GRADED_TYPES, Assertion, AssertionContext, ComponentResult

__all__ = ["EmbeddingRequest", "GraderRequest", "Grading", "grading_for", "is_model_graded"]


@dataclasses.dataclass(frozen=True)
class GraderRequest:
    """One chat request to the grader. ``prompt`` is the exact text promptfoo hands its provider;
    ``messages`` is what a chat provider sends for it (the JSON array parsed, or one user message).
    ``temperature``/``max_tokens`` None: the grader provider's own settings (promptfoo's OpenAI
    provider sends temperature 0 unless configured)."""

    prompt: str
    messages: list[dict[str, Any]]
    label: str
    temperature: float | None = None
    max_tokens: int | None = None


@dataclasses.dataclass(frozen=True)
class EmbeddingRequest:
    """answer-relevance: embed ``text`` with the grader's embedding provider; reply with the vector."""

    text: str


def is_model_graded(assertion: Assertion) -> bool:
    """True for a model-graded assertion, or an assert-set holding one."""
    if assertion.type == "assert-set":
        return any(is_model_graded(child) for child in assertion.children)
    return assertion.type in MODEL_GRADED_TYPES


class Grading:
    """Drives one model-graded assertion: requests out, replies in, then the result."""

    def __init__(self, assertion: Assertion, ctx: AssertionContext):
        self.assertion = assertion
        self.ctx = ctx

    def next_request(self) -> GraderRequest | EmbeddingRequest | None:
        raise NotImplementedError

    def take_reply(self, reply: str | list[float]) -> None:
        raise NotImplementedError

    def result(self) -> ComponentResult:
        raise NotImplementedError


def grading_for(assertion: Assertion, ctx: AssertionContext) -> Grading:
    return Grading(assertion, ctx)
