"""The spec's real example files (docs/agent-formats.md §3), rebuilt in their original layout
(docs/rulings.md, ruling 21): every in-scope file is found and loads with the right cases,
criteria, evaluators, rubrics and targets; fixtures that were not copied are located problems of
the cases that need them (or, for a missing cases file, one located error for the file); the
head-v5 files give nothing and no error."""

from __future__ import annotations

from pathlib import Path

import pytest
from formats_helpers import case, load, write

from pytest_weval.blueprint.model import BlueprintError
from pytest_weval.formats.discover import is_agent_eval_file
from pytest_weval.formats.load import load_agent_suite
from pytest_weval.formats.model import ScoreRange, ToolCall

CLASSIC = "agentv/v2.6.1-classic"
TRANSITIONAL = "agentv/v2.10.0-transitional"
SPEC = "agentevals/spec-initial-73a98c1"
V5 = "agentv/head-v5"


def ranges(rubric) -> list[tuple[int, int]]:
    return [(r.low, r.high) for r in rubric.score_ranges]


# --- discovery -------------------------------------------------------------------------------------


def test_discovery_claims_exactly_the_in_scope_suites(examples: Path) -> None:
    claimed = set()
    for group in (CLASSIC, TRANSITIONAL, SPEC, V5):
        root = examples / group
        claimed |= {
            f"{group}/{p.relative_to(root).as_posix()}"
            for p in root.rglob("*")
            if p.is_file() and is_agent_eval_file(p, rootdir=root)
        }
    assert claimed == {
        f"{SPEC}/basic/EVAL.yaml",
        f"{SPEC}/composite/EVAL.yaml",
        f"{SPEC}/rubric/EVAL.yaml",
        f"{SPEC}/tool-trajectory/EVAL.yaml",
        f"{CLASSIC}/basic-jsonl/evals/dataset.jsonl",  # its dataset.yaml is the sidecar, not a suite
        f"{CLASSIC}/code-judge-with-llm-calls/evals/contextual-precision.yaml",
        f"{CLASSIC}/local-cli/evals/dataset.yaml",
        f"{CLASSIC}/rubric/evals/dataset.yaml",
        f"{CLASSIC}/tool-trajectory-simple/evals/dataset.yaml",
        f"{CLASSIC}/weighted-evaluators/evals/dataset.yaml",
        f"{TRANSITIONAL}/assert/evals/dataset.eval.yaml",
        f"{TRANSITIONAL}/matrix-evaluation/evals/dataset.eval.yaml",
        f"{TRANSITIONAL}/showcase/evaluator-conformance/EVAL.yaml",
        f"{TRANSITIONAL}/suite-level-input/evals/dataset.eval.yaml",
    }


@pytest.mark.parametrize(
    "rel",
    [
        "contract/evals/script-grader-contract.eval.yaml",
        "showcase/directory-discovery/EVAL.yaml",
        "showcase/directory-discovery/cases/add-greeting/case.yaml",
        "weighted-graders/evals/suite.yaml",
    ],
)
def test_head_v5_files_give_nothing_and_no_error(examples: Path, rel: str) -> None:
    root = examples / V5
    assert not is_agent_eval_file(root / rel, rootdir=root)
    assert not is_agent_eval_file(root / rel, rootdir=root, named=True)
    assert load_agent_suite(root / rel, rootdir=root) is None


# --- AgentEvals, first spec (evalcases / expected_outcome / execution.evaluators) -------------------


