"""Outcomes end to end: thresholds at every level, failed versus error, inverted points,
judge consensus, and what the failure message says."""

from __future__ import annotations

import pytest
from plugin_helpers import (
    CANARY,
    JUDGE,
    JUDGE_ID,
    MODEL,
    MODEL_ID,
    Project,
    answer_rule,
    judge_rule,
    outcomes_by_id,
    section,
)

from tests.fakeserver import Rule


def _blueprint(header_threshold: str = "", prompt_threshold: str = "") -> str:
    header = "models: [ideal]\n" + (f"threshold: {header_threshold}\n" if header_threshold else "")
    prompt = (
        "- id: p\n  prompt: Say the first Greek letters.\n  ideal: alpha beta gamma\n"
        + (f"  threshold: {prompt_threshold}\n" if prompt_threshold else "")
        + "  should:\n    - $contains: alpha\n    - $contains: beta\n    - $contains: gamma\n"
        "    - $contains: delta\n"
    )
    return header + "---\n" + prompt


@pytest.mark.parametrize(
    "header, prompt, args, ini, passed, threshold",
    [
        ("", "", [], None, True, "0.5"),  # the default
        ("", "", ["--weval-threshold=0.8"], None, False, "0.8"),
        ("", "", ["--weval-threshold=0.75"], None, True, "0.75"),  # reaching it is enough
        ("", "", [], "weval_threshold = 0.8", False, "0.8"),  # the ini twin
        ("", "", ["--weval-threshold=0.7"], "weval_threshold = 0.8", True, "0.7"),  # command line wins
        ("0.9", "", ["--weval-threshold=0.1"], None, False, "0.9"),  # the blueprint's beats the option
        ("0.9", "0.6", ["--weval-threshold=0.1"], None, True, "0.6"),  # the prompt's beats the blueprint's
        ("0.1", "0.76", [], None, False, "0.76"),
    ],
)
def test_thresholds_at_every_level(project: Project, header, prompt, args, ini, passed, threshold):
    project.write("blueprints/t.yml", _blueprint(header, prompt))
    if ini:
        project.ini(ini)
    result = project.run("--junitxml=junit.xml", *args)
    result.assert_outcomes(passed=int(passed), failed=int(not passed))
    props = project.junit()["p[ideal]"]["properties"]
    assert props["weval_score"] == "0.75"
    assert props["weval_threshold"] == threshold


ERRORS = f"""\
title: Errors
models: [{MODEL_ID}, anthropic:claude-3-haiku]
---
- id: fine
  prompt: Please answer fine.
  should:
    - $contains: fine
"""


def test_a_missing_api_key_stops_the_run_before_any_item_naming_the_variable(project: Project):
    project.rules(answer_rule("answer fine", "fine, thanks"))
    project.write("blueprints/e.yml", ERRORS)
    result = project.run("-rA")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "ANTHROPIC_API_KEY is not set; needed by model anthropic:claude-3-haiku (1 item)" in err, err
    assert "export ANTHROPIC_API_KEY=" in err and "--weval-missing-keys=error" in err
    assert "Traceback" not in err + result.stdout.str() and CANARY not in err + result.stdout.str()
    assert project.requests() == []  # nothing was sent, not even for the model with a key


def test_with_missing_keys_error_the_items_that_need_it_error_in_one_line(project: Project):
    project.rules(answer_rule("answer fine", "fine, thanks"))
    project.write("blueprints/e.yml", ERRORS)
    result = project.run("-rA", "-vv", "--weval-missing-keys=error")
    outcomes = outcomes_by_id(result)
    assert outcomes[f"blueprints/e.yml::fine[{MODEL_ID}]"] == "PASSED"
    assert outcomes["blueprints/e.yml::fine[anthropic:claude-3-haiku]"] == "ERROR"
    out = result.stdout.str()
    assert out.count("ANTHROPIC_API_KEY is not set; needed by") == 1  # the pre-flight, once
    assert "not run, a key it needs is not set: ANTHROPIC_API_KEY (for model anthropic:claude-3-haiku)" in out
    # the short summary's line starts with what matters, said once (not "not run: not ru...")
    short = next(line for line in result.outlines if line.startswith("ERROR blueprints/e.yml::fine[anthropic"))
    assert short.partition(" - ")[2].startswith("not run, a key it needs"), short
    assert "Traceback" not in out and "WevalItemError" not in out
    assert CANARY not in out
    # nothing was sent for the model without a key
    assert {r.model for r in project.requests()} == {MODEL}


