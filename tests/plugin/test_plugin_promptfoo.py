"""promptfoo-shaped suites (promptfoo's ``promptfooconfig.yaml``, AgentV v5 ``suite.yaml``) as
pytest items, end to end (issue 46): real pytest runs over real loopback HTTP to the fake server.
The matrix of vars, prompts and providers, node ids and -k, defaultTest merging, CSV and JSONL
test files, located errors (a bad provider, a bad assertion type), an llm-rubric graded by the
fake, AgentV's v5 examples, and the promptfoo-shaped results file."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

from plugin_helpers import JUDGE, JUDGE_ID, MODEL, MODEL_ID, Project, answer_rule, outcomes_by_id, section

from pytest_weval.report.html import unpacked_json
from pytest_weval.results import ItemResult
from tests.fakeserver import Rule

HEAD_V5 = Path("/work/shared/spec/agent-examples/agentv/head-v5")


def test_matrix_of_vars_prompts_and_providers_with_node_ids_and_k(project: Project):
    project.write(
        "suite/promptfooconfig.yaml",
        f"""
        description: greetings
        prompts:
          - "Say hello in {{{{ language }}}}"
          - label: shout
            raw: "SAY HELLO IN {{{{ language }}}}"
        providers:
          - openai:chat:{MODEL}
          - id: openai:gpt-4o
            label: big
        tests:
          - description: greets
            vars:
              language: [French, German]
            assert:
              - type: icontains
                value: hello
                metric: greeting
        """,
    )
    project.rules(Rule(reply="Hello there ({last})"))
    result = project.run("-rA", "-p", "no:randomly", "--weval-html=report.html", "--junitxml=junit.xml")
    found = outcomes_by_id(result)
    expected = {
        f"suite/promptfooconfig.yaml::{row}[{prompt}][{provider}]"
        for row in ("greets", "greets#2")
        for prompt in ("0", "shout")
        for provider in (f"openai:chat:{MODEL}", "big")
    }
    assert set(found) == expected, result.outlines
    assert set(found.values()) == {"PASSED"}
    sent = sorted(r.last_user for r in project.requests())
    assert sent == sorted(
        [f"Say hello in {lang}" for lang in ("French", "German")] * 2
        + [f"SAY HELLO IN {lang}" for lang in ("French", "German")] * 2
    )
    assert {r.model for r in project.requests()} == {MODEL, "gpt-4o"}
    # junit properties as blueprint items have them; the HTML page lists the rows
    props = project.junit()["greets#2[shout][big]"]["properties"]
    assert props["weval_score"] == "1" and props["weval_model"] == "big"
    assert props["weval_prompt_id"] == "greets#2[shout]" and props["weval_blueprint_id"] == "suite__promptfooconfig"
    page = _page_data((project.path / "report.html").read_text(encoding="utf-8"))
    assert "greets#2[shout]" in page and "suite/promptfooconfig.yaml" in page
    # the metric roll-up in the terminal summary
    metrics = section(result.outlines, "weval scores")
    assert any(line.split()[:3] == ["greeting", "1.00", "8/8"] for line in metrics), metrics
    # -k on a provider label, a description and a metric
    assert set(outcomes_by_id(project.run("-rA", "-k", "big"))) == {i for i in expected if i.endswith("[big]")}
    assert len(outcomes_by_id(project.run("-rA", "-k", "greeting"))) == 8


def test_default_test_merging_csv_and_jsonl_rows_and_the_results_file(project: Project):
    project.write(
        "evals/promptfooconfig.yaml",
        f"""
        prompts: ["Q: {{{{ question }}}} ({{{{ tone }}}})"]
        providers: [openai:chat:{MODEL}]
        defaultTest:
          vars: {{tone: polite}}
          assert:
            - type: contains
              value: ANSWER
              metric: shape
        tests:
          - description: own tone wins
            vars: {{question: one, tone: rude}}
            assert:
              - type: contains
                value: rude
          - file://rows.csv
          - file://more.jsonl
        """,
    )
    project.write(
        "evals/rows.csv",
        """
        question,__expected,__description
        two,contains:polite,
        three,equals: nope,a failing row
        """,
    )
    project.write("evals/more.jsonl", '{"vars": {"question": "four"}}\n')
    project.rules(Rule(reply="ANSWER to {last}"))
    result = project.run("-rA", "-p", "no:randomly", "--weval-out=out")
    found = outcomes_by_id(result)
    base = f"evals/promptfooconfig.yaml::{{}}[0][openai:chat:{MODEL}]"
    assert found == {
        base.format("own tone wins"): "PASSED",
        base.format("Row #1"): "PASSED",
        base.format("a failing row"): "FAILED",
        base.format("Row #1#2"): "PASSED",  # the JSONL file's first row
    }, result.outlines
    sent = sorted(r.last_user for r in project.requests())
    assert sent == ["Q: four (polite)", "Q: one (rude)", "Q: three (polite)", "Q: two (polite)"]
    document = project.json("out/promptfoo-results.json")
    rows = {row["testIdx"]: row for row in document["results"]["results"]}
    assert sorted(rows) == [0, 1, 2, 3]
    failing = rows[2]
    assert failing["success"] is False and failing["failureReason"] == 1
    assert failing["vars"] == {"tone": "polite", "question": "three"}
    assert failing["provider"]["id"] == f"openai:{MODEL}"  # promptfoo's provider.id()
    assert failing["prompt"]["raw"] == "Q: three (polite)"
    assert failing["response"]["output"] == "ANSWER to Q: three (polite)"
    components = failing["gradingResult"]["componentResults"]
    assert [c["assertion"]["type"] for c in components] == ["contains", "equals"]  # defaultTest's first
    assert [c["pass"] for c in components] == [True, False]
    assert rows[0]["success"] is True and rows[0]["score"] == 1
    assert document["results"]["stats"]["successes"] == 3 and document["results"]["stats"]["failures"] == 1
    # a second run answers from the cache: nothing is sent, the outcomes are the same
    asked = len(project.requests())
    again = project.run("-rA", "-p", "no:randomly")
    assert outcomes_by_id(again) == found and len(project.requests()) == asked


def test_the_results_file_names_each_provider_as_promptfoo_does(project: Project):
    # measured with promptfoo 0.123.1's CLI: its OpenAI chat provider loaded from the text
    # openai:chat:<m> calls itself openai:<m>; an object's id is kept as written
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["Say {{{{ word }}}}"]
        providers:
          - openai:chat:{MODEL}
          - id: openai:chat:gpt-4.1
          - openai:chat:gpt-4.1-mini:
              config: {{temperature: 0.5}}
          - id: openai:chat:gpt-4o
            label: big
        tests:
          - vars: {{word: hi}}
            assert: [{{type: contains, value: hi}}]
        """,
    )
    project.rules(Rule(reply="{last}"))
    result = project.run("-rA", "--weval-out=out")
    assert set(outcomes_by_id(result).values()) == {"PASSED"}, result.outlines
    results = project.json("out/promptfoo-results.json")["results"]
    by_index = {row["promptIdx"]: row["provider"] for row in results["results"]}
    assert by_index == {
        0: {"id": f"openai:{MODEL}", "label": ""},
        1: {"id": "openai:chat:gpt-4.1", "label": ""},
        2: {"id": "openai:chat:gpt-4.1-mini", "label": ""},
        3: {"id": "openai:chat:gpt-4o", "label": "big"},
    }
    # its prompts name each provider by its label, else by that id
    assert sorted(prompt["provider"] for prompt in results["prompts"]) == sorted(
        [f"openai:{MODEL}", "openai:chat:gpt-4.1", "openai:chat:gpt-4.1-mini", "big"]
    )


