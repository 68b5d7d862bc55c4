"""Agent eval files (AgentV eval YAML, AgentEvals ``EVAL.yaml``) as pytest items, end to end
(issue 20, Acceptance): real pytest runs over real loopback HTTP to the fake server, beside
Weval blueprints. Each evaluator type, the verdict thresholds, weights and required gates, code
judges (I/O, a crash, a timeout, not allowed, no provider key), targets, missing fixtures, the
pre-flight, and the spec's real example files collected in their original layout (ruling 21)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from plugin_helpers import CANARY, JUDGE, JUDGE_ID, MODEL, MODEL_ID, Project, answer_rule, outcomes_by_id, section

from pytest_weval.blueprint.model import BlueprintError
from pytest_weval.formats.discover import is_agent_eval_file
from pytest_weval.formats.load import load_agent_suite
from pytest_weval.run.agent import resolve_targets
from tests.fakeserver import Rule

JUDGES = f"--weval-judges={JUDGE_ID}"
MODELS = f"--weval-models={MODEL_ID}"
PYTHON = sys.executable


def judge_json(contains: str, reply: dict, **kw) -> Rule:
    """The judge model's JSON reply to a judge prompt containing ``contains``."""
    return Rule(model=JUDGE, contains=contains, reply=json.dumps(reply), **kw)


def freeform(contains: str, score: float) -> Rule:
    return judge_json(
        contains, {"score": score, "hits": ["a hit"], "misses": ["a miss"], "reasoning": f"scored {score}"}
    )


def ids(result: pytest.RunResult) -> dict[str, str]:
    return outcomes_by_id(result)


def item(path: str, case: str, target: str = MODEL_ID) -> str:
    return f"{path}::{case}[{target}]"


def failure_text(result: pytest.RunResult, case: str) -> str:
    """The FAILURES / ERRORS block of the item whose test name starts with ``case[``."""
    lines = section(result.outlines, "FAILURES") + section(result.outlines, "ERRORS")
    out: list[str] = []
    inside = False
    for line in lines:
        if line.startswith("_") and line.rstrip().endswith("_"):
            inside = f" {case}[" in line
            continue
        if inside:
            out.append(line)
    return "\n".join(out)


def judge_requests(project: Project) -> list:
    return project.requests(JUDGE)


def system_and_user(request) -> tuple[str, str]:
    messages = request.body["messages"]
    system = "\n".join(m["content"] for m in messages if m["role"] == "system")
    return system, messages[-1]["content"]


# --- 1. a mixed folder: blueprints and agent files in one session ------------------------------

MIXED = {
    "blueprints/letters.yml": f"""\
        models: [{MODEL_ID}]
        ---
        - id: letters
          prompt: Say the first Greek letters.
          should:
            - $contains: alpha
        """,
    # AgentEvals (first spec): name, evalcases, expected_outcome, execution.evaluators
    "agents/greet/EVAL.yaml": """\
        name: greet-suite
        description: Greetings
        evalcases:
          - id: hello
            expected_outcome: Greets the user.
            input_messages:
              - role: user
                content: Please greet me.
            execution:
              evaluators:
                - name: has-hello
                  type: contains
                  value: Hello
          - id: shout
            expected_outcome: Greets loudly.
            input: Please shout a greeting.
            execution:
              evaluators:
                - name: loud
                  type: contains
                  value: HELLO
        """,
    # AgentV transitional: tests, criteria, no evaluator (one freeform llm_judge)
    "evals/dataset.yaml": """\
        tests:
          - id: judged
            criteria: Names the capital of France.
            input: What is the capital of France?
        """,
    # AgentV JSONL dataset with its YAML sidecar (the suite's keys)
    "evals/numbers.yaml": """\
        dataset: numbers
        assert:
          - name: has-digit
            type: regex
            value: "[0-9]"
        """,
}
NUMBERS_JSONL = (
    '{"id": "count", "criteria": "Counts.", "input": "Count to three."}\n'
    '{"id": "spell", "criteria": "Spells.", "input": "Spell the number three."}\n'
)
MIXED_RULES = (
    answer_rule("Greek", "alpha, beta"),
    answer_rule("greet me", "Hello there!"),
    answer_rule("shout a greeting", "hello there"),
    answer_rule("capital of France", "Paris."),
    answer_rule("Count to three", "1, 2, 3"),
    answer_rule("Spell the number", "three"),
    freeform("What is the capital of France?", 0.9),
)
MIXED_OUTCOMES = {
    item("blueprints/letters.yml", "letters"): "PASSED",
    item("agents/greet/EVAL.yaml", "hello"): "PASSED",
    item("agents/greet/EVAL.yaml", "shout"): "FAILED",
    item("evals/dataset.yaml", "judged"): "PASSED",
    item("evals/numbers.jsonl", "count"): "PASSED",
    item("evals/numbers.jsonl", "spell"): "FAILED",
}