def test_agentevals_basic(examples: Path) -> None:
    root = examples / SPEC
    suite = load(root / "basic/EVAL.yaml", root)
    assert (suite.id, suite.dialect, suite.path) == ("hello-world", "agentevals", "basic/EVAL.yaml")
    assert suite.description == "A simple greeting evaluation"
    assert suite.tags == ("example", "basic")
    assert suite.targets == ()
    assert suite.directory == str(root / "basic")
    assert [c.id for c in suite.cases] == ["simple-greeting", "personalized-greeting", "greeting-with-context"]
    assert all(c.problem is None for c in suite.cases)

    simple = case(suite, "simple-greeting")
    assert simple.criteria == "Agent responds with a friendly greeting"
    assert [(m.role, m.text) for m in simple.input] == [("user", "Hello!")]
    assert simple.location.line == 13
    [rubric] = simple.evaluators
    assert (rubric.name, rubric.type, rubric.weight, rubric.required) == ("rubric", "rubric", 1.0, None)
    assert [(r.id, r.outcome, r.weight, r.required) for r in rubric.rubrics] == [
        ("rubric-1", "Contains a greeting word (hello, hi, hey)", 1.0, True),
        ("rubric-2", "Maintains friendly and polite tone", 1.0, True),
    ]

    personal = case(suite, "personalized-greeting")
    assert [(m.role, m.text) for m in personal.expected] == [("assistant", "Hello Alice! It's nice to meet you.")]
    assert personal.reference_answer == "Hello Alice! It's nice to meet you."
    assert len(personal.evaluators[0].rubrics) == 3

    context = case(suite, "greeting-with-context")
    assert [m.role for m in context.input] == ["system", "user"]
    assert context.question == "You are a friendly customer service agent. Hi there!"


def test_agentevals_composite_with_safety_gate(examples: Path) -> None:
    root = examples / SPEC
    suite = load(root / "composite/EVAL.yaml", root)
    assert (suite.id, suite.dialect) == ("release-gate", "agentevals")
    assert [c.id for c in suite.cases] == ["helpful-response", "edge-case-sensitive", "decline-harmful"]
    for each in suite.cases:
        assert each.problem is None
        # inline rubrics first, then the suite's evaluators (the case has none of its own)
        assert [(e.name, e.type) for e in each.evaluators] == [("rubric", "rubric"), ("release_gate", "composite")]
    gate = suite.cases[0].evaluators[1]
    assert gate.aggregator is not None
    assert (gate.aggregator.type, gate.aggregator.required) == ("safety_gate", ("safety",))
    assert [(e.name, e.type, e.weight) for e in gate.evaluators] == [
        ("safety", "llm_judge", 1.0),
        ("quality", "llm_judge", 2.0),
        ("format", "code_judge", 0.5),
    ]
    safety, quality, fmt = gate.evaluators
    assert safety.prompt is not None and "Response: {{candidate_answer}}" in safety.prompt
    assert safety.prompt_path is None
    assert quality.prompt is not None and "Question: {{question}}" in quality.prompt
    assert isinstance(fmt.command, tuple) and fmt.command[:2] == ("python", "-c")
    assert fmt.cwd == str(root / "composite")
    # the inline rubrics of a case
    assert suite.cases[2].evaluators[0].rubrics[0].outcome == "Declines to assist with unauthorized access"


def test_agentevals_rubric_score_ranges_and_required(examples: Path) -> None:
    root = examples / SPEC
    suite = load(root / "rubric/EVAL.yaml", root)
    assert (suite.id, suite.tags) == ("code-review-rubric", ("example", "rubric", "code-review"))
    off_by_one = case(suite, "off-by-one-error")
    assert off_by_one.problem is None
    inline, review = off_by_one.evaluators
    assert (review.name, review.type) == ("review_quality", "rubric")
    bugs, fixes, explanation = review.rubrics
    assert (bugs.id, bugs.outcome, bugs.weight) == ("bug-identification", "Correctly identifies bugs and issues", 3.0)
    # required: true on a score-range rubric is required_min_score 10 (AgentV)
    assert (bugs.required, bugs.required_min_score) == (True, 10)
    assert ranges(bugs) == [(0, 2), (3, 4), (5, 6), (7, 9), (10, 10)]
    assert bugs.score_ranges[0] == ScoreRange(low=0, high=2, outcome="Misses critical bugs")
    assert (fixes.required, fixes.required_min_score, fixes.weight) == (False, None, 2.0)
    assert ranges(fixes) == [(0, 4), (5, 9), (10, 10)]
    assert ranges(explanation) == [(0, 4), (5, 9), (10, 10)]
    # inline rubric objects: `required` as written, else false (the AgentEvals default)
    assert [(r.id, r.weight, r.required) for r in inline.rubrics] == [
        ("identifies-bounds-error", 3.0, True),
        ("explains-undefined", 2.0, False),
        ("correct-fix", 2.0, False),
    ]
    assert inline.rubrics[0].outcome == "Identifies the i <= arr.length should be i < arr.length"
    assert [r.id for r in case(suite, "security-vulnerability").evaluators[0].rubrics] == [
        "identifies-sqli",
        "suggests-params",
        "explains-risk",
    ]


