"""The plan of promptfoo-shaped suites (docs/promptfoo.md, 'The plan'): each row's generation
under each provider, and its model-graded assertions' grader calls, counted as the run then
sends them; nothing sent while planning; the cache's answers seen after a run; samples."""

from __future__ import annotations

import json

from plugin_helpers import JUDGE, JUDGE_ID, MODEL, MODEL_ID, Project, answer_rule, outcomes_by_id

# pytester's in-process runs drop from sys.modules what each run imported, but not the package
# attributes that name them: a run after a plan met the plan's judges.promptfoo (through
# `from pytest_weval.judges import promptfoo`) beside its own scoring classes. Imported once
# here, as a real process imports them once, every run shares them (as tests/conftest.py does).
import pytest_weval.run.plan_promptfoo  # noqa: F401

BIG = "gpt-4o"
BIG_ID = f"openai:{BIG}"

# Two providers; two rows graded by the grader, a third by icontains alone. "cats again" asks
# what "cats" asks (its extra var is in no template): one answer per provider, graded once.
SUITE = f"""
prompts: ["Tell a joke about {{{{ topic }}}}"]
providers:
  - openai:chat:{MODEL}
  - id: openai:{BIG}
    label: big
defaultTest:
  options:
    provider: openai:chat:{JUDGE}
tests:
  - description: cats
    vars: {{topic: cats}}
    assert:
      - type: icontains
        value: joke
      - type: llm-rubric
        value: is funny
  - description: dogs
    vars: {{topic: dogs}}
    assert:
      - type: icontains
        value: joke
      - type: llm-rubric
        value: is funny
      - type: llm-rubric
        value: is kind
  - description: birds
    vars: {{topic: birds}}
    assert:
      - type: icontains
        value: joke
  - description: cats again
    vars: {{topic: cats, mood: calm}}
    assert:
      - type: llm-rubric
        value: is funny
"""


def _suite(project: Project) -> None:
    project.write("promptfooconfig.yaml", SUITE)
    project.rules(
        answer_rule("Tell a joke", "A joke about {last}"),
        answer_rule("Tell a joke", "A big joke about {last}", model=BIG),
        # llm-rubric's prompt holds the output and the rubric
        answer_rule("</Rubric>", json.dumps({"reason": "it is", "pass": True, "score": 1}), model=JUDGE),
    )


def _plan(project: Project, out: str, *args: str) -> dict:
    result = project.run("--collect-only", f"--weval-out={out}", *args)
    assert result.ret == 0, result.outlines
    assert project.requests() == [], "a plan sends nothing"
    assert "weval plan" in result.stdout.str()
    return project.json(f"{out}/plan.json")["requests"]


def test_the_plan_counts_promptfoo_rows_as_the_run_then_sends_them(project: Project):
    _suite(project)
    before = _plan(project, "plan1")
    by_model = before["by_model"]
    # one generation per distinct row x provider: cats, dogs, birds ("cats again" is cats' request)
    assert by_model[MODEL_ID]["by_purpose"] == {"generate": 3}
    assert by_model[BIG_ID]["by_purpose"] == {"generate": 3}
    # the grader: per provider, cats' "is funny" (shared with "cats again"), dogs' two rubrics
    assert by_model[JUDGE_ID]["by_purpose"] == {"judge": 6}
    assert before["total"] == 12 and before["cached"] == 0
    assert all(row["to_send"] == row["total"] for row in by_model.values())

    run = project.run("-rA", "-p", "no:randomly")
    assert set(outcomes_by_id(run).values()) == {"PASSED"}, run.outlines
    assert project.server.count == project.server.distinct_bodies() == before["total"]

    project.server.reset()
    after = _plan(project, "plan2")
    assert after["total"] == before["total"] and after["cached"] == after["total"]
    assert {model: row["by_purpose"] for model, row in after["by_model"].items()} == {
        model: row["by_purpose"] for model, row in by_model.items()
    }


def test_a_plan_counts_every_sample_of_a_repeated_row(project: Project):
    _suite(project)
    plain = _plan(project, "plan1")["by_model"]
    repeated = _plan(project, "plan2", "--weval-repeat=2")["by_model"]
    assert repeated[MODEL_ID]["by_purpose"] == {"generate": 6}
    assert repeated[BIG_ID]["by_purpose"] == {"generate": 6}
    # the samples' answers are not known yet: each answer's grader calls counted once
    assert repeated[JUDGE_ID]["by_purpose"] == plain[JUDGE_ID]["by_purpose"]
    project.run("-p", "no:randomly", "--weval-repeat=2")
    assert len(project.requests(MODEL)) + len(project.requests(BIG)) == 12