def _mixed(project: Project) -> None:
    for path, text in MIXED.items():
        project.write(path, text)
    (project.path / "evals/numbers.jsonl").write_text(NUMBERS_JSONL, encoding="utf-8")
    project.rules(*MIXED_RULES)


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_mixed_folder_of_blueprints_and_agent_files_runs_in_one_session(project: Project, workers):
    _mixed(project)
    result = project.run(MODELS, JUDGES, "-rA", "--junitxml=junit.xml", "--weval-out=out", *workers)
    result.assert_outcomes(passed=4, failed=2)
    # every case x target is an item with node id <path>::<case-id>[<target>]; the sidecar is none
    assert ids(result) == MIXED_OUTCOMES

    # the model was asked once per item, the judge once (for the freeform case)
    assert len(project.requests(MODEL)) == 6
    [judged] = judge_requests(project)
    system, user = system_and_user(judged)
    assert '"score": <number from 0.0 to 1.0>' in system
    assert "[[ ## candidate_answer ## ]]\nParis." in user
    assert "[[ ## expected_outcome ## ]]\nNames the capital of France." in user

    # a failed agent item says its score, the pass mark and the evaluator that cost it
    shout = failure_text(result, "shout")
    assert "Score 0.00 is below the pass mark 0.80" in shout
    assert "eval file: agents/greet/EVAL.yaml (id greet-suite)" in shout
    assert '"loud (contains)" scored 0.00' in shout

    # junit: the same properties as a blueprint item's, the suite as the blueprint
    cases = project.junit()
    assert cases[f"hello[{MODEL_ID}]"]["properties"] == {
        "weval_score": "1",
        "weval_threshold": "0.8",
        "weval_model": MODEL_ID,
        "weval_prompt_id": "hello",
        "weval_blueprint_id": "greet-suite",
    }
    assert cases[f"hello[{MODEL_ID}]"]["classname"] == "agents.greet.EVAL.yaml"
    assert cases[f"judged[{MODEL_ID}]"]["properties"]["weval_score"] == "0.9"
    assert cases[f"judged[{MODEL_ID}]"]["properties"]["weval_blueprint_id"] == "evals__dataset"
    assert cases[f"spell[{MODEL_ID}]"]["outcome"] == "failure"
    assert cases[f"spell[{MODEL_ID}]"]["properties"]["weval_score"] == "0"
    assert cases[f"spell[{MODEL_ID}]"]["properties"]["weval_blueprint_id"] == "numbers"

    # --weval-out: every item is in summary.json; the blueprint gets Weval's comparison file,
    # each agent suite a JSONL of AgentV-shaped records
    written = sorted(p.name for p in (project.path / "out").iterdir())
    assert written == [
        ".weval",  # the run's records, for `python -m pytest_weval merge`
        "evals__dataset.jsonl",
        "greet-suite.jsonl",
        "letters.json",
        "numbers.jsonl",
        "summary.json",
    ]
    records = [json.loads(line) for line in (project.path / "out/evals__dataset.jsonl").read_text().splitlines()]
    judged = next(r for r in records if r["eval_id"] == "judged")
    assert judged["score"] == 0.9 and judged["target"] == MODEL_ID and judged["dataset"] == "evals__dataset"
    assert judged["evaluator_results"] and judged["candidate_answer"]
    summary = project.json("out/summary.json")
    assert summary["totals"]["items"] == 6 and summary["totals"]["passed"] == 4
    by_node = {entry["nodeid"]: entry for entry in summary["items"]}
    assert set(by_node) == set(MIXED_OUTCOMES)
    assert by_node[item("evals/dataset.yaml", "judged")]["score"] == 0.9
    assert by_node[item("evals/dataset.yaml", "judged")]["threshold"] == 0.8
    assert by_node[item("evals/numbers.jsonl", "spell")]["outcome"] == "failed"
    assert {b["path"]: b["id"] for b in summary["blueprints"]} == {
        "agents/greet/EVAL.yaml": "greet-suite",
        "evals/dataset.yaml": "evals__dataset",
        "evals/numbers.jsonl": "numbers",
        "blueprints/letters.yml": "letters",
    }

    # the terminal roll-up counts them with the blueprint
    scores = "\n".join(section(result.outlines, "weval scores"))
    assert "6 items in 4 blueprints: 4/6 passed" in scores
    for path in ("agents/greet/EVAL.yaml", "evals/dataset.yaml", "evals/numbers.jsonl", "blueprints/letters.yml"):
        assert path in scores


def test_tags_and_conversation_id_become_markers(project: Project):
    project.write(
        "evals/marked.yaml",
        """\
        tags: [suite-tag]
        tests:
          - id: tagged
            criteria: Anything.
            input: Hi.
            tags: [smoke]
          - id: threaded
            criteria: Anything.
            input: Hi again.
            conversation_id: thread-1
          - id: plain
            criteria: Anything.
            input: Hi once more.
        """,
    )

    def selected(expression: str) -> list[str]:
        result = project.run(MODELS, JUDGES, "--collect-only", "-q", "-m", expression)
        return [line for line in result.outlines if "::" in line]

    assert selected("smoke") == [item("evals/marked.yaml", "tagged")]
    assert selected("thread-1") == [item("evals/marked.yaml", "threaded")]
    assert len(selected("suite-tag")) == 3
    assert len(selected("weval and not smoke")) == 2


# --- 2. each evaluator type ---------------------------------------------------------------------