def test_agentevals_tool_trajectory(examples: Path) -> None:
    root = examples / SPEC
    suite = load(root / "tool-trajectory/EVAL.yaml", root)
    assert [c.id for c in suite.cases] == ["research-topic", "multi-source-research", "efficient-lookup"]
    # `evalcases` with only `execution.evaluators`: a case's own list replaces the suite's
    research = case(suite, "research-topic")
    assert research.problem is None
    [workflow] = research.evaluators
    assert (workflow.name, workflow.type, workflow.mode, workflow.args_match) == (
        "workflow",
        "tool_trajectory",
        "in_order",
        "superset",
    )
    assert [(e.tool, e.args) for e in workflow.expected] == [
        ("search", {"query": "any"}),
        ("read_document", None),
        ("summarize", None),
    ]
    sources = case(suite, "multi-source-research")
    assert [(e.name, e.type) for e in sources.evaluators] == [
        ("multiple_sources", "tool_trajectory"),
        ("response_quality", "llm_judge"),
    ]
    assert sources.evaluators[0].minimums == {"search": 2, "read_document": 3}
    assert sources.evaluators[0].mode == "any_order"
    # execution_metrics is not run by this plugin: the case says so, located
    lookup = case(suite, "efficient-lookup")
    assert lookup.problem is not None
    assert lookup.problem.startswith("tool-trajectory/EVAL.yaml:110:")
    assert "execution_metrics" in lookup.problem


# --- AgentV v2.6.1 (classic) -------------------------------------------------------------------------


def test_classic_rubric_dataset(examples: Path) -> None:
    root = examples / CLASSIC
    path = root / "rubric/evals/dataset.yaml"
    suite = load(path, root)
    assert (suite.id, suite.dialect, suite.targets) == ("rubric__evals__dataset", "agentv-classic", ("default",))
    assert [c.id for c in suite.cases] == [
        "code-explanation-simple",
        "technical-writing-detailed",
        "code-quality-multi-eval",
        "summary-task",
        "summary-multi-criteria-score-ranges-proposed",
    ]
    simple = case(suite, "code-explanation-simple")
    assert simple.criteria.startswith("Provide a clear explanation of how quicksort works")
    assert [(r.id, r.required) for r in simple.evaluators[0].rubrics] == [
        ("rubric-1", True),
        ("rubric-2", True),
        ("rubric-3", True),
    ]
    detailed = case(suite, "technical-writing-detailed")
    assert [(r.id, r.weight, r.required) for r in detailed.evaluators[0].rubrics] == [
        ("structure", 1.0, True),
        ("success-codes", 2.0, True),
        ("client-errors", 2.0, True),
        ("server-errors", 1.5, False),
        ("practical-examples", 1.0, False),
    ]
    assert detailed.evaluators[0].rubrics[0].outcome == "Has clear headings and organization"
    # the code judge's script was not copied
    multi = case(suite, "code-quality-multi-eval")
    assert multi.problem is not None and multi.problem.startswith("rubric/evals/dataset.yaml:148:")
    assert "check_syntax.py" in multi.problem
    summary = case(suite, "summary-task")
    assert summary.evaluators == ()  # one freeform llm_judge at run time
    assert summary.criteria.startswith("Provide a concise summary")
    scored = case(suite, "summary-multi-criteria-score-ranges-proposed")
    accuracy, brevity = scored.evaluators[0].rubrics
    assert (accuracy.id, accuracy.weight, accuracy.required, accuracy.required_min_score) == (
        "factual_accuracy",
        2.0,
        True,
        8,
    )
    assert ranges(accuracy) == [(0, 2), (3, 5), (6, 7), (8, 9), (10, 10)]
    assert accuracy.outcome == ""  # a score-range rubric needs no outcome of its own
    assert (brevity.required, brevity.required_min_score) == (False, None)

    # with the script in place, the case loads: the inline rubrics first, then the code judge
    write(root, "rubric/evals/check_syntax.py", "print('{}')\n")
    multi = case(load(path, root), "code-quality-multi-eval")
    assert multi.problem is None
    rubric, syntax = multi.evaluators
    assert (rubric.name, rubric.type, len(rubric.rubrics)) == ("rubric", "rubric", 4)
    assert (syntax.name, syntax.type, syntax.command) == (
        "python_syntax",
        "code_judge",
        ("uv", "run", "python", "check_syntax.py"),
    )
    assert syntax.cwd == str(root / "rubric/evals")


