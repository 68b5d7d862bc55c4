"""The loader on small files: every alias of docs/agent-formats.md §4 for cases and suites,
external case files, content blocks and tool calls, and located problems (a case's) and errors
(the file's), each with its line. Evaluators: test_formats_evaluators.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from formats_helpers import case, load, one_case, problem_of, write

from pytest_weval.blueprint.model import BlueprintError
from pytest_weval.formats.load import detect_dialect, load_agent_suite, suite_id_from_path
from pytest_weval.formats.model import ToolCall

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


# --- problems of one case -------------------------------------------------------------------------------


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
