"""The plan of agent eval cases (docs/agent-formats.md, 'The plan'; docs/engine.md, 'The plan'):
each case's answer from its model target and its judges' calls, counted as the run then sends
them; nothing sent (nor run) while planning; the cache's answers seen after a run; samples."""

from __future__ import annotations

import json
import sys

from plugin_helpers import JUDGE, JUDGE_ID, MODEL, MODEL_ID, Project, answer_rule, outcomes_by_id

from tests.fakeserver import Rule

JUDGES = f"--weval-judges={JUDGE_ID}"

# A suite on a named model target. "greet" is checked by `contains` alone (no judge); "capital"
# asks an llm_judge, "about" a rubric checklist, "open" (no evaluator) a freeform judge.
# "capital again" asks what "capital" asks and is judged on the same criteria: one answer, one
# judge call.
SUITE = """\
execution:
  target: fast
tests:
  - id: greet
    criteria: Greets.
    input: "P1: greet me."
    assert:
      - type: contains
        value: Hello
  - id: capital
    criteria: Names Paris.
    input: "P2: the capital of France?"
    assert:
      - name: grader
        type: llm_judge
  - id: about
    criteria: Explains the capital.
    input: "P3: tell me about Paris."
    rubrics:
      - Mentions Paris
  - id: open
    criteria: Names a river.
    input: "P4: a river of France?"
  - id: capital-again
    criteria: Names Paris.
    input: "P2: the capital of France?"
    assert:
      - name: grader
        type: llm_judge
"""
TARGETS = f"""\
targets:
  - name: fast
    provider: openai
    model: {MODEL}
"""


def freeform(contains: str, score: float) -> Rule:
    reply = {"score": score, "hits": ["a hit"], "misses": [], "reasoning": "fine"}
    return Rule(model=JUDGE, contains=contains, reply=json.dumps(reply))


def _suite(project: Project) -> None:
    project.write("suite/.agentv/targets.yaml", TARGETS)
    project.write("suite/evals/plan.yaml", SUITE)
    project.rules(
        answer_rule("P1:", "Hello there."),
        answer_rule("P2:", "It is Paris."),
        answer_rule("P3:", "Paris is the capital."),
        answer_rule("P4:", "The Seine."),
        freeform("P2:", 0.9),
        freeform("P4:", 0.9),
        Rule(
            model=JUDGE,
            contains="P3:",
            reply=json.dumps({"checks": [{"id": "rubric-1", "satisfied": True, "reasoning": "yes"}]}),
        ),
    )


def _plan(project: Project, out: str, *args: str) -> dict:
    result = project.run("--collect-only", f"--weval-out={out}", JUDGES, *args)
    assert result.ret == 0, result.outlines
    assert project.requests() == [], "a plan sends nothing"
    assert "weval plan" in result.stdout.str()
    return project.json(f"{out}/plan.json")["requests"]


def test_the_plan_counts_agent_cases_as_the_run_then_sends_them(project: Project):
    _suite(project)
    before = _plan(project, "plan1")
    by_model = before["by_model"]
    # one answer per distinct case ("capital again" is capital's request)
    assert by_model[MODEL_ID]["by_purpose"] == {"generate": 4}
    # capital's llm_judge (shared with "capital again"), about's rubric, open's freeform judge
    assert by_model[JUDGE_ID]["by_purpose"] == {"judge": 3}
    assert before["total"] == 7 and before["cached"] == 0
    assert all(row["to_send"] == row["total"] for row in by_model.values())

    run = project.run(JUDGES, "-rA", "-p", "no:randomly")
    assert set(outcomes_by_id(run).values()) == {"PASSED"}, run.outlines
    assert project.server.count == project.server.distinct_bodies() == before["total"]
    assert len(project.requests(MODEL)) == 4 and len(project.requests(JUDGE)) == 3

    project.server.reset()
    after = _plan(project, "plan2")
    assert after["total"] == before["total"] and after["cached"] == after["total"]
    assert {model: row["by_purpose"] for model, row in after["by_model"].items()} == {
        model: row["by_purpose"] for model, row in by_model.items()
    }


def test_a_plan_counts_every_sample_of_a_repeated_case(project: Project):
    _suite(project)
    plain = _plan(project, "plan1")["by_model"]
    repeated = _plan(project, "plan2", "--weval-repeat=2")["by_model"]
    assert repeated[MODEL_ID]["by_purpose"] == {"generate": 8}
    # the samples' answers are not known yet: each answer's judge calls counted once
    assert repeated[JUDGE_ID]["by_purpose"] == plain[JUDGE_ID]["by_purpose"]
    project.run(JUDGES, "-p", "no:randomly", "--weval-repeat=2")
    assert len(project.requests(MODEL)) == 8


def test_judges_asked_of_cached_answers_are_built_as_the_run_builds_them(project: Project):
    # a first run gets the answers but not the judgements (the judge refuses: nothing cached of it)
    _suite(project)
    project.rules(
        answer_rule("P1:", "Hello there."),
        answer_rule("P2:", "It is Paris."),
        answer_rule("P3:", "Paris is the capital."),
        answer_rule("P4:", "The Seine."),
        Rule(model=JUDGE, contains="P", reply="", status=400),
    )
    project.run(JUDGES, "-p", "no:randomly")
    project.server.reset()
    planned = _plan(project, "plan")["by_model"]
    assert planned[MODEL_ID]["cached"] == planned[MODEL_ID]["total"] == 4
    assert planned[JUDGE_ID]["by_purpose"] == {"judge": 3} and planned[JUDGE_ID]["cached"] == 0
    _suite(project)
    project.run(JUDGES, "-p", "no:randomly")
    sent = project.requests()
    assert {r.model for r in sent} == {JUDGE} and len(sent) == 3
    # the requests the plan built are the ones the run sent: a third plan finds them all cached
    project.server.reset()
    again = _plan(project, "plan-again")["by_model"]
    assert again[JUDGE_ID]["cached"] == again[JUDGE_ID]["total"] == 3