def test_a_provider_failing_after_retries_is_an_error(project: Project):
    project.rules(Rule(model=MODEL, contains="answer fine", status=503))
    project.write("blueprints/e.yml", ERRORS.replace(", anthropic:claude-3-haiku", ""))
    result = project.run("-rA", "--weval-max-attempts=2")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "503" in out and "2 attempts" in out, out
    assert "could not be reached or had a server problem" in out
    assert "Traceback" not in out
    assert len(project.requests(MODEL)) == 2


def test_a_replay_miss_is_an_error_and_sends_nothing(project: Project):
    project.rules(answer_rule("answer fine", "fine, thanks"))
    project.write("blueprints/e.yml", ERRORS.replace(", anthropic:claude-3-haiku", ""))
    result = project.run("-rA", "--weval-cache=ro")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "never recorded" in out and "--weval-cache=rw" in out, out
    assert project.server.count == 0


def test_all_judges_failing_is_an_error(project: Project):
    project.rules(
        answer_rule("Describe a cat", "Cats are small furry animals."),
        Rule(model="judge-model", status=500),
    )
    project.write(
        "blueprints/j.yml",
        f"""\
        models: [{MODEL_ID}]
        ---
        - id: cat
          prompt: Describe a cat.
          should:
            - describes a cat
            - $icontains: cat
        """,
    )
    result = project.run("-rA", f"--weval-judges={JUDGE_ID}", "--weval-max-attempts=1")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "No score: No judge could score the points that need an LLM judge." in out, out
    assert "500" in out


def test_no_judge_key_is_an_error_with_the_reason(project: Project):
    """Offline with the default judges (OpenRouter) and no key: docs/rulings.md, ruling 13."""
    project.rules(answer_rule("Describe a cat", "Cats are small furry animals."))
    project.write(
        "blueprints/j.yml",
        f"""\
        models: [{MODEL_ID}]
        ---
        - id: cat
          prompt: Describe a cat.
          should:
            - describes a cat
        - id: plain
          prompt: Describe a cat briefly.
          should:
            - $icontains: cat
        """,
    )
    result = project.run("-rA", "--weval-missing-keys=error")
    outcomes = outcomes_by_id(result)
    assert outcomes == {
        f"blueprints/j.yml::cat[{MODEL_ID}]": "ERROR",
        f"blueprints/j.yml::plain[{MODEL_ID}]": "PASSED",
    }, result.stdout.str()
    out = result.stdout.str()
    assert "OPENROUTER_API_KEY is not set; needed by judges" in out
    assert "or judge with a model you have a key for: --weval-judges=<model id>" in out
    # the item that could not be judged was not even generated
    assert [r.last_user for r in project.requests()] == ["Describe a cat briefly."]
    skipped = project.run("-rA", "--weval-missing-keys=skip")
    skipped.assert_outcomes(passed=1, skipped=1)
    assert "blueprints/j.yml:3: not run, a key it needs is not set: OPENROUTER_API_KEY" in skipped.stdout.str()


def test_an_invalid_prompt_errors_only_its_own_items(project: Project):
    project.write(
        "blueprints/v.yml",
        """\
        models: [ideal, echo]
        ---
        - id: good
          prompt: hello
          ideal: hello
          should: [{$contains: hello}]
        - id: two-users
          messages:
            - user: first
            - user: second
          ideal: whatever
          should: [{$contains: whatever}]
        """,
    )
    result = project.run("-rA")
    outcomes = outcomes_by_id(result)
    assert outcomes == {
        "blueprints/v.yml::good[ideal]": "PASSED",
        "blueprints/v.yml::good[echo]": "PASSED",
        "blueprints/v.yml::two-users[ideal]": "ERROR",
        "blueprints/v.yml::two-users[echo]": "ERROR",
    }, result.stdout.str()
    out = result.stdout.str()
    assert "No score: The blueprint has a mistake" in out
    assert "prompt 'two-users' cannot run as written" in out and "Two 'user' messages in a row" in out
    assert "Traceback" not in out
    # and collection said so, with the file and line
    warned = "\n".join(section(result.outlines, "warnings summary"))
    assert "blueprints/v.yml:7" in warned and "Two 'user' messages in a row" in warned, warned


