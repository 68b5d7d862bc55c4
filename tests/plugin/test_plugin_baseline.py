"""--weval-baseline, intervals and --weval-repeat end to end: real pytest runs against the
loopback fake server, whose default answer echoes the prompt.

Every prompt asks for "alpha" and "beta" and is scored by two function points
(``$contains: alpha``, ``$contains: beta``), so no judge is needed: the echo scores 1, an answer
"alpha only" scores 0.5 (still a pass at the default threshold 0.5) and "nothing" scores 0.
"""

from __future__ import annotations

import math
import re
import shutil
import statistics
from pathlib import Path

import pytest
from plugin_helpers import Project, section

from pytest_weval.report.stats import t_cdf, t_quantile
from tests.fakeserver import Rule

A, B = "openai:gpt-a", "openai:gpt-b"
EXAMPLES = Path(__file__).resolve().parents[2] / "example_blueprints"
NO_CACHE = ("--weval-cache=off", "-p", "no:randomly")


def _suite(project: Project, blueprints: int = 6, prompts: int = 50, models: tuple[str, ...] = (A, B)) -> None:
    for i in range(1, blueprints + 1):
        lines = [f"title: Blueprint {i}", f"models: [{', '.join(models)}]", "---"]
        for j in range(1, prompts + 1):
            lines += [
                f"- id: q{j}",
                f"  prompt: Say alpha and beta. (b{i}-q{j})",
                "  should:",
                "    - $contains: alpha",
                "    - $contains: beta",
            ]
        project.write(f"blueprints/b{i}.yml", "\n".join(lines) + "\n")


def _answer(model: str, blueprint: int, prompt: int, reply: str, **kw) -> Rule:
    return Rule(model=model.split(":", 1)[1], contains=f"(b{blueprint}-q{prompt})", reply=reply, **kw)


def _baseline(project: Project, *args: str) -> None:
    project.rules()
    base = project.run("--weval-out=base", *NO_CACHE, "-q", *args)
    assert base.ret == pytest.ExitCode.OK, base.outlines[-5:]


def test_an_unchanged_model_and_one_worse_answer_in_300_are_not_regressions(project: Project):
    _suite(project)
    _baseline(project)

    same = project.run("--weval-baseline=base", "--weval-out=same", *NO_CACHE, "-q")
    assert same.ret == pytest.ExitCode.OK
    same.assert_outcomes(passed=600)
    compared = project.json("same/summary.json")["baseline"]
    for model in (A, B):
        got = compared["models"][model]
        assert (got["items"], got["delta"], got["ci95"], got["p"], got["regressed"]) == (300, 0, [0, 0], 1, False)
        assert got["verdict"] == "unchanged"
    assert compared["unpaired"] == {"onlyCurrent": 0, "onlyBaseline": 0, "unscored": 0, "items": []}
    assert not section(same.outlines, "weval gate: --weval-baseline")
    scores = section(same.outlines, "weval scores")
    assert any(line.startswith("Compared with baseline") for line in scores), scores

    # one answer of gpt-b, out of its 300, is worse (1 -> 0.5; the item still passes)
    project.rules(_answer(B, 1, 7, "alpha only"))
    one = project.run("--weval-baseline=base", "--weval-out=one", *NO_CACHE, "-q")
    assert one.ret == pytest.ExitCode.OK, one.outlines[-5:]
    got = project.json("one/summary.json")["baseline"]["models"][B]
    # Differences: one -0.5, 299 zeros. Clustered by blueprint: cluster means -0.01, 0 x 5, so
    # se = stdev(cluster means) / sqrt(6) = 1/600, and the independent error is 1/600 too;
    # t = (-1/600) / (1/600) = -1 on 5 degrees of freedom: p = 0.1816, Holm x 2 = 0.363.
    cluster_means = [-0.5 / 50, 0, 0, 0, 0, 0]
    se = statistics.stdev(cluster_means) / math.sqrt(6)
    assert se == pytest.approx(1 / 600)
    assert got["delta"] == pytest.approx(-0.5 / 300)
    assert got["p"] == pytest.approx(t_cdf(-1.0, 5)) == pytest.approx(0.1816, abs=1e-4)
    assert got["pHolm"] == pytest.approx(2 * got["p"])
    assert (got["regressed"], got["verdict"]) == (False, "not significant")
    # the drop this suite would find with 80% power, at alpha / 2 (two models): a small one, so
    # this drop (one answer in 300) is not significant because it is small, not the suite
    assert (
        got["mde"]
        == pytest.approx((t_quantile(0.975, 5) + t_quantile(0.8, 5)) / 600)
        == pytest.approx(0.0058, abs=1e-4)
    )
    assert got["notSignificantBecause"] == "drop"
    said = " ".join(line.strip() for line in section(one.outlines, "weval scores"))
    assert f"{B}: not significant 300 paired items, " in said  # 80 columns: a few lines per model
    assert "p 0.363, sees -0.01 the drop (0.002) is small: this suite would see a drop of 0.006 or more" in said
    moved = project.json("one/summary.json")["baseline"]["moved"]
    assert [(m["promptId"], m["model"], m["baseline"], m["current"]) for m in moved] == [("q7", B, 1, 0.5)]