# A cli target (a program: never run by a plan) and a code judge (a program, asking no model).
PROGRAMS = """\
tests:
  - id: by-program
    criteria: Greets.
    input: "Q1: greet me."
    execution:
      target: tool
    assert:
      - name: grader
        type: llm_judge
  - id: code-judged
    criteria: Greets.
    input: "Q2: greet me."
    assert:
      - name: script
        type: code_judge
        command: [PYTHON, -c, "open('ran-judge', 'w')"]
"""
PROGRAM_TARGETS = f"""\
targets:
  - name: fast
    provider: openai
    model: {MODEL}
  - name: tool
    provider: cli
    command: [PYTHON, -c, "open('ran-target', 'w'); print('Hello')", "{{PROMPT}}"]
"""


def test_programs_are_never_run_and_cases_that_send_nothing_count_nothing(project: Project):
    python = json.dumps(sys.executable)
    project.write("suite/.agentv/targets.yaml", PROGRAM_TARGETS.replace("PYTHON", python))
    project.write("suite/evals/programs.yaml", "execution:\n  target: fast\n" + PROGRAMS.replace("PYTHON", python))
    # without --weval-allow-exec both cases are refused before anything is asked
    refused = _plan(project, "plan1")
    assert refused["by_model"] == {} and refused["total"] == 0
    allowed = _plan(project, "plan2", "--weval-allow-exec")["by_model"]
    # the cli target's answer is the program's: no model asked for it, its judge foreseen; the
    # code judge asks no model, its case's answer is the model target's
    assert allowed[MODEL_ID]["by_purpose"] == {"generate": 1}
    assert allowed[JUDGE_ID]["by_purpose"] == {"judge": 1}
    assert not list(project.path.rglob("ran-*")), "a plan runs no program"


def test_a_case_with_a_mistake_counts_nothing_and_one_whose_key_is_missing_is_counted(project: Project):
    # as a blueprint item: the key is listed, and the case's figures are what the run sends once set
    haiku = "anthropic:claude-3-5-haiku-latest"
    project.write(
        "evals/mixed.yaml",
        f"""\
        tests:
          - id: fine
            criteria: Names Paris.
            input: "M1: the capital of France?"
            execution:
              target: {MODEL_ID}
          - id: typo
            criteria: Names Paris.
            input: "M2: the capital of France?"
            execution:
              target: {MODEL_ID}
            assert:
              - type: containz
                value: Paris
          - id: keyless
            criteria: Names Paris.
            input: "M3: the capital of France?"
            execution:
              target: {haiku}
        """,
    )
    planned = _plan(project, "plan", "--weval-missing-keys=error")
    assert set(planned["by_model"]) == {MODEL_ID, haiku, JUDGE_ID}, planned["by_model"]
    assert planned["by_model"][MODEL_ID]["by_purpose"] == {"generate": 1}
    assert planned["by_model"][haiku]["by_purpose"] == {"generate": 1}
    assert planned["by_model"][JUDGE_ID]["by_purpose"] == {"judge": 2}  # each answer judged freeform
    assert project.json("plan/plan.json")["missing_keys"][0]["variable"] == "ANTHROPIC_API_KEY"


def test_a_foreseen_judge_call_counts_the_answer_it_will_hold(project: Project):
    # long answers, not cached yet: the judge requests the run sends hold them, so the plan's
    # judge calls (foreseen around an unknown answer) count each answer at its request's output cap
    _suite(project)
    long = "Paris is the capital of France, on the Seine. " * 50  # ~2,300 characters
    project.rules(
        answer_rule("P1:", "Hello there."),
        answer_rule("P2:", long),
        answer_rule("P3:", long),
        answer_rule("P4:", long),
        freeform("P2:", 0.9),
        freeform("P4:", 0.9),
        Rule(
            model=JUDGE,
            contains="P3:",
            reply=json.dumps({"checks": [{"id": "rubric-1", "satisfied": True, "reasoning": "yes"}]}),
        ),
    )
    project.ini("weval_prices =", f"    {JUDGE_ID} 3 15")
    planned = _plan(project, "plan")["by_model"][JUDGE_ID]
    assert planned["total"] == 3 and planned["cached"] == 0
    run = project.run(JUDGES, "-rA", "-p", "no:randomly")
    assert set(outcomes_by_id(run).values()) == {"PASSED"}, run.outlines
    sent = project.requests(JUDGE)
    assert len(sent) == planned["total"] == 3  # the run sends what was planned
    sent_tokens = sum(len(m["content"]) for r in sent for m in r.body["messages"]) / 4
    assert all(long.strip() in r.raw_body for r in sent)  # each holds its answer
    # an upper bound of what was sent (each answer at most its cap), not the prompts alone
    assert sent_tokens <= planned["estimated_input_tokens"]
    # the cost range takes each answer as its generation's: 50 tokens at the low end, the cap at the high
    low, high = planned["cost_usd"]["low"], planned["cost_usd"]["high"]
    at_cap = (planned["estimated_input_tokens"] * 3 + 3 * 50 * 15) / 1e6  # every input at its cap, 50 out
    assert low < at_cap < high
