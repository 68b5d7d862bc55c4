"""The loader on small files: every alias of docs/agent-formats.md §4 for the three dialects,
suite defaults (§1.5, §7.2), external case files, content blocks and tool calls, and located
problems (a case's) and errors (the file's), each with its line."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from formats_helpers import case, load, write

from pytest_weval.blueprint.model import BlueprintError
from pytest_weval.formats.load import detect_dialect, load_agent_suite, suite_id_from_path
from pytest_weval.formats.model import ToolCall


def one_case(tmp_path: Path, body: str, rel: str = "evals/x.eval.yaml"):
    suite = load(write(tmp_path, rel, body), tmp_path)
    assert len(suite.cases) == 1
    return suite.cases[0]


def problem_of(tmp_path: Path, body: str, rel: str = "evals/x.eval.yaml") -> str:
    found = one_case(tmp_path, body, rel)
    assert found.problem is not None, "expected the case to have a problem"
    return found.problem


# --- case lists --------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["tests", "eval_cases", "evalcases", "cases"])
def test_every_case_list_key(tmp_path: Path, key: str) -> None:
    suite = load(write(tmp_path, "evals/x.yaml", f"{key}:\n  - id: a\n    criteria: c\n    input: q\n"), tmp_path)
    assert [c.id for c in suite.cases] == ["a"]


def test_tests_names_a_yaml_or_jsonl_cases_file(tmp_path: Path) -> None:
    write(tmp_path, "evals/cases.yaml", "- id: y1\n  criteria: c\n  input: q\n- id: y2\n  criteria: c\n  input: q\n")
    write(
        tmp_path,
        "evals/cases.jsonl",
        json.dumps({"id": "j1", "criteria": "c", "input": "q"})
        + "\n\n"
        + json.dumps({"id": "j2", "input": "q"})
        + "\n",
    )
    yaml_suite = load(write(tmp_path, "evals/a.eval.yaml", "tests: ./cases.yaml\n"), tmp_path)
    assert [(c.id, c.location.path, c.location.line) for c in yaml_suite.cases] == [
        ("y1", "evals/cases.yaml", 1),
        ("y2", "evals/cases.yaml", 4),
    ]
    jsonl_suite = load(write(tmp_path, "evals/b.eval.yaml", "tests: cases.jsonl\n"), tmp_path)
    assert [(c.id, c.location.line) for c in jsonl_suite.cases] == [("j1", 1), ("j2", 3)]
    # j2 has no criteria and nothing else to judge by
    assert jsonl_suite.cases[1].problem is not None and "nothing to judge by" in jsonl_suite.cases[1].problem
    assert jsonl_suite.cases[1].problem.startswith("evals/cases.jsonl:3:")


def test_string_and_file_entries_in_the_case_list(tmp_path: Path) -> None:
    write(tmp_path, "evals/more/b.yaml", "- id: b\n  criteria: c\n  input: q\n")
    write(tmp_path, "evals/more/a.yaml", "- id: a\n  criteria: c\n  input: q\n")
    write(tmp_path, "evals/one.jsonl", json.dumps({"id": "j", "criteria": "c", "input": "q"}) + "\n")
    suite = load(
        write(
            tmp_path,
            "evals/x.eval.yaml",
            """
            tests:
              - id: inline
                criteria: c
                input: q
              - file://more/*.yaml
              - one.jsonl
              - ./missing.yaml
            """,
        ),
        tmp_path,
    )
    assert [c.id for c in suite.cases] == ["inline", "a", "b", "j", "./missing.yaml"]
    missing = suite.cases[-1]
    assert missing.problem is not None
    assert missing.problem.startswith(
        "evals/x.eval.yaml:7:5 (tests[3]): the cases file './missing.yaml' cannot be used"
    )
    assert all(c.problem is None for c in suite.cases[:-1])


def test_jsonl_without_sidecar_and_a_broken_line(tmp_path: Path) -> None:
    lines = [json.dumps({"id": "ok", "expected_outcome": "c", "input": "q"}), "{not json", "[1, 2]"]
    suite = load(write(tmp_path, "evals/d.jsonl", "\n".join(lines) + "\n"), tmp_path)
    assert suite.id == "evals__d"
    assert [c.id for c in suite.cases] == ["ok", "line-2", "line-3"]
    assert suite.cases[0].problem is None
    assert suite.cases[1].problem is not None and suite.cases[1].problem.startswith("evals/d.jsonl:2:")
    assert "not valid JSON" in suite.cases[1].problem
    assert suite.cases[2].problem is not None and "one JSON object" in suite.cases[2].problem


def test_jsonl_sidecar_gives_the_suite_keys(tmp_path: Path) -> None:
    write(
        tmp_path,
        "evals/d.yaml",
        """
        name: my-dataset
        execution:
          target: fast
        assert:
          - type: contains
            value: ok
        """,
    )
    suite = load(
        write(tmp_path, "evals/d.jsonl", json.dumps({"id": "a", "criteria": "c", "input": "q"}) + "\n"), tmp_path
    )
    assert (suite.id, suite.targets, suite.dialect) == ("my-dataset", ("fast",), "agentevals")
    assert [(e.type, e.value) for e in suite.cases[0].evaluators] == [("contains", "ok")]


# --- case fields -------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["criteria", "expected_outcome", "outcome"])
def test_criterion_aliases(tmp_path: Path, key: str) -> None:
    assert one_case(tmp_path, f"tests:\n  - id: a\n    {key}: Be right\n    input: q\n").criteria == "Be right"


def test_criteria_wins_over_expected_outcome(tmp_path: Path) -> None:
    found = one_case(tmp_path, "tests:\n  - id: a\n    criteria: new\n    expected_outcome: old\n    input: q\n")
    assert found.criteria == "new"


def test_input_messages_win_over_input(tmp_path: Path) -> None:
    found = one_case(
        tmp_path,
        """
        tests:
          - id: a
            criteria: c
            input: Alias query
            input_messages:
              - role: user
                content: Canonical query
        """,
    )
    assert [(m.role, m.text) for m in found.input] == [("user", "Canonical query")]


def test_expected_messages_win_over_expected_output(tmp_path: Path) -> None:
    found = one_case(
        tmp_path,
        """
        tests:
          - id: a
            criteria: c
            input: q
            expected_output: {riskLevel: High}
            expected_messages:
              - role: assistant
                content: Canonical answer
        """,
    )
    assert [(m.role, m.text) for m in found.expected] == [("assistant", "Canonical answer")]
    assert found.expected_structured is None


def test_expected_output_shapes(tmp_path: Path) -> None:
    suite = load(
        write(
            tmp_path,
            "evals/x.eval.yaml",
            """
            tests:
              - {id: text, criteria: c, input: q, expected_output: The answer is 4}
              - id: object
                criteria: c
                input: q
                expected_output: {riskLevel: High, reasoning: Explanation}
              - id: list
                criteria: c
                input: q
                expected_output: [1, 2, 3]
              - id: messages
                criteria: c
                input: q
                expected_output:
                  - role: assistant
                    tool_calls:
                      - tool: Read
                        input: {file_path: config.json}
                  - role: assistant
                    content: {status: done}
            """,
        ),
        tmp_path,
    )
    assert case(suite, "text").reference_answer == "The answer is 4"
    obj = case(suite, "object")
    assert obj.expected_structured == {"riskLevel": "High", "reasoning": "Explanation"}
    assert [m.role for m in obj.expected] == ["assistant"]
    assert case(suite, "list").expected_structured == [1, 2, 3]
    messages = case(suite, "messages")
    assert messages.expected[0].tool_calls == (ToolCall(name="Read", args={"file_path": "config.json"}),)
    assert messages.expected[1].structured == {"status": "done"}
    assert json.loads(messages.reference_answer) == {"status": "done"}


def test_openai_tool_calls_and_tool_messages(tmp_path: Path) -> None:
    found = one_case(
        tmp_path,
        """
        tests:
          - id: a
            criteria: c
            input:
              - role: user
                content: Weather?
              - role: assistant
                tool_calls:
                  - id: call_1
                    type: function
                    function: {name: get_weather, arguments: '{"city": "Paris"}'}
              - role: tool
                tool_call_id: call_1
                name: get_weather
                content: Sunny
              - role: user
                content: Thanks
        """,
    )
    assistant, tool = found.input[1], found.input[2]
    assert assistant.tool_calls == (ToolCall(name="get_weather", args={"city": "Paris"}, id="call_1"),)
    assert (tool.role, tool.tool_call_id, tool.name, tool.text) == ("tool", "call_1", "get_weather", "Sunny")
    assert found.question == "Weather? Sunny Thanks"


def test_content_blocks(tmp_path: Path) -> None:
    write(tmp_path, "fixtures/code.py", "def f():\r\n    return 1\r\n")
    write(tmp_path, "evals/diagram.png", "not really a png")
    found = one_case(
        tmp_path,
        """
        tests:
          - id: a
            criteria: c
            input:
              - role: user
                content:
                  - type: text
                    value: Review this
                  - type: file
                    value: /fixtures/code.py
                  - type: image
                    value: diagram.png
                  - type: image
                    value: iVBORw0KGgoAAAANSUhEUgAAAAE
                  - type: json
                    value: {k: [1, 2]}
                  - plain text part
        """,
    )
    [message] = found.input
    assert [b.type for b in message.blocks] == ["text", "file", "image", "image", "json", "text"]
    file_block = message.blocks[1]
    assert (file_block.value, file_block.path) == ("def f():\n    return 1\n", str(tmp_path / "fixtures/code.py"))
    assert message.blocks[2].path == str(tmp_path / "evals/diagram.png")
    assert message.blocks[3].path is None and message.blocks[3].value.startswith("iVBOR")
    assert message.blocks[4].value == {"k": [1, 2]}
    assert message.text == (
        'Review this\n\n<file path="fixtures/code.py">\ndef f():\n    return 1\n</file>\n\n'
        '{\n  "k": [\n    1,\n    2\n  ]\n}\n\nplain text part'
    )
    assert found.question == "Review this plain text part"


def test_file_blocks_are_found_in_ancestor_folders_but_not_above_the_rootdir(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, "shared/guide.md", "Guide\n")
    write(tmp_path, "secret.txt", "no\n")
    found = one_case(
        root,
        """
        tests:
          - id: a
            criteria: c
            input:
              - role: user
                content: [{type: file, value: shared/guide.md}]
        """,
        rel="suite/evals/x.eval.yaml",
    )
    assert found.problem is None and found.input[0].blocks[0].value == "Guide\n"
    escaped = problem_of(
        root,
        """
        tests:
          - id: a
            criteria: c
            input:
              - role: user
                content: [{type: file, value: ../../../secret.txt}]
        """,
        rel="suite/evals/y.eval.yaml",
    )
    assert "outside the rootdir" in escaped


def test_suite_input_is_prepended_and_tags_metadata_and_execution(tmp_path: Path) -> None:
    suite = load(
        write(
            tmp_path,
            "evals/x.eval.yaml",
            """
            description: Suite
            tags: [suite-tag]
            input: You are helpful.
            execution:
              timeout_seconds: 60
            tests:
              - id: a
                criteria: c
                input: q
                tags: [one]
                metadata: {tags: [two, one], owner: me}
                conversation_id: flow-1
                note: European dates
                description: first case
                execution:
                  target: big
                  timeout_seconds: 5
              - id: b
                criteria: c
                input: q
                execution:
                  targets: [x, y]
            """,
        ),
        tmp_path,
    )
    a, b = suite.cases
    assert [m.text for m in a.input] == ["You are helpful.", "q"]
    assert (a.tags, a.metadata, a.conversation_id, a.note, a.description) == (
        ("one", "two"),
        {"tags": ["two", "one"], "owner": "me"},
        "flow-1",
        "European dates",
        "first case",
    )
    assert (a.targets, a.timeout_s) == (("big",), 5.0)
    assert (b.targets, b.timeout_s) == (("x", "y"), 60.0)
    assert (suite.tags, suite.description) == (("suite-tag",), "Suite")


def test_root_target_and_execution_target(tmp_path: Path) -> None:
    body = "{key}\ntests:\n  - id: a\n    criteria: c\n    input: q\n"
    assert load(write(tmp_path, "evals/a.yaml", body.format(key="target: old")), tmp_path).targets == ("old",)
    assert load(write(tmp_path, "evals/b.yaml", body.format(key="execution: {target: new}")), tmp_path).targets == (
        "new",
    )


# --- evaluators and defaults ---------------------------------------------------------------------------

MERGE_FILE = """
assert:
  - name: suite-check
    type: contains
    value: ok
