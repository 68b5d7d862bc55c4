"""Selecting lint codes (pytest_weval.lint.select): the ini's syntax and checks, per-file globs,
and the `# weval-lint: ignore=...` comment."""

from __future__ import annotations

import textwrap

import pytest

from pytest_weval.lint import PARSER_CODES, RULES
from pytest_weval.lint.select import DIRECTIVE_CODE, KNOWN_CODES, LintSelection, file_directives, split_codes


def test_known_codes_are_the_rules_and_the_parsers_codes():
    assert set(RULES) | set(PARSER_CODES) == KNOWN_CODES
    # the codes a configs repository cannot act on (docs/rulings.md, ruling 5; the header `id`)
    assert {"empty-collection", "ignored-header-id", DIRECTIVE_CODE} <= KNOWN_CODES
    # a file that cannot be parsed is a collection error, never a finding to select
    assert "parse-error" not in KNOWN_CODES


def test_codes_split_on_spaces_commas_and_newlines():
    assert split_codes(" empty-collection,ignored-header-id\n  should-not-rule ,, ") == [
        "empty-collection",
        "ignored-header-id",
        "should-not-rule",
    ]
    assert split_codes("") == []


def test_global_ignore_applies_to_every_file():
    selection = LintSelection.parse(ignore="empty-collection\nignored-header-id")
    assert selection.ignore == {"empty-collection", "ignored-header-id"}
    assert selection.ignored_for("blueprints/a.yml") == {"empty-collection", "ignored-header-id"}
    assert LintSelection.parse().ignored_for("blueprints/a.yml") == frozenset()


def test_an_unknown_code_names_the_setting_suggests_and_lists_the_known_codes():
    with pytest.raises(ValueError) as caught:
        LintSelection.parse(ignore="empty-colection ignored-header-id")
    message = str(caught.value)
    assert message.startswith(
        "ini weval_lint_ignore: unknown lint code 'empty-colection' (did you mean 'empty-collection'?)"
    )
    assert "known codes: " in message
    assert all(code in message for code in KNOWN_CODES)


def test_per_file_globs_are_relative_to_the_rootdir_and_add_to_the_global_codes():
    selection = LintSelection.parse(
        ignore="ignored-header-id",
        per_file=[
            "blueprints/benchmarks/*: should-not-rule, ideal-fails",
            "",  # blank lines of a linelist are skipped
            "*/jailbreakbench.yml: ignored-key",
        ],
    )
    # fnmatch, as weval_globs: `*` also crosses folders
    assert selection.ignored_for("blueprints/benchmarks/deep/sg-bench.yml") == {
        "ignored-header-id",
        "should-not-rule",
        "ideal-fails",
    }
    assert selection.ignored_for("blueprints/benchmarks/jailbreakbench.yml") == {
        "ignored-header-id",
        "should-not-rule",
        "ideal-fails",
        "ignored-key",
    }
    assert selection.ignored_for("blueprints/other.yml") == {"ignored-header-id"}


@pytest.mark.parametrize(
    "line, expected",
    [
        ("blueprints/*.yml", "expected '<glob>: code code'"),
        (": ignored-key", "expected '<glob>: code code'"),
        ("blueprints/*.yml:", "names no lint code after ':'"),
        ("blueprints/*.yml: ignored-keys", "unknown lint code 'ignored-keys' (did you mean 'ignored-key'?)"),
    ],
)
def test_a_bad_per_file_line_is_named_with_what_is_wrong(line, expected):
    with pytest.raises(ValueError) as caught:
        LintSelection.parse(per_file=[line])
    assert str(caught.value).startswith(f"ini weval_lint_per_file_ignores: {line.strip()!r}: ")
    assert expected in str(caught.value)


def test_a_directive_anywhere_in_the_file_ignores_its_codes():
    text = textwrap.dedent("""\
        # weval-lint: ignore=empty-collection,ignored-header-id
        id: legacy
        models: [FRONTIER]
        ---
        - id: p
          prompt: hi
        #   weval-lint :  ignore = should-not-rule  unused-point-def
        """)
    codes, problems = file_directives(text, "blueprints/a.yml")
    assert codes == {"empty-collection", "ignored-header-id", "should-not-rule", "unused-point-def"}
    assert problems == []


def test_only_whole_line_comments_are_directives():
    text = textwrap.dedent("""\
        title: "# weval-lint: ignore=empty-collection"
        models: [a]  # weval-lint: ignore=ignored-header-id
        ---
        - id: p
          prompt: |
            Explain this comment: # weval-lint: ignore=should-not-rule
        """)
    assert file_directives(text, "a.yml") == (frozenset(), [])


def test_a_directive_that_cannot_be_read_is_a_located_finding():
    text = textwrap.dedent("""\
        title: T
        # weval-lint: ignore=empty-colection, ignored-header-id
        models: [a]
          # weval-lint: disable
        # weval-lint: ignore=
        """)
    codes, problems = file_directives(text, "blueprints/a.yml")
    assert codes == {"ignored-header-id"}  # the known codes of a directive still apply
    assert [(p.code, p.location.line, p.location.column) for p in problems] == [
        (DIRECTIVE_CODE, 2, 1),
        (DIRECTIVE_CODE, 4, 3),
        (DIRECTIVE_CODE, 5, 1),
    ]
    assert "unknown lint code 'empty-colection' (did you mean 'empty-collection'?)" in problems[0].message
    assert "write '# weval-lint: ignore=code,code'" in problems[1].message
    assert all(p.location.path == "blueprints/a.yml" for p in problems)
