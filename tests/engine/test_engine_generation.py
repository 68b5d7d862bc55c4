"""generate_conversation (docs/format.md, 'Multi-turn generation'): turn-by-turn generation at assistant nulls."""

from __future__ import annotations

import pytest

from pytest_weval.blueprint.fixtures import FixturePick
from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.run.generation import asks_model, generate_conversation
from tests.fakeserver import Rule

MODEL = ModelSpec(id="openai:gpt-4o-mini")


def run(engine, messages, system=None, **kw):
    return engine.run_coroutine(
        generate_conversation(
            engine,
            MODEL,
            messages,
            system=system,
            temperature=kw.pop("temperature", 0),
            no_cache=kw.pop("no_cache", False),
            **kw,
        )
    ).result()


def test_multi_turn_with_assistant_nulls(make_engine, server):
    engine = make_engine()
    conversation = run(
        engine,
        [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": None},
            {"role": "user", "content": "second"},
            {"role": "assistant", "content": "fixed"},
            {"role": "user", "content": "third"},
        ],
        system="Sys",
    )
    assert conversation.error is None
    assert conversation.history == [
        {"role": "system", "content": "Sys"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "echo: first"},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "fixed"},
        {"role": "user", "content": "third"},
        {"role": "assistant", "content": "echo: third"},
    ]
    assert conversation.generated_indices == [0, 2]
    assert conversation.generated_texts == ["echo: first", "echo: third"]
    assert conversation.final_text == "echo: third"
    assert conversation.usage.requests == 2
    # The second request carried the generated first turn.
    assert server.requests[1].body["messages"][2] == {"role": "assistant", "content": "echo: first"}
    assert server.requests[0].body["messages"][0] == {"role": "system", "content": "Sys"}


def test_single_turn_sends_temperature_and_no_cache(make_engine, server):
    engine = make_engine()
    conversation = run(engine, [{"role": "user", "content": "hi"}], temperature=0.7, no_cache=True)
    assert conversation.final_text == "echo: hi"
    assert server.requests[0].body["temperature"] == 0.7
    assert engine.stats["cache_hits"] == 0
    again = run(engine, [{"role": "user", "content": "hi"}], temperature=0.7, no_cache=True)
    # noCache: never from the persistent cache, but one run answers a request once.
    assert again.usage.cache_hits == 0 and server.count == 1
    later = make_engine()  # the next run asks again
    run(later, [{"role": "user", "content": "hi"}], temperature=0.7, no_cache=True)
    assert server.count == 2


def test_blank_reply_is_an_error(make_engine, server):
    server.rules.append(Rule(reply="   "))
    engine = make_engine()
    conversation = run(engine, [{"role": "user", "content": "hi"}])
    assert conversation.final_text is None
    assert "empty reply" in conversation.error
    assert conversation.history[-1]["content"].startswith("<<error>>")


def test_provider_failure_gives_the_reference_error_history(make_engine, server):
    server.rules.append(Rule(status=400, contains="second"))
    engine = make_engine()
    conversation = run(
        engine,
        [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": None},
            {"role": "user", "content": "second"},
        ],
    )
    assert "HTTP 400" in conversation.error
    assert conversation.generated_texts == ["echo: first"]
    assert conversation.history == [
        {"role": "user", "content": "first"},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": f"<<error>>{conversation.error}<</error>>"},
    ]


def test_message_objects_are_accepted(make_engine, server):
    from pytest_weval.blueprint.model import Message

    engine = make_engine()
    conversation = run(engine, (Message(role="user", content="obj"),))
    assert conversation.final_text == "echo: obj"


USER = {"role": "user", "content": "hi"}
NULL = {"role": "assistant", "content": None}
FIXED = {"role": "assistant", "content": "hello"}


@pytest.mark.parametrize(
    ("messages", "fixture"),
    [
        ([USER], FixturePick(final="canned")),
        ([USER], None),
        ([USER, FIXED, USER], FixturePick(final="canned")),
        ([USER, NULL, USER], FixturePick(final="canned")),  # a final answers only when nothing came before
        ([USER, NULL, USER], FixturePick(turns=("one",))),  # the trailing turn is the model's
        ([USER, NULL, USER, NULL], FixturePick(turns=("one", "two"))),
        ([USER, NULL, USER, NULL], FixturePick(turns=("one",))),  # turns beyond the list are generated
        ([USER, FIXED], None),  # the written answer: nothing generated
        ([], FixturePick(final="canned")),
    ],
)
def test_asks_model_agrees_with_what_the_walk_sends(make_engine, server, messages, fixture):
    """What the pre-flight and the plan read (issue 40): the model is asked exactly when the
    conversation sends it something."""
    conversation = run(make_engine(), messages, fixture=fixture)
    assert conversation.error is None
    assert asks_model(messages, fixture) == (server.count > 0)