tests:
  - id: own
    criteria: c
    input: q
    assert:
      - {name: mine, type: equals, value: "4"}
  - id: inherits
    criteria: c
    input: q
  - id: skips
    criteria: c
    input: q
    execution: {skip_defaults: true}
    assert:
      - {name: mine, type: is_json}
"""

OVERRIDE_FILE = """
execution:
  evaluators:
    - {name: suite-check, type: contains, value: ok}
evalcases:
  - id: own
    expected_outcome: c
    input: q
    execution:
      evaluators:
        - {name: mine, type: equals, value: "4"}
  - id: inherits
    expected_outcome: c
    input: q
  - id: top-level
    expected_outcome: c
    input: q
    evaluators:
      - {name: mine, type: is_json}
"""


def test_suite_evaluators_are_appended_in_v27_files(tmp_path: Path) -> None:
    suite = load(write(tmp_path, "evals/x.eval.yaml", MERGE_FILE), tmp_path)
    assert {c.id: [e.name for e in c.evaluators] for c in suite.cases} == {
        "own": ["mine", "suite-check"],
        "inherits": ["suite-check"],
        "skips": ["mine"],
    }


def test_a_case_list_replaces_the_suite_list_in_classic_files(tmp_path: Path) -> None:
    suite = load(write(tmp_path, "evals/x.yaml", OVERRIDE_FILE), tmp_path)
    assert suite.dialect == "agentv-classic"
    assert {c.id: [e.name for e in c.evaluators] for c in suite.cases} == {
        "own": ["mine"],
        "inherits": ["suite-check"],
        "top-level": ["mine"],
    }


def test_case_evaluator_list_precedence(tmp_path: Path) -> None:
    found = one_case(
        tmp_path,
        """
        tests:
          - id: a
            criteria: c
            input: q
            assert: [{name: from-assert, type: is_json}]
            execution:
              evaluators: [{name: from-execution, type: is_json}]
            evaluators: [{name: from-evaluators, type: is_json}]
        """,
    )
    assert [e.name for e in found.evaluators] == ["from-assert"]


def test_inline_rubrics_come_first_as_an_evaluator_named_rubric(tmp_path: Path) -> None:
    found = one_case(
        tmp_path,
        """
        tests:
          - id: a
            input: q
            rubrics:
              - Mentions X
              - {id: r2, outcome: Mentions Y, weight: 2}
              - {expected_outcome: Mentions Z, required: false}
              - {description: Mentions W}
            assert: [{type: is_json}]
        """,
    )
    rubric, is_json = found.evaluators
    assert (rubric.name, rubric.type, is_json.type) == ("rubric", "rubric", "is_json")
    assert [(r.id, r.outcome, r.weight, r.required) for r in rubric.rubrics] == [
        ("rubric-1", "Mentions X", 1.0, True),
        ("r2", "Mentions Y", 2.0, True),  # AgentV: a rubric object is required unless it says not
        ("rubric-3", "Mentions Z", 1.0, False),
        ("rubric-4", "Mentions W", 1.0, True),
    ]
    assert found.criteria == ""  # rubrics are enough to judge by


def test_a_rubrics_evaluator_reads_its_criteria_list(tmp_path: Path) -> None:
    found = one_case(
        tmp_path,
        """
        tests:
          - id: a
            input: q
            rubrics: [Inline]
            assert:
              - type: rubrics
                criteria: [Be brief, {id: tone, outcome: Be kind, weight: 2}]
                required: true
        """,
    )
    inline, explicit = found.evaluators
    assert (inline.name, explicit.name, explicit.type, explicit.required) == ("rubric", "rubrics", "rubric", 0.8)
    assert [(r.id, r.outcome, r.weight) for r in explicit.rubrics] == [
        ("rubric-1", "Be brief", 1.0),
        ("tone", "Be kind", 2.0),
    ]


def test_agentevals_rubric_objects_are_not_required_by_default(tmp_path: Path) -> None:
    found = one_case(
        tmp_path,
        "name: s\ntests:\n  - id: a\n    input: q\n    rubrics:\n      - Text\n      - {id: o, outcome: Obj}\n",
    )
    assert [(r.id, r.required) for r in found.evaluators[0].rubrics] == [("rubric-1", True), ("o", False)]


@pytest.mark.parametrize(
    ("written", "normalised"),
    [
        ("llm-judge", "llm_judge"),
        ("code-judge", "code_judge"),
        ("code_grader", "code_judge"),
        ("tool-trajectory", "tool_trajectory"),
        ("is-json", "is_json"),
        ("rubrics", "rubric"),
        ("Contains", "contains"),
    ],
)
def test_type_spellings(tmp_path: Path, written: str, normalised: str) -> None:
    write(tmp_path, "evals/judge.py", "")
    fields = {
        "llm_judge": "prompt: Is it right?",
        "code_judge": "command: [python, judge.py]",
        "tool_trajectory": "mode: any_order, minimums: {search: 1}",
        "is_json": "",
        "rubric": "criteria: [Be kind]",
        "contains": "value: x",
    }[normalised]
    found = one_case(
        tmp_path, f"tests:\n  - {{id: a, criteria: c, input: q, assert: [{{type: {written}, {fields}}}]}}\n"
    )
    assert found.problem is None, found.problem
    assert found.evaluators[0].type == normalised


def test_llm_judge_rubrics_and_judge_and_extra_keys(tmp_path: Path) -> None:
    found = one_case(
        tmp_path,
        """
        tests:
          - id: a
            criteria: c
            input: q
            assert:
              - name: j
                type: llm_judge
                target: judge-model
                model: gpt-4
                temperature: 0
                config: {style: strict}
                rubrics: [Polite]
                weight: 2
                required: 0.7
                negate: true
        """,
    )
    [judge] = found.evaluators
    assert (judge.type, judge.judge, judge.weight, judge.required, judge.negate) == (
        "llm_judge",
        "judge-model",
        2.0,
        0.7,
        True,
    )
    assert judge.config == {"style": "strict", "model": "gpt-4", "temperature": 0}
    assert [r.outcome for r in judge.rubrics] == ["Polite"]


def test_prompt_files_are_found_upwards_and_from_the_rootdir(tmp_path: Path) -> None:
    write(tmp_path, "prompts/judge.md", "Grade {{answer}}\n")
    found = one_case(
        tmp_path,
        """
        tests:
          - id: a
            criteria: c
            input: q
            assert:
              - {name: up, type: llm_judge, prompt: prompts/judge.md}
              - {name: root, type: llm_judge, prompt: /prompts/judge.md}
              - {name: inline, type: llm_judge, prompt: "Is {{answer}} right?"}
        """,
        rel="suite/evals/x.eval.yaml",
    )
    up, root, inline = found.evaluators
    assert up.prompt == root.prompt == "Grade {{answer}}\n"
    assert up.prompt_path == root.prompt_path == str(tmp_path / "prompts/judge.md")
    assert (inline.prompt, inline.prompt_path) == ("Is {{answer}} right?", None)


def test_code_judge_script_command_and_cwd(tmp_path: Path) -> None:
    write(tmp_path, "evals/judges/check.py", "")
    suite = load(
        write(
            tmp_path,
            "evals/x.eval.yaml",
            """
            tests:
              - id: argv
                criteria: c
                input: q
                assert: [{name: a, type: code_judge, script: [python, judges/check.py], timeout_seconds: 5}]
              - id: shell
                criteria: c
                input: q
                assert: [{name: s, type: code_judge, command: "python judges/check.py | tee out"}]
              - id: cwd
                criteria: c
                input: q
                assert: [{name: c, type: code_judge, command: [python, check.py], cwd: judges, threshold: 3}]
            """,
        ),
        tmp_path,
    )
    argv, shell, cwd = (c.evaluators[0] for c in suite.cases)
    assert (argv.command, argv.cwd, argv.timeout_s) == (("python", "judges/check.py"), str(tmp_path / "evals"), 5.0)
    assert shell.command == "python judges/check.py | tee out"
    assert (cwd.cwd, cwd.config) == (str(tmp_path / "evals/judges"), {"threshold": 3})


def test_tool_trajectory_defaults_by_dialect(tmp_path: Path) -> None:
    body = """
    tests:
      - id: a
        criteria: c
        input: q
        assert:
          - type: tool_trajectory
            {mode}
            expected:
              - tool: search
                args: {{q: x}}
              - tool: search
                args_match: [q]
                max_duration_ms: 100
    """
    agentv = one_case(tmp_path, body.format(mode="mode: in_order"), rel="evals/a.eval.yaml").evaluators[0]
    assert (agentv.mode, agentv.args_match) == ("in_order", "exact")  # v2.7+: exact arguments
    assert agentv.expected[1].args_match == ("q",) and agentv.expected[1].max_duration_ms == 100.0
    spec = one_case(tmp_path, "name: s\n" + textwrap.dedent(body.format(mode="")), rel="evals/b.eval.yaml").evaluators[
        0
    ]
    # AgentEvals: any_order by default, each expected tool as often as it is listed; partial args
    assert (spec.mode, spec.minimums, spec.args_match) == ("any_order", {"search": 2}, "superset")
    missing = problem_of(tmp_path, body.format(mode=""), rel="evals/c.eval.yaml")
    assert missing.startswith("evals/c.eval.yaml:6:9 (assert[0]): the tool_trajectory evaluator has no `mode`")


def test_composite_aggregators(tmp_path: Path) -> None:
    found = one_case(
        tmp_path,
        """
        tests:
          - id: a
            criteria: c
            input: q
            assert:
              - name: all
                type: composite
                assert:
                  - {name: x, type: contains, value: a}
                  - {name: y, type: contains, value: b}
                aggregator: {type: weighted_average, weights: {x: 3, y: 1}}
              - name: t
                type: composite
                evaluators: [{name: z, type: is_json}]
                aggregator: {type: threshold, threshold: 0.7}
              - name: plain
                type: composite
                evaluators: [{name: z, type: is_json}]
        """,
    )
    weighted, threshold, plain = found.evaluators
    assert [e.name for e in weighted.evaluators] == ["x", "y"]
    assert weighted.aggregator is not None and weighted.aggregator.weights == {"x": 3.0, "y": 1.0}
    assert threshold.aggregator is not None
    assert (threshold.aggregator.type, threshold.aggregator.threshold) == ("threshold", 0.7)
    assert plain.aggregator is not None and plain.aggregator.type == "weighted_average"


# --- problems of one case -------------------------------------------------------------------------------

CASE_WITH = """
tests:
  - id: fine
    criteria: c
    input: q
  - id: broken
    criteria: c
    input: q
    assert:
{evaluator}
"""


def broken_problem(tmp_path: Path, evaluator: str) -> str:
    indented = "\n".join("      " + line for line in evaluator.strip("\n").splitlines())
    suite = load(write(tmp_path, "evals/x.eval.yaml", CASE_WITH.format(evaluator=indented)), tmp_path)
    fine, broken = suite.cases
    assert fine.problem is None  # the other case still loads
    assert broken.problem is not None
    return broken.problem


@pytest.mark.parametrize(
    ("weight", "why"),
    [("-1", "must be >= 0"), ("high", "must be a number"), (".inf", "must be finite"), (".nan", "must be finite")],
)
def test_bad_weight_is_a_located_problem(tmp_path: Path, weight: str, why: str) -> None:
    problem = broken_problem(tmp_path, f"- name: safety\n  type: llm_judge\n  weight: {weight}\n")
    assert problem.startswith("evals/x.eval.yaml:11:9 (assert[0].weight): `weight` " + why)
    assert "hint: write a number >= 0" in problem


def test_score_ranges_must_cover_0_to_10(tmp_path: Path) -> None:
    problem = broken_problem(
        tmp_path,
        """