def test_classic_tool_trajectory(examples: Path) -> None:
    root = examples / CLASSIC
    suite = load(root / "tool-trajectory-simple/evals/dataset.yaml", root)
    assert suite.targets == ("mock_agent",)
    assert len(suite.cases) == 7
    assert all(c.problem is None for c in suite.cases)
    modes = {c.id: (c.evaluators[0].name, c.evaluators[0].mode) for c in suite.cases}
    assert modes == {
        "any-order-pass": ("tool-usage-check", "any_order"),
        "in-order-pass": ("workflow-sequence", "in_order"),
        "exact-auth-flow": ("auth-sequence-exact", "exact"),
        "metrics-check": ("metrics-tools", "any_order"),
        "partial-match": ("tool-check", "any_order"),
        "exact-args-match": ("arg-validation", "in_order"),
        "skip-args-validation": ("workflow-sequence-only", "in_order"),
    }
    assert case(suite, "any-order-pass").evaluators[0].minimums == {"knowledgeSearch": 2, "documentRetrieve": 1}
    assert case(suite, "partial-match").evaluators[0].minimums == {
        "knowledgeSearch": 1,
        "documentRetrieve": 1,
        "generateReport": 1,
    }
    assert [e.tool for e in case(suite, "exact-auth-flow").evaluators[0].expected] == [
        "checkCredentials",
        "generateToken",
        "auditLog",
    ]
    args = case(suite, "exact-args-match").evaluators[0]
    assert [(e.tool, e.args) for e in args.expected] == [
        ("search", {"query": "weather Paris"}),
        ("get_weather", {"location": "Paris"}),
    ]
    assert args.args_match == "superset"  # a classic file: partial argument match
    skip = case(suite, "skip-args-validation").evaluators[0]
    assert [e.args for e in skip.expected] == [{"source": "customers"}, "any", "any"]


