"""Prices (genai-prices, ini weval_prices), the run's cost, and --weval-budget: no request after
the budget is reached, the rest error saying so, and a larger budget continues from the cache."""

from __future__ import annotations

import pytest
from plugin_helpers import JUDGE_ID, MODEL, MODEL_ID, Project, judge_rule, section

from pytest_weval.results import ItemResult

PROMPTS = 12


def _suite(project: Project) -> None:
    lines = [f"models: [{MODEL_ID}]", "---"]
    for n in range(PROMPTS):
        lines += [f"- id: p{n}", f"  prompt: Question {n} please", "  should:", f"    - $icontains: question {n}"]
    project.write("blueprints/priced.yml", "\n".join(lines) + "\n")


def _cost(requests: list, per_mtok: float) -> float:
    """What the fake server's replies cost: it counts a word a token, prompt and reply."""
    total = 0.0
    for r in requests:
        prompt_tokens = max(1, len(r.last_user.split()))
        reply_tokens = len(f"echo: {r.last_user}".split())
        total += (prompt_tokens + reply_tokens) * per_mtok / 1e6
    return total


def test_the_cost_per_model_comes_from_genai_prices_or_the_ini(project: Project):
    _suite(project)
    result = project.run("--weval-out=out")
    result.assert_outcomes(passed=PROMPTS)
    usage = section(result.outlines, "weval scores")
    total = next(line for line in usage if line.startswith("total"))
    sent = project.requests()
    # gpt-4o-mini in genai-prices: $0.15 per million input tokens, $0.60 per million output
    expected = sum(
        (max(1, len(r.last_user.split())) * 0.15 + len(f"echo: {r.last_user}".split()) * 0.60) / 1e6 for r in sent
    )
    assert total.split()[-1] == f"${expected:,.4f}", total
    cost = project.json("out/summary.json")["cost"]
    assert cost["total_usd"] == pytest.approx(expected, abs=1e-6)
    assert cost["by_model"][MODEL_ID] == pytest.approx(expected, abs=1e-6)
    # ini weval_prices wins over genai-prices
    project.ini("weval_prices =", f"    {MODEL_ID} 1000 1000")
    again = project.run("--weval-cache=refresh", "--weval-out=out2")
    assert project.json("out2/summary.json")["cost"]["total_usd"] == pytest.approx(_cost(sent, 1000), rel=1e-6)
    assert again.ret == 0


def test_a_budget_stops_sending_and_a_larger_one_continues_from_the_cache(project: Project):
    _suite(project)
    project.ini("weval_prices =", f"    {MODEL_ID} 10000 10000")
    # each request costs about $0.1 at these prices: the budget lets a few through
    first = project.run("--weval-budget=0.35", "--weval-concurrency=1", "-rA")
    sent = project.requests()
    assert 0 < len(sent) < PROMPTS
    spent = _cost(sent, 10000)
    assert spent >= 0.35 and _cost(sent[:-1], 10000) < 0.35  # nothing sent once it was reached
    first.assert_outcomes(passed=len(sent), errors=PROMPTS - len(sent))
    out = first.stdout.str()
    assert f"budget reached (${spent:.4f} of $0.35)" in out, out
    # the answers received are in the cache: a larger budget asks only for the rest
    project.server.reset()
    second = project.run("--weval-budget=5", "--weval-concurrency=1")
    second.assert_outcomes(passed=PROMPTS)
    again = {r.last_user for r in project.requests()}
    assert len(again) == PROMPTS - len(sent) and not again & {r.last_user for r in sent}


