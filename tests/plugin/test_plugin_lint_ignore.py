"""Selecting lint codes in real pytest runs: ini `weval_lint_ignore`, ini
`weval_lint_per_file_ignores` and the `# weval-lint: ignore=...` comment (model `ideal`: no
network; the fake server is there to show that nothing is sent)."""

from __future__ import annotations

import pytest
from plugin_helpers import Project, outcomes_by_id, section

# Two findings a configs repository cannot act on: an empty `FRONTIER` collection and a header `id`.
LEGACY = """\
id: legacy-id
title: Legacy
models: [ideal, FRONTIER]
---
- id: capital
  prompt: What is the capital of France?
  ideal: Paris is the capital of France.
  should:
    - $icontains: paris
"""

# The format guide's pitfall: nested lists of one point each.
PITFALL = """\
models: [ideal]
---
- id: capitals
  prompt: Name two capitals.
  ideal: Lagos is in Nigeria and Kinshasa is in the DRC.
  should:
    - - $imatches: 'Lagos.{0,50}Nigeria'
    - - $imatches: 'Kinshasa.{0,50}(?:Congo|DRC)'
"""

PITFALL_JSON = """\
{"models": ["ideal"],
 "prompts": [{"id": "capitals", "prompt": "Name two capitals.",
              "ideal": "Lagos is in Nigeria and Kinshasa is in the DRC.",
              "should": [[{"$imatches": "Lagos.{0,50}Nigeria"}], [{"$imatches": "Kinshasa.{0,50}(?:Congo|DRC)"}]]}]}
"""

STRICT = ("--weval-lint-strict", "-m", "weval_lint", "-rA")


def _legacy(project: Project) -> None:
    project.write("models/FRONTIER.json", "[]\n")
    project.write("blueprints/legacy.yml", LEGACY)


def warnings_text(result: pytest.RunResult) -> str:
    return "\n".join(section(result.outlines, "warnings summary"))


def test_strict_lint_fails_on_codes_a_repository_cannot_act_on(project: Project):
    _legacy(project)
    result = project.run(*STRICT)
    result.assert_outcomes(failed=1, deselected=1)
    out = result.stdout.str()
    assert "2 lint findings in legacy.yml" in out
    assert "[empty-collection]" in out and "[ignored-header-id]" in out


def test_ignored_codes_leave_the_lint_item_and_the_warnings_and_the_items_still_run(project: Project):
    _legacy(project)
    project.ini("weval_lint_ignore = empty-collection ignored-header-id")
    result = project.run(*STRICT)
    result.assert_outcomes(passed=1, deselected=1)
    assert outcomes_by_id(result) == {"blueprints/legacy.yml::lint": "PASSED"}
    assert "FRONTIER" not in result.stdout.str()

    # --weval-lint shows no warning for them either, and a run without lint says nothing of
    # the empty collection (ruling 5's warning is what the ini turned off, by name)
    for args in (("--weval-lint",), ()):
        result = project.run(*args)
        result.assert_outcomes(passed=1)
        assert "FRONTIER" not in result.stdout.str() and "legacy-id" not in result.stdout.str()
    assert project.requests() == []


def test_the_ini_value_may_span_lines_and_use_commas(project: Project):
    _legacy(project)
    project.ini("weval_lint_ignore =", "    empty-collection,", "    ignored-header-id")
    project.run(*STRICT).assert_outcomes(passed=1, deselected=1)


def test_ignoring_one_code_keeps_the_others(project: Project):
    _legacy(project)
    project.ini("weval_lint_ignore = empty-collection")
    result = project.run(*STRICT)
    result.assert_outcomes(failed=1, deselected=1)
    out = result.stdout.str()
    assert "1 lint finding in legacy.yml" in out
    assert "[ignored-header-id]" in out and "[empty-collection]" not in out


@pytest.mark.parametrize(
    "ini, expected",
    [
        ("weval_lint_ignore = empty-collection ignored-header-ids", "ini weval_lint_ignore: unknown lint code "),
        ("weval_lint_per_file_ignores = blueprints/*: empty-colection", "ini weval_lint_per_file_ignores: "),
        ("weval_lint_per_file_ignores = blueprints/legacy.yml", "expected '<glob>: code code'"),
    ],
)
def test_a_bad_selection_is_a_usage_error_listing_the_known_codes(project: Project, ini: str, expected: str):
    _legacy(project)
    project.ini(ini)
    result = project.run(*STRICT)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert expected in err, err
    if "unknown" in expected or "colection" in ini:
        assert "(did you mean" in err
        assert "known codes: " in err and "single-element-paths" in err and "empty-collection" in err
    assert project.requests() == []