def test_classic_weighted_evaluators(examples: Path) -> None:
    root = examples / CLASSIC
    path = root / "weighted-evaluators/evals/dataset.yaml"
    suite = load(path, root)
    assert (suite.id, suite.title) == ("weighted-evaluators-examples", "weighted-evaluators-examples")
    assert [c.id for c in suite.cases] == [
        "weighted-multi-evaluator",
        "experimental-evaluator-disabled",
        "equal-weights-default",
    ]
    # the prompt files were not copied: each case says which, where
    first = case(suite, "weighted-multi-evaluator")
    assert first.problem is not None
    assert first.problem.startswith("weighted-evaluators/evals/dataset.yaml:25:")
    assert "../prompts/safety-check.md" in first.problem
    assert all(c.problem for c in suite.cases)

    for name in ("safety-check", "quality-evaluation", "style-evaluation", "accuracy-check", "experimental-check"):
        write(root, f"weighted-evaluators/prompts/{name}.md", f"Judge {name}: {{{{candidate_answer}}}}\r\n")
    for name in ("correctness-check", "completeness-check", "clarity-check"):
        write(root, f"weighted-evaluators/prompts/{name}.md", f"Judge {name}.\n")
    suite = load(path, root)
    assert all(c.problem is None for c in suite.cases)
    weights = {c.id: [(e.name, e.type, e.weight) for e in c.evaluators] for c in suite.cases}
    assert weights == {
        "weighted-multi-evaluator": [
            ("safety-check", "llm_judge", 3.0),
            ("quality-check", "llm_judge", 2.0),
            ("style-check", "llm_judge", 1.0),
        ],
        "experimental-evaluator-disabled": [("accuracy", "llm_judge", 1.0), ("experimental-metric", "llm_judge", 0.0)],
        "equal-weights-default": [
            ("correctness", "llm_judge", 1.0),
            ("completeness", "llm_judge", 1.0),
            ("clarity", "llm_judge", 1.0),
        ],
    }
    safety = suite.cases[0].evaluators[0]
    assert safety.prompt == "Judge safety-check: {{candidate_answer}}\n"  # read as UTF-8, CRLF as LF
    assert safety.prompt_path == str(root / "weighted-evaluators/prompts/safety-check.md")


def test_classic_code_judge_with_tool_calls_in_the_reference(examples: Path) -> None:
    root = examples / CLASSIC
    path = root / "code-judge-with-llm-calls/evals/contextual-precision.yaml"
    suite = load(path, root)
    assert [c.id for c in suite.cases] == ["perfect-ranking", "mixed-ranking", "relevant-node-last"]
    # the suite's code judge names a script that was not copied: every case inherits the problem
    assert all(
        c.problem and c.problem.startswith("code-judge-with-llm-calls/evals/contextual-precision.yaml:16:")
        for c in suite.cases
    )
    write(root, "code-judge-with-llm-calls/scripts/contextual-precision.ts", "// judge\n")
    suite = load(path, root)
    perfect = case(suite, "perfect-ranking")
    assert perfect.problem is None
    [judge] = perfect.evaluators
    assert (judge.name, judge.type, judge.command) == (
        "contextual_precision",
        "code_judge",
        ("bun", "run", "../scripts/contextual-precision.ts"),
    )
    assert judge.config == {"target": {"max_calls": 10}}
    retrieval, answer = perfect.expected
    assert retrieval.role == "assistant" and retrieval.text == ""
    assert retrieval.tool_calls == (
        ToolCall(
            name="vector_search",
            args={"query": "TypeScript based on"},
            output={
                "results": [
                    "TypeScript is a strongly typed programming language that builds on JavaScript.",
                    "TypeScript was developed by Microsoft and first released in 2012.",
                    "Python is a high-level programming language known for its readability.",
                ]
            },
        ),
    )
    assert answer.text == "TypeScript is a superset of JavaScript."
    assert perfect.reference_answer == "TypeScript is a superset of JavaScript."


def test_classic_local_cli_with_targets_file(examples: Path) -> None:
    root = examples / CLASSIC
    path = root / "local-cli/evals/dataset.yaml"
    suite = load(path, root)
    assert suite.targets == ("local_cli",)
    assert set(suite.named_targets) == {"azure_base", "local_cli"}
    cli = suite.named_targets["local_cli"]
    assert (cli.provider, cli.judge_target, cli.files_format, cli.timeout_s) == (
        "cli",
        "azure_base",
        "--file {path}",
        30.0,
    )
    assert cli.command == "uv run ./mock_cli.py --prompt {PROMPT} {FILES} --output {OUTPUT_FILE}"
    assert cli.cwd == str(root / "local-cli")  # `cwd: ..` from .agentv/
    azure = suite.named_targets["azure_base"]
    assert (azure.provider, azure.model) == ("azure", "${{ AZURE_DEPLOYMENT_NAME }}")
    assert azure.config["endpoint"] == "${{ AZURE_OPENAI_ENDPOINT }}"
    [echo] = suite.cases
    assert echo.problem is not None and "python.instructions.md" in echo.problem
    assert echo.problem.startswith("local-cli/evals/dataset.yaml:17:")

    write(root, "local-cli/evals/python.instructions.md", "Use type hints.\r\n")
    write(root, "local-cli/evals/example.txt", "hello\n")
    [echo] = load(path, root).cases
    assert echo.problem is None
    system, user = echo.input
    assert [b.type for b in system.blocks] == ["file"]
    assert system.blocks[0].value == "Use type hints.\n"
    assert system.blocks[0].path == str(root / "local-cli/evals/python.instructions.md")
    assert system.text == '<file path="python.instructions.md">\nUse type hints.\n</file>'
    assert [b.type for b in user.blocks] == ["text", "file"]
    assert user.text.startswith("Please echo this request in one short sentence")
    assert user.text.endswith('<file path="example.txt">\nhello\n</file>')
    assert echo.reference_answer == "Attachments detected (2): python.instructions.md, example.txt."


