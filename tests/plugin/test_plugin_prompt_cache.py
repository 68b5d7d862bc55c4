"""--weval-prompt-cache (issue 45 item 3): the judge calls of one answer share all but the
criterion; with it on (the default) Anthropic is told to cache that prefix, and the run is billed
the cache's rates for it, against a fake that caches as the provider does (tests/fakeserver/caching.py,
``by_prefix``); off sends the reference's bodies (docs/engine.md, 'Prices, spend and the budget')."""

from __future__ import annotations

import genai_prices
import pytest
from plugin_helpers import Project, Rule

MODEL = "gpt-4o-mini"
JUDGE = "claude-sonnet-4-5"
VERDICT = "<reflection>The text meets it.</reflection><classification>CLASS_EXACT</classification>"
ANSWER = " ".join(f"word{n % 97}" for n in range(1300))  # an answer of ~1,300 tokens
ITEMS, POINTS = 4, 3


def _suite(project: Project) -> None:
    lines = [f"models: [openai:{MODEL}]", "---"]
    for n in range(ITEMS):
        lines += [f"- id: p{n}", f"  prompt: Question {n}, please answer it at length.", "  should:"]
        lines += [f"    - makes point {k} about question {n}" for k in range(POINTS)]
    project.write("blueprints/suite.yml", "\n".join(lines) + "\n")
    project.rules(Rule(model=JUDGE, reply=VERDICT), Rule(model=MODEL, reply=ANSWER + " {last}"))
    project.server.prompt_cache.by_prefix = True
    project.monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")


def _library_price(sent: list[dict]) -> float:
    total = 0.0
    for body in sent:
        provider = "anthropic" if body["model"] == JUDGE else "openai"
        flavor = "chat" if provider == "openai" else "default"
        usage = genai_prices.extract_usage(body, provider_id=provider, api_flavor=flavor).usage
        total += float(genai_prices.calc_price(usage, body["model"], provider_id=provider).total_price)
    return total


def _run(project: Project, mode: str) -> tuple[float, list[dict]]:
    project.server.prompt_cache.sent.clear()
    project.server.requests.clear()
    result = project.run(
        "--weval-out=out",
        "--weval-check-models=off",
        "--weval-cache=off",
        f"--weval-judges=anthropic:{JUDGE}",
        f"--weval-prompt-cache={mode}",
    )
    result.assert_outcomes(passed=ITEMS)
    return float(project.json("out/summary.json")["usageTotal"]["costUsd"]), list(project.server.prompt_cache.sent)


def test_the_judge_calls_of_one_answer_read_their_shared_prefix_from_the_cache(project: Project):
    _suite(project)
    on, sent_on = _run(project, "auto")
    judged = [b["usage"] for b in sent_on if b["model"] == JUDGE]
    assert len(judged) == ITEMS * POINTS
    # per answer: the first judge call writes the prefix, the other two read it
    assert sum(1 for u in judged if u.get("cache_creation_input_tokens")) == ITEMS
    assert sum(1 for u in judged if u.get("cache_read_input_tokens")) == ITEMS * (POINTS - 1)
    assert on == pytest.approx(_library_price(sent_on), rel=0.01)

    off, sent_off = _run(project, "off")
    assert not any(b["usage"].get("cache_read_input_tokens") for b in sent_off if b["model"] == JUDGE)
    assert off == pytest.approx(_library_price(sent_off), rel=0.01)
    assert on < 0.8 * off
    # off: no mark, each message one string as the reference sends it
    assert all(isinstance(r.body["messages"][-1]["content"], str) for r in project.requests(JUDGE))
