"""--weval-service-tier (issue 45 item 2): the tier is sent to the models that take it (OpenAI's
flex models), one pre-flight line names the others (sent at the default tier), a flex request's
429 "resource unavailable" is waited out, and every reply is priced at the tier it reports
(docs/engine.md, 'Prices, spend and the budget'; docs/options.md)."""

from __future__ import annotations

import genai_prices
import pytest
from plugin_helpers import Project, Rule

FLEX = "gpt-5-mini"  # OpenAI serves it at flex, at half its default price
PLAIN = "gpt-4o-mini"  # no flex tier
ITEMS = 6


def _suite(project: Project, *models: str) -> None:
    lines = [f"models: [{', '.join('openai:' + m for m in models)}]", "---"]
    for n in range(ITEMS):
        lines += [f"- id: p{n}", f"  prompt: Question {n}, please answer it.", "  should:", "    - $icontains: answer"]
    project.write("blueprints/suite.yml", "\n".join(lines) + "\n")
    project.rules(Rule(reply="Here is my answer."))
    project.server.prompt_cache.read_share = 0.5
    project.server.prompt_cache.prompt_scale = 1000


def _library_price(sent: list[dict]) -> float:
    """genai-prices' price of every reply body, at the tier each reports."""
    total = 0.0
    for body in sent:
        usage = genai_prices.extract_usage(body, provider_id="openai", api_flavor="chat").usage
        context = {"service_tier": body["service_tier"]} if "service_tier" in body else None
        total += float(
            genai_prices.calc_price(usage, body["model"], provider_id="openai", price_context=context).total_price
        )
    return total


@pytest.mark.parametrize("tier", ["auto", "flex"])
def test_the_run_costs_the_library_price_of_every_reply_at_the_tier_it_reports(project: Project, tier: str):
    _suite(project, FLEX, PLAIN)
    result = project.run("--weval-out=out", "--weval-check-models=off", f"--weval-service-tier={tier}")
    result.assert_outcomes(passed=2 * ITEMS)
    sent = project.server.prompt_cache.sent
    assert len(sent) == 2 * ITEMS
    asked = {r.model: r.body.get("service_tier") for r in project.requests()}
    if tier == "flex":
        assert asked == {FLEX: "flex", PLAIN: None}  # gpt-4o-mini has no flex tier: sent at the default
        assert {b["service_tier"] for b in sent if b["model"] == FLEX} == {"flex"}
        result.stdout.fnmatch_lines([f"*--weval-service-tier=flex: not offered for openai:{PLAIN}*default tier*"])
    else:
        assert asked == {FLEX: None, PLAIN: None}  # the reference's bodies
    cost = float(project.json("out/summary.json")["usageTotal"]["costUsd"])
    assert cost == pytest.approx(_library_price(sent), rel=0.01)


def test_flex_costs_half_the_default_tier(project: Project):
    _suite(project, FLEX)
    project.run("--weval-out=out", "--weval-check-models=off", "--weval-cache=off").assert_outcomes(passed=ITEMS)
    default = float(project.json("out/summary.json")["usageTotal"]["costUsd"])
    project.run(
        "--weval-out=out", "--weval-check-models=off", "--weval-cache=off", "--weval-service-tier=flex"
    ).assert_outcomes(passed=ITEMS)
    flex = float(project.json("out/summary.json")["usageTotal"]["costUsd"])
    assert flex == pytest.approx(default / 2, rel=0.01)


def test_a_flex_request_refused_for_want_of_capacity_is_waited_out(project: Project):
    _suite(project, FLEX)
    project.server.service_tiers.unavailable = 3
    result = project.run("--weval-check-models=off", "--weval-service-tier=flex")
    result.assert_outcomes(passed=ITEMS)
    assert project.server.service_tiers.refused == 3
    flex = [r for r in project.requests() if r.body.get("service_tier") == "flex"]
    assert [r.outcome for r in flex].count("429-flex") == 3


def test_an_unknown_service_tier_is_a_usage_error(project: Project):
    _suite(project, FLEX)
    result = project.run("--weval-service-tier=cheap")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--weval-service-tier*cheap*auto, default, flex, priority*"])
    assert not project.requests()


@pytest.mark.parametrize("points", [1, 3])
def test_the_plan_shows_the_prompt_cached_cost_where_judge_calls_share_a_prefix(project: Project, points: int):
    # The judge calls of one answer share system prompt, transcript and answer; with several
    # criteria the plan shows a second, prompt-cached figure beside its no-caching upper bound.
    lines = [f"models: [openai:{PLAIN}]", "---"]
    for n in range(ITEMS):
        lines += [f"- id: p{n}", f"  prompt: Question {n}, please answer it at length.", "  should:"]
        lines += [f"    - makes point {k} about question {n}" for k in range(points)]
    project.write("blueprints/suite.yml", "\n".join(lines) + "\n")
    result = project.run(
        "--collect-only", "--weval-out=out", "--weval-check-models=off", "--weval-judges=anthropic:claude-sonnet-4-5"
    )
    assert result.ret == 0
    cost = project.json("out/plan.json")["cost_usd"]
    if points == 1:
        assert "prompt_cached" not in cost
        assert not any("prompt-cached" in line for line in result.outlines)
        return
    assert 0 < cost["prompt_cached"]["high"] < cost["high"]
    row = project.json("out/plan.json")["requests"]["by_model"]["anthropic:claude-sonnet-4-5"]["cost_usd"]
    assert row["prompt_cached"]["high"] < row["high"]
    result.stdout.fnmatch_lines(["*no prompt caching assumed (an upper bound*", "*prompt-cached: the judge calls*"])