def test_a_bad_provider_and_a_bad_assertion_type_are_located_errors_that_stop_nothing_else(project: Project):
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["Say {{{{ word }}}}"]
        providers:
          - openai:chat:{MODEL}
          - exec:python my_provider.py
        tests:
          - description: fine
            vars: {{word: yes}}
            assert: [{{type: contains, value: yes}}]
          - description: typo
            vars: {{word: no}}
            assert: [{{type: containz, value: no}}]
        """,
    )
    project.rules(Rule(reply="{last}"))
    result = project.run("-rA", "-p", "no:randomly")
    found = outcomes_by_id(result)
    assert found[f"promptfooconfig.yaml::fine[0][openai:chat:{MODEL}]"] == "PASSED"
    assert found["promptfooconfig.yaml::fine[0][exec:python my_provider.py]"] == "ERROR"
    assert found[f"promptfooconfig.yaml::typo[0][openai:chat:{MODEL}]"] == "ERROR"
    text = "\n".join(result.outlines)
    assert "promptfooconfig.yaml:4" in text and "exec:python my_provider.py" in text
    assert "containz" in text and "promptfooconfig.yaml:11" in text
    assert [r.last_user for r in project.requests()] == ["Say yes"]  # nothing sent for the errors


def test_llm_rubric_graded_by_the_fake_grader(project: Project):
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["Tell a joke about {{{{ topic }}}}"]
        providers: [openai:chat:{MODEL}]
        defaultTest:
          options:
            provider: openai:chat:{JUDGE}
        tests:
          - description: funny
            vars: {{topic: cats}}
            assert:
              - type: llm-rubric
                value: is funny
          - description: sad
            vars: {{topic: dogs}}
            assert:
              - type: llm-rubric
                value: is sad
          - description: own grader
            vars: {{topic: birds}}
            options:
              provider: exec:./grade.sh
            assert:
              - type: llm-rubric
                value: is anything
        """,
    )
    project.rules(
        Rule(model=JUDGE, contains="is funny", reply=json.dumps({"reason": "it is", "pass": True, "score": 1})),
        Rule(model=JUDGE, contains="is sad", reply=json.dumps({"reason": "it is not", "pass": False, "score": 0})),
        answer_rule("joke", "A joke about {last}"),
    )
    result = project.run("-rA", "-p", "no:randomly")
    found = outcomes_by_id(result)
    assert found == {
        f"promptfooconfig.yaml::funny[0][openai:chat:{MODEL}]": "PASSED",
        f"promptfooconfig.yaml::sad[0][openai:chat:{MODEL}]": "FAILED",
        # a grader we cannot run is a located error, not a silent fall back to another judge
        f"promptfooconfig.yaml::own grader[0][openai:chat:{MODEL}]": "ERROR",
    }, result.outlines
    assert "exec:./grade.sh" in "\n".join(result.outlines)
    graded = project.requests(JUDGE)
    assert len(graded) == 2
    [funny] = [r for r in graded if "is funny" in r.raw_body]
    # promptfoo's llm-rubric request: its system message, then output and rubric, at temperature 0
    assert [m["role"] for m in funny.body["messages"]] == ["system", "user"]
    assert funny.body["messages"][1]["content"] == (
        "<Output>\nA joke about Tell a joke about cats\n</Output>\n<Rubric>\nis funny\n</Rubric>"
    )
    assert funny.body["temperature"] == 0