def test_per_file_ignores_apply_to_the_files_their_glob_matches(project: Project):
    project.write("blueprints/legacy/old.yml", PITFALL)
    project.write("blueprints/new.yml", PITFALL)
    project.write("blueprints/legacy/old.json", PITFALL_JSON)
    project.ini("weval_lint_per_file_ignores =", "    blueprints/legacy/*: single-element-paths")
    result = project.run(*STRICT)
    assert outcomes_by_id(result) == {
        "blueprints/legacy/old.json::lint": "PASSED",  # JSON has no comments: the ini reaches it
        "blueprints/legacy/old.yml::lint": "PASSED",
        "blueprints/new.yml::lint": "FAILED",
    }
    # and the warnings of --weval-lint
    result = project.run("--weval-lint")
    result.assert_outcomes(passed=3, warnings=1)
    assert "blueprints/new.yml:7: WevalWarning: [single-element-paths]" in warnings_text(result)


def test_a_comment_in_the_blueprint_ignores_codes_in_that_file(project: Project):
    project.write("models/FRONTIER.json", "[]\n")
    project.write("blueprints/legacy.yml", "# weval-lint: ignore=empty-collection,ignored-header-id\n" + LEGACY)
    project.write("blueprints/other.yml", LEGACY.replace("legacy-id", "other-id"))
    project.write("blueprints/pitfall.yml", PITFALL + "  # weval-lint: ignore=single-element-paths\n")
    result = project.run(*STRICT)
    assert outcomes_by_id(result) == {
        "blueprints/legacy.yml::lint": "PASSED",
        "blueprints/other.yml::lint": "FAILED",  # the comment is its own file's business
        "blueprints/pitfall.yml::lint": "PASSED",
    }
    assert "other-id" in result.stdout.str() and "legacy-id" not in result.stdout.str()


def test_a_comment_that_cannot_be_read_is_a_finding_at_its_line(project: Project):
    project.write("blueprints/pitfall.yml", "# weval-lint: ignore=single-element-path\n" + PITFALL)
    result = project.run(*STRICT)
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(
        [
            "*blueprints/pitfall.yml:1:1: [[]invalid-lint-directive[]] '# weval-lint:': unknown lint code "
            "'single-element-path' (did you mean 'single-element-paths'?)*",
            "*blueprints/pitfall.yml:8:9 *[[]single-element-paths[]]*",
        ]
    )
    # said under --weval-lint too; a run without lint does not read it
    linted = project.run("--weval-lint")
    assert "blueprints/pitfall.yml:1: WevalWarning: [invalid-lint-directive]" in warnings_text(linted)
    project.run().assert_outcomes(passed=1)


def test_ignoring_an_authoring_mistake_hides_its_warning_but_its_item_still_errors(project: Project):
    # docs/rulings.md, ruling 9: an unknown function and a regex JavaScript rejects make their
    # items error. Ignoring the codes is a choice about what is shown, never about outcomes.
    project.write(
        "blueprints/mistakes.yml",
        """\
        models: [ideal]
        ---
        - id: typo
          prompt: Say hello.
          ideal: hello
          should:
            - $contians: hello
        - id: regex
          prompt: Shout.
          ideal: HELLO
          should:
            - $matches: "(?i)hello"
        - id: fine
          prompt: Say hi.
          ideal: hi
          should:
            - $contains: hi
        """,
    )
    shown = project.run("-rA")
    shown.assert_outcomes(passed=1, errors=2, warnings=1)  # one warning names the file's two mistakes
    shown.stdout.fnmatch_lines(
        [
            "*mistakes.yml:7: WevalWarning: 2 points or prompts in this file have mistakes, so the items holding "
            "them error without being sent (pytest --weval-lint blueprints/mistakes.yml lists each); "
            "the first: Unknown point function: 'contians'*",
        ]
    )

    # (the regex also errors on the prompt's own ideal: a lint finding of its own)
    project.ini("weval_lint_ignore = unknown-function invalid-regex ideal-errors")
    result = project.run("-rA")
    result.assert_outcomes(passed=1, errors=2)  # the same outcomes, without the warnings
    assert outcomes_by_id(result) == {
        "blueprints/mistakes.yml::typo[ideal]": "ERROR",
        "blueprints/mistakes.yml::regex[ideal]": "ERROR",
        "blueprints/mistakes.yml::fine[ideal]": "PASSED",
    }
    assert "Unknown point function: 'contians'" in result.stdout.str()  # the item's error still says what is wrong
    # the lint item follows the selection; the broken items beside it still error
    strict = project.run("--weval-lint-strict", "-rA")
    assert outcomes_by_id(strict) == {
        "blueprints/mistakes.yml::lint": "PASSED",
        "blueprints/mistakes.yml::typo[ideal]": "ERROR",
        "blueprints/mistakes.yml::regex[ideal]": "ERROR",
        "blueprints/mistakes.yml::fine[ideal]": "PASSED",
    }
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    assert project.requests() == []
