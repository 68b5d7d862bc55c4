"""AgentV / AgentEvals LLM judges: the requests, one per mode (agent-formats.md §1.9, §2.9, §4,
§5.4)."""

from __future__ import annotations

import json

from agent_judge_helpers import CHECKLIST, FREEFORM, RANGES, make_case, make_output

from pytest_weval.formats.model import Evaluator
from pytest_weval.judges.agent_prompts import (
    DEFAULT_FREEFORM_TEMPLATE,
    checklist_messages,
    freeform_messages,
    judge_messages,
    judge_mode,
    render_template,
    retry_messages,
    score_range_messages,
    template_variables,
)

# --- modes and requests --------------------------------------------------------------------------


def test_mode_follows_the_rubrics():
    assert judge_mode(FREEFORM) == "freeform"
    assert judge_mode(CHECKLIST) == "checklist"
    assert judge_mode(RANGES) == "score_ranges"
    mixed = Evaluator(name="m", type="llm_judge", rubrics=(*CHECKLIST.rubrics, *RANGES.rubrics))
    assert judge_mode(mixed) == "score_ranges"  # one rubric with ranges switches the evaluator


def test_freeform_default_request():
    system, user = freeform_messages(make_case(), FREEFORM, make_output())
    assert system["role"] == "system" and user["role"] == "user"
    for field in ('"score"', '"hits"', '"misses"', '"reasoning"', "single JSON object", "0.0 to 1.0", "up to 4"):
        assert field in system["content"]
    text = user["content"]
    sections = [
        "[[ ## expected_outcome ## ]]\nExplains the fix and names the function\n",
        "[[ ## question ## ]]\nBe brief. Why does parse() fail?\n",  # text parts of every message, not the file body
        "[[ ## reference_answer ## ]]\nIt reads past the end of the buffer.\n",
        "[[ ## candidate_answer ## ]]\nThe loop reads one byte too many in parse().",
    ]
    positions = [text.index(s) for s in sections]
    assert positions == sorted(positions)
    assert text.endswith("The loop reads one byte too many in parse().")  # trimmed
    assert "expert evaluator" in text and "gold standard" in text and "last message" in text
    assert "{{" not in text
    assert judge_messages(make_case(), FREEFORM, make_output()) == [system, user]


def test_freeform_custom_template_with_every_variable():
    names = [
        "candidate_answer",
        "answer",
        "expected_outcome",
        "criteria",
        "question",
        "reference_answer",
        "input_messages",
        "input",
        "expected_messages",
        "expected_output",
        "output_messages",
        "output",
        "note",
        "file_changes",
    ]
    template = "\n".join(f"<{n}>{{{{ {n} }}}}</{n}>" for n in names) + "\n{{ unknown_thing }} {{unknown}} {{ 1 x }}"
    evaluator = Evaluator(name="custom", type="llm_judge", prompt=template)
    system, user = freeform_messages(make_case(), evaluator, make_output())
    text = user["content"]
    assert '"score"' in system["content"]  # the contract stays in the system prompt
    assert "<candidate_answer>The loop reads one byte too many in parse().</candidate_answer>" in text
    assert "<answer>The loop reads one byte too many in parse().</answer>" in text
    assert "<criteria>Explains the fix and names the function</criteria>" in text
    assert "<expected_outcome>Explains the fix and names the function</expected_outcome>" in text
    assert "<question>Be brief. Why does parse() fail?</question>" in text
    assert "<reference_answer>It reads past the end of the buffer.</reference_answer>" in text
    assert "<note>written by hand</note>" in text
    assert "<file_changes></file_changes>" in text
    # message arrays as pretty JSON
    variables = template_variables(make_case(), make_output())
    assert json.loads(variables["input_messages"])[1] == {
        "role": "user",
        "content": "Why does parse() fail?\n\nfile body",
    }
    assert variables["input"] == variables["input_messages"]
    assert json.loads(variables["expected_messages"]) == [
        {"role": "assistant", "content": "It reads past the end of the buffer."}
    ]
    assert variables["expected_output"] == variables["expected_messages"]
    out = json.loads(variables["output_messages"])
    assert out[0]["tool_calls"] == [
        {"tool": "read_file", "input": {"filePath": "parse.py"}, "output": "...", "duration_ms": 12.0}
    ]
    assert variables["output"] == variables["output_messages"]
    assert '\n  {\n    "role": "user"' in variables["input_messages"]  # indent=2
    # unknown names untouched
    assert text.endswith("{{ unknown_thing }} {{unknown}} {{ 1 x }}")


