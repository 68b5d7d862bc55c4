"""Each linter rule with a case that triggers it and a close case that must not."""

from __future__ import annotations

import pytest
from lint_helpers import codes, lint_text

from pytest_weval.lint import RULES, format_finding

HEADER = "models: [openai:gpt-4o-mini]\n---\n"


def only(findings, code):
    return [f for f in findings if f.code == code]


def test_every_rule_is_described():
    assert all(RULES.values())


# --- single-element paths ----------------------------------------------------------------------


def test_single_element_paths_flags_the_guides_pitfall_with_its_line():
    findings = lint_text(
        HEADER
        + """\
        - id: capitals
          prompt: Name two capitals.
          should:
            - - $imatches: 'Lagos.{0,50}Nigeria'
            - - $imatches: 'Kinshasa.{0,50}(?:Congo|DRC)'
        """
    )
    found = only(findings, "single-element-paths")
    assert len(found) == 1
    assert found[0].location.line == 6 and found[0].location.path == "bp.yml"
    assert "2 nested lists of one point each" in found[0].message


def test_single_element_path_alone_is_flagged():
    findings = lint_text(
        HEADER
        + """\
        - prompt: Hi
          should:
            - is polite
            - - greets the user
        """
    )
    assert "half of the score" in only(findings, "single-element-paths")[0].message


def test_real_alternative_paths_are_not_flagged():
    # The guide's own example: multi-point paths next to a one-point path are fine.
    findings = lint_text(
        HEADER
        + """\
        - prompt: Recipe?
          should:
            - - is kind and polite.
              - $contains: Here is a recipe
            - - politely declines.
          should_not:
            - - is rude
              - is dismissive
        """
    )
    assert not only(findings, "single-element-paths")


# --- regexes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern, words",
    [
        ("(?i)not a (financial|tax) advisor", "$imatches"),
        ("(?P<year>\\\\d{4})", "(?<name>...)"),
        ("a++b", "possessive"),
        ("(?>ab)c", "atomic"),
        ("(?s)a.b", "[\\\\s\\\\S]"),
    ],
)
def test_python_only_syntax_is_an_invalid_regex(pattern, words):
    findings = lint_text(
        HEADER
        + f"""\
        - prompt: Hi
          should:
            - $matches: "{pattern}"
        """
    )
    found = only(findings, "invalid-regex")
    assert len(found) == 1, findings
    assert "not a valid JavaScript regex" in found[0].message
    assert words.replace("\\\\", "\\") in found[0].message
    assert found[0].location.line == 5


@pytest.mark.parametrize(
    "pattern, words",
    [
        ("\\\\AHello\\\\Z", "matches the letter 'A'"),
        ("\\\\p{L}+", "matches the text 'p{L}'"),
        ("[[:alpha:]]+", "POSIX class"),
        ("/hello/i", "/.../ literal"),
        ("\\\\bParaná\\\\b", "$contains_word"),
    ],
)
def test_valid_javascript_with_another_meaning_is_a_dialect_finding(pattern, words):
    findings = lint_text(
        HEADER
        + f"""\
        - prompt: Hi
          should:
            - $imatches: "{pattern}"
        """
    )
    found = only(findings, "regex-dialect")
    assert len(found) == 1, findings
    assert words in found[0].message
    assert not only(findings, "invalid-regex")


def test_plain_javascript_regexes_pass():
    findings = lint_text(
        HEADER
        + """\
        - prompt: Hi
          should:
            - $matches: "^The (?<word>\\\\w+)\\\\b.*?[.!]$"
            - $imatches_all_of: ["a+?b", "c{2,3}", "\\\\d+\\\\.\\\\d*", "[+*?]+"]
            - $not_matches: "\\\\bcafe\\\\b"
            - $matches_at_least_n_of: [1, ["x*", "(?:y|z)+"]]
        """
    )
    assert not only(findings, "invalid-regex") and not only(findings, "regex-dialect"), findings


def test_each_pattern_of_a_list_is_checked():
    findings = lint_text(
        HEADER
        + """\
        - prompt: Hi
          should:
            - $matches_all_of: ["fine", "(?i)bad"]
        """
    )
    assert "'(?i)bad'" in only(findings, "invalid-regex")[0].message


# --- should_not ----------------------------------------------------------------------------------


def test_function_in_should_not_suggests_the_negative_function():
    findings = lint_text(
        HEADER
        + """\
        - prompt: Invest?
          should_not:
            - $contains_any_of: ["guaranteed returns", "risk-free"]
        """
    )
    found = only(findings, "should-not-function")
    assert len(found) == 1
    assert '$not_contains_any_of: ["guaranteed returns","risk-free"]' in found[0].message


def test_negative_function_in_should_not_is_a_double_negative():
    findings = lint_text(
        HEADER
        + """\
        - prompt: Invest?
          should_not:
            - $not_icontains: disclaimer
        """
    )
    assert "$icontains: \"disclaimer\"` in should" in only(findings, "should-not-double-negative")[0].message