TYPES = r"""
tests:
  - id: contains-hit
    criteria: Names Paris.
    input: "T1: the capital of France?"
    assert:
      - type: contains
        value: Paris
  - id: contains-miss
    criteria: Names Paris.
    input: "T2: the capital of France, again?"
    assert:
      - type: contains
        value: Paris
  - id: regex-hit
    criteria: A phone number.
    input: "T3: a phone number?"
    assert:
      - type: regex
        value: '^\d{3}-\d{4}$'
  - id: regex-miss
    criteria: A phone number.
    input: "T4: another phone number?"
    assert:
      - type: regex
        value: '^\d{3}-\d{4}$'
  - id: equals-hit
    criteria: The answer.
    input: "T5: six times seven?"
    assert:
      - type: equals
        value: "42"
  - id: equals-miss
    criteria: The answer.
    input: "T6: six times seven, in words?"
    assert:
      - type: equals
        value: "42"
  - id: json-hit
    criteria: JSON.
    input: "T7: some JSON?"
    assert:
      - type: is_json
  - id: json-miss
    criteria: JSON.
    input: "T8: some more JSON?"
    assert:
      - type: is_json
  - id: trajectory
    criteria: Searches first.
    input: "T9: search for it?"
    assert:
      - type: tool_trajectory
        mode: any_order
        minimums:
          search: 1
  - id: composite
    criteria: Both words.
    input: "T10: alpha and beta?"
    assert:
      - name: both
        type: composite
        aggregator:
          type: weighted_average
          weights:
            has-alpha: 4
            has-beta: 1
        evaluators:
          - name: has-alpha
            type: contains
            value: alpha
          - name: has-beta
            type: contains
            value: beta
            weight: 100
"""
TYPE_ANSWERS = (
    answer_rule("T1:", "Paris, of course."),
    answer_rule("T2:", "Lyon, I think."),
    answer_rule("T3:", "555-1234"),
    answer_rule("T4:", "call me maybe"),
    answer_rule("T5:", "  42\n"),
    answer_rule("T6:", "forty-two"),
    answer_rule("T7:", '{"a": [1, 2]}'),
    answer_rule("T8:", "{a: 1}"),
    answer_rule("T9:", "I searched and found it."),
    answer_rule("T10:", "alpha only"),
)


def test_deterministic_evaluators_trajectory_and_composite(project: Project):
    project.write("evals/types.yaml", TYPES)
    project.rules(*TYPE_ANSWERS)
    result = project.run(MODELS, "-rA", "--junitxml=junit.xml")
    path = "evals/types.yaml"
    assert ids(result) == {
        item(path, "contains-hit"): "PASSED",
        item(path, "contains-miss"): "FAILED",
        item(path, "regex-hit"): "PASSED",
        item(path, "regex-miss"): "FAILED",
        item(path, "equals-hit"): "PASSED",  # trimmed, as AgentV compares
        item(path, "equals-miss"): "FAILED",
        item(path, "json-hit"): "PASSED",
        item(path, "json-miss"): "FAILED",
        item(path, "trajectory"): "FAILED",
        item(path, "composite"): "PASSED",
    }
    assert judge_requests(project) == []  # nothing here asks a judge
    assert 'Output does not contain "Paris"' in failure_text(result, "contains-miss")
    assert "Output does not match pattern /^\\d{3}-\\d{4}$/" in failure_text(result, "regex-miss")
    assert 'Output does not equal "42"' in failure_text(result, "equals-miss")
    assert "Output is not valid JSON" in failure_text(result, "json-miss")
    # a chat target gives no tool calls: nothing to check a trajectory against, score 0
    trajectory = failure_text(result, "trajectory")
    assert "No trace available" in trajectory
    cases = project.junit()
    assert cases[f"trajectory[{MODEL_ID}]"]["properties"]["weval_score"] == "0"
    # weighted_average with the aggregator's weights (4:1), the child's own weight ignored: 0.8
    assert cases[f"composite[{MODEL_ID}]"]["properties"]["weval_score"] == "0.8"


JUDGE_PROMPT = """\
Grade this answer.
QUESTION={{ question }}
CRITERIA={{criteria}}
REFERENCE={{ reference_answer }}
ANSWER={{ candidate_answer }}
UNKNOWN={{ not_a_variable }}
"""


def test_llm_judge_freeform_with_a_custom_prompt_file(project: Project):
    project.write("evals/prompts/grade.md", JUDGE_PROMPT)
    project.write(
        "evals/judged.yaml",
        """\
        tests:
          - id: capital
            criteria: Names Paris as the capital.
            input: Which city is the capital of France?
            expected_output: Paris is the capital of France.
            assert:
              - name: grader
                type: llm_judge
                prompt: ./prompts/grade.md
        """,
    )
    project.rules(answer_rule("capital of France", "It is Paris."), freeform("ANSWER=It is Paris.", 0.85))
    result = project.run(MODELS, JUDGES, "-rA", "--junitxml=junit.xml")
    assert ids(result) == {item("evals/judged.yaml", "capital"): "PASSED"}
    [request] = judge_requests(project)
    system, user = system_and_user(request)
    assert user == (
        "Grade this answer.\n"
        "QUESTION=Which city is the capital of France?\n"
        "CRITERIA=Names Paris as the capital.\n"
        "REFERENCE=Paris is the capital of France.\n"
        "ANSWER=It is Paris.\n"
        "UNKNOWN={{ not_a_variable }}\n"
    )
    assert '"hits": [' in system and '"misses": [' in system
    assert project.junit()[f"capital[{MODEL_ID}]"]["properties"]["weval_score"] == "0.85"


