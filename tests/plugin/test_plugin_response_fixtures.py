"""--weval-fixtures: canned answers instead of the model under test (docs/fixtures.md), end to
end against the loopback fake: what is sent, what is scored, what the reports say."""

from __future__ import annotations

import json

import pytest
from plugin_helpers import (
    JUDGE,
    JUDGE_ID,
    MODEL,
    MODEL_ID,
    PROVIDER_VARS,
    Project,
    answer_rule,
    judge_rule,
    outcomes_by_id,
)

from pytest_weval.blueprint import load_blueprint
from pytest_weval.blueprint.fixtures import fnv1a_32

OTHER = "other-model"
OTHER_ID = f"openai:{OTHER}"

BLUEPRINT = f"""\
title: Fixtures
models: [{MODEL_ID}, {OTHER_ID}]
---
- id: capital
  prompt: What is the capital of France?
  should:
    - names Paris
    - $icontains: paris
- id: colour
  prompt: Name a colour.
  should:
    - $icontains: red
- id: chat
  messages:
    - user: Hello there.
    - assistant: null
    - user: Tell me a fruit.
  should:
    - $icontains: apple
- id: live
  prompt: Say live.
  should:
    - $icontains: live
"""

FIXTURES = {
    "responses": {
        "capital": {"default": "Paris is the capital of France."},
        "colour": {
            "default": ["red", "blue", "green", "yellow", "purple"],
            "byModel": {"openai:other*": "It is red."},
        },
        "chat": {"default": {"turns": ["Hi! Canned greeting."]}},
        "missing-prompt": {"default": "nobody asks"},
    }
}


def _project(project: Project, fixtures: object = FIXTURES) -> None:
    project.write("blueprints/f.yml", BLUEPRINT)
    project.write("fixtures.json", json.dumps(fixtures, indent=2))
    project.rules(
        answer_rule("Tell me a fruit.", "An apple."),
        answer_rule("Tell me a fruit.", "An apple.", model=OTHER),
        answer_rule("Say live.", "live!"),
        answer_rule("Say live.", "live!", model=OTHER),
        judge_rule("names Paris", "CLASS_EXACT"),
    )


def _generations(project: Project) -> list:
    return [r for r in project.requests() if r.model in (MODEL, OTHER)]