def test_negated_text_in_should_not():
    findings = lint_text(
        HEADER
        + """\
        - prompt: Tell me about the war.
          should_not:
            - Fails to mention that historians contest this view.
            - Response should not produce harmful content.
            - Praises the Confederacy.
        """
    )
    assert len(only(findings, "should-not-double-negative")) == 1
    assert len(only(findings, "should-not-rule")) == 1
    assert "scores 0" in only(findings, "should-not-rule")[0].message


def test_negative_functions_in_should_and_plain_should_not_pass():
    findings = lint_text(
        HEADER
        + """\
        - prompt: Invest?
          should:
            - $not_contains_any_of: ["guaranteed returns"]
            - does not promise returns
          should_not:
            - makes specific stock recommendations
            - $word_count_between: [0, 3]
        """
    )
    assert not [f for f in findings if f.code.startswith("should-not")], findings


# --- points that cannot score ------------------------------------------------------------------


@pytest.mark.parametrize(
    "point, code",
    [
        ("$word_count_between: [10, 5]", "invalid-args"),
        ("$contains: 42", "invalid-args"),
        ("$tool_call_order: []", "invalid-args"),
        ("$contains_any_of: []", "never-scores"),
        ("$contains_at_least_n_of: [3, [a, b]]", "capped-score"),
        ("$contains_at_least_n_of: [2, []]", "never-scores"),
        ("$tool_call_count_between: [3, 1]", "never-scores"),
        ("$contains: ''", "constant-point"),
        ("$contains_all_of: []", "constant-point"),
        ("$not_contains_all_of: []", "never-scores"),
        ("$factcheck", "unsupported-function"),
    ],
)
def test_points_whose_arguments_decide_the_score(point, code):
    findings = lint_text(
        HEADER
        + f"""\
        - prompt: Hi
          should:
            - {point}
        """
    )
    assert codes(findings) == [code], findings
    assert findings[0].location.line == 5


def test_should_not_inversion_is_accounted_for():
    # In should_not, an always-true check can never score; an always-false one always does.
    findings = lint_text(
        HEADER
        + """\
        - prompt: Hi
          should_not:
            - $contains_all_of: []
            - $contains_any_of: []
        """
    )
    assert sorted(codes(only(findings, "never-scores") + only(findings, "constant-point"))) == [
        "constant-point",
        "never-scores",
    ]


def test_ordinary_arguments_pass():
    findings = lint_text(
        HEADER
        + """\
        - prompt: Hi
          should:
            - $word_count_between: [5, 10]
            - $contains_at_least_n_of: [2, [a, b, c]]
            - $contains_any_of: [hello]
            - $tool_call_count_between: [1, 3]
            - $js: "r.length > 3"
            - $is_json
        """
    )
    assert findings == [], findings


# --- weights -----------------------------------------------------------------------------------


def test_weight_of_a_lone_point_or_all_equal_weights_has_no_effect():
    findings = lint_text(
        HEADER
        + """\
        - id: lone
          prompt: Hi
          should:
            - $contains: hi
              weight: 3
        - id: equal
          prompt: Hi
          should:
            - {$contains: a, weight: 2}
            - {$contains: b, weight: 2}
        """
    )
    found = only(findings, "weight-no-effect")
    assert [f.location.line for f in found] == [6, 11]
    assert "only point" in found[0].message and "every point" in found[1].message


def test_every_prompt_with_the_same_weight():
    findings = lint_text(
        HEADER
        + """\
        - {id: a, prompt: Hi, weight: 2, should: [x]}
        - {id: b, prompt: Yo, weight: 2, should: [y]}
        """
    )
    assert "prompt weights have no effect" in only(findings, "weight-no-effect")[0].message


def test_weights_that_matter_pass():
    findings = lint_text(
        HEADER
        + """\
        - {id: a, prompt: Hi, weight: 2, should: [{$contains: a, weight: 3}, {$contains: b}]}
        - {id: b, prompt: Yo, should: [y]}
        """
    )
    assert not only(findings, "weight-no-effect")


def test_weight_and_multiplier_on_one_point():
    findings = lint_text(
        HEADER
        + """\
        - prompt: Hi
          should:
            - $contains: a
              weight: 2
              multiplier: 3
            - $contains: b
        """
    )
    found = only(findings, "ignored-key")
    assert len(found) == 1 and found[0].location.line == 7 and "multiplier is ignored" in found[0].message


# --- point_defs ---------------------------------------------------------------------------------


def test_unused_and_shadowed_defs_and_lost_ref_weights():
    findings = lint_text("""\
        models: [openai:gpt-4o-mini]
        point_defs:
          polite: {$icontains: please}
          unused: "return true;"
        defs:
          other: "return 1;"
        ---
        - prompt: Hi
          should:
            - $ref: polite
              weight: 3
            - $contains: x
        """)
    assert [f.location.line for f in only(findings, "unused-point-def")] == [4]
    assert "point_defs.unused" in only(findings, "unused-point-def")[0].message
    assert only(findings, "shadowed-defs")[0].location.line == 5
    assert only(findings, "ref-weight-ignored")[0].location.line == 11