def test_a_model_worse_on_part_of_each_blueprint_regressed_and_the_other_did_not(project: Project):
    _suite(project)
    _baseline(project)
    # gpt-b answers worse on 10%, 20%, ..., 60% of the 50 prompts of blueprints 1..6
    worse = [(i, j) for i in range(1, 7) for j in range(1, 5 * i + 1)]
    project.rules(*(_answer(B, i, j, "alpha only") for i, j in worse))
    result = project.run("--weval-baseline=base", "--weval-out=out", *NO_CACHE, "-q", "-rN")
    result.assert_outcomes(passed=600)  # every item passed its own threshold
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    gate = section(result.outlines, "weval gate: --weval-baseline")
    assert len([line for line in gate if " regressed: " in line]) == 1, gate
    assert gate[0].startswith(f"{B} regressed: 1.00 -> 0.82 on 300 paired items, difference -0.17 ("), gate
    assert gate[1].startswith("The session failed: 1 model regressed against the baseline"), gate
    assert "600 passed, 1 regressed" in result.outlines[-1], result.outlines[-1]

    compared = project.json("out/summary.json")["baseline"]
    b, a = compared["models"][B], compared["models"][A]
    # Cluster mean differences -0.05, -0.10, ..., -0.30: mean -0.175, stdev 0.0935, se 0.0382,
    # t = -4.58 on 5 degrees of freedom
    means = [-0.05 * i for i in range(1, 7)]
    se = statistics.stdev(means) / math.sqrt(6)
    assert b["delta"] == pytest.approx(-0.175)
    assert b["p"] == pytest.approx(t_cdf(-0.175 / se, 5))
    assert b["p"] < 0.005 and b["regressed"] is True and b["verdict"] == "REGRESSED"
    half = t_quantile(0.975, 5) * se  # 0.098
    assert b["ci95"] == [pytest.approx(-0.175 - half), pytest.approx(-0.175 + half)]
    assert (a["delta"], a["regressed"], a["verdict"]) == (0, False, "unchanged")
    # 80 columns cannot hold the table: a few lines per model instead
    table = section(result.outlines, "weval scores")
    at = table.index(f"{B}: REGRESSED")
    said = " ".join(line.strip() for line in table[at + 1 : at + 3])
    assert said.startswith("300 paired items, baseline 1.00, current 0.82, difference -0.17 (-0.27 to -0.08), p 0.006")
    assert f"{A}: unchanged" in table