def test_rubric_checklist_and_score_ranges(project: Project):
    project.write(
        "evals/rubrics.yaml",
        """\
        tests:
          - id: checklist
            criteria: Explains the capital.
            input: "R1: tell me about the capital of France."
            rubrics:
              - Mentions Paris
              - id: river
                outcome: Mentions the Seine
                weight: 3
                required: false
          - id: ranges
            criteria: Explains the capital well.
            input: "R2: explain the capital of France."
            rubrics:
              - id: depth
                outcome: How deep the explanation goes
                score_ranges:
                  0: Wrong
                  4: Shallow
                  8: Thorough
        """,
    )
    project.rules(
        answer_rule("R1:", "Paris, on the Loire."),
        answer_rule("R2:", "Paris is the capital, on the Seine."),
        judge_json(
            "R1:",
            {
                "checks": [
                    {"id": "rubric-1", "satisfied": True, "reasoning": "names Paris"},
                    {"id": "river", "satisfied": False, "reasoning": "says Loire"},
                ],
                "overall_reasoning": "half right",
            },
        ),
        judge_json("R2:", {"checks": [{"id": "depth", "score": 7, "reasoning": "fair"}]}),
    )
    result = project.run(MODELS, JUDGES, "-rA", "--junitxml=junit.xml")
    path = "evals/rubrics.yaml"
    # checklist: 1 of weight 4 satisfied -> 0.25, fails; score ranges: 7/10 -> borderline, passes
    assert ids(result) == {item(path, "checklist"): "FAILED", item(path, "ranges"): "PASSED"}
    cases = project.junit()
    assert cases[f"checklist[{MODEL_ID}]"]["properties"]["weval_score"] == "0.25"
    assert cases[f"ranges[{MODEL_ID}]"]["properties"]["weval_score"] == "0.7"

    by_case = {("R1:" in system_and_user(r)[1]): system_and_user(r) for r in judge_requests(project)}
    checklist_system, checklist_user = by_case[True]
    assert '"satisfied": boolean' in checklist_system
    assert "[[ ## rubrics ## ]]" in checklist_user
    assert "- [rubric-1] (REQUIRED): Mentions Paris" in checklist_user
    assert "- [river] (weight: 3): Mentions the Seine" in checklist_user
    assert "[[ ## candidate_answer ## ]]\nParis, on the Loire." in checklist_user
    ranges_system, ranges_user = by_case[False]
    assert '"score": integer (0-10)' in ranges_system
    assert "### Criterion: depth" in ranges_user
    assert "  - Score 4-7: Shallow" in ranges_user
    assert "  - Score 8-10: Thorough" in ranges_user
    assert "[river] Mentions the Seine" in failure_text(result, "checklist")


def test_a_judge_whose_reply_never_parses_makes_the_case_an_error(project: Project):
    project.write(
        "evals/unparsed.yaml",
        """\
        tests:
          - id: unjudged
            criteria: Is helpful.
            input: "J1: help me."
        """,
    )
    project.rules(answer_rule("J1:", "Sure."), Rule(model=JUDGE, reply="I would rather not say."))
    result = project.run(MODELS, JUDGES, "-rA", "--junitxml=junit.xml")
    assert ids(result) == {item("evals/unparsed.yaml", "unjudged"): "ERROR"}  # not a 0 (ruling 26)
    assert len(judge_requests(project)) == 3  # asked again while the reply does not parse
    assert "Attempt 3 of 3" in judge_requests(project)[-1].last_user
    text = failure_text(result, "unjudged")
    assert "gave no usable reply in 3 attempt(s)" in text
    assert "weval_score" not in project.junit()[f"unjudged[{MODEL_ID}]"]["properties"]


# --- code judges --------------------------------------------------------------------------------

CHECK_PY = """\
import json, os, sys
from pathlib import Path

payload = json.load(sys.stdin)
case = payload["question"][:2]  # C1, C2: one record per case
Path(f"seen-{case}.json").write_text(json.dumps(payload))
Path(f"env-{case}.json").write_text(json.dumps(sorted(os.environ)))
Path("cwd.txt").write_text(os.getcwd())
answer = payload["candidate_answer"]
ok = "Paris" in answer
print("judging...")  # a log line first: the last line that is a JSON object counts
print(json.dumps({"score": 1 if ok else 0.25, "hits": ["names Paris"] if ok else [], "misses": [] if ok else ["no Paris"], "reasoning": "checked"}))
"""
CRASH_PY = """\
import sys
sys.stdin.read()
raise RuntimeError("the judge fell over")
"""
SLOW_PY = """\
import time
time.sleep(30)
print('{"score": 1}')
"""
MARKER_PY = """\
from pathlib import Path
Path("started.marker").write_text("I ran")
print('{"score": 1}')
"""

CODE_JUDGES = """\
tests:
  - id: checked
    criteria: Names Paris.
    input: "C1: the capital of France?"
    assert:
      - name: script
        type: code_judge
        command: [PYTHON, judges/check.py]
  - id: checked-miss
    criteria: Names Paris.
    input: "C2: the capital of France, again?"
    assert:
      - name: script
        type: code_judge
        command: [PYTHON, judges/check.py]
  - id: shell
    criteria: Anything.
    input: "C3: say something."
    assert:
      - name: echo
        type: code_judge
        command: "echo '{\\"score\\": 1, \\"hits\\": [\\"from sh\\"]}'"
  - id: crash
    criteria: Anything.
    input: "C4: say something else."
    assert:
      - name: crasher
        type: code_judge
        command: [PYTHON, judges/crash.py]
  - id: slow
    criteria: Anything.
    input: "C5: say one more thing."
    execution:
      timeout_seconds: 0.5
    assert:
      - name: sleeper
        type: code_judge
        command: [PYTHON, judges/slow.py]
"""


def _code_judges(project: Project) -> None:
    project.write("evals/code.yaml", CODE_JUDGES.replace("PYTHON", json.dumps(PYTHON)))
    project.write("evals/judges/check.py", CHECK_PY)
    project.write("evals/judges/crash.py", CRASH_PY)
    project.write("evals/judges/slow.py", SLOW_PY)
    project.rules(
        answer_rule("C1:", "Paris."),
        answer_rule("C2:", "Lyon."),
        answer_rule("C3:", "Something."),
        answer_rule("C4:", "Something else."),
        answer_rule("C5:", "One more thing."),
    )