def test_a_grader_that_cannot_answer_fails_its_assertion_not_the_row(project: Project):
    # promptfoo 0.123.1 (matchers.ts): a grader call that fails makes the assertion fail with the
    # error as its reason; the row is scored (failed), with its other assertions, not an error
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["Tell a joke about {{{{ topic }}}}"]
        providers: [openai:chat:{MODEL}]
        defaultTest:
          options:
            provider: openai:chat:{JUDGE}
        tests:
          - description: broken grader
            vars: {{topic: cats}}
            assert:
              - type: contains
                value: joke
              - type: llm-rubric
                value: is refused
        """,
    )
    project.rules(
        Rule(model=JUDGE, contains="is refused", status=400),
        answer_rule("joke", "A joke about {last}"),
    )
    result = project.run("-rA", "-p", "no:randomly", "--weval-out=out")
    assert outcomes_by_id(result) == {f"promptfooconfig.yaml::broken grader[0][openai:chat:{MODEL}]": "FAILED"}
    [row] = json.loads((project.path / "out" / "promptfoo-results.json").read_text())["results"]["results"]
    assert row["success"] is False and row["failureReason"] == 1  # an assertion failed, not an error
    contains, rubric = row["gradingResult"]["componentResults"]
    assert contains["pass"] is True
    assert rubric["pass"] is False and "400" in rubric["reason"]


def _head_v5(project: Project) -> None:
    """AgentV's v5 examples in their original layout (ruling 21), with the grader prompt files
    the weighted-graders suite names (not part of the flattened examples)."""
    for file in sorted(HEAD_V5.iterdir()):
        target = project.path / file.name.replace("__", "/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, target)
    for name in ("safety-check", "quality-evaluation", "style-evaluation", "accuracy-check", "experimental-check"):
        project.write(f"weighted-graders/prompts/{name}.md", f"The answer passes the {name} rubric.\n")
    for name in ("correctness-check", "completeness-check", "clarity-check"):
        project.write(f"weighted-graders/prompts/{name}.md", f"The answer passes the {name} rubric.\n")


def test_agentv_v5_examples_collect_and_run(project: Project):
    if not HEAD_V5.is_dir():
        import pytest

        pytest.skip(f"the spec's examples are not at {HEAD_V5}")
    _head_v5(project)
    project.rules(
        Rule(model=JUDGE, reply=json.dumps({"reason": "fine", "pass": True, "score": 1})),
        Rule(model=MODEL, reply="RELEASE CONTRACT: neural networks learn weights."),
    )
    result = project.run("-rA", "-p", "no:randomly", f"--weval-models={MODEL_ID}", f"--weval-judges={JUDGE_ID}")
    found = outcomes_by_id(result)
    suite = "weighted-graders/evals/suite.yaml"
    assert {k: v for k, v in found.items() if k.startswith(suite)} == {
        f"{suite}::{case}[0][{MODEL_ID}]": "PASSED"
        for case in ("weighted-multi-grader", "experimental-grader-disabled", "equal-weights-default")
    }, result.outlines
    assert found[f"showcase/directory-discovery/EVAL.yaml::add-greeting[0][{MODEL_ID}]"] == "PASSED"
    # AgentV's `type: script` grader is a program: a located error naming it, never a silent skip
    contract = f"contract/evals/script-grader-contract.eval.yaml::script-grader-stdin-payload[0][{MODEL_ID}]"
    assert found[contract] == "ERROR"
    # the chat array var was sent as a chat: the system turn, then the user turn
    [chat] = [r for r in project.requests(MODEL) if "Explain the concept of neural networks." in r.last_user]
    assert [m["role"] for m in chat.body["messages"]] == ["user"]
    rubric_requests = [r for r in project.requests(JUDGE) if "safety-check rubric" in r.raw_body]
    assert len(rubric_requests) == 1


def test_an_openai_compatible_api_base_url_with_config_and_env_only_as_allowed(project: Project):
    base = project.server.env(keys=False)["OPENAI_BASE_URL"]
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["Hi {{{{ name }}}} {{{{ env.SECRET_WORD }}}}"]
        providers:
          - id: openai:chat:local-model
            label: local
            config:
              apiBaseUrl: {base}
              temperature: 0.3
              max_tokens: 42
              systemPrompt: Be brief.
        tests:
          - vars: {{name: Ada}}
            assert: [{{type: contains, value: Ada}}]
        """,
    )
    project.rules(Rule(reply="{last}"))
    project.monkeypatch.setenv("SECRET_WORD", "swordfish")
    found = outcomes_by_id(project.run("-rA"))
    assert found == {"promptfooconfig.yaml::0[0][local]": "PASSED"}
    [sent] = project.requests()
    assert sent.model == "local-model"
    assert sent.body["temperature"] == 0.3 and sent.body["max_tokens"] == 42
    assert sent.body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert sent.last_user == "Hi Ada "  # SECRET_WORD is not allowed: env has nothing for it
    project.run("-rA", "--weval-allow-env=SECRET_WORD", "--weval-cache=off")
    assert project.requests()[-1].last_user == "Hi Ada swordfish"