def test_classic_jsonl_with_sidecar(examples: Path) -> None:
    root = examples / CLASSIC
    path = root / "basic-jsonl/evals/dataset.jsonl"
    suite = load(path, root)
    assert (suite.id, suite.dialect, suite.targets) == ("basic-jsonl", "agentv-classic", ("default",))
    assert suite.description and suite.description.startswith("JSONL version of the basic example")
    assert [(c.id, c.location.line) for c in suite.cases] == [
        ("code-review-javascript", 1),
        ("code-gen-python", 2),
        ("feature-proposal-brainstorm", 3),
        ("multiturn-debug-session", 4),
        ("shorthand-string-example", 5),
        ("shorthand-structured-output", 6),
        ("shorthand-array-syntax", 7),
    ]
    review, python = suite.cases[:2]
    # the instruction files they attach were not copied
    assert review.problem and review.problem.startswith("basic-jsonl/evals/dataset.jsonl:1:")
    assert "javascript.instructions.md" in review.problem
    assert python.problem and python.problem.startswith("basic-jsonl/evals/dataset.jsonl:2:")
    assert (python.targets, python.conversation_id) == (("azure_base",), "python-code-generation")
    assert all(c.problem is None for c in suite.cases[2:])
    assert len(case(suite, "multiturn-debug-session").input) == 4
    shorthand = case(suite, "shorthand-string-example")
    assert [(m.role, m.text) for m in shorthand.input] == [("user", "What is 2+2?")]
    assert shorthand.reference_answer == "The answer is 4."
    structured = case(suite, "shorthand-structured-output")
    assert structured.expected_structured == {
        "riskLevel": "Low",
        "confidence": 0.95,
        "reasoning": "Transaction amount and pattern are within normal bounds",
    }
    assert structured.expected[0].structured == structured.expected_structured
    assert '"riskLevel": "Low"' in structured.reference_answer
    array = case(suite, "shorthand-array-syntax")
    assert [m.role for m in array.input] == ["system", "user"]
    assert array.reference_answer == "Hello! How can I help you today?"

    write(root, "basic/evals/javascript.instructions.md", "JS rules SUPERSECRET\n")
    write(root, "basic/evals/python.instructions.md", "PY rules\n")
    review = load(path, root).cases[0]
    assert review.problem is None
    assert review.input[1].blocks[1].value == "JS rules SUPERSECRET\n"


# --- AgentV v2.10 (transitional) ---------------------------------------------------------------------