def test_the_interval_of_a_mean_widens_with_clustering(project: Project):
    # one model, 6 blueprints of 40 prompts whose pass rates are 0.75, 0.80, ..., 1.00
    _suite(project, prompts=40, models=(A,))
    fails = {1: 10, 2: 8, 3: 6, 4: 4, 5: 2, 6: 0}
    project.rules(*(_answer(A, i, j, "nothing") for i, n in fails.items() for j in range(1, n + 1)))
    result = project.run("--weval-out=out", *NO_CACHE, "-q")
    result.assert_outcomes(passed=210, failed=30)
    summary = project.json("out/summary.json")
    lo, hi = summary["models"][A]["ci95"]
    mean = summary["models"][A]["mean"]
    assert mean == pytest.approx(0.875)
    # By blueprint: stdev(0.75 .. 1.00) = 0.0935, / sqrt 6 = 0.0382, * t(0.975; 5) 2.5706 = 0.098
    rates = [0.75, 0.8, 0.85, 0.9, 0.95, 1.0]
    half = t_quantile(0.975, 5) * statistics.stdev(rates) / math.sqrt(6)
    assert (hi - lo) / 2 == pytest.approx(half) == pytest.approx(0.098, abs=1e-3)
    # Taken as 240 independent items it would be t(239) * sqrt(0.875 * 0.125 / 239) = 0.042
    independent = t_quantile(0.975, 239) * math.sqrt(0.875 * 0.125 / 239)
    assert independent == pytest.approx(0.042, abs=1e-3) and (hi - lo) / 2 > 2 * independent
    # within one blueprint the items are clustered by prompt: 0.75 over 40 prompts
    b1 = next(b for b in summary["blueprints"] if b["path"] == "blueprints/b1.yml")
    assert (b1["ci95"][1] - b1["ci95"][0]) / 2 == pytest.approx(
        t_quantile(0.975, 39) * statistics.stdev([0.0] * 10 + [1.0] * 30) / math.sqrt(40)
    )
    table = section(result.outlines, "weval scores")
    assert any(line.startswith("all blueprints") and f"0.88 ({lo:.2f}-{hi:.2f})" in line for line in table), table
    assert any("mean score 0.88 (0.78-0.97)" in line for line in table), table


def test_unpaired_items_are_counted_and_listed(project: Project):
    _suite(project, blueprints=2, prompts=3)
    _baseline(project)
    # a prompt added to b1, blueprint b2 deselected
    text = (project.path / "blueprints/b1.yml").read_text()
    (project.path / "blueprints/b1.yml").write_text(
        text + "- id: new\n  prompt: Say alpha and beta. (b1-new)\n  should:\n    - $contains: alpha\n"
    )
    result = project.run("--weval-baseline=base", "--weval-out=out", *NO_CACHE, "-q", "-k", "b1")
    assert result.ret == pytest.ExitCode.OK
    unpaired = project.json("out/summary.json")["baseline"]["unpaired"]
    assert (unpaired["onlyCurrent"], unpaired["onlyBaseline"], unpaired["unscored"]) == (2, 6, 0)
    assert {(u["kind"], u["blueprintId"], u["promptId"]) for u in unpaired["items"]} == {
        ("only-current", "b1", "new"),
        ("only-baseline", "b2", "q1"),
        ("only-baseline", "b2", "q2"),
        ("only-baseline", "b2", "q3"),
    }
    table = section(result.outlines, "weval scores")
    assert any(line.startswith("Items not paired (8): 2 only in this run, 6 only in the baseline") for line in table)
    assert any("b1 > prompt 'new' > openai:gpt-a[temp:0]: not in the baseline" in line for line in table), table
    # three prompts of one blueprint: clustered by prompt, unchanged
    assert project.json("out/summary.json")["baseline"]["models"][A]["verdict"] == "unchanged"