def test_render_is_one_pass_and_keeps_unknown_names():
    assert render_template("{{a}}-{{ b }}-{{c}}", {"a": "{{b}}", "b": "B"}) == "{{b}}-B-{{c}}"
    assert render_template("{{  a\t}}", {"a": "x"}) == "x"
    assert render_template("{ {a} }", {"a": "x"}) == "{ {a} }"


def test_structured_expected_output_is_pretty_json():
    case = make_case(expected=(), expected_structured={"status": "ok", "n": 2})
    variables = template_variables(case, make_output())
    assert json.loads(variables["expected_messages"]) == [{"role": "assistant", "content": {"status": "ok", "n": 2}}]
    assert variables["reference_answer"] == json.dumps({"status": "ok", "n": 2}, indent=2)


def test_checklist_request():
    system, user = checklist_messages(make_case(), CHECKLIST, make_output())
    assert '"checks"' in system["content"] and '"satisfied": boolean' in system["content"]
    assert '"overall_reasoning"' in system["content"]
    text = user["content"]
    order = ["[[ ## question ## ]]", "[[ ## expected_outcome ## ]]", "[[ ## reference_answer ## ]]"]
    order += ["[[ ## candidate_answer ## ]]", "[[ ## rubrics ## ]]"]
    positions = [text.index(s) for s in order]
    assert positions == sorted(positions)
    lines = text.split("[[ ## rubrics ## ]]\n")[1].splitlines()
    assert lines[:3] == [
        "- [names-fn] (REQUIRED): Names the function parse()",
        "- [explains] (weight: 2): Explains the off-by-one",
        "- [brief] (weight: 0.5): Is brief",
    ]
    assert "satisfied" in lines[-1]


def test_empty_reference_answer_section_is_left_out_of_rubric_prompts():
    case = make_case(expected=())
    _, user = checklist_messages(case, CHECKLIST, make_output())
    assert "reference_answer" not in user["content"]
    _, user = score_range_messages(case, RANGES, make_output())
    assert "reference_answer" not in user["content"]


def test_score_range_request():
    system, user = score_range_messages(make_case(), RANGES, make_output())
    assert '"score": integer (0-10)' in system["content"] and "score ranges" in system["content"]
    text = user["content"]
    assert "0 to 10" in text.splitlines()[1]
    body = text.split("[[ ## scoring_criteria ## ]]\n")[1]
    assert body.splitlines()[:8] == [
        "",
        "### Criterion: accuracy (weight: 3) [REQUIRED: min score 7]",
        "Description: Technical accuracy",
        "Score ranges:",
        "  - Score 0-3: Wrong",
        "  - Score 4-6: Partly right",
        "  - Score 7-9: Right",
        "  - Score 10: Exact",
    ]
    assert "### Criterion: clarity\nScore ranges:\n  - Score 0-10: Any" in body  # no description when empty
    assert judge_messages(make_case(), RANGES, make_output())[1]["content"] == text


def test_retry_messages_leave_the_original_alone():
    original = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert retry_messages(original, 1, 3, "r") is original
    again = retry_messages(original, 2, 3, "bad")
    assert original == [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert again[1]["content"].startswith("U\n\n(Attempt 2 of 3") and "bad" in again[1]["content"]


def test_default_template_uses_the_classic_names():
    for name in ("expected_outcome", "question", "reference_answer", "candidate_answer"):
        assert f"[[ ## {name} ## ]]\n{{{{{name}}}}}" in DEFAULT_FREEFORM_TEMPLATE
