"""`--weval-lint` and `--weval-lint-strict` in real pytest runs (no network: model `ideal`)."""

from __future__ import annotations

import textwrap

import pytest

INI = """\
[pytest]
asyncio_default_fixture_loop_scope = function
weval_cache = off
filterwarnings =
    ignore::pytest.PytestAssertRewriteWarning
"""

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

CLEAN = """\
models: [ideal]
---
- id: capital
  prompt: What is the capital of France?
  ideal: Paris is the capital of France.
  should:
    - $icontains: paris
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    pytester.makefile(".ini", pytest=INI)
    (pytester.path / "blueprints").mkdir()
    (pytester.path / "blueprints" / "pitfall.yml").write_text(PITFALL)
    (pytester.path / "blueprints" / "clean.yml").write_text(CLEAN)
    return pytester


def test_without_lint_the_pitfall_is_silent(project):
    result = project.runpytest("blueprints", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert "single-element-paths" not in result.stdout.str()


def test_lint_warns_with_file_and_line_and_still_runs(project):
    result = project.runpytest("blueprints", "--weval-lint", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*blueprints/pitfall.yml:7: WevalWarning: [[]single-element-paths[]] 'should' has 2 nested lists*",
        ]
    )


def test_strict_fails_one_item_per_file_listing_its_findings(project):
    result = project.runpytest("blueprints", "--weval-lint-strict", "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=3, failed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*1 lint finding in pitfall.yml (--weval-lint-strict fails on any):",
            "*blueprints/pitfall.yml:7:9 (prompts[[]0[]].should[[]0[]][[]0[]]): [[]single-element-paths[]]*",
            "PASSED blueprints/clean.yml::lint",
            "FAILED blueprints/pitfall.yml::lint*",
        ]
    )


def test_strict_lint_only_run_with_the_marker(project):
    result = project.runpytest("blueprints", "--weval-lint-strict", "-m", "weval_lint", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1, deselected=2)


def test_strict_from_the_ini(project):
    (project.path / "pytest.ini").write_text(INI + "weval_lint_strict = true\n")
    result = project.runpytest("blueprints", "-m", "weval_lint", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1, deselected=2)


def test_strict_passes_a_clean_repository(project):
    (project.path / "blueprints" / "pitfall.yml").unlink()
    result = project.runpytest("blueprints", "--weval-lint-strict", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert result.ret == 0


def test_strict_with_an_unreadable_blueprint_is_a_collection_error(project):
    (project.path / "blueprints" / "broken.yml").write_text(
        textwrap.dedent("""\
        title: Bad: colon
        models: [ideal]
        """)
    )
    result = project.runpytest("blueprints", "--weval-lint-strict", "-m", "weval_lint", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*ERROR collecting*broken.yml*", "*broken.yml:1:*"])


def test_an_invalid_regex_warns_on_every_run(project):
    # docs/rulings.md, ruling 9: like an unknown function, a pattern JavaScript rejects is an authoring
    # mistake; collection says so with file and line, lint or not, and the item errors.
    (project.path / "blueprints" / "regex.yml").write_text(
        textwrap.dedent("""\
        models: [ideal]
        ---
        - id: shout
          prompt: Shout.
          ideal: HELLO
          should:
            - $matches: "(?i)hello"
        """)
    )
    result = project.runpytest("blueprints/regex.yml", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*blueprints/regex.yml:7: WevalWarning: $matches pattern '(?i)hello' is not a "
            "valid JavaScript regex*use $imatches*"
        ]
    )
