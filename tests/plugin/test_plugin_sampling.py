"""--weval-repeat=auto end to end (docs/sampling.md): real pytest runs against the flaky loopback
fake on the worked example's workload (tests/fakeserver/flaky.py): 120 items of two ``$contains``
points each, threshold 0.75, a quarter always right, a quarter leaving a term out 20% of the
time (should pass), a quarter 80% of the time (should fail), a quarter always wrong. Another
``flaky_seed`` is another run of the same model; the seeds are fixed, so each run is the same
every time (the rule's expected figures, over all seeds, are in docs/sampling.md)."""

from __future__ import annotations

import re

import pytest
from plugin_helpers import Project, section

from pytest_weval.run.sampling import expect
from tests.fakeserver.flaky import MODEL, flaky_rules, should_pass, workload_blueprint, wrong_outcomes
from tests.fakeserver.server import _flaky_draw

NO_CACHE = ("--weval-cache=off", "-p", "no:randomly")


@pytest.fixture
def workload(project: Project) -> Project:
    project.write("blueprints/flaky.yml", workload_blueprint())
    return project


def run(project: Project, seed: int, *args: str, out: str = "out") -> tuple[pytest.RunResult, dict, int]:
    """One run of the flaky model under ``seed``: the result, the summary's items by prompt id, the requests sent."""
    project.rules(*flaky_rules(seed))
    before = len(project.requests())
    result = project.run(*args, f"--weval-out={out}", "-q")
    items = {i["promptId"]: i for i in project.json(f"{out}/summary.json")["items"]}
    return result, items, len(project.requests()) - before


def outcomes(items: dict) -> dict[str, str]:
    return {pid: item["outcome"] for pid, item in items.items()}


def test_auto_is_as_right_as_five_repeats_for_at_most_0_6_of_their_requests(workload: Project):
    _, fixed, fixed_requests = run(workload, 3, "--weval-repeat=5", *NO_CACHE, out="five")
    _, auto, auto_requests = run(workload, 4, "--weval-repeat=auto", *NO_CACHE, out="auto")
    _, single, _ = run(workload, 5, *NO_CACHE, out="one")
    assert fixed_requests == 600
    assert auto_requests <= 0.6 * fixed_requests, auto_requests
    wrong_fixed, wrong_auto, wrong_single = (wrong_outcomes(outcomes(x)) for x in (fixed, auto, single))
    assert wrong_auto <= wrong_fixed + 1, (wrong_auto, wrong_fixed)
    assert wrong_single > wrong_auto, (wrong_single, wrong_auto)
    # every item's score is its samples' mean, its outcome that mean against 0.75
    for item in auto.values():
        assert 2 <= len(item["samples"]) <= 8
        assert item["score"] == pytest.approx(sum(item["samples"]) / len(item["samples"]), abs=0.005)
        assert (item["outcome"] == "passed") == (item["score"] >= 0.75)


def test_auto_runs_agree_on_about_95_percent_of_outcomes(workload: Project):
    """The rule's exact expectation on this workload is 94.5% of outcomes (docs/sampling.md), as
    for five repeats; these three runs agree on 91.7-93.3%. 95% is out of reach on average: a
    rule that stops an item whose first two samples agree (as it must, to spend two samples on
    the half of the items that never vary) is wrong on 4% of the items that vary by that alone,
    and eight samples decide the rest no better than 94.5% overall. Each pair is held to 90%
    (the expectation less about two standard deviations of a pair's share)."""
    runs = [run(workload, seed, "--weval-repeat=auto", *NO_CACHE, out=f"run{seed}")[1] for seed in (1, 2, 9)]
    shares = [
        sum(a[pid]["outcome"] == b[pid]["outcome"] for pid in a) / len(a)
        for n, a in enumerate(runs)
        for b in runs[n + 1 :]
    ]
    assert min(shares) >= 0.90, shares
    e20, e80 = expect(0.8, 8), expect(0.2, 8)  # a sample has both terms with probability 0.8 / 0.2
    differ = 30 * 2 * e20.passes * (1 - e20.passes) + 30 * 2 * e80.passes * (1 - e80.passes)
    assert 1 - differ / 120 == pytest.approx(0.945, abs=0.0005)


