"""What the engine asks of the providers' cheaper tiers and prompt caches (issue 45 items 2 and
3): the service tier in the request body where the model takes it, flex's long timeout, the
prefix the judge calls of one answer share marked for the prompt cache where it pays, and with
--weval-prompt-cache=off the reference's bodies exactly (docs/engine.md, 'Prices, spend and the
budget')."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
from engine_helpers import request

from pytest_weval.engine.errors import ProviderError
from pytest_weval.judges import build_judge_messages, shared_prefix_chars
from tests.engine.engine_helpers import complete_sync
from tests.fakeserver.server import Rule

ANSWER = "A long answer about the bakery's opening hours. " * 300  # ~3,600 tokens at 4 characters each
CRITERIA = ["gives the opening hours", "is brief", "mentions the weekend"]


def _judge_requests(model_id: str, *, shared: bool = True, answer: str = ANSWER) -> list:
    """The judge calls of one answer, one per criterion, as the pipeline's asker makes them."""
    out = []
    for criterion in CRITERIA:
        messages = build_judge_messages(criterion, subject_text=answer, transcript="user: When is it open?")
        prefix = shared_prefix_chars(messages[-1]["content"]) if shared else 0
        out.append(
            request(
                model_id,
                messages[-1]["content"],
                system=messages[0]["content"],
                purpose="judge",
                shared_prefix_chars=prefix,
                shared_by=len(CRITERIA) if prefix else 0,
            )
        )
    return out


def _bodies(server) -> list[dict]:
    return [json.loads(r.raw_body) for r in server.requests]


def test_the_shared_prefix_is_everything_but_the_criterion():
    one, two = (
        build_judge_messages(c, subject_text="the answer", transcript="user: hi")[-1]["content"] for c in CRITERIA[:2]
    )
    at = shared_prefix_chars(one)
    assert at and one[:at] == two[:at] and one[at:] != two[at:]
    assert "the answer" in one[:at] and CRITERIA[0] not in one[:at]
    assert one[at:].startswith("<CRITERION>")


def test_anthropic_marks_the_shared_prefix_for_its_cache(make_engine, server):
    engine = make_engine()
    for req in _judge_requests("anthropic:claude-sonnet-4-5"):
        complete_sync(engine, req)
    for body, req in zip(_bodies(server), _judge_requests("anthropic:claude-sonnet-4-5")):
        blocks = body["messages"][-1]["content"]
        assert blocks[0]["cache_control"] == {"type": "ephemeral"}
        assert "cache_control" not in blocks[1]
        # the same text, in two pieces, split where the criterion starts
        assert "".join(b["text"] for b in blocks) == req.messages[-1].content
        assert blocks[1]["text"].startswith("<CRITERION>")
        assert body["system"] == req.messages[0].content


@pytest.mark.parametrize(
    ("case", "model_id", "answer"),
    [
        ("one call", "anthropic:claude-sonnet-4-5", ANSWER),
        ("under the model's minimum", "anthropic:claude-3-5-haiku-latest", "A short answer. " * 200),
    ],
)
def test_anthropic_marks_nothing_where_caching_does_not_pay(make_engine, server, case, model_id, answer):
    # One call alone has nobody to share its prefix with; Claude Haiku 3.5 caches no prompt under
    # 2,048 tokens (this one is ~1,300).
    engine = make_engine()
    requests = _judge_requests(model_id, answer=answer)
    if case == "one call":
        requests = [dataclasses.replace(requests[0], shared_by=1)]
    for req in requests:
        complete_sync(engine, req)
    for body in _bodies(server):
        assert isinstance(body["messages"][-1]["content"], str)


def test_openrouter_marks_the_shared_prefix_of_an_anthropic_model(make_engine, server):
    engine = make_engine()
    for req in _judge_requests("openrouter:anthropic/claude-sonnet-4.5"):
        complete_sync(engine, req)
    for body in _bodies(server):
        parts = body["messages"][-1]["content"]
        assert parts[0]["cache_control"] == {"type": "ephemeral"}
        assert parts[1]["text"].startswith("<CRITERION>")


def test_openai_gets_one_prompt_cache_key_per_judge_and_answer(make_engine, server):
    engine = make_engine()
    for req in _judge_requests("openai:gpt-4o-mini") + _judge_requests("openai:gpt-4o-mini", answer="Other. " * 900):
        complete_sync(engine, req)
    keys = [body["prompt_cache_key"] for body in _bodies(server)]
    assert len(set(keys[:3])) == 1 and len(set(keys[3:])) == 1 and keys[0] != keys[3]
    assert all(isinstance(body["messages"][-1]["content"], str) for body in _bodies(server))