- type: rubric
  rubrics:
    - id: r
      score_ranges:
        - {score_range: [0, 3], outcome: Bad}
        - {score_range: [6, 10], outcome: Good}
""",
    )
    assert problem.startswith(
        "evals/x.eval.yaml:12:13 (assert[0].rubrics[0].score_ranges): score_ranges leave scores 4, 5"
    )


@pytest.mark.parametrize(
    ("ranges", "message", "line"),
    [
        ("{3: Meh, 10: Good}", "the score_ranges shorthand must start at 0", 12),
        ("{0: Bad, eleven: Good}", "score_ranges key 'eleven' is not a whole number 0..10", 12),
        ("[{score_range: [0, 6], outcome: a}, {score_range: [5, 10], outcome: b}]", "overlap", 12),
        ("[{score_range: [0, 11], outcome: a}]", "`score_range` must be [low, high]", 12),
        ("[{score_range: [0, 10]}]", "says nothing", 12),
    ],
)
def test_score_range_mistakes(tmp_path: Path, ranges: str, message: str, line: int) -> None:
    problem = broken_problem(tmp_path, f"- type: rubric\n  rubrics:\n    - id: r\n      score_ranges: {ranges}\n")
    assert problem.startswith(f"evals/x.eval.yaml:{line}:")
    assert message in problem


def test_unknown_evaluator_type_names_the_type(tmp_path: Path) -> None:
    problem = broken_problem(tmp_path, "- name: fancy\n  type: semantic_similarity\n")
    assert problem.startswith(
        "evals/x.eval.yaml:10:9 (assert[0].type): evaluator type 'semantic_similarity' is unknown"
    )
    assert "hint: use one of llm_judge" in problem


def test_missing_file_block_is_a_located_problem(tmp_path: Path) -> None:
    suite = load(
        write(
            tmp_path,
            "evals/x.eval.yaml",
            """
            tests:
              - id: ok
                criteria: c
                input: q
              - id: needs-file
                criteria: c
                input:
                  - role: user
                    content:
                      - type: file
                        value: ./fixtures/buggy.js
            """,
        ),
        tmp_path,
    )
    ok, needs = suite.cases
    assert ok.problem is None
    assert needs.problem is not None
    assert needs.problem.startswith(
        "evals/x.eval.yaml:11:13 (input[0].content[0].value): file './fixtures/buggy.js' cannot be used: no such file"
    )
    assert "hint: add the file" in needs.problem


@pytest.mark.parametrize(
    ("evaluator", "message"),
    [
        ("- {type: regex, value: '(unclosed'}", "invalid regular expression"),
        ("- {type: contains}", "has no `value`"),
        ("- {type: is_json, required: 2}", "`required` must be true, false or a score in (0, 1]"),
        ("- {type: is_json, negate: yes}", "`negate` must be true or false"),
        ("- {type: code_judge}", "has no `command`"),
        ("- {type: code_judge, command: []}", "must be a list of non-empty arguments"),
        ("- {type: code_judge, command: [python, nope.py]}", "script 'nope.py' does not exist"),
        ("- {type: code_judge, command: [python, -V], cwd: nowhere}", "cwd 'nowhere' cannot be used"),
        ("- {type: llm_judge, prompt: prompts/missing.md}", "prompt file 'prompts/missing.md' cannot be used"),
        ("- {type: llm_judge, prompt: {script: [python, p.py]}}", "a prompt given as a program"),
        ("- {type: rubric}", "has no `rubrics`"),
        ("- {type: rubric, rubrics: [{id: a, outcome: x}, {id: a, outcome: y}]}", "rubric id 'a' is used twice"),
        ("- {type: rubric, rubrics: [{id: a}]}", "says nothing to check"),
        ("- {type: rubric, rubrics: [{id: a, outcome: x, required_min_score: 11}]}", "`required_min_score` must be"),
        ("- {type: tool_trajectory, mode: sometimes, expected: [{tool: a}]}", "unknown tool_trajectory mode"),
        ("- {type: tool_trajectory, mode: any_order}", "any_order needs `minimums`"),
        ("- {type: tool_trajectory, mode: exact}", "needs `expected`"),
        ("- {type: tool_trajectory, mode: any_order, minimums: {a: -1}}", "must be a whole number >= 0"),
        ("- {type: tool_trajectory, mode: exact, expected: [{tool: a, args: 3}]}", "`args` must be a mapping or `any`"),
        ("- {type: tool_trajectory, mode: exact, expected: [{tool: a}], args_match: fuzzy}", "`args_match` must be"),
        ("- {type: composite, evaluators: []}", "has no `evaluators`"),
        (
            "- {type: composite, evaluators: [{name: x, type: is_json}], aggregator: {weights: {y: 1}}}",
            "aggregator weight for 'y'",
        ),
        (
            "- {type: composite, evaluators: [{name: x, type: is_json}], aggregator: {type: llm_judge}}",
            "aggregator type 'llm_judge' is not supported",
        ),
        (
            "- {type: composite, evaluators: [{name: x, type: is_json}], aggregator: {type: safety_gate, required: [z]}}",
            "aggregator `required` names 'z'",
        ),
        (
            "- {type: composite, evaluators: [{name: x, type: is_json}], aggregator: {type: threshold}}",
            "needs `threshold`",
        ),
        ("- execution_metrics", "an evaluator must be a mapping with `type`"),
        (
            "- {type: execution_metrics, max_tool_calls: 3}",
            "'execution_metrics' is an AgentV type this plugin does not run",
        ),
        ("- {name: no-type}", "an evaluator has no `type`"),
    ],
)
def test_evaluator_mistakes_are_case_problems(tmp_path: Path, evaluator: str, message: str) -> None:
    problem = broken_problem(tmp_path, evaluator)
    assert re.match(r"evals/x\.eval\.yaml:(9|10|11|12):", problem), problem  # on the evaluator's lines
    assert message in problem


@pytest.mark.parametrize(
    ("case_body", "message"),
    [
        ("criteria: c", "the test case has no `input`"),
        ("criteria: c\n    input: []", "the input has no messages"),
        ("criteria: c\n    input: [{content: hi}]", "a message has no `role`"),
        ("criteria: c\n    input: [{role: robot, content: hi}]", "unknown message role 'robot'"),
        ("criteria: c\n    input: [{role: user, content: [{type: video, value: x}]}]", "unknown content block type"),
        ("input: q", "nothing to judge by"),
        ("criteria: c\n    input: q\n    evaluator: code_judge", "`evaluator: code_judge` names an evaluator kind"),
        ("criteria: c\n    input: q\n    execution: {targets: fast}", "`execution.targets` must list target names"),
        ("criteria: c\n    input: q\n    execution: {skip_defaults: maybe}", "`skip_defaults` must be true or false"),
        ("criteria: [a]\n    input: q", "`criteria` must be text"),
        ("criteria: c\n    input: q\n    metadata: [a]", "`metadata` must be a mapping"),
    ],
)
def test_case_mistakes_are_case_problems(tmp_path: Path, case_body: str, message: str) -> None:
    suite = load(
        write(
            tmp_path,
            "evals/x.eval.yaml",
            f"tests:\n  - id: ok\n    criteria: c\n    input: q\n  - id: bad\n    {case_body}\n",
        ),
        tmp_path,
    )
    ok, bad = suite.cases
    assert ok.problem is None
    assert bad.id == "bad"
    assert bad.problem is not None and bad.problem.startswith("evals/x.eval.yaml:")
    assert message in bad.problem


def test_a_case_without_id_and_duplicate_ids(tmp_path: Path) -> None:
    suite = load(
        write(
            tmp_path,
            "evals/x.eval.yaml",
            """
            tests:
              - id: same
                criteria: c
                input: q
              - criteria: c
                input: q
              - id: same
                criteria: c
                input: q
              - 42
            """,
        ),
        tmp_path,
    )
    assert [c.id for c in suite.cases] == ["same", "case-2", "same#2", "case-4"]
    first, no_id, again, number = suite.cases
    assert first.problem is None
    assert no_id.problem is not None and no_id.problem.startswith(
        "evals/x.eval.yaml:5:5 (id): the test case has no `id`"
    )
    assert again.problem is not None
    assert again.problem.startswith("evals/x.eval.yaml:7:5 (id): test case id 'same' is used again (first at line 2)")
    assert number.problem is not None and "a test case must be a mapping" in number.problem


def test_suite_default_problems_reach_only_the_cases_that_use_them(tmp_path: Path) -> None:
    suite = load(
        write(
            tmp_path,
            "evals/x.eval.yaml",
            """
            input:
              - role: system
                content: [{type: file, value: missing.md}]
            assert:
              - {type: contains, value: x, weight: -2}
            tests:
              - id: inherits
                criteria: c
                input: q
              - id: skips
                criteria: c
                input: q
                execution: {skip_defaults: true}
            """,
        ),
        tmp_path,
    )
    inherits, skips = suite.cases
    assert inherits.problem is not None and inherits.problem.startswith("evals/x.eval.yaml:3:")
    assert "missing.md" in inherits.problem
    assert skips.problem is None


# --- errors of the file -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("tests:\n  - id: a\n    criteria: Say: hi: there\n", "YAML cannot be read", 3),
        ("- id: a\n  input: q\n", "an eval file must be a mapping", 1),
        ("description: no cases\n", "the file has no list of test cases", 1),
        ("tests: []\n", "`tests` holds no test cases", 1),
        ("tests: 3\n", "`tests` must be a list of test cases", 1),
        ("tests: [{id: a, criteria: c, input: q}]\n---\ntests: []\n", "holds one YAML document", 3),
        ("execution: fast\ntests: [{id: a, criteria: c, input: q}]\n", "`execution` must be a mapping", 1),
        ("execution: {targets: fast}\ntests: [{id: a, criteria: c, input: q}]\n", "`execution.targets`", 1),
        ("execution: {timeout_seconds: -1}\ntests: [{id: a, criteria: c, input: q}]\n", "timeout_seconds", 1),
        ("", "the file is empty", 1),
    ],
)
def test_file_errors_are_located(tmp_path: Path, text: str, message: str, line: int) -> None:
    path = write(tmp_path, "evals/x.eval.yaml", text) if text else tmp_path / "evals/x.eval.yaml"
    if not text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")
    with pytest.raises(BlueprintError) as caught:
        load_agent_suite(path, rootdir=tmp_path)
    assert caught.value.location.path == "evals/x.eval.yaml"
    assert caught.value.location.line == line
    assert message in caught.value.message
    assert "YAML blueprint" not in str(caught.value)


def test_a_broken_cases_file_is_the_files_error(tmp_path: Path) -> None:
    write(tmp_path, "evals/cases.yaml", "id: not-a-list\n")
    with pytest.raises(BlueprintError) as caught:
        load_agent_suite(write(tmp_path, "evals/x.eval.yaml", "tests: cases.yaml\n"), rootdir=tmp_path)
    assert (caught.value.location.path, caught.value.location.line) == ("evals/cases.yaml", 1)
    assert "a cases file must hold one YAML list" in caught.value.message


def test_a_file_above_the_size_cap(tmp_path: Path) -> None:
    path = write(tmp_path, "evals/x.eval.yaml", "tests: [{id: a, criteria: c, input: q}]\n" + "#" * 2000 + "\n")
    with pytest.raises(BlueprintError, match=r"more than the 0\.001 MB an eval file may be"):
        load_agent_suite(path, rootdir=tmp_path, max_file_mb=0.001)


# --- ids and dialects -------------------------------------------------------------------------------


def test_suite_ids() -> None:
    assert suite_id_from_path("evals/dataset.eval.yaml") == "evals__dataset"
    assert suite_id_from_path("a/EVAL.yaml") == "a__EVAL"
    assert suite_id_from_path("x/evals/d.jsonl") == "x__evals__d"
    assert suite_id_from_path("evals/d.yml") == "evals__d"


@pytest.mark.parametrize(
    ("document", "cases", "key", "dialect"),
    [
        ({"name": "x", "evalcases": []}, [], "evalcases", "agentevals"),
        ({"name": "x", "$schema": "agentv-eval-v2", "evalcases": []}, [], "evalcases", "agentv-classic"),
        ({"evalcases": []}, [], "evalcases", "agentv-classic"),
        ({"tests": []}, [], "tests", "agentv"),
        ({}, [{"expected_outcome": "c"}], None, "agentv-classic"),
        ({}, [{"criteria": "c"}], None, "agentv"),
    ],
)
def test_dialect_detection(document: dict, cases: list, key: str | None, dialect: str) -> None:
    assert detect_dialect(document, cases, case_list_key=key) == dialect
