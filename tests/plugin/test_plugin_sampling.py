"""--weval-repeat=auto end to end (docs/sampling.md): real pytest runs against the flaky loopback
fake on the worked example's workload (tests/fakeserver/flaky.py): 120 items of two ``$contains``
points each, threshold 0.75, a quarter always right, a quarter leaving a term out 20% of the
time (should pass), a quarter 80% of the time (should fail), a quarter always wrong. Another
``flaky_seed`` is another run of the same model; the seeds are fixed, so each run is the same
every time (the rule's expected figures, over all seeds, are in docs/sampling.md)."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from plugin_helpers import Project, section

from pytest_weval.run.sampling import DEFAULT_MAX, HISTORY_RUNS, expect, should_stop
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
        assert 2 <= len(item["samples"]) <= DEFAULT_MAX
        assert item["score"] == pytest.approx(sum(item["samples"]) / len(item["samples"]), abs=0.005)
        assert (item["outcome"] == "passed") == (item["score"] >= 0.75)


def test_auto_runs_agree_on_about_95_percent_of_outcomes(workload: Project):
    """Two runs of the rule are expected to agree on 95.4% of this workload's outcomes, exactly
    (docs/sampling.md, 'Agreement between two runs'; five repeats: 94.5%). One pair of runs
    spreads about that by 1.9 points (a standard deviation: 60 items that vary, each differing
    between two runs with probability about 0.085), so each pair of these seeded runs is held
    to 90%, about three standard deviations below."""
    runs = [run(workload, seed, "--weval-repeat=auto", *NO_CACHE, out=f"run{seed}")[1] for seed in (1, 2, 9)]
    shares = [
        sum(a[pid]["outcome"] == b[pid]["outcome"] for pid in a) / len(a)
        for n, a in enumerate(runs)
        for b in runs[n + 1 :]
    ]
    assert min(shares) >= 0.90, shares
    e20, e80 = expect(0.8, DEFAULT_MAX), expect(0.2, DEFAULT_MAX)  # a sample has both terms with probability 0.8 / 0.2
    differ = 30 * 2 * e20.passes * (1 - e20.passes) + 30 * 2 * e80.passes * (1 - e80.passes)
    assert 1 - differ / 120 == pytest.approx(0.9543, abs=0.0005)


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
    assert plan["requests"]["total"] == auto["requests_max"] == 120 * DEFAULT_MAX
    assert (auto["first_samples"], auto["max_samples"]) == (2, DEFAULT_MAX)
    # 2 samples each, and the others weighted by the rule's expected samples for an unknown item
    per_item = auto["expected_samples_per_item"]
    assert 2 < per_item < DEFAULT_MAX
    assert auto["requests_expected"] == pytest.approx(120 * per_item, abs=1)
    assert any(
        line.startswith(f"--weval-repeat=auto: at most {120 * DEFAULT_MAX:,} requests") for line in result.outlines
    )
    assert not workload.requests()
    assert should_pass("p20-1") and not should_pass("p80-1")


def _suite(project: Project, groups: dict[str, int], *, reworded: str | None = None) -> None:
    """Items of the workload's groups (so many of each); ``reworded``: that item's prompt
    says it in other words (the same answers, another content)."""
    lines = [f"models: [{MODEL}]", "threshold: 0.75", "---"]
    for group, count in groups.items():
        for n in range(count):
            pid = f"{group}-{n}"
            say = "Please say alpha and beta." if pid == reworded else "Say alpha and beta."
            lines += [f"- id: {pid}", f"  prompt: {say} ({pid})", "  should:"]
            lines += ["    - $contains: alpha", "    - $contains: beta"]
    project.write("blueprints/flaky.yml", "\n".join(lines) + "\n")


def _sent_per_item(requests: list) -> Counter[str]:
    return Counter(re.search(r"\((\w+-\d+)\)", r.last_user).group(1) for r in requests)


def test_under_a_budget_an_item_gets_all_its_samples_or_none(project: Project):
    """--weval-budget holds room for an item's most samples before its first is sent
    (docs/sampling.md, 'The plan and the budget'). At $1000 per million input tokens each
    request is reserved at about $0.017 (its prompt at four characters a token), so an item
    holds $0.18 for 11 samples, and a sample really costs $0.005 (5 words): a budget of $0.35
    lets items through one at a time until less than one item's most is left."""
    _suite(project, {"p20": 12, "p80": 12})
    project.ini("weval_prices =", f"    {MODEL} 1000 0")
    result, items, _ = run(project, 12, "--weval-repeat=auto", "--weval-budget=0.35", *NO_CACHE)
    sent = _sent_per_item(project.requests())
    ran = {pid: item for pid, item in items.items() if item["outcome"] in ("passed", "failed")}
    stopped = {pid: item for pid, item in items.items() if item["outcome"] == "error"}
    assert ran and stopped and len(ran) + len(stopped) == 24, {pid: i["outcome"] for pid, i in items.items()}
    for pid, item in ran.items():  # every sample the rule asked for, and no more
        samples = item["samples"]
        assert sent[pid] == len(samples)
        assert should_stop(samples, 0.75, DEFAULT_MAX) and not should_stop(samples[:-1], 0.75, DEFAULT_MAX)
    for pid, item in stopped.items():  # none at all
        assert sent[pid] == 0 and "samples" not in item
        assert item["error"].startswith("budget"), item["error"]
    assert sum(sent.values()) * 0.005 <= 0.35
    assert "budget" in result.stdout.str()