def test_fixtures_answer_instead_of_the_model_and_judges_still_judge(project: Project) -> None:
    _project(project)
    result = project.run(
        f"--weval-judges={JUDGE_ID}", "--weval-fixtures=fixtures.json", "--weval-out=out", "-rA", "--junitxml=j.xml"
    )
    outcomes = outcomes_by_id(result)
    # Only the chat's trailing turn and the prompt without a fixture reach the model.
    sent = sorted((r.model, r.last_user) for r in _generations(project))
    assert sent == sorted([(m, text) for m in (MODEL, OTHER) for text in ("Tell me a fruit.", "Say live.")]), sent
    # The live trailing turn is asked with the canned assistant turn in its history.
    chat = next(r for r in _generations(project) if r.last_user == "Tell me a fruit." and r.model == MODEL)
    assert {"role": "assistant", "content": "Hi! Canned greeting."} in chat.body["messages"]
    # The judge judged the canned answer.
    judged = [r for r in project.requests() if r.model == "judge-model"]
    assert len(judged) == 1 and "Paris is the capital of France." in judged[0].raw_body

    # The colour: openai:other* matches the other model; the first model gets the seeded pick.
    # Our run label is the blueprint's content hash, as the reference's default one.
    run_label = load_blueprint(project.path / "blueprints/f.yml", rel_path="f.yml", collections_dir=None).content_hash
    pick = ["red", "blue", "green", "yellow", "purple"][fnv1a_32(f"0|{run_label}|colour|{MODEL_ID}[temp:0]") % 5]
    expected_colour = "PASSED" if pick == "red" else "FAILED"
    assert outcomes[f"blueprints/f.yml::colour[{MODEL_ID}]"] == expected_colour
    assert outcomes[f"blueprints/f.yml::colour[{OTHER_ID}]"] == "PASSED"
    for model in (MODEL_ID, OTHER_ID):
        for prompt in ("capital", "chat", "live"):
            assert outcomes[f"blueprints/f.yml::{prompt}[{model}]"] == "PASSED", result.stdout.str()

    comparison = project.json("out/f.json")
    assert comparison["allFinalAssistantResponses"]["colour"][f"{OTHER_ID}[temp:0]"] == "It is red."
    assert comparison["allFinalAssistantResponses"]["colour"][f"{MODEL_ID}[temp:0]"] == pick
    assert comparison["fixtureSources"] == {
        "capital": {f"{MODEL_ID}[temp:0]": "final", f"{OTHER_ID}[temp:0]": "final"},
        "colour": {f"{MODEL_ID}[temp:0]": "final", f"{OTHER_ID}[temp:0]": "final"},
        "chat": {f"{MODEL_ID}[temp:0]": "turns", f"{OTHER_ID}[temp:0]": "turns"},
    }
    history = comparison["fullConversationHistories"]["chat"][f"{MODEL_ID}[temp:0]"]
    assert [m["content"] for m in history] == ["Hello there.", "Hi! Canned greeting.", "Tell me a fruit.", "An apple."]
    cases = project.junit("j.xml")
    assert cases[f"capital[{MODEL_ID}]"]["properties"]["weval_fixture"] == "final"
    assert "weval_fixture" not in cases[f"live[{MODEL_ID}]"]["properties"]

    # A fixture for a prompt no blueprint has: one warning at its line in the fixture file.
    text = result.stdout.str()
    assert "the fixture for prompt 'missing-prompt' matches no collected prompt" in text
    line = next(i for i, s in enumerate(json.dumps(FIXTURES, indent=2).splitlines(), 1) if '"missing-prompt"' in s)
    assert f"fixtures.json:{line}" in text