def test_code_judges_read_the_case_and_a_crash_or_a_hang_is_an_error(project: Project):
    _code_judges(project)
    result = project.run(MODELS, "--weval-allow-exec", "-rA", "--junitxml=junit.xml")
    path = "evals/code.yaml"
    assert ids(result) == {
        item(path, "checked"): "PASSED",
        item(path, "checked-miss"): "FAILED",
        item(path, "shell"): "PASSED",  # a string runs through sh -c (ruling 23)
        item(path, "crash"): "ERROR",  # ruling 26: a broken judge is an error, not a 0
        item(path, "slow"): "ERROR",
    }
    cases = project.junit()
    assert cases[f"checked[{MODEL_ID}]"]["properties"]["weval_score"] == "1"
    assert cases[f"checked-miss[{MODEL_ID}]"]["properties"]["weval_score"] == "0.25"
    assert "weval_score" not in cases[f"crash[{MODEL_ID}]"]["properties"]

    # the judge read the case as JSON on stdin (AgentV's keys and the spec's), in its file's folder
    evals = project.path / "evals"
    seen = json.loads((evals / "seen-C1.json").read_text())
    assert seen["candidate_answer"] == seen["candidateAnswer"] == seen["answer"] == "Paris."
    assert seen["question"] == "C1: the capital of France?"
    assert seen["expected_outcome"] == seen["criteria"] == "Names Paris."
    assert seen["input_messages"] == [{"role": "user", "content": "C1: the capital of France?"}]
    assert json.loads((evals / "seen-C2.json").read_text())["candidate_answer"] == "Lyon."
    assert Path((evals / "cwd.txt").read_text()).resolve() == evals.resolve()
    assert "[0.25] evaluator: script (code_judge)" in failure_text(result, "checked-miss")
    assert "miss: no Paris" in failure_text(result, "checked-miss")

    crash = failure_text(result, "crash")
    assert "code judge 'crasher'" in crash and "exited with code 1" in crash
    assert "RuntimeError: the judge fell over" in crash
    assert "The model took too long" not in crash
    slow = failure_text(result, "slow")
    assert "code judge 'sleeper'" in slow and "timed out after 0.5s and was killed" in slow


def test_a_code_judge_past_its_limit_is_not_blamed_on_the_model(project: Project):
    _code_judges(project)
    result = project.run(MODELS, "--weval-allow-exec", "-k", "slow", "-rA")
    assert ids(result) == {item("evals/code.yaml", "slow"): "ERROR"}
    slow = failure_text(result, "slow")
    assert "code judge 'sleeper'" in slow and "timed out after 0.5s" in slow
    assert "The model took too long" not in slow
    assert "--weval-timeout" not in slow


def test_an_allowed_code_judge_sees_no_provider_key(project: Project, monkeypatch):
    _code_judges(project)
    monkeypatch.setenv("MY_SETTING", "visible")
    monkeypatch.setenv("CUSTOM_API_KEY", "sk-custom-secret")
    # even named in --weval-allow-env, a provider key (or any *_API_KEY) is not passed
    allow_env = "--weval-allow-env=MY_SETTING,OPENAI_API_KEY,CUSTOM_API_KEY"
    result = project.run(MODELS, "--weval-allow-exec", allow_env, "-k", "checked and not miss", "-rA")
    assert ids(result) == {item("evals/code.yaml", "checked"): "PASSED"}
    names = json.loads((project.path / "evals/env-C1.json").read_text())
    assert "OPENAI_API_KEY" not in names and "CUSTOM_API_KEY" not in names
    assert "OPENAI_BASE_URL" not in names  # nor where the provider is
    assert "PATH" in names and "MY_SETTING" in names
    assert CANARY not in (project.path / "evals/seen-C1.json").read_text()


def test_a_code_judge_that_is_not_allowed_does_not_start(project: Project):
    project.write(
        "evals/marker.yaml",
        """\
        tests:
          - id: marked
            criteria: Anything.
            input: "M1: say hi."
            assert:
              - name: marker
                type: code_judge
                command: [PYTHON, judges/marker.py]
          - id: plain
            criteria: Says hi.
            input: "M2: say hi."
            assert:
              - type: contains
                value: hi
        """.replace("PYTHON", json.dumps(PYTHON)),
    )
    project.write("evals/judges/marker.py", MARKER_PY)
    project.rules(answer_rule("say hi", "hi!"))
    result = project.run(MODELS, "-rA")
    assert ids(result) == {
        item("evals/marker.yaml", "marked"): "ERROR",
        item("evals/marker.yaml", "plain"): "PASSED",
    }
    text = failure_text(result, "marked")
    assert "--weval-allow-exec" in text and "nothing was started" in text
    assert not (project.path / "evals/started.marker").exists()
    # the target was not asked (nor paid) for the case whose judge could not run
    assert [r.last_user for r in project.requests(MODEL)] == ["M2: say hi."]
    # the ini option allows it too
    project.ini("weval_allow_exec = true")
    project.run(MODELS, "-rA").assert_outcomes(passed=2)
    assert (project.path / "evals/started.marker").exists()


# --- 3. verdicts, weights, required gates --------------------------------------------------------