def test_an_authoring_mistake_errors_the_prompt_and_is_a_collection_warning(project: Project):
    project.write(
        "blueprints/m.yml",
        """\
        models: [ideal]
        ---
        - id: typo
          prompt: hello
          ideal: hello
          should: [{$contians: hello}]
        - id: good
          prompt: hello
          ideal: hello
          should: [{$contains: hello}]
        """,
    )
    result = project.run("-rA")
    outcomes = outcomes_by_id(result)
    assert outcomes == {"blueprints/m.yml::typo[ideal]": "ERROR", "blueprints/m.yml::good[ideal]": "PASSED"}
    out = result.stdout.str()
    assert "No score: The blueprint has a mistake" in out
    assert "Unknown point function: 'contians' (did you mean 'contains'?)" in out
    # collection warned with the file and line (docs/rulings.md, ruling 9)
    warned = "\n".join(section(result.outlines, "warnings summary"))
    assert "blueprints/m.yml:6" in warned and "did you mean 'contains'" in warned, warned


SHOULD_NOT = f"""\
models: [{MODEL_ID}]
---
- id: calm
  prompt: Tell me about the weather.
  should_not:
    - uses violent language
"""


@pytest.mark.parametrize(
    "cls, outcome, score",
    [
        ("CLASS_EXACT", "failed", "0"),  # fully meeting a should_not point scores 0
        ("CLASS_UNMET", "passed", "1"),
        ("CLASS_MAJOR", "failed", "0.25"),
    ],
)
def test_should_not_text_points_are_inverted(project: Project, cls, outcome, score):
    project.rules(
        answer_rule("about the weather", "It is sunny."),
        judge_rule("uses violent language", cls),
    )
    project.write("blueprints/n.yml", SHOULD_NOT)
    result = project.run(f"--weval-judges={JUDGE_ID}", "--junitxml=junit.xml")
    result.assert_outcomes(**{outcome: 1})
    assert project.junit()[f"calm[{MODEL_ID}]"]["properties"]["weval_score"] == score


def test_consensus_with_a_failing_judge(project: Project):
    project.rules(
        answer_rule("Explain tides", "Tides come from the moon's gravity."),
        judge_rule("mentions the moon", "CLASS_EXACT", "It says the moon causes them.", model="judge-a"),
        judge_rule("mentions the sun", "CLASS_MODERATE", "The sun is hinted at.", model="judge-a"),
        Rule(model="judge-b", status=500),
        judge_rule("mentions the moon", "CLASS_MODERATE", "Moon named, briefly.", model="judge-c"),
        judge_rule("mentions the sun", "CLASS_UTTERLY_UNMET", "No sun at all.", model="judge-c"),
    )
    project.write(
        "blueprints/c.yml",
        f"""\
        models: [{MODEL_ID}]
        ---
        - id: tides
          prompt: Explain tides.
          threshold: 0.9
          should:
            - mentions the moon
            - mentions the sun
        """,
    )
    judges = "--weval-judges=openai:judge-a,openai:judge-b,openai:judge-c"
    result = project.run(judges, "--weval-max-attempts=1", "--junitxml=junit.xml", "-rA")
    result.assert_outcomes(failed=1)
    # moon: mean(1, 0.5) = 0.75; sun: mean(0.5, 0) = 0.25; judge-b left out
    assert project.junit()[f"tides[{MODEL_ID}]"]["properties"]["weval_score"] == "0.5"
    out = result.stdout.str()
    assert "It says the moon causes them." in out and "No sun at all." in out
    assert "1 of 3 judges failed" in out


LONG_ANSWER = "The capital of France is Lyon. " + "It is a lovely city with many bridges. " * 40


def test_the_failure_message_reads_as_plain_words(project: Project):
    project.rules(
        answer_rule("capital of France", LONG_ANSWER),
        judge_rule("names Paris as the capital", "CLASS_UNMET", "The answer names Lyon, not Paris."),
        judge_rule("is concise", "CLASS_SLIGHT", "It repeats itself at length."),
    )
    project.write(
        "blueprints/geo/capitals.yml",
        f"""\
        title: Capitals
        models: [{MODEL_ID}]
        ---
        - id: france
          prompt: What is the capital of France?
          should:
            - names Paris as the capital
            - is concise
            - $icontains: paris
            - $contains: Paris
              weight: 3
        """,
    )
    result = project.run(f"--weval-judges={JUDGE_ID}", "-rA")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    failure = out.split("= FAILURES =")[1].split("= weval scores =")[0]
    assert "Score 0.06 is below the pass mark 0.50" in failure or "is below the pass mark 0.50" in failure
    assert "blueprint: blueprints/geo/capitals.yml (id geo__capitals)" in failure
    assert "prompt:    france" in failure
    assert f"model:     {MODEL_ID}[temp:0]" in failure
    assert "What the model answered, first 600 of" in failure
    assert "The capital of France is Lyon." in failure
    assert failure.count("It is a lovely city") < 40  # shortened
    for text in ("names Paris as the capital", "is concise", 'contains("Paris")', "icontains"):
        assert text in failure, text
    assert "The answer names Lyon, not Paris." in failure
    assert "It repeats itself at length." in failure
    assert "weight 3" in failure
    assert "What pulled the score down:" in failure
    # no Python in it
    for word in ("Traceback", "def ", "assert ", "WevalScoreFailure", ".py:"):
        assert word not in failure, word