def test_items_that_never_vary_take_two_samples_and_flaky_ones_say_so(workload: Project):
    result, items, requests = run(workload, 6, "--weval-repeat=auto", "--junitxml=junit.xml", *NO_CACHE, out="auto")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the items that should fail fail; flakiness alone fails nothing
    for pid, item in items.items():
        if pid.startswith(("steady", "wrong")):
            assert item["samples"] == ([1, 1] if pid.startswith("steady") else [0.5, 0.5]), (pid, item)
        assert item["outcome"] == ("passed" if item["score"] >= 0.75 else "failed")
    assert requests == sum(len(item["samples"]) for item in items.values())
    props = workload.junit()
    flaky = [pid for pid, item in items.items() if 1 in item["samples"] and 0.5 in item["samples"]]
    assert flaky, "the seed gives some flaky item"
    for pid, item in items.items():
        got = props[f"{pid}[{MODEL}]"]["properties"]
        assert got["weval_samples"] == str(len(item["samples"]))
        assert got["weval_flaky"] == ("true" if pid in flaky else "false")
    # the terminal counts the flaky items and lists the least settled first
    said = section(result.outlines, "weval scores")
    head = " ".join(said[next(n for n, line in enumerate(said) if line.startswith("Flaky: ")) :][:3])
    assert re.search(rf"Flaky: {len(flaky)} items of 120 had samples on both sides of the threshold", head), head
    listed = [line.strip()[2:] for line in said if line.strip().startswith("- blueprints/flaky.yml::")]
    assert 1 <= len(listed) <= 5
    shares = []
    for nodeid in listed:
        samples = items[nodeid.split("::")[1].split("[")[0]]["samples"]
        shares.append(abs(samples.count(1) / len(samples) - 0.5))
    assert shares == sorted(shares) and shares[0] == min(
        abs(items[pid]["samples"].count(1) / len(items[pid]["samples"]) - 0.5) for pid in flaky
    )


def test_a_cached_auto_run_replays_the_same_samples_and_sends_nothing(workload: Project):
    _, first, _ = run(workload, 7, "--weval-repeat=auto", "-p", "no:randomly", out="first")
    _, again, sent = run(workload, 8, "--weval-repeat=auto", "--weval-cache=ro", "-p", "no:randomly", out="again")
    assert sent == 0
    assert {pid: i["samples"] for pid, i in again.items()} == {pid: i["samples"] for pid, i in first.items()}


def test_fail_flaky_fails_the_session_on_a_flaky_item_and_max_repeat_bounds_the_samples(project: Project):
    # two items that should pass: one steady, one leaving a term out 20% of the time
    lines = [f"models: [{MODEL}]", "threshold: 0.75", "---"]
    for pid in ("steady-0", "p20-0"):
        lines += [f"- id: {pid}", f"  prompt: Say alpha and beta. ({pid})", "  should:"]
        lines += ["    - $contains: alpha", "    - $contains: beta"]
    project.write("blueprints/two.yml", "\n".join(lines) + "\n")
    # runs in which p20-0's first two samples disagree
    seed, other = [s for s in range(200) if _flaky_at_first(s)][:2]
    result, items, _ = run(project, seed, "--weval-repeat=auto", "--weval-max-repeat=3", *NO_CACHE)
    assert result.ret == pytest.ExitCode.OK
    assert len(items["p20-0"]["samples"]) == 3 and len(items["steady-0"]["samples"]) == 2
    project.ini("weval_fail_flaky = true")
    result, items, _ = run(project, other, "--weval-repeat=auto", "--weval-max-repeat=3", *NO_CACHE, out="again")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    gate = section(result.outlines, "weval gate: --weval-fail-flaky")
    assert gate[0].startswith("blueprints/two.yml::p20-0[openai:gpt-flaky] is flaky: "), gate
    assert "1 flaky" in result.outlines[-1], result.outlines[-1]


def _flaky_at_first(seed: int) -> bool:
    draws = [_flaky_draw(seed, "gpt-flaky", "Say alpha and beta. (p20-0)", n) < 0.2 for n in range(2)]
    return draws[0] != draws[1]


def test_the_plan_shows_the_expected_and_the_most_requests_under_auto(workload: Project):
    result = workload.run("--collect-only", "--weval-repeat=auto", "--weval-out=plan", "-q")
    plan = workload.json("plan/plan.json")
    auto = plan["repeat_auto"]
    assert plan["requests"]["total"] == auto["requests_max"] == 120 * 8
    assert (auto["first_samples"], auto["max_samples"]) == (2, 8)
    # 2 samples each, and the other 6 weighted by the rule's expected samples for an unknown item
    per_item = auto["expected_samples_per_item"]
    assert 2 < per_item < 8
    assert auto["requests_expected"] == pytest.approx(120 * per_item, abs=1)
    assert any(line.startswith("--weval-repeat=auto: at most 960 requests") for line in result.outlines)
    assert not workload.requests()
    assert should_pass("p20-1") and not should_pass("p80-1")