VERDICTS = """\
tests:
  - id: good
    criteria: Scores 0.8.
    input: "V1: answer."
  - id: middling
    criteria: Scores 0.7.
    input: "V2: answer."
  - id: poor
    criteria: Scores 0.5.
    input: "V3: answer."
  - id: zero-weight
    criteria: A zero weight is information only.
    input: "V4: answer."
    assert:
      - name: counted
        type: contains
        value: answer
      - name: ignored
        type: contains
        value: never-there
        weight: 0
  - id: three-to-one
    criteria: Weighted mean 0.75.
    input: "V5: answer."
    assert:
      - name: heavy
        type: contains
        value: answer
        weight: 3
      - name: light
        type: contains
        value: never-there
  - id: required-evaluator
    criteria: A required evaluator at 0.5 fails the case.
    input: "V6: answer."
    assert:
      - name: must
        type: llm_judge
        required: true
      - name: bulk
        type: contains
        value: answer
        weight: 9
  - id: required-rubric
    criteria: A required rubric unmet fails the case.
    input: "V7: answer."
    rubrics:
      - id: must-have
        outcome: Says the secret word
      - id: nice-to-have
        outcome: Is polite
        weight: 9
        required: false
"""
VERDICT_RULES = (
    answer_rule("answer.", "Here is my answer."),
    freeform("V1: answer.", 0.8),
    freeform("V2: answer.", 0.7),
    freeform("V3: answer.", 0.5),
    freeform("V6: answer.", 0.5),
    judge_json(
        "V7: answer.",
        {
            "checks": [
                {"id": "must-have", "satisfied": False, "reasoning": "no secret word"},
                {"id": "nice-to-have", "satisfied": True, "reasoning": "polite"},
            ]
        },
    ),
)


def test_verdict_thresholds_weights_and_required_gates(project: Project):
    project.write("evals/verdicts.yaml", VERDICTS)
    project.rules(*VERDICT_RULES)
    path = "evals/verdicts.yaml"
    result = project.run(MODELS, JUDGES, "-rA", "--junitxml=junit.xml")
    assert ids(result) == {
        item(path, "good"): "PASSED",
        item(path, "middling"): "PASSED",  # borderline passes, said aloud
        item(path, "poor"): "FAILED",
        item(path, "zero-weight"): "PASSED",
        item(path, "three-to-one"): "PASSED",  # 0.75: borderline
        item(path, "required-evaluator"): "FAILED",
        item(path, "required-rubric"): "FAILED",
    }
    scores = {name.split("[")[0]: case["properties"].get("weval_score") for name, case in project.junit().items()}
    assert scores["good"] == "0.8"
    assert scores["middling"] == "0.7"
    assert scores["poor"] == "0.5"
    assert scores["zero-weight"] == "1"
    assert scores["three-to-one"] == "0.75"

    warnings = "\n".join(section(result.outlines, "warnings summary"))
    assert "WevalWarning" in warnings
    assert "case 'middling'" in warnings and "is borderline: score 0.7" in warnings
    assert "case 'three-to-one'" in warnings and "is borderline: score 0.75" in warnings
    assert "case 'good'" not in warnings

    # the gates: each says which check failed, though the weighted mean reached 0.8
    required = failure_text(result, "required-evaluator")
    assert "must (llm_judge) scored 0.50, below its required 0.80" in required
    rubric = failure_text(result, "required-rubric")
    assert "required rubric 'must-have' not met" in rubric
    sent = len(project.server.requests)

    # --weval-borderline=fail: the borderline cases fail (the answers replayed from the cache)
    strict = project.run(MODELS, JUDGES, "-rA", "--weval-borderline=fail")
    assert ids(strict)[item(path, "middling")] == "FAILED"
    assert ids(strict)[item(path, "three-to-one")] == "FAILED"
    assert ids(strict)[item(path, "good")] == "PASSED"
    strict.assert_outcomes(passed=2, failed=5)
    assert "is borderline" not in strict.stdout.str()
    assert len(project.server.requests) == sent


def test_a_case_failed_by_a_required_gate_names_the_gate_in_its_one_line_reason(project: Project):
    project.write("evals/verdicts.yaml", VERDICTS)
    project.rules(*VERDICT_RULES)
    result = project.run(MODELS, JUDGES, "-k", "required", "--tb=line")
    result.assert_outcomes(failed=2)
    lines = [line for line in section(result.outlines, "FAILURES") if line.strip()]
    assert len(lines) == 2
    assert all("required" in line for line in lines), lines


# --- 4. targets ---------------------------------------------------------------------------------

TARGETED = """\
execution:
  target: fast
tests:
  - id: named
    criteria: Greets.
    input: "N1: greet."
    assert:
      - type: contains
        value: Hi
  - id: on-default
    criteria: Greets.
    input: "N2: greet."
    execution:
      target: default
    assert:
      - type: contains
        value: Hi
  - id: on-editor
    criteria: Greets.
    input: "N3: greet."
    execution:
      target: editor
    assert:
      - type: contains
        value: Hi
"""
TARGETS_YAML = """\
targets:
  - name: fast
    provider: openai
    model: gpt-4o-mini
  - name: editor
    provider: vscode
"""