def test_rows_that_send_nothing_count_nothing(project: Project):
    # a row with a mistake and one that needs a program not allowed count nothing; a provider
    # whose key is missing is listed and its rows counted, as a blueprint item's are
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["Tell a joke about {{{{ topic }}}}"]
        providers: [openai:chat:{MODEL}, anthropic:messages:claude-3-5-haiku-latest]
        defaultTest:
          options:
            provider: openai:chat:{JUDGE}
        tests:
          - description: fine
            vars: {{topic: cats}}
            assert:
              - type: llm-rubric
                value: is funny
          - description: typo
            vars: {{topic: dogs}}
            assert:
              - type: containz
                value: joke
          - description: program
            vars: {{topic: birds}}
            assert:
              - type: python
                value: "True"
        """,
    )
    planned = _plan(project, "plan", "--weval-missing-keys=error")
    haiku = "anthropic:claude-3-5-haiku-latest"
    assert set(planned["by_model"]) == {MODEL_ID, haiku, JUDGE_ID}, planned["by_model"]
    assert planned["by_model"][MODEL_ID]["by_purpose"] == {"generate": 1}
    assert planned["by_model"][haiku]["by_purpose"] == {"generate": 1}
    assert planned["by_model"][JUDGE_ID]["by_purpose"] == {"judge": 2}  # each answer graded
    assert project.json("plan/plan.json")["missing_keys"][0]["variable"] == "ANTHROPIC_API_KEY"


def test_graders_asked_of_cached_answers_are_built_as_the_run_builds_them(project: Project):
    # a first run gets the answers but not the grades (the grader refuses: nothing cached of it)
    _suite(project)
    project.rules(
        answer_rule("Tell a joke", "A joke about {last}"),
        answer_rule("Tell a joke", "A big joke about {last}", model=BIG),
        answer_rule("</Rubric>", "", model=JUDGE, status=400),
    )
    project.run("-p", "no:randomly")
    project.server.reset()
    planned = _plan(project, "plan")["by_model"]
    assert planned[MODEL_ID]["cached"] == planned[MODEL_ID]["total"] == 3
    assert planned[BIG_ID]["cached"] == planned[BIG_ID]["total"] == 3
    assert planned[JUDGE_ID]["by_purpose"] == {"judge": 6} and planned[JUDGE_ID]["cached"] == 0
    # built from the answers: each grading prompt holds its answer (not the 400 tokens foreseen)
    _suite(project)
    project.run("-p", "no:randomly")
    sent = project.requests()
    assert {r.model for r in sent} == {JUDGE} and len(sent) == 6
    assert planned[JUDGE_ID]["estimated_input_tokens"] < 6 * 400


def test_g_eval_steps_are_shared_and_a_transformed_answer_is_foreseen(project: Project):
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["Tell a joke about {{{{ topic }}}}"]
        providers: [openai:chat:{MODEL}]
        defaultTest:
          options:
            provider: openai:chat:{JUDGE}
        tests:
          - description: cats
            vars: {{topic: cats}}
            assert: [{{type: g-eval, value: is funny}}]
          - description: dogs
            vars: {{topic: dogs}}
            assert: [{{type: g-eval, value: is funny}}]
          - description: loud
            vars: {{topic: owls}}
            options: {{transform: "output.toUpperCase()"}}
            assert: [{{type: llm-rubric, value: is loud}}]
        """,
    )
    project.rules(
        answer_rule("Tell a joke", "A joke about {last}"),
        answer_rule("concise evaluation steps", json.dumps({"steps": ["look for a joke"]}), model=JUDGE),
        answer_rule("rate the Reply", json.dumps({"score": 8, "reason": "a joke"}), model=JUDGE),
        answer_rule("</Rubric>", json.dumps({"reason": "it is", "pass": True, "score": 1}), model=JUDGE),
    )
    before = _plan(project, "plan1")["by_model"]
    assert before[MODEL_ID]["by_purpose"] == {"generate": 3}
    # the criterion's evaluation steps once for both rows, a score per answer, the rubric
    assert before[JUDGE_ID]["by_purpose"] == {"judge": 4}
    run = project.run("-rA", "-p", "no:randomly")
    assert set(outcomes_by_id(run).values()) == {"PASSED"}, run.outlines
    assert len(project.requests(JUDGE)) == 4 and len(project.requests(MODEL)) == 3

    project.server.reset()
    after = _plan(project, "plan2")["by_model"]
    assert after[MODEL_ID]["cached"] == 3
    # the g-eval calls built from the cached answers are found cached; the transform (JavaScript)
    # is not run while planning, so the transformed answer's grader call is counted to send
    assert after[JUDGE_ID]["total"] == 4 and after[JUDGE_ID]["cached"] == 3