def test_a_provider_without_its_key_is_blocked_and_a_script_assertion_is_a_located_error(project: Project):
    project.write("check.js", "module.exports = (output) => output.includes('ok');\n")
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["say ok"]
        providers: [openai:chat:{MODEL}, anthropic:messages:claude-3-5-haiku-latest]
        tests:
          - description: plain
            assert: [{{type: contains, value: ok}}]
          - description: scripted
            assert: [{{type: javascript, value: file://check.js}}]
        """,
    )
    project.rules(Rule(reply="ok"))
    stopped = project.run("-rA", "-p", "no:randomly")
    assert "ANTHROPIC_API_KEY is not set" in "\n".join(stopped.outlines + stopped.errlines)
    assert project.requests() == []
    result = project.run("-rA", "-p", "no:randomly", "--weval-missing-keys=error")
    found = outcomes_by_id(result)
    assert found == {
        f"promptfooconfig.yaml::plain[0][openai:chat:{MODEL}]": "PASSED",
        "promptfooconfig.yaml::plain[0][anthropic:messages:claude-3-5-haiku-latest]": "ERROR",
        f"promptfooconfig.yaml::scripted[0][openai:chat:{MODEL}]": "ERROR",
        "promptfooconfig.yaml::scripted[0][anthropic:messages:claude-3-5-haiku-latest]": "ERROR",
    }, result.outlines
    text = "\n".join(result.outlines)
    assert "ANTHROPIC_API_KEY" in text  # the pre-flight: no key, not run
    assert "promptfooconfig.yaml:7" in text and "file://check.js" in text
    assert [r.model for r in project.requests()] == [MODEL]  # nothing sent for the errors


PYTHON_SUITE = f"""
prompts: ["say {{{{ word }}}}"]
providers: [openai:chat:{MODEL}]
tests:
  - description: expression
    vars: {{word: hello}}
    assert:
      - type: python
        value: output.endswith('hello')
  - description: body
    vars: {{word: quiet}}
    assert:
      - type: python
        value: |
          words = output.split()
          return {{'pass': len(words) > 5, 'score': len(words) / 10, 'reason': f'{{len(words)}} words'}}
  - description: no keys
    vars: {{word: keys}}
    assert:
      - type: python
        value: "not any(name.endswith('_API_KEY') for name in __import__('os').environ)"
"""


def test_python_assertions_run_only_when_allowed_without_the_keys(project: Project):
    # ruling 27: a program named by the file runs only with --weval-allow-exec, in an environment
    # without provider keys; its value read as promptfoo 0.123.1 reads it (python.ts)
    project.write("promptfooconfig.yaml", PYTHON_SUITE)
    project.rules(Rule(reply="{last}"))
    refused = project.run("-rA", "-p", "no:randomly")
    assert set(outcomes_by_id(refused).values()) == {"ERROR"}
    assert "--weval-allow-exec" in "\n".join(refused.outlines)
    assert project.requests() == []  # nothing sent for a row that cannot be scored
    result = project.run("-rA", "-p", "no:randomly", "--weval-allow-exec", "--weval-out=out")
    assert outcomes_by_id(result) == {
        f"promptfooconfig.yaml::expression[0][openai:chat:{MODEL}]": "PASSED",
        f"promptfooconfig.yaml::body[0][openai:chat:{MODEL}]": "FAILED",
        f"promptfooconfig.yaml::no keys[0][openai:chat:{MODEL}]": "PASSED",
    }, result.outlines
    rows = {
        row["testCase"]["description"]: row for row in project.json("out/promptfoo-results.json")["results"]["results"]
    }
    [body] = rows["body"]["gradingResult"]["componentResults"]
    assert body["pass"] is False and body["score"] == 0.2 and body["reason"] == "2 words"


def test_batch_submit_skips_rows_and_a_later_wait_collects_them(project: Project):
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["Question {{{{ n }}}}"]
        providers: [openai:chat:{MODEL}]
        tests:
          - vars: {{n: ["1", "2", "3"]}}
            assert: [{{type: contains, value: Question}}]
        """,
    )
    project.ini("weval_prices =", f"    {MODEL_ID} 2.5 10")
    project.server.set_batch(batch_delay_s=600.0)
    batch = ("--weval-batch-poll=0.2", "--weval-check-models=off")
    submitted = project.run("-rA", "--weval-batch=submit", *batch, sub=True)
    submitted.assert_outcomes(skipped=3)
    assert project.requests() == []  # in the provider's batch, not sent live
    project.server.set_batch(batch_delay_s=0.2)
    for job in project.server.batches.values():  # the provider ends it meanwhile
        job.ends_at = time.time()
    collected = project.run("-rA", "--weval-batch=wait", *batch, sub=True)
    collected.assert_outcomes(passed=3)
    assert project.requests() == []


def test_under_xdist_each_row_is_asked_once_and_the_results_file_has_every_row(project: Project):
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["Item {{{{ n }}}}"]
        providers: [openai:chat:{MODEL}]
        tests:
          - vars: {{n: ["1", "2", "3", "4", "5", "6"]}}
            assert: [{{type: contains, value: Item, metric: echo}}]
        """,
    )
    project.rules(Rule(reply="{last}"))
    result = project.run("-n", "2", "--weval-out=out", sub=True)
    result.assert_outcomes(passed=6)
    assert sorted(r.last_user for r in project.requests()) == [f"Item {n}" for n in range(1, 7)]
    rows = project.json("out/promptfoo-results.json")["results"]["results"]
    assert sorted(row["testIdx"] for row in rows) == list(range(6))
    assert all(row["namedScores"] == {"echo": 1} for row in rows)
    assert project.json("out/summary.json")["metrics"] == {"echo": {"rows": 6, "mean": 1, "passed": 6}}


def test_options_transform_runs_before_the_assertions(project: Project):
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["say {{{{ word }}}}"]
        providers: [openai:chat:{MODEL}]
        defaultTest:
          options:
            transform: output.toUpperCase() + ' (' + context.vars.word + ')'
        tests:
          - description: shouted
            vars: {{word: hello}}
            assert:
              - {{type: equals, value: "SAY HELLO (hello)"}}
          - description: not shouted
            vars: {{word: quiet}}
            assert:
              - {{type: contains, value: say quiet}}
        """,
    )
    project.rules(Rule(reply="{last}"))
    found = outcomes_by_id(project.run("-rA", "--weval-out=out"))
    assert found == {
        f"promptfooconfig.yaml::shouted[0][openai:chat:{MODEL}]": "PASSED",
        f"promptfooconfig.yaml::not shouted[0][openai:chat:{MODEL}]": "FAILED",
    }
    rows = project.json("out/promptfoo-results.json")["results"]["results"]
    assert {row["response"]["output"] for row in rows} == {"SAY HELLO (hello)", "SAY QUIET (quiet)"}


def test_a_transform_that_throws_is_the_rows_error_located_at_its_test(project: Project):
    # promptfoo 0.123.1: an options.transform that throws makes the row an error (failureReason 2);
    # ours names the line of the test whose transform it is, and keeps the answer it was given
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["say {{{{ word }}}}"]
        providers: [openai:chat:{MODEL}]
        tests:
          - description: throws
            vars: {{word: hello}}
            options:
              transform: "(() => {{ throw new Error('no shouting today') }})()"
            assert:
              - {{type: contains, value: hello}}
          - description: plain
            vars: {{word: quiet}}
            assert:
              - {{type: contains, value: quiet}}
        """,
    )
    project.rules(Rule(reply="{last}"))
    result = project.run("-rA", "--weval-out=out")
    assert outcomes_by_id(result) == {
        f"promptfooconfig.yaml::throws[0][openai:chat:{MODEL}]": "ERROR",
        f"promptfooconfig.yaml::plain[0][openai:chat:{MODEL}]": "PASSED",
    }
    text = "\n".join(result.outlines)
    assert "promptfooconfig.yaml:4" in text and "no shouting today" in text
    lines = (project.path / "out/.weval/items.jsonl").read_text(encoding="utf-8").splitlines()
    items = {item.prompt_id: item for item in map(ItemResult.model_validate_json, lines)}
    thrown = items["throws[0]"]
    assert thrown.error is not None and thrown.error.startswith("promptfooconfig.yaml:4")
    assert "no shouting today" in thrown.error and thrown.error_kind == "blueprint"
    assert thrown.response == "say hello" and thrown.points == []
    rows = {
        row["description"] if "description" in row else row["testCase"]["description"]: row
        for row in project.json("out/promptfoo-results.json")["results"]["results"]
    }
    assert rows["throws"]["failureReason"] == 2 and rows["throws"]["success"] is False


def test_a_broken_file_is_one_located_collection_error_and_the_others_run(project: Project):
    project.write("a/promptfooconfig.yaml", "prompts: [x]\ntests: [\n")
    project.write("b/promptfooconfig.yaml", f"providers: [openai:chat:{MODEL}]\ntests: [{{vars: {{a: 1}}}}]\n")
    project.write(
        "c/promptfooconfig.yaml",
        f"prompts: [hi]\nproviders: [openai:chat:{MODEL}]\ntests: [{{assert: [{{type: contains, value: hi}}]}}]\n",
    )
    project.rules(Rule(reply="{last}"))
    result = project.run("-rA")
    found = outcomes_by_id(result)
    assert found == {
        "a/promptfooconfig.yaml": "ERROR",
        "b/promptfooconfig.yaml": "ERROR",
        f"c/promptfooconfig.yaml::0[0][openai:chat:{MODEL}]": "PASSED",
    }, result.outlines
    text = "\n".join(result.outlines)
    assert "a/promptfooconfig.yaml:3" in text  # where the YAML breaks
    assert "b/promptfooconfig.yaml:1" in text and "no `prompts`" in text


def test_similar_asks_embeddings_through_the_engine(project: Project):
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["Echo {{{{ word }}}}"]
        providers: [openai:chat:{MODEL}]
        tests:
          - description: same
            vars: {{word: alpha}}
            assert: [{{type: similar, value: Echo alpha, threshold: 0.99}}]
          - description: own embedder
            vars: {{word: beta}}
            options:
              provider: {{embedding: openai:embedding:my-embedder}}
            assert: [{{type: similar, value: Echo beta, threshold: 0.99}}]
        """,
    )
    project.rules(Rule(reply="{last}"))
    found = outcomes_by_id(project.run("-rA"))
    assert set(found.values()) == {"PASSED"}, found
    embedded = {
        (r.model, r.body["input"] if isinstance(r.body.get("input"), str) else str(r.body.get("input")))
        for r in project.requests()
        if r.path.endswith("/embeddings")
    }
    assert {model for model, _ in embedded} == {"text-embedding-3-large", "my-embedder"}