def test_targets_named_in_the_file_and_overridden_by_weval_models(project: Project):
    project.write("suite/.agentv/targets.yaml", TARGETS_YAML)
    project.write("suite/evals/targeted.yaml", TARGETED)
    project.rules(answer_rule("greet", "Hi there."))
    path = "suite/evals/targeted.yaml"

    result = project.run("-rA", "--junitxml=junit.xml")
    assert ids(result) == {
        item(path, "named", "fast"): "PASSED",
        item(path, "on-default", "default"): "ERROR",
        item(path, "on-editor", "editor"): "ERROR",
    }
    # the named target maps onto the openai provider's model, on the fake server
    [request] = project.requests()
    assert request.model == MODEL and request.path.endswith("/openai/v1/chat/completions")
    assert request.last_user == "N1: greet."
    assert project.junit()["named[fast]"]["properties"]["weval_model"] == "fast"
    default = failure_text(result, "on-default")
    assert "target 'default'" in default and "--weval-models" in default
    editor = failure_text(result, "on-editor")
    assert "'vscode'" in editor and "unsupported target provider" in editor

    # --weval-models overrides every target the file names: the node ids carry the model id
    override = project.run(MODELS, "-rA")
    assert ids(override) == {
        item(path, "named"): "PASSED",
        item(path, "on-default"): "PASSED",
        item(path, "on-editor"): "PASSED",
    }


# --- 5. missing fixtures, out-of-scope files -----------------------------------------------------


def test_a_missing_fixture_errors_its_case_and_the_rest_still_runs(project: Project):
    project.write(
        "evals/fixtures.yaml",
        """\
        tests:
          - id: with-missing-file
            criteria: Reviews the file.
            input:
              - role: user
                content:
                  - type: text
                    value: "F1: review this."
                  - type: file
                    value: ./snippets/missing.py
            assert:
              - type: contains
                value: ok
          - id: with-present-file
            criteria: Reviews the file.
            input:
              - role: user
                content:
                  - type: text
                    value: "F2: review this."
                  - type: file
                    value: ./snippets/present.py
            assert:
              - type: contains
                value: ok
        """,
    )
    project.write("evals/snippets/present.py", "print('PRESENT-MARKER')\n")
    # a file whose cases file is missing: one collection error for the file
    project.write("evals/elsewhere.eval.yaml", "tests: ./not-there.yaml\n")
    # AgentV head-v5 (promptfoo-like): a promptfoo-shaped suite now (issue 46), run beside the rest
    project.write(
        "evals/v5.eval.yaml",
        """\
        prompts:
          - "{{question}}"
        tests:
          - vars:
              question: What is 2 + 2?
            assert:
              - type: contains
                value: "4"
        """,
    )
    project.write(
        "agents/other/EVAL.yaml",
        """\
        name: other
        evalcases:
          - id: fine
            expected_outcome: Says ok.
            input: "F3: say ok."
            execution:
              evaluators:
                - type: contains
                  value: ok
        """,
    )
    project.rules(answer_rule("review this", "ok, reviewed."), answer_rule("F3:", "ok"))
    result = project.run(MODELS, JUDGES, "-rA")
    assert "INTERNALERROR" not in result.stdout.str()
    assert ids(result) == {
        item("evals/fixtures.yaml", "with-missing-file"): "ERROR",
        item("evals/fixtures.yaml", "with-present-file"): "PASSED",
        item("agents/other/EVAL.yaml", "fine"): "PASSED",
        "evals/elsewhere.eval.yaml": "ERROR",
        f"evals/v5.eval.yaml::0[0][{MODEL_ID}]": "FAILED",  # the fake's answer has no "4"
    }
    result.assert_outcomes(passed=2, failed=1, errors=2)
    missing = failure_text(result, "with-missing-file")
    assert "snippets/missing.py" in missing
    assert "F1:" not in " ".join(r.last_user for r in project.requests())  # never asked
    # the file block's text reached the model with the other case
    [present] = [r for r in project.requests() if "F2:" in r.last_user]
    assert "PRESENT-MARKER" in present.last_user
    collect_errors = "\n".join(section(result.outlines, "ERRORS"))
    assert "not-there.yaml" in collect_errors
    assert "v5.eval.yaml" not in collect_errors


def test_a_case_that_cannot_run_needs_no_key(project: Project):
    project.write(
        "evals/fixtures.yaml",
        """\
        tests:
          - id: with-missing-file
            criteria: Reviews the file.
            input:
              - role: user
                content:
                  - type: file
                    value: ./missing.py
            assert:
              - type: contains
                value: ok
          - id: plain
            criteria: Says ok.
            input: "P1: say ok."
            assert:
              - type: contains
                value: ok
        """,
    )
    project.rules(answer_rule("P1:", "ok"))
    result = project.run(MODELS, "-rA")  # no --weval-judges, no OPENROUTER_API_KEY: no case needs a judge
    assert "OPENROUTER_API_KEY" not in result.stderr.str() + result.stdout.str()
    assert ids(result) == {
        item("evals/fixtures.yaml", "with-missing-file"): "ERROR",
        item("evals/fixtures.yaml", "plain"): "PASSED",
    }


# --- 6. missing keys ----------------------------------------------------------------------------


