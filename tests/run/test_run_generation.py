"""The generation request and its turn count (run/generation.py): built in one place, read by
the conversation walk, the budget's hold, the plan and agent eval cases."""

from __future__ import annotations

import pytest

from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.engine.request import ChatMessage
from pytest_weval.run.generation import answers_asked, first_generation, generation_request, planned_answers

U, A = "user", "assistant"


@pytest.mark.parametrize(
    "messages,asked",
    [
        ([(U, "hi")], 1),
        ([(U, "a"), (A, None), (U, "b")], 2),
        ([(U, "a"), (A, None), (U, "b"), (A, None)], 2),
        ([(U, "a"), (A, "written")], 1),  # asks nothing, but a hold or a plan counts one
        ([], 1),
    ],
)
def test_answers_asked_counts_null_turns_and_the_trailing_answer(messages, asked) -> None:
    assert answers_asked(messages) == asked
    assert answers_asked(messages) == max(1, len(planned_answers(messages, None)))


def test_first_generation_is_what_the_walk_sends_first() -> None:
    messages = [(U, "a"), (A, None), (U, "b")]
    assert first_generation(messages, "be brief") == (("system", "be brief"), (U, "a"))
    assert first_generation([(U, "a"), (A, "written")], None) is None
    assert first_generation([(U, "a")], None) == ((U, "a"),)


def test_every_generation_request_is_a_generate_request() -> None:
    request = generation_request(
        ModelSpec(id="openai:gpt-4o-mini"),
        [{"role": U, "content": "hi"}, ChatMessage(A, "there")],
        temperature=0.3,
        priority=2,
        sample=1,
    )
    assert request.purpose == "generate"
    assert request.messages == (ChatMessage(U, "hi"), ChatMessage(A, "there"))
    assert (request.temperature, request.priority, request.sample, request.no_cache) == (0.3, 2, 1, False)