def _page_data(page: str) -> str:
    """The page's HTML with its blueprints' blocks decoded, as the browser reads them."""
    blocks = re.findall(r'<script type="application/octet-stream"[^>]*>(.*?)</script>', page, flags=re.S)
    return page + "".join(json.dumps(unpacked_json(block)) for block in blocks)


def test_file_assertion_values_are_read_from_the_suites_folder(project: Project):
    # pytest runs from the project's root: the suite's file:// values are beside it, not in the cwd
    project.write("expected.txt", "wrong answer")
    project.write("suite/expected.txt", "Echo alpha")
    project.write("suite/rubric.txt", "is an echo")
    project.write(
        "suite/promptfooconfig.yaml",
        f"""
        prompts: ["Echo {{{{ word }}}}"]
        providers: [openai:chat:{MODEL}]
        defaultTest:
          options:
            provider: openai:chat:{JUDGE}
        tests:
          - vars: {{word: alpha}}
            assert:
              - {{type: equals, value: file://expected.txt}}
              - {{type: llm-rubric, value: file://rubric.txt}}
        """,
    )
    project.rules(
        Rule(model=JUDGE, contains="is an echo", reply=json.dumps({"reason": "yes", "pass": True, "score": 1})),
        Rule(reply="{last}"),
    )
    found = outcomes_by_id(project.run("-rA"))
    assert found == {f"suite/promptfooconfig.yaml::0[0][openai:chat:{MODEL}]": "PASSED"}, found
    assert len(project.requests(JUDGE)) == 1  # the rubric read from suite/rubric.txt