def test_the_pre_flight_names_the_judge_key_of_agent_cases(project: Project):
    project.write(
        "evals/keys.yaml",
        """\
        tests:
          - id: judged
            criteria: Is helpful.
            input: Help me.
        """,
    )
    project.rules(answer_rule("Help", "Sure."))
    result = project.run(MODELS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "OPENROUTER_API_KEY" in result.stderr.str() + result.stdout.str()
    assert project.server.requests == []


# --- the spec's real example files (ruling 21) ---------------------------------------------------

EXAMPLES = Path(os.environ.get("WEVAL_SPEC_DIR", "/work/shared/spec")) / "agent-examples"  # as tests/formats
GROUPS = (
    "agentevals/spec-initial-73a98c1",
    "agentv/v2.6.1-classic",
    "agentv/v2.10.0-transitional",
    "agentv/head-v5",
)


def test_the_spec_examples_collect_every_case_as_an_item(project: Project):
    if not EXAMPLES.is_dir():
        pytest.skip(f"the spec's example files are not at {EXAMPLES}")
    for group in GROUPS:
        for file in sorted((EXAMPLES / group).iterdir()):
            if file.name in ("LICENSE", "README.md", "eval.schema.json"):
                continue
            target = project.path / group / file.name.replace("__", "/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, target)

    # what the loader gives: one item per case x target (no --weval-models: the files' targets)
    expected: dict[str, int] = {}
    unusable: set[str] = set()  # files the loader refuses as a whole: one collection error each
    for path in sorted(project.path.rglob("*")):
        if not path.is_file() or not is_agent_eval_file(path, rootdir=project.path):
            continue
        rel = path.relative_to(project.path).as_posix()
        try:
            suite = load_agent_suite(path, rootdir=project.path)
        except BlueprintError:
            unusable.add(rel)
            continue
        assert suite is not None
        expected[rel] = sum(len(resolve_targets(suite, c, models=(), custom_models={})) for c in suite.cases)
    assert not any(rel.startswith("agentv/head-v5/") for rel in expected | dict.fromkeys(unusable))
    # its `tests: ./cases.yaml` was not copied
    assert unusable == {"agentv/v2.10.0-transitional/suite-level-input/evals/dataset.eval.yaml"}
    assert len(expected) == 13

    result = project.run("--collect-only", "-q")
    assert "INTERNALERROR" not in result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the one collection error
    collected: dict[str, list[str]] = {}
    for line in result.outlines:
        if "::" in line and not line.startswith("ERROR"):
            file, _, name = line.partition("::")
            collected.setdefault(file, []).append(name)
    # head-v5 files are promptfoo-shaped suites (issue 46, tests/plugin/test_plugin_promptfoo.py)
    errors = [
        line.removeprefix("ERROR ")
        for line in result.outlines
        if line.startswith("ERROR ") and not line.startswith("ERROR agentv/head-v5/")
    ]
    assert errors == sorted(unusable)
    assert "cases file './cases.yaml' cannot be used" in result.stdout.str()
    collected = {file: names for file, names in collected.items() if not file.startswith("agentv/head-v5/")}
    assert {file: len(names) for file, names in collected.items()} == expected
    # a few by hand
    matrix = "agentv/v2.10.0-transitional/matrix-evaluation/evals/dataset.eval.yaml"
    assert collected[matrix] == [
        "general-greeting[copilot]",
        "general-greeting[claude]",
        "copilot-only-task[copilot]",
        "code-generation[copilot]",
        "code-generation[claude]",
    ]
    assert collected["agentevals/spec-initial-73a98c1/basic/EVAL.yaml"] == [
        "simple-greeting[default]",
        "personalized-greeting[default]",
        "greeting-with-context[default]",
    ]
    jsonl = collected["agentv/v2.6.1-classic/basic-jsonl/evals/dataset.jsonl"]
    assert jsonl[:2] == ["code-review-javascript[default]", "code-gen-python[azure_base]"]  # its own target
    assert collected["agentv/v2.6.1-classic/local-cli/evals/dataset.yaml"] == ["cli-provider-echo[local_cli]"]
    assert "agentv/v2.6.1-classic/basic-jsonl/evals/dataset.yaml" not in collected  # the sidecar
    assert not any(file.startswith("agentv/head-v5/") for file in collected)


def test_an_empty_reply_is_the_models_error_as_for_a_blueprint(project: Project):
    project.write(
        "evals/empty.yaml",
        """\
        tests:
          - id: silent
            criteria: Is helpful.
            input: "E1: help me."
        """,
    )
    project.write(
        "blueprints/empty.yml",
        """\
        models: [openai:gpt-4o-mini]
        ---
        - id: quiet
          prompt: "E1: say something."
          should: [says something]
        """,
    )
    project.rules(answer_rule("E1:", "  "))
    result = project.run(MODELS, JUDGES, "-rA")
    assert ids(result) == {
        item("evals/empty.yaml", "silent"): "ERROR",
        item("blueprints/empty.yml", "quiet"): "ERROR",
    }
    agent, blueprint = failure_text(result, "silent"), failure_text(result, "quiet")
    for text in (agent, blueprint):
        assert "returned an empty reply" in text, text
        assert "nothing to score" in text, text
        assert "bug" not in text and "report it" not in text, text


def test_repeats_sample_each_case_and_its_score_is_their_mean(project: Project):
    project.write(
        "evals/repeat.yaml",
        """
        tests:
          - id: capital
            criteria: Names Paris.
            input: "R1: the capital of France?"
            assert:
              - type: contains
                value: Paris
        """,
    )
    # one of the four samples misses: the mean 0.75 is under the case's pass mark
    project.rules(answer_rule("R1:", "Lyon", times=1), answer_rule("R1:", "Paris"))
    result = project.run(MODELS, "--weval-repeat=4", "--weval-out=out", "-rA", "-p", "no:randomly")
    assert ids(result) == {item("evals/repeat.yaml", "capital"): "FAILED"}, result.outlines
    assert len(project.requests()) == 4
    [case] = project.json("out/summary.json")["items"]
    assert sorted(case["samples"]) == [0, 1, 1, 1] and case["score"] == 0.75