def test_items_the_history_shows_steady_start_from_one_sample(project: Project):
    """After HISTORY_RUNS recorded runs (--weval-cache=refresh asks afresh and records each), an
    item that came out the same in all of them, every sample far from the threshold, takes one
    sample, and stops there when it votes as before (docs/sampling.md, 'Starting from the
    history'); an item whose samples disagreed in any of them, or whose prompt changed, starts
    from two as before."""
    groups = {"steady": 6, "wrong": 6, "p20": 6}
    _suite(project, groups)
    fresh = ("--weval-repeat=auto", "--weval-cache=refresh", "-p", "no:randomly")
    history = [run(project, seed, *fresh, out=f"h{seed}") for seed in range(1, HISTORY_RUNS + 1)]
    before = history[-1][2]
    _suite(project, groups, reworded="steady-5")
    _, items, requests = run(project, 99, *fresh, out="after")
    assert requests == sum(len(item["samples"]) for item in items.values())
    for pid, item in items.items():
        past = [runs[1][pid] for runs in history]
        if pid == "steady-5":  # another content: the history of the old one says nothing of it
            assert item["samples"] == [1, 1]
        elif pid.startswith(("steady", "wrong")):
            assert len(item["samples"]) == 1 and item["outcome"] == past[-1]["outcome"], (pid, item)
        elif any(len(set(p["samples"])) > 1 for p in past):  # it varied in a recorded run
            assert len(item["samples"]) >= 2, (pid, item)
    assert before - requests >= 11, (before, requests)  # the 11 steady items take one sample, not two


def test_a_run_that_left_items_out_hides_none_of_their_history(project: Project):
    """A -k run after the history's runs records one item; the others' newest HISTORY_RUNS
    results are still theirs (docs/history.md, 'Which earlier result an item is compared
    with'), so the steady ones still start from one sample."""
    groups = {"steady": 4}
    _suite(project, groups)
    fresh = ("--weval-repeat=auto", "--weval-cache=refresh", "-p", "no:randomly")
    for seed in range(1, HISTORY_RUNS + 1):
        run(project, seed, *fresh, out=f"h{seed}")
    run(project, 50, *fresh, "-k", "steady-0", out="partial")
    _, items, _ = run(project, 99, *fresh, out="after")
    assert {pid: len(item["samples"]) for pid, item in items.items()} == {f"steady-{n}": 1 for n in range(4)}