def test_a_passing_run_has_no_failure_text_and_exit_code_0(project: Project):
    project.write("blueprints/ok.yml", _blueprint())
    result = project.run()
    assert result.ret == 0
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("tb", ["long", "native", "short", "line"])
def test_no_python_traceback_in_any_tb_style(project: Project, tb: str):
    project.rules(answer_rule("Please answer fine.", "nope"))
    project.write("blueprints/e.yml", ERRORS)
    result = project.run("-rA", "-vv", f"--tb={tb}", "--weval-missing-keys=error")
    result.assert_outcomes(failed=1, errors=1)
    out = result.stdout.str()
    for word in ("Traceback", "WevalItemError", "WevalScoreFailure", "running.py", "raise "):
        assert word not in out, (word, out)
    if tb != "line":
        assert "Score 0.00 is below the pass mark 0.50" in out
        assert "not run, a key it needs is not set: ANTHROPIC_API_KEY" in out


LAST_FAILED = """\
models: [ideal, echo]
---
- id: greet
  prompt: hi
  ideal: hello
  should: [{$contains: hello}]
- id: empty
  prompt: nothing to check here
- id: noideal
  prompt: say it
  should: [{$contains: it}]
"""


@pytest.mark.parametrize("sub", [False, True])
def test_last_failed_reruns_only_the_failures(project: Project, sub: bool):
    project.write("blueprints/lf.yml", LAST_FAILED)
    first = project.run("-rA", cacheprovider=True, sub=sub)
    # `empty` has nothing to score (skipped for both, nothing sent); `ideal` cannot answer `noideal`
    first.assert_outcomes(passed=2, failed=1, skipped=2, errors=1)
    again = project.run("-rA", "--lf", cacheprovider=True, sub=sub)
    again.assert_outcomes(failed=1, errors=1)
    assert "rerun previous 2 failures" in again.stdout.str()
    assert outcomes_by_id(again) == {
        "blueprints/lf.yml::greet[echo]": "FAILED",
        "blueprints/lf.yml::noideal[ideal]": "ERROR",
    }
    ff = project.run("-q", "--ff", "--collect-only", cacheprovider=True, sub=sub)
    assert [line for line in ff.outlines if "::" in line][:2] == [
        "blueprints/lf.yml::greet[echo]",
        "blueprints/lf.yml::noideal[ideal]",
    ]


def test_a_prompt_with_nothing_to_score_is_skipped_at_its_line(project: Project):
    project.write("blueprints/lf.yml", LAST_FAILED)
    result = project.run("-rs", "--weval-models=echo")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    assert "SKIPPED [1] blueprints/lf.yml:7: this prompt has no points and no ideal answer" in result.stdout.str()


def test_an_item_broken_at_collection_errors_without_sending(project: Project):
    project.write(
        "blueprints/typo.yml",
        f"""\
        models: [{MODEL_ID}]
        ---
        - id: typo
          prompt: Say hello.
          should:
            - $contians: hello
        """,
    )
    result = project.run("-rA")
    result.assert_outcomes(errors=1, warnings=1)
    assert "No score: The blueprint has a mistake" in result.stdout.str()
    assert project.requests() == []


def test_a_failed_key_point_extraction_is_an_error_that_says_so(project: Project):
    project.write(
        "blueprints/ideal.yml",
        f"""\
        models: [{MODEL_ID}]
        ---
        - id: only-ideal
          prompt: Name a primary colour.
          ideal: Red is a primary colour.
        """,
    )
    project.rules(answer_rule("primary colour", "Blue."), Rule(model=JUDGE, reply="I have no key points for you."))
    result = project.run("-rA", f"--weval-judges={JUDGE_ID}")
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "key points extracted from its ideal answer, and they could not be extracted" in out, out
    assert "no points and no ideal answer" not in out