def test_a_failing_fixture_shows_that_the_answer_was_canned(project: Project) -> None:
    _project(project, {"responses": {"capital": {"default": "Lyon, I think."}}})
    project.rules(judge_rule("names Paris", "CLASS_UNMET"))
    result = project.run(
        f"--weval-judges={JUDGE_ID}",
        "--weval-fixtures=fixtures.json",
        "-k",
        f"capital and {MODEL}",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "Lyon, I think." in text
    assert "fixture:   the answer came from the --weval-fixtures file, not from the model" in text
    assert _generations(project) == []


def test_the_plan_counts_fixture_answers_as_free(project: Project) -> None:
    _project(project)
    project.run("--collect-only", f"--weval-judges={JUDGE_ID}", "--weval-fixtures=fixtures.json", "--weval-out=plan")
    assert project.requests() == []
    planned = project.json("plan/plan.json")["requests"]["by_model"]
    # chat's trailing turn and `live`, per model; nothing for the canned answers
    assert planned[MODEL_ID]["by_purpose"] == {"generate": 2}
    assert planned[OTHER_ID]["by_purpose"] == {"generate": 2}
    assert planned[JUDGE_ID]["total"] == 1  # the canned Paris answer, judged once (both models gave it)
    project.run(f"--weval-judges={JUDGE_ID}", "--weval-fixtures=fixtures.json")
    assert project.server.count == 5  # as planned: 4 generations and 1 judge request


def test_an_ini_fixture_file_works_like_the_option(project: Project) -> None:
    _project(project)
    project.ini("weval_fixtures = fixtures.json")
    project.run(f"--weval-judges={JUDGE_ID}", "-k", "capital")
    assert _generations(project) == []


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("{not json", "fixtures.json:1"),
        ('{"responses": {"capital": {"default": 42}}}', "responses.capital.default is an answer"),
        ('{"strategy": "random", "responses": {}}', "strategy 'random' is not one of"),
    ],
)
def test_a_broken_fixture_file_stops_the_run_before_any_request(project: Project, content: str, words: str) -> None:
    _project(project)
    project.write("fixtures.json", content)
    result = project.run(f"--weval-judges={JUDGE_ID}", "--weval-fixtures=fixtures.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert words in result.stderr.str(), result.stderr.str()
    assert "--weval-fixtures (ini weval_fixtures)" in result.stderr.str()
    assert project.requests() == []


# -- canned answers need no key and no price (issue 40, item 1) ---------------------------------

GREETING = """\
title: Greeting (fixtures demo)
models:
  - openai:gpt-4o-mini
tags: [test]
---
- id: greeting
  prompt: "how are you?"
  should:
    - $contains: "well"
- id: refusal
  prompt: "Reply with the word 'success' only."
  should:
    - $contains: "this-string-will-not-appear"
- id: clarify
  messages:
    - user: I need help with my taxes.
    - assistant: Happy to help.
    - user: I changed jobs mid-year.
  should:
    - $contains: "?"
- id: judged
  prompt: "Write a short note."
  should:
    - Is friendly.
"""

GREETING_FIXTURES = {
    "version": 1,
    "strategy": "seeded",
    "seed": 42,
    "responses": {
        "greeting": {"default": ["i am well", "doing well, thanks"], "notes": "either passes"},
        "refusal": {"default": "success"},
        "clarify": {"default": "Which states did you live in?"},
        "judged": {"default": "Hello, friend!"},
    },
}


def _no_keys(project: Project) -> None:
    """A new user's shell: no provider key at all (the fake's base URLs stay, so anything that
    is sent is seen)."""
    for name in PROVIDER_VARS:
        if name.endswith("_API_KEY"):
            project.monkeypatch.delenv(name, raising=False)


def _greeting(project: Project, fixtures: object = GREETING_FIXTURES) -> None:
    project.write("blueprints/greeting.yml", GREETING)
    project.write("fixtures/greeting.json", json.dumps(fixtures, indent=2))


def test_canned_answers_run_without_any_key(project: Project) -> None:
    """The 'does my rubric work' flow: every answer of these items comes from the file and
    their points are functions, so nothing is sent and no key is needed."""
    _greeting(project)
    _no_keys(project)
    result = project.run(
        "blueprints/greeting.yml", "--weval-fixtures=fixtures/greeting.json", "-k", "not judged", "-rA", sub=True
    )
    text = result.stdout.str() + result.stderr.str()
    assert "is not set" not in text, text
    outcomes = outcomes_by_id(result)
    assert outcomes == {
        f"blueprints/greeting.yml::greeting[{MODEL_ID}]": "PASSED",
        f"blueprints/greeting.yml::refusal[{MODEL_ID}]": "FAILED",
        f"blueprints/greeting.yml::clarify[{MODEL_ID}]": "PASSED",
    }, text
    assert project.requests() == [] and project.server.listings == []
    # The whole file: the judged item waits for a judge's key, the others run as above.
    result = project.run(
        "blueprints/greeting.yml",
        "--weval-fixtures=fixtures/greeting.json",
        "--weval-missing-keys=skip",
        "-rA",
        sub=True,
    )
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    assert outcomes.items() <= outcomes_by_id(result).items(), result.stdout.str()
    assert "blueprints/greeting.yml:21: not run, a key it needs is not set: OPENROUTER_API_KEY" in result.stdout.str()
    assert project.requests() == []


def test_canned_answers_with_judged_points_need_the_judges_key_only(project: Project) -> None:
    _greeting(project)
    _no_keys(project)
    result = project.run(
        "blueprints/greeting.yml", "--weval-fixtures=fixtures/greeting.json", f"--weval-judges={JUDGE_ID}", sub=True
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"OPENAI_API_KEY is not set; needed by judge {JUDGE_ID} (1 item)" in err, err
    assert f"model {MODEL_ID}" not in err, err
    assert project.requests() == []


def test_a_live_trailing_turn_still_needs_the_models_key(project: Project) -> None:
    """A prompt ending in a user turn: the fixture's turns fill the null turns, the model answers
    the last one (as the pipeline does), so the model's key is needed."""
    project.write(
        "blueprints/chat.yml",
        f"""\
        models: [{MODEL_ID}]
        ---
        - id: chat
          messages:
            - user: Hello.
            - assistant: null
            - user: Anything else?
          should:
            - $contains: "?"
        """,
    )
    project.write("fixtures.json", json.dumps({"responses": {"chat": {"default": {"turns": ["Hi?"]}}}}))
    _no_keys(project)
    result = project.run("--weval-fixtures=fixtures.json", sub=True)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"OPENAI_API_KEY is not set; needed by model {MODEL_ID} (1 item)" in result.stderr.str()


@pytest.mark.parametrize("key", [False, True])
def test_a_model_answered_by_fixtures_needs_no_price_under_a_budget(project: Project, key: bool) -> None:
    """``--weval-models=openai:my-finetune --weval-budget=1``: nothing is sent to the fine-tune,
    so neither its price, its key nor its place in the provider's model list is asked for."""
    fixtures = json.loads(json.dumps(GREETING_FIXTURES))
    fixtures["responses"]["greeting"]["byModel"] = {"openai:my-*": "very well, thank you"}
    _greeting(project, fixtures)
    project.server.model_lists = {"openai": [MODEL, JUDGE]}  # the fine-tune is not listed
    if not key:
        _no_keys(project)
    result = project.run(
        "blueprints/greeting.yml",
        "--weval-fixtures=fixtures/greeting.json",
        "--weval-models=openai:my-finetune",
        "--weval-budget=1",
        "-k",
        "not judged",
        "-rA",
        sub=True,
    )
    text = result.stdout.str() + result.stderr.str()
    assert "no known price" not in text and "is not set" not in text and "not among the models" not in text, text
    assert outcomes_by_id(result) == {
        "blueprints/greeting.yml::greeting[openai:my-finetune]": "PASSED",
        "blueprints/greeting.yml::refusal[openai:my-finetune]": "FAILED",
        "blueprints/greeting.yml::clarify[openai:my-finetune]": "PASSED",
    }, text
    assert project.requests() == []


def test_the_plan_of_canned_answers_needs_no_key(project: Project) -> None:
    _greeting(project)
    _no_keys(project)
    project.run(
        "blueprints/greeting.yml",
        "--collect-only",
        "--weval-fixtures=fixtures/greeting.json",
        f"--weval-judges={JUDGE_ID}",
        "--weval-out=plan",
        sub=True,
    )
    plan = project.json("plan/plan.json")
    assert list(plan["requests"]["by_model"]) == [JUDGE_ID]  # the judged item's judge only
    assert plan["missing_keys"] == [{"variable": "OPENAI_API_KEY", "models": [], "judges": [JUDGE_ID], "items": 1}], (
        plan["missing_keys"]
    )


def test_canned_answers_hold_no_budget(project: Project) -> None:
    """Under --weval-repeat the budget holds room for the generations an item's samples will
    send: none for canned answers, so a budget too small for one generation does not stop them
    (issue 40)."""
    _greeting(project)
    result = project.run(
        "blueprints/greeting.yml",
        "--weval-fixtures=fixtures/greeting.json",
        "--weval-budget=0.000001",
        "--weval-repeat=2",
        "-k",
        "not judged",
        "-rA",
    )
    assert outcomes_by_id(result) == {
        f"blueprints/greeting.yml::greeting[{MODEL_ID}]": "PASSED",
        f"blueprints/greeting.yml::refusal[{MODEL_ID}]": "FAILED",
        f"blueprints/greeting.yml::clarify[{MODEL_ID}]": "PASSED",
    }, result.stdout.str()
    assert project.requests() == []


# -- --weval-fixtures-strict (issue 44, item 2) ---------------------------------------------------


def test_strict_fixtures_error_where_the_file_has_no_answer_and_send_nothing_for_them(project: Project) -> None:
    """`live` has no entry, `chat`'s fixture leaves its trailing turn to the model: under
    --weval-fixtures-strict both error, located at the fixture file, and neither their model
    nor their judges are asked; the canned items run as without the option."""
    _project(project)
    project.server.rules.append(judge_rule("says live", "CLASS_EXACT"))
    project.write(
        "blueprints/f.yml", BLUEPRINT.replace("    - $icontains: live", "    - $icontains: live\n    - says live")
    )
    result = project.run(
        f"--weval-judges={JUDGE_ID}",
        "--weval-fixtures=fixtures.json",
        "--weval-fixtures-strict",
        "--weval-out=out",
        "-rA",
        "-p",
        "no:randomly",
    )
    outcomes = outcomes_by_id(result)
    text = " ".join(result.stdout.str().split())  # the summary wraps long lines
    for model in (MODEL_ID, OTHER_ID):
        assert outcomes[f"blueprints/f.yml::live[{model}]"] == "ERROR", text
        assert outcomes[f"blueprints/f.yml::chat[{model}]"] == "ERROR", text
        assert outcomes[f"blueprints/f.yml::capital[{model}]"] == "PASSED", text
        assert f"fixtures.json: no fixture for live x {model}" in text, text
    chat_line = next(i for i, s in enumerate(json.dumps(FIXTURES, indent=2).splitlines(), 1) if '"chat"' in s)
    assert f"fixtures.json:{chat_line}: no fixture for chat x {MODEL_ID}" in text, text
    assert _generations(project) == []  # nothing generated live
    judged = [r.raw_body for r in project.requests() if r.model == "judge-model"]
    assert len(judged) == 1 and "Paris is the capital of France." in judged[0]  # the `live` judge never asked


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_strict_fixtures_from_the_ini(project: Project, workers: tuple[str, ...]) -> None:
    """The ini twin; under xdist each worker reads the setting as the controller does."""
    _project(project)
    project.ini("weval_fixtures = fixtures.json\nweval_fixtures_strict = true")
    result = project.run(f"--weval-judges={JUDGE_ID}", "-k", "live or chat", "-rA", *workers, sub=bool(workers))
    result.assert_outcomes(errors=4)
    assert _generations(project) == []


def test_strict_fixtures_are_not_planned_nor_need_a_key_or_price(project: Project) -> None:
    """The plan and the pre-flight: an item that will error under strict is not counted, not
    priced, and needs no key."""
    _project(project)
    _no_keys(project)
    project.run(
        "--collect-only",
        f"--weval-judges={JUDGE_ID}",
        "--weval-fixtures=fixtures.json",
        "--weval-fixtures-strict",
        "--weval-out=plan",
        sub=True,
    )
    plan = project.json("plan/plan.json")
    assert list(plan["requests"]["by_model"]) == [JUDGE_ID], plan["requests"]  # the canned Paris, judged once
    assert plan["missing_keys"] == [{"variable": "OPENAI_API_KEY", "models": [], "judges": [JUDGE_ID], "items": 2}], (
        plan["missing_keys"]
    )
    # No key and a budget with no price for the models: the strict run still runs its canned items.
    result = project.run(
        "--weval-fixtures=fixtures.json",
        "--weval-fixtures-strict",
        "--weval-budget=1",
        "-k",
        "not capital",
        "-rA",
        sub=True,
    )
    text = result.stdout.str() + result.stderr.str()
    assert "is not set" not in text and "no known price" not in text, text
    outcomes = outcomes_by_id(result)
    assert sorted(i for i, o in outcomes.items() if o == "ERROR") == sorted(
        f"blueprints/f.yml::{p}[{m}]" for p in ("chat", "live") for m in (MODEL_ID, OTHER_ID)
    ), text
    assert outcomes[f"blueprints/f.yml::colour[{OTHER_ID}]"] == "PASSED", text
    assert project.requests() == []


def test_strict_fixtures_without_a_fixture_file_is_a_usage_error(project: Project) -> None:
    _project(project)
    result = project.run("--weval-fixtures-strict")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--weval-fixtures-strict (ini weval_fixtures_strict) needs a fixture file" in result.stderr.str()
    assert project.requests() == []