def test_under_xdist_the_comparison_runs_once_on_the_controller(project: Project):
    _suite(project, blueprints=2, prompts=5)
    _baseline(project)
    project.rules(*(_answer(B, i, j, "alpha only") for i in (1, 2) for j in range(1, 6)))
    result = project.run("--weval-baseline=base", "--weval-out=out", *NO_CACHE, "-n", "2", sub=True)
    result.assert_outcomes(passed=20)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    gate = section(result.outlines, "weval gate: --weval-baseline")
    # every item dropped by 0.5: no spread, a drop for certain (p = 0)
    assert [line for line in gate if "regressed:" in line] == [
        f"{B} regressed: 1.00 -> 0.50 on 10 paired items, difference -0.50 (-0.50 to -0.50), p <0.001 "
        "(one-sided, Holm-adjusted; alpha 0.05, max drop 0)"
    ]
    assert sum(line.startswith("Compared with baseline") for line in result.outlines) == 1
    assert "20 passed, 1 regressed" in result.outlines[-1]
    assert project.json("out/summary.json")["baseline"]["models"][B]["regressed"] is True
    # --weval-max-drop (ini twin) lets a drop of 0.5 through; --weval-alpha too
    project.ini("weval_max_drop = 0.5")
    lenient = project.run("--weval-baseline=base", *NO_CACHE, "-q")
    assert lenient.ret == pytest.ExitCode.OK
    assert any("within max drop" in line for line in lenient.outlines)


def test_repeats_sample_each_item_and_replay_from_the_cache(project: Project):
    _suite(project, blueprints=2, prompts=2, models=(A,))
    # one of the three samples of b1-q1 answers "alpha only": its score is (0.5 + 1 + 1) / 3
    project.rules(_answer(A, 1, 1, "alpha only", times=1))
    first = project.run("--weval-repeat=3", "--weval-out=out", "-q", "-p", "no:randomly")
    first.assert_outcomes(passed=4)
    assert len(project.requests()) == 12  # 4 items x 3 samples, each its own request
    summary = project.json("out/summary.json")
    items = {i["promptId"] + "@" + i["blueprintId"]: i for i in summary["items"]}
    assert sorted(items["q1@b1"]["samples"]) == [0.5, 1, 1]
    assert items["q1@b1"]["score"] == 0.83
    assert items["q2@b1"]["samples"] == [1, 1, 1]
    # the within-item variance: 1/12 for q1@b1, 0 for the others; averaged over the 4 items
    assert summary["models"][A]["withinItemVariance"] == pytest.approx(1 / 48)
    table = section(first.outlines, "weval scores")
    assert any(line.startswith("Repeats: each item's score is the mean of its samples") for line in table), table
    assert any(line.split() == [A, "0.0208", "0.144"] for line in table), table

    # a cached run replays all three samples of every item and sends nothing
    before = len(project.requests())
    again = project.run("--weval-repeat=3", "--weval-out=again", "--weval-cache=ro", "-q", "-p", "no:randomly")
    again.assert_outcomes(passed=4)
    assert len(project.requests()) == before
    replayed = {i["promptId"] + "@" + i["blueprintId"]: i for i in project.json("again/summary.json")["items"]}
    assert replayed["q1@b1"]["samples"] == items["q1@b1"]["samples"]
    # sample 0 keeps the key of a run without repeats: a plain cached run replays it
    plain = project.run("--weval-cache=ro", "-q", "-p", "no:randomly")
    plain.assert_outcomes(passed=4)

    # item means pair with the baseline's item means
    compared = project.run("--weval-repeat=3", "--weval-baseline=out", "--weval-cache=ro", "--weval-out=cmp", "-q")
    assert compared.ret == pytest.ExitCode.OK
    assert project.json("cmp/summary.json")["baseline"]["models"][A]["verdict"] == "unchanged"


