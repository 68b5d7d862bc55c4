"""The plan (--collect-only, and a run's header at -v): the distinct requests a run would send,
counted as the run then sends them, before and after a cached run; plan.json; nothing sent."""

from __future__ import annotations

from plugin_helpers import JUDGE, JUDGE_ID, MODEL, MODEL_ID, Project, Rule, section, verdict

# Two blueprints ask the same questions (the answers and their judging are shared), a third
# adds its own; one prompt has only an ideal answer (its key points are extracted first).
SHARED = """\
models: [{model}]
---
- id: sky
  prompt: What colour is the sky?
  should:
    - names a colour
    - $icontains: blue
- id: sea
  prompt: What colour is the sea?
  should:
    - names a colour
"""
OWN = """\
models: [{model}, ideal]
---
- id: grass
  prompt: What colour is grass?
  ideal: Grass is green.
"""


def _suite(project: Project) -> None:
    project.write("blueprints/a.yml", SHARED.format(model=MODEL_ID))
    project.write("blueprints/b.yml", SHARED.format(model=MODEL_ID))
    project.write("blueprints/c.yml", OWN.format(model=MODEL_ID))
    project.rules(
        Rule(model=JUDGE, contains="key points", reply="<key_point>says green</key_point>"),
        Rule(model=JUDGE, reply=verdict("CLASS_EXACT")),
    )


def _plan(project: Project, out: str) -> dict:
    result = project.run("--collect-only", f"--weval-judges={JUDGE_ID}", f"--weval-out={out}")
    assert project.requests() == [], "a plan sends nothing"
    assert "weval plan" in result.stdout.str()
    return project.json(f"{out}/plan.json")


def test_the_plan_counts_what_the_run_then_sends(project: Project):
    _suite(project)
    before = _plan(project, "plan1")
    requests = before["requests"]
    judge = requests["by_model"][JUDGE_ID]
    # answers: sky, sea (shared by a and b), grass; extraction: grass (model and ideal share it)
    assert requests["by_model"][MODEL_ID]["total"] == 3
    assert judge["by_purpose"] == {"extract": 1, "judge": 4}  # 2 shared + grass x (model, ideal)
    assert requests["cached"] == 0 and requests["total"] == 8
    assert before["missing_keys"] == []
    assert before["cost_usd"]["unpriced_models"] == [JUDGE_ID]

    run = project.run(f"--weval-judges={JUDGE_ID}")
    run.assert_outcomes(passed=6)
    assert project.server.count == project.server.distinct_bodies() == requests["total"]

    project.server.reset()
    after = _plan(project, "plan2")["requests"]
    assert after["total"] == requests["total"] and after["cached"] == after["total"]
    again = project.run(f"--weval-judges={JUDGE_ID}")
    again.assert_outcomes(passed=6)
    assert project.server.count == 0


def test_a_plan_lists_missing_keys_instead_of_stopping(project: Project):
    _suite(project)
    project.monkeypatch.delenv("OPENAI_API_KEY")
    result = project.run("--collect-only", "--weval-out=out")
    assert result.ret == 0
    plan = project.json("out/plan.json")
    variables = {m["variable"] for m in plan["missing_keys"]}
    assert variables == {"OPENAI_API_KEY", "OPENROUTER_API_KEY"}
    assert "missing key: OPENROUTER_API_KEY" in result.stdout.str()
    assert project.requests() == []


def test_a_verbose_run_starts_with_its_plan(project: Project):
    _suite(project)
    result = project.run(f"--weval-judges={JUDGE_ID}", "-v")
    out = result.stdout.str()
    assert "weval plan: the distinct requests this run needs" in out
    lines = [line for line in result.outlines if line.strip().startswith("total")]
    assert lines and lines[0].split()[1:4] == ["8", "0", "8"], lines
    usage = section(result.outlines, "weval scores")
    total = next(line for line in usage if line.startswith("total"))
    assert total.split()[1:3] == ["8", "0"]  # the usage table counts the same 8 requests


def test_under_xdist_a_verbose_run_shows_the_plan_once(project: Project):
    _suite(project)
    result = project.run(f"--weval-judges={JUDGE_ID}", "-v", "-n", "2", "--weval-out=out")
    out = result.stdout.str()
    assert out.count("weval plan: the distinct requests this run needs") == 1
    lines = [line for line in result.outlines if line.strip().startswith("total")]
    assert lines and lines[0].split()[1:4] == ["8", "0", "8"], lines
    assert project.json("out/plan.json")["requests"]["total"] == 8


def test_a_plan_counts_every_sample_of_a_repeated_item(project: Project):
    _suite(project)
    project.run("--collect-only", f"--weval-judges={JUDGE_ID}", "--weval-out=plan", "--weval-repeat=2")
    assert project.requests() == [], "a plan sends nothing"
    planned = project.json("plan/plan.json")["requests"]["by_model"][MODEL_ID]["total"]
    assert planned == 6  # the 3 distinct answers, each asked as 2 samples
    project.run(f"--weval-judges={JUDGE_ID}", "--weval-repeat=2")
    assert len(project.requests(MODEL)) == planned


def test_a_plan_says_its_cost_assumes_no_prompt_caching(project: Project):
    _suite(project)
    result = project.run("--collect-only", f"--weval-judges={JUDGE_ID}", "--weval-out=out")
    assert result.ret == 0
    assert "no prompt caching assumed (an upper bound" in result.stdout.str()