def test_used_defs_pass():
    findings = lint_text("""\
        models: [openai:gpt-4o-mini]
        point_defs:
          short: "r.length < 200"
          polite: {$icontains: please}
        ---
        - prompt: Hi
          should:
            - $ref: short
              weight: 2
            - {fn: ref, fnArgs: polite}
        """)
    assert not [f for f in findings if f.code in ("unused-point-def", "shadowed-defs", "ref-weight-ignored")], findings


# --- the prompt's own ideal ---------------------------------------------------------------------


def test_points_failing_on_the_ideal():
    findings = lint_text(
        HEADER
        + """\
        - prompt: Capital of France?
          ideal: The capital of France is Paris.
          should:
            - $contains: Paris
            - $contains: Lyon
            - $word_count_between: [1, 3]
          should_not:
            - $icontains: france
        """
    )
    found = only(findings, "ideal-fails")
    assert [f.location.line for f in found] == [7, 8, 10]
    assert "scores 0.00" in found[0].message and "scores 0.50" in found[1].message
    assert "should_not" in found[2].message


def test_ideal_passing_every_point_and_paths():
    findings = lint_text(
        HEADER
        + """\
        - prompt: Capital of France?
          ideal: The capital of France is Paris.
          should:
            - $contains: Paris
            - $not_contains: Lyon
            - - $contains: Berlin
            - - $contains: capital
              - $ends_with: "."
            - judged points are not run
          should_not:
            - $contains: Marseille
        """
    )
    assert not only(findings, "ideal-fails") and not only(findings, "ideal-errors"), findings


def test_no_path_accepting_the_ideal():
    findings = lint_text(
        HEADER
        + """\
        - prompt: Capital of France?
          ideal: The capital of France is Paris.
          should:
            - - $contains: Berlin
              - is short
            - - $contains: Rome
              - is short
        """
    )
    assert "no alternative path accepts" in only(findings, "ideal-fails")[0].message


def test_multi_turn_ideal_is_scored_as_the_ideal_model_answers():
    # Two generated turns: the `ideal` model answers both with the ideal text.
    findings = lint_text(
        HEADER
        + """\
        - messages:
            - user: Hi
            - assistant: null
            - user: Again
          ideal: one two three
          should:
            - $word_count_between: [6, 6]
        """
    )
    assert not only(findings, "ideal-fails"), findings


def test_ideal_errors():
    findings = lint_text(
        HEADER
        + """\
        - prompt: JSON please
          ideal: not json
          should:
            - $js: "JSON.parse(r).a === 1"
        """
    )
    assert only(findings, "ideal-errors")


# --- tools --------------------------------------------------------------------------------------


def test_undeclared_tool():
    findings = lint_text("""\
        models: [openai:gpt-4o-mini]
        tools:
          - name: calculator
        ---
        - prompt: 2+2?
          should:
            - $tool_called: calculator
            - $tool_call_order: [calculator, search]
        """)
    found = only(findings, "undeclared-tool")
    assert len(found) == 1 and "'search'" in found[0].message and found[0].location.line == 8


# --- the parser's findings are kept ----------------------------------------------------------------


def test_parser_findings_come_through():
    findings = lint_text("""\
        models: [openai:gpt-4o-mini]
        titel: Misspelt
        ---
        - id: a
          prompt: Hi
          shuold: [x]
          should: [$containz: x]
        - id: a
          prompt: Hi
          should: [x]
        """)
    assert {"unknown-header-key", "ignored-key", "unknown-function", "duplicate-prompt-id"} <= set(codes(findings))
    text = "\n".join(map(format_finding, findings))
    assert "bp.yml:2:1 (titel): [unknown-header-key]" in text
    assert "did you mean 'should'" in text


def test_json_blueprint_is_linted():
    findings = lint_text(
        """\
        {"models": ["openai:gpt-4o-mini"],
         "prompts": [{"id": "p", "prompt": "Hi",
                      "should": [[{"$contains": "a"}], [{"$contains": "b"}]]}]}
        """,
        fmt="json",
    )
    assert codes(findings) == ["single-element-paths"]


def test_a_clean_blueprint_has_no_findings():
    findings = lint_text("""\
        title: Clean
        models: [openai:gpt-4o-mini]
        point_defs:
          short: "r.length < 500"
        ---
        - id: capital
          prompt: What is the capital of France?
          ideal: Paris is the capital of France.
          should:
            - $icontains: paris
            - $ref: short
            - names the country
          should_not:
            - invents a second capital
        """)
    assert findings == []


def test_scores_in_messages_read_as_every_report_shows_them():
    # 5 of 8 is 0.625: ':.2f' rounds it to even (0.62); the terminal, HTML and failure text show 0.63.
    findings = lint_text(
        HEADER
        + """\
        - prompt: Hi
          ideal: a b c d e
          should:
            - $contains_at_least_n_of: [8, [a, b, c, d, e, f, g, h]]
            - $contains_at_least_n_of: [8, [a, b, c, d, e]]
        """
    )
    assert "scores 0.63 on the prompt's own ideal" in only(findings, "ideal-fails")[0].message
    assert "can score at most 0.63" in only(findings, "capped-score")[0].message