def test_a_sample_that_could_not_be_scored_makes_the_item_an_error(project: Project):
    _suite(project, blueprints=1, prompts=2, models=(A,))
    project.rules(Rule(model="gpt-a", contains="(b1-q1)", status=400, times=1))  # one sample's request refused
    result = project.run("--weval-repeat=2", "--weval-out=out", "-q", "-rE", "-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    [item] = [i for i in project.json("out/summary.json")["items"] if i["outcome"] == "error"]
    assert item["promptId"] == "q1" and re.match(r"sample [12] of 2: generation failed for openai:gpt-a", item["error"])


def test_a_rerun_of_a_repeated_item_asks_for_the_next_samples(project: Project):
    _suite(project, blueprints=1, prompts=1, models=(A,))
    project.rules(_answer(A, 1, 1, "nothing", times=2))  # both samples of the first attempt score 0
    result = project.run("--weval-repeat=2", "--reruns=1", "--junitxml=junit.xml", "-q", "-p", "no:randomly")
    assert result.parseoutcomes() == {"passed": 1, "rerun": 1}
    assert len(project.requests()) == 4  # samples 0, 1, then 2, 3
    props = project.junit()[f"q1[{A}]"]["properties"]
    assert (props["weval_score"], props["weval_attempt"]) == ("1", "2")


@pytest.mark.parametrize(
    "args,message",
    [
        (("--weval-baseline=nowhere",), "--weval-baseline: "),
        (("--weval-alpha=1.5",), "a significance level is between 0 and 1"),
        (("--weval-alpha=0",), "expected a number above 0"),
        (("--weval-max-drop=-0.1",), "expected a number of at least 0"),
        (("--weval-repeat=0",), "expected a whole number of at least 1"),
    ],
)
def test_bad_settings_are_usage_errors_before_anything_is_sent(project: Project, args, message):
    _suite(project, blueprints=1, prompts=1, models=(A,))
    result = project.run(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert project.requests() == []


def test_the_worked_example_of_docs_statistics(project: Project):
    """docs/statistics.md, 'Worked example': the example suite replayed from its recordings."""
    shutil.copytree(EXAMPLES, project.path / "example_blueprints", ignore=shutil.ignore_patterns(".*", "__pycache__"))
    quiet = ("-q", "-p", "no:randomly", "-o", "asyncio_default_fixture_loop_scope=function")
    first = project.run("example_blueprints/", "--weval-out=out", *quiet)
    assert first.ret == pytest.ExitCode.OK, first.outlines[-10:]
    summary = project.json("example_blueprints/out/summary.json")
    smollm2 = summary["models"]["local:smollm2"]
    assert (smollm2["scored"], smollm2["totalWeight"], smollm2["mean"]) == (39, 40, pytest.approx(0.8815))
    # se = sqrt(10/9 * 2.3305) / 40 = 0.0402; t(0.975; 9) = 2.262; half-width 0.091
    half = t_quantile(0.975, 9) * math.sqrt(10 / 9 * 2.3305015) / 40
    assert smollm2["ci95"] == [pytest.approx(0.8815 - half, abs=1e-6), pytest.approx(0.8815 + half, abs=1e-6)]
    assert [round(x, 2) for x in smollm2["ci95"]] == [0.79, 0.97]
    terse = summary["models"]["local:smollm2-terse"]
    assert (terse["mean"], terse["ci95"]) == (pytest.approx(0.61), [0, 1])
    assert any("local:smollm2                    0.88 (0.79-0.97)  39/39 passed" in line for line in first.outlines)

    again = project.run("example_blueprints/", "--weval-baseline=out", "--weval-out=again", *quiet)
    assert again.ret == pytest.ExitCode.OK
    compared = project.json("example_blueprints/again/summary.json")["baseline"]
    assert compared["paired"] == 42 and compared["unpaired"]["items"] == []
    assert {m: (c["items"], c["verdict"]) for m, c in compared["models"].items()} == {
        "local:smollm2": (39, "unchanged"),
        "local:smollm2-terse": (3, "unchanged"),
    }