@pytest.mark.parametrize("model_id", ["anthropic:claude-sonnet-4-5", "openai:gpt-4o-mini", "google:gemini-2.5-flash"])
def test_prompt_cache_off_sends_the_reference_bodies_byte_for_byte(make_engine, server, model_id):
    # The bodies of the same requests without any sharing hint are what was sent before
    # --weval-prompt-cache existed; with it off, the hinted requests send exactly those bytes.
    for shared in (True, False):
        engine = make_engine(prompt_cache="off", cache_mode="off")
        for req in _judge_requests(model_id, shared=shared):
            complete_sync(engine, req)
    raw = [r.raw_body for r in server.requests]
    assert len(raw) == 6
    assert raw[:3] == raw[3:]
    for body in raw[:3]:
        parsed = json.loads(body)
        assert "prompt_cache_key" not in parsed and "service_tier" not in parsed
        assert "cache_control" not in body


def test_a_flex_request_waits_out_flex_s_slowness(make_engine, server):
    # Flex queues: an attempt may take minutes, so a flex request's timeout is at least 15
    # minutes (OpenAI's flex guide); a default-tier request keeps --weval-timeout.
    server.rules = [Rule(model="gpt-5-mini", reply="slow but here", latency_ms=600)]
    flex = make_engine(service_tier="flex", timeout_s=0.2, max_attempts=1, cache_mode="off")
    assert complete_sync(flex, request("openai:gpt-5-mini", "q")).text == "slow but here"
    plain = make_engine(timeout_s=0.2, max_attempts=1, cache_mode="off")
    with pytest.raises(ProviderError, match="timeout"):
        complete_sync(plain, request("openai:gpt-5-mini", "q"))


@pytest.mark.parametrize(
    ("model_id", "tier", "field", "sent"),
    [
        ("openai:gpt-5-mini", "flex", "service_tier", "flex"),
        ("openai:o4-mini", "flex", "service_tier", "flex"),
        ("openai:gpt-4o-mini", "flex", "service_tier", None),  # no flex tier
        ("openai:gpt-4o-mini", "priority", "service_tier", "priority"),
        ("openai:gpt-4o-mini", "default", "service_tier", "default"),
        ("openai:gpt-5-mini", "auto", "service_tier", None),
        ("google:gemini-3.8-flash-tts", "flex", "serviceTier", "flex"),
        ("google:gemini-2.5-flash", "flex", "serviceTier", None),  # no flex price known for it
        ("anthropic:claude-sonnet-4-5", "flex", "service_tier", None),
        ("mistral:mistral-small-latest", "flex", "service_tier", None),
    ],
)
def test_the_tier_is_sent_to_the_models_that_take_it(make_engine, server, model_id, tier, field, sent):
    engine = make_engine(service_tier=tier, cache_mode="off")
    complete_sync(engine, request(model_id, "q"))
    (body,) = _bodies(server)
    assert body.get(field) == sent


def test_inside_a_batch_anthropic_marks_the_prefix_for_the_one_hour_cache():
    # A batch may take longer than the 5-minute cache lives; its lines ask for the 1-hour one.
    from pytest_weval.engine.transport.providers import adapter_for

    requests = _judge_requests("anthropic:claude-sonnet-4-5")
    adapter = adapter_for(requests[0].model, frozenset())
    assert isinstance(adapter.batch_body(requests[0])["messages"][-1]["content"], str)  # alone: the reference's
    adapter.prompt_cache = "auto"
    for req in requests:
        live, batched = adapter.body(req), adapter.batch_body(req)
        assert live["messages"][-1]["content"][0]["cache_control"] == {"type": "ephemeral"}
        blocks = batched["messages"][-1]["content"]
        assert blocks[0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
        assert "".join(b["text"] for b in blocks) == req.messages[-1].content


# sha256 of each body the engine sent for these judge calls at commit 0d64641, before
# --weval-prompt-cache existed (recorded by running that commit's engine against the fake).
RECORDED = Path(__file__).parent / "data" / "judge_body_digests_0d64641.json"


@pytest.mark.parametrize("mode", ["off", "auto"])
def test_prompt_cache_off_sends_the_bodies_sent_before_it_existed(make_engine, server, mode):
    recorded = json.loads(RECORDED.read_text())
    engine = make_engine(prompt_cache=mode, cache_mode="off")
    for model_id, digests in recorded.items():
        server.reset()
        for req in _judge_requests(model_id):
            complete_sync(engine, dataclasses.replace(req, max_tokens=2000))
        sent = [hashlib.sha256(r.raw_body.encode()).hexdigest() for r in server.requests]
        if mode == "off":
            assert sent == digests, model_id
        elif model_id.startswith(("anthropic:", "openrouter:anthropic/", "openai:")):
            assert not set(sent) & set(digests), model_id  # marked: the hints reach these bodies
        else:
            assert sent == digests, model_id  # Gemini: nothing to mark