TRANSFORMED = f"""
prompts: ["Tell a joke about {{{{ topic }}}}"]
providers: [openai:chat:{MODEL}]
defaultTest:
  options:
    provider: openai:chat:{JUDGE}
tests:
  - description: plain
    vars: {{topic: cats}}
    assert: [{{type: llm-rubric, value: is funny}}]
  - description: loud
    vars: {{topic: owls}}
    options: {{transform: "TRANSFORM"}}
    assert: [{{type: llm-rubric, value: is loud}}]
"""


def test_a_transformed_answers_grades_are_said_to_be_unknown_to_the_plan(project: Project):
    def write(transform: str) -> None:
        project.write("promptfooconfig.yaml", TRANSFORMED.replace("TRANSFORM", transform))

    write("output.toUpperCase()")
    project.rules(
        answer_rule("Tell a joke", "A joke about {last}"),
        answer_rule("</Rubric>", json.dumps({"reason": "it is", "pass": True, "score": 1}), model=JUDGE),
    )
    _plan(project, "plan1")
    assert "cache_unknown" not in project.json("plan1/plan.json")  # no answer cached: none to look up
    run = project.run("-rA", "-p", "no:randomly")
    assert set(outcomes_by_id(run).values()) == {"PASSED"}, run.outlines
    project.server.reset()

    # everything is cached now, but the plan cannot tell for loud's grade: it is made of the
    # transform's result. It counts it to send, and says which requests may be cached, and why.
    result = project.run("--collect-only", "--weval-out=plan2")
    assert project.requests() == []
    plan = project.json("plan2/plan.json")
    judge = plan["requests"]["by_model"][JUDGE_ID]
    assert judge["total"] == 2 and judge["to_send"] == 1
    assert plan["cache_unknown"] == [
        {"why": plan["cache_unknown"][0]["why"], "requests": 1, "rows": 1, "by_model": {JUDGE_ID: 1}}
    ]
    assert "transform" in plan["cache_unknown"][0]["why"]
    assert any("cache unknown: 1 of the requests to send" in line for line in result.outlines)
    # the run sends what the plan counts, less what it could not look up and was cached
    project.run("-p", "no:randomly")
    unknown = plan["cache_unknown"][0]["requests"]
    assert len(project.requests()) == plan["requests"]["total"] - plan["requests"]["cached"] - unknown == 0

    # why it cannot claim them cached: an edited transform asks for another grade, not cached
    write("output.toLowerCase()")
    project.server.reset()
    _plan(project, "plan3")
    again = project.json("plan3/plan.json")
    assert again["cache_unknown"] == plan["cache_unknown"]
    project.run("-p", "no:randomly")
    assert len(project.requests(JUDGE)) == again["requests"]["total"] - again["requests"]["cached"] == 1


def test_an_assertions_own_transform_on_a_cached_answer_is_said_to_be_unknown_too(project: Project):
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["Tell a joke about {{{{ topic }}}}"]
        providers: [openai:chat:{MODEL}]
        defaultTest:
          options:
            provider: openai:chat:{JUDGE}
        tests:
          - description: trimmed
            vars: {{topic: owls}}
            assert:
              - type: llm-rubric
                value: is short
                transform: output.slice(0, 12)
        """,
    )
    project.rules(
        answer_rule("Tell a joke", "A joke about {last}"),
        answer_rule("</Rubric>", json.dumps({"reason": "it is", "pass": True, "score": 1}), model=JUDGE),
    )
    project.run("-p", "no:randomly")
    project.server.reset()
    _plan(project, "plan")
    plan = project.json("plan/plan.json")
    assert plan["requests"]["by_model"][JUDGE_ID]["to_send"] == 1
    assert [(u["requests"], u["rows"], u["by_model"]) for u in plan["cache_unknown"]] == [(1, 1, {JUDGE_ID: 1})]
    project.run("-p", "no:randomly")
    assert project.requests() == []  # it was cached: the plan could only say it might be