def test_answer_relevance_asks_the_text_grader_and_embeds_with_the_named_embedding_provider(project: Project):
    # promptfoo's {text, embedding} provider: the grader writes questions, the embedder compares
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["What is {{{{ word }}}}?"]
        providers: [openai:chat:{MODEL}]
        defaultTest:
          options:
            provider:
              text: openai:chat:{JUDGE}
              embedding: openai:embedding:my-embedder
        tests:
          - vars: {{word: alpha}}
            assert: [{{type: answer-relevance, threshold: 0}}]
        """,
    )
    project.rules(Rule(model=JUDGE, reply="What is alpha?"), Rule(reply="{last}"))
    found = outcomes_by_id(project.run("-rA"))
    assert set(found.values()) == {"PASSED"}, found
    embedded = [r for r in project.requests() if r.path.endswith("/embeddings")]
    assert embedded and {r.model for r in embedded} == {"my-embedder"}
    assert project.requests(JUDGE)


def test_a_rows_graded_assertions_are_asked_at_once_and_keep_their_order(project: Project):
    # promptfoo runs a row's assertions several at a time (runAssertions); in order they would
    # cost one grader's wait each
    project.write(
        "promptfooconfig.yaml",
        f"""
        prompts: ["Tell a joke about {{{{ topic }}}}"]
        providers: [openai:chat:{MODEL}]
        defaultTest:
          options:
            provider: openai:chat:{JUDGE}
        tests:
          - vars: {{topic: cats}}
            assert:
              - type: llm-rubric
                value: is funny
              - type: assert-set
                assert:
                  - type: llm-rubric
                    value: is short
                  - type: llm-rubric
                    value: is kind
              - type: llm-rubric
                value: is sad
        """,
    )
    verdicts = {"is funny": ("yes", True), "is short": ("yes", True), "is kind": ("no", False), "is sad": ("no", False)}
    project.rules(
        *[
            Rule(
                model=JUDGE,
                latency_ms=300,
                contains=rubric,
                reply=json.dumps({"reason": reason, "pass": passed, "score": int(passed)}),
            )
            for rubric, (reason, passed) in verdicts.items()
        ],
        answer_rule("joke", "A joke about {last}"),
    )
    project.run("--weval-out=out", "-p", "no:randomly")
    assert project.server.max_in_flight == 4
    row = json.loads((project.path / "out" / "promptfoo-results.json").read_text())["results"]["results"][0]
    # the components in the order the assertions were written, as when they were asked in turn
    assert [c["reason"] for c in row["gradingResult"]["componentResults"]] == ["yes", "no", "yes", "no", "no"]


def test_repeats_sample_each_row_and_its_results_row_holds_their_mean(project: Project):
    project.write(
        "suite/promptfooconfig.yaml",
        f"""
        prompts: ["Greet {{{{ who }}}}"]
        providers: [openai:chat:{MODEL}]
        tests:
          - description: greets
            vars: {{who: Ann}}
            assert:
              - type: icontains
                value: hello
          - description: greets again
            vars: {{who: Bob}}
            assert:
              - type: icontains
                value: hello
        """,
    )
    # one of the three samples of Ann's row does not greet: its mean is 2/3, under 1
    project.rules(Rule(contains="Ann", reply="Goodbye", times=1), Rule(reply="Hello {last}"))
    quiet = ("-rA", "-p", "no:randomly")
    first = project.run("--weval-repeat=3", "--weval-out=out", *quiet)
    found = outcomes_by_id(first)
    row = f"suite/promptfooconfig.yaml::{{}}[0][openai:chat:{MODEL}]"
    assert found == {row.format("greets"): "FAILED", row.format("greets again"): "PASSED"}, first.outlines
    assert len(project.requests()) == 6  # 2 rows x 3 samples, each its own request
    items = {i["promptId"]: i for i in project.json("out/summary.json")["items"]}
    assert sorted(items["greets[0]"]["samples"]) == [0, 1, 1] and items["greets[0]"]["score"] == 0.67
    assert items["greets again[0]"]["samples"] == [1, 1, 1]
    rows = {r["testIdx"]: r for r in project.json("out/promptfoo-results.json")["results"]["results"]}
    assert (rows[0]["score"], rows[0]["success"]) == (0.67, False)
    assert (rows[1]["score"], rows[1]["success"]) == (1, True)
    # a cached run replays every sample and sends nothing; sample 0 keeps a plain run's key
    asked = len(project.requests())
    again = project.run("--weval-repeat=3", "--weval-cache=ro", "--weval-out=again", *quiet)
    assert outcomes_by_id(again) == found and len(project.requests()) == asked
    replayed = {i["promptId"]: i for i in project.json("again/summary.json")["items"]}
    assert replayed["greets[0]"]["samples"] == items["greets[0]"]["samples"]
    plain = project.run("--weval-cache=ro", *quiet)
    assert set(outcomes_by_id(plain)) == set(found) and len(project.requests()) == asked