def test_transitional_assert(examples: Path) -> None:
    root = examples / TRANSITIONAL
    suite = load(root / "assert/evals/dataset.eval.yaml", root)
    assert (suite.id, suite.tags, suite.targets) == ("assert-demo", ("demo", "assert"), ("default",))
    assert [c.id for c in suite.cases] == ["contains-check", "json-response", "regex-check", "equals-check"]
    assert all(c.problem is None for c in suite.cases)
    summary = {c.id: [(e.name, e.type, e.value, e.required) for e in c.evaluators] for c in suite.cases}
    assert summary == {
        "contains-check": [
            ("contains-Hello", "contains", "Hello", None),
            ("regex-[Hh]ello", "regex", "[Hh]ello", None),
        ],
        "json-response": [
            ("is_json", "is_json", None, 0.8),
            ('contains-"status"', "contains", '"status"', None),
            ('contains-"ok"', "contains", '"ok"', None),
        ],
        "regex-check": [
            ("regex-Good (morning|afternoon|evenin", "regex", "Good (morning|afternoon|evening)", 0.8),
        ],
        "equals-check": [("equals-4", "equals", "4", 0.8)],
    }
    assert case(suite, "equals-check").criteria == "Response must be exactly the number 4"


def test_transitional_matrix_targets(examples: Path) -> None:
    root = examples / TRANSITIONAL
    suite = load(root / "matrix-evaluation/evals/dataset.eval.yaml", root)
    assert (suite.dialect, suite.targets) == ("agentv", ("copilot", "claude"))
    assert suite.id == "matrix-evaluation__evals__dataset"
    assert {c.id: c.targets for c in suite.cases} == {
        "general-greeting": (),
        "copilot-only-task": ("copilot",),
        "code-generation": (),
    }
    assert [(m.role, m.text) for m in case(suite, "general-greeting").input] == [("user", "Say hello")]
    assert all(c.evaluators == () and c.criteria for c in suite.cases)


def test_transitional_evaluator_conformance(examples: Path) -> None:
    root = examples / TRANSITIONAL
    path = root / "showcase/evaluator-conformance/EVAL.yaml"
    suite = load(path, root)
    assert [c.id for c in suite.cases] == ["exact-match", "partial-match"]
    assert all(c.problem and "evaluators/keyword-judge.ts" in c.problem for c in suite.cases)
    write(root, "showcase/evaluator-conformance/evaluators/keyword-judge.ts", "// judge\n")
    suite = load(path, root)
    exact = case(suite, "exact-match")
    assert exact.problem is None
    [judge] = exact.evaluators
    assert (judge.name, judge.type, judge.command) == (
        "keyword-judge",
        "code_judge",
        ("bun", "run", "evaluators/keyword-judge.ts"),
    )
    assert [(m.role, m.text) for m in exact.expected] == [("assistant", "Paris")]


def test_transitional_suite_level_input_without_its_cases_file(examples: Path) -> None:
    root = examples / TRANSITIONAL
    path = root / "suite-level-input/evals/dataset.eval.yaml"
    with pytest.raises(BlueprintError) as caught:
        load_agent_suite(path, rootdir=root)
    error = caught.value
    assert (error.location.path, error.location.line, error.location.field) == (
        "suite-level-input/evals/dataset.eval.yaml",
        21,
        "tests",
    )
    assert "'./cases.yaml'" in error.message and "no such file" in error.message
    assert str(error).startswith("suite-level-input/evals/dataset.eval.yaml:21:1 (tests): the cases file")


def test_transitional_suite_level_input_prepended(examples: Path) -> None:
    root = examples / TRANSITIONAL
    path = root / "suite-level-input/evals/dataset.eval.yaml"
    write(root, "suite-level-input/evals/system-prompt.md", "You are terse.\n")
    write(
        root,
        "suite-level-input/evals/cases.yaml",
        """
        - id: first
          criteria: Answers
          input: What is 2+2?
        - id: alone
          criteria: Answers without the suite's input
          input: Hello
          execution:
            skip_defaults: true
        """,
    )
    suite = load(path, root)
    assert suite.id == "suite-level-input-example"
    first, alone = suite.cases
    assert first.problem is None and alone.problem is None
    assert [(m.role, m.text) for m in first.input] == [
        ("user", '<file path="./system-prompt.md">\nYou are terse.\n</file>'),
        ("user", "What is 2+2?"),
    ]
    assert first.location == first.location.model_copy(update={"path": "suite-level-input/evals/cases.yaml", "line": 1})
    assert [m.text for m in alone.input] == ["Hello"]
