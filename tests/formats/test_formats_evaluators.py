"""Evaluators on small files: the suite's list merged into a case's (§1.5, §7.2), every type's
keys and spellings (§4), rubrics and score ranges, and an evaluator's mistake as its case's
located problem (docs/agent-formats.md)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from formats_helpers import load, one_case, problem_of, write

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


# --- problems of one evaluator -------------------------------------------------------------------------

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