def test_xdist_workers_share_one_budget_exactly(project: Project):
    """-n 3: the workers reserve from one ledger in the claims file, so together they keep what
    is spent and reserved within the budget, as one process does. Each reply costs less than
    the engine reserves for it (a word a token here, about 1.4 tokens a word estimated, 1,000
    tokens of output reserved), so the spend passes the budget only by the one request that
    went when nothing else was in flight anywhere: without that request, what the server
    answered costs less than the budget."""
    filler = " ".join(["word"] * 40)
    prompts = 150  # a worker takes up to 40 items ahead: enough for all three to send at once
    lines = [f"models: [{MODEL_ID}]", "---"]
    for n in range(prompts):
        lines += [
            f"- id: p{n}",
            f"  prompt: 'Question {n}: {filler}'",
            "  should:",
            f"    - $icontains: 'question {n}:'",
        ]
    project.write("blueprints/priced.yml", "\n".join(lines) + "\n")
    project.ini("weval_prices =", f"    {MODEL_ID} 10000 100")
    # Slow replies, so that every worker is sending before the first reply lands.
    project.server.latency_ms = 800
    budget = 8.0  # a request costs ~$0.42 and reserves ~$0.73: about 19 fit, 10 at once

    def cost(r) -> float:
        return (max(1, len(r.last_user.split())) * 10000 + len(f"echo: {r.last_user}".split()) * 100) / 1e6

    first = project.run(f"--weval-budget={budget:g}", "-n", "3", "-rA", sub=True)
    sent = project.requests()
    costs = [cost(r) for r in sent]
    total = sum(costs)
    assert len({r.last_user for r in sent}) == len(sent)  # none sent twice
    assert budget <= total and total - max(costs) < budget, (total, costs)
    assert project.server.max_in_flight >= 3  # the budget let several go at once
    first.assert_outcomes(passed=len(sent), errors=prompts - len(sent))
    out = first.stdout.str()
    assert out.count(f"budget reached (${total:.4f} of $8)") >= prompts - len(sent), out
    # the answers received are in the cache: a larger budget asks only for the rest
    project.server.reset()
    project.server.latency_ms = 0
    second = project.run("--weval-budget=100", "-n", "3", sub=True)
    second.assert_outcomes(passed=prompts)
    again = [r.last_user for r in project.requests()]
    assert len(again) == prompts - len(sent) and not set(again) & {r.last_user for r in sent}


def test_a_model_without_a_price_cannot_run_under_a_budget(project: Project):
    project.write(
        "blueprints/unpriced.yml",
        f"models: [openai:no-such-model-anywhere, {MODEL_ID}]\n---\n- prompt: hi\n  should: [{{$contains: hi}}]\n",
    )
    result = project.run("--weval-budget=1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "openai:no-such-model-anywhere has no known price" in err and "weval_prices" in err
    assert project.requests() == []
    assert MODEL  # the priced model alone would run


def test_items_the_budget_stopped_at_their_judging_are_not_said_to_have_failed_generating(project: Project):
    """Summary texts (issue 40, item 10): the budget's group line and each item's short line say
    the budget stopped it, whether before its answer or before its judging."""
    lines = [f"models: [{MODEL_ID}]", "---"]
    for n in range(9):
        lines += [f"- id: p{n}", f"  prompt: Question {n} please", "  should:", f"    - is about question {n}"]
    project.write("blueprints/judged.yml", "\n".join(lines) + "\n")
    project.rules(*[judge_rule(f"is about question {n}", "CLASS_EXACT") for n in range(9)])
    project.ini("weval_prices =", f"    {MODEL_ID} 10000 10000", f"    {JUDGE_ID} 10000 10000")
    result = project.run(
        "--weval-budget=0.5", "--weval-concurrency=1", f"--weval-judges={JUDGE_ID}", "-rA", "--weval-out=out"
    )
    items = [
        ItemResult.model_validate_json(line)
        for line in (project.path / "out/.weval/items.jsonl").read_text().splitlines()
    ]
    stopped = [r for r in items if r.error_kind == "budget"]
    assert [r for r in stopped if r.response is not None], "some items were answered and stopped before judging"
    assert all(r.error and r.error.startswith("budget reached") for r in stopped), [r.error for r in stopped]
    group = next(line for line in result.outlines if "stopped by --weval-budget" in line)
    assert "generation failed" not in group, group
    shorts = [line.partition(" - ")[2] for line in result.outlines if line.startswith("ERROR blueprints/judged.yml")]
    assert len(shorts) == len(stopped) and all(s.startswith("budget reached") for s in shorts), shorts
