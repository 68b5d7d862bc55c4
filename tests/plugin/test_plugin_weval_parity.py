"""Where the Weval JSON and the run averages follow what the reference itself writes:
duplicate prompt ids, the `config` block, and authoring mistakes (docs/compatibility.md)."""

from __future__ import annotations

import textwrap

from plugin_helpers import MODEL, MODEL_ID, Project, answer_rule, outcomes_by_id

from tests.fakeserver import Rule


def test_a_duplicate_prompt_id_runs_twice_but_counts_once(project: Project) -> None:
    project.write(
        "blueprints/dup.yml",
        f"""\
        models: [{MODEL_ID}]
        ---
        - id: same
          prompt: First wording.
          should: [$icontains: yes]
        - id: other
          prompt: Another question.
          should: [$icontains: yes]
        - id: same
          prompt: Second wording.
          should: [$icontains: yes]
        """,
    )
    project.rules(
        answer_rule("First wording.", "no"),
        answer_rule("Another question.", "yes"),
        answer_rule("Second wording.", "yes indeed"),
    )
    result = project.run("--weval-out=out", "-rA", "-p", "no:randomly")
    outcomes = outcomes_by_id(result)
    # pytest: two items, each with its own node id
    assert outcomes[f"blueprints/dup.yml::same[{MODEL_ID}]"] == "FAILED"
    assert outcomes[f"blueprints/dup.yml::same~2[{MODEL_ID}]"] == "PASSED"
    # a located warning naming both lines
    text = result.stdout.str()
    assert "dup.yml:9" in text and "prompt id 'same' is used again (first at line 3)" in text

    # Weval keys by prompt id and keeps the later prompt: the means see `same` once, passing.
    summary = project.json("out/summary.json")
    assert summary["models"][MODEL_ID]["mean"] == 1
    assert summary["models"][MODEL_ID]["items"] == 3  # pytest's count of items is unchanged
    (blueprint,) = summary["blueprints"]
    assert blueprint["path"] == "blueprints/dup.yml" and blueprint["mean"] == 1
    assert summary["totals"]["mean"] == 1
    comparison = project.json("out/dup.json")
    key = f"{MODEL_ID}[temp:0]"
    assert comparison["allFinalAssistantResponses"]["same"][key] == "yes indeed"
    assert comparison["evaluationResults"]["llmCoverageScores"]["same"][key]["avgCoverageExtent"] == 1
    assert comparison["promptContexts"]["same"] == [{"role": "user", "content": "Second wording."}]


def test_the_config_block_is_the_effective_config(project: Project) -> None:
    project.write(
        "blueprints/cfg.yml",
        f"""\
        title: Config block
        tags: [LLM evaluation, AI Safety, ai-safety]
        models: [{MODEL_ID}]
        system: [Be brief., Be thorough.]
        ---
        - id: p
          prompt: Say yes.
          should: [$icontains: yes]
        """,
    )
    project.rules(answer_rule("Say yes.", "yes"))
    project.run("--weval-out=out")
    config = project.json("out/cfg.json")["config"]
    assert config["tags"] == ["llm-evaluation", "ai-safety"]  # normalised, de-duplicated
    assert config["systems"] == ["Be brief.", "Be thorough."] and "system" not in config
    assert config["id"] == "cfg" and config["title"] == "Config block"
    assert config["models"] == [MODEL_ID]


def test_an_authoring_mistake_is_recorded_as_the_reference_does(project: Project) -> None:
    project.write(
        "blueprints/m.yml",
        f"""\
        models: [{MODEL_ID}]
        ---
        - id: all-wrong
          prompt: Say yes.
          should:
            - $contians: yes
            - $matches: "(unclosed"
        - id: fine
          prompt: Say fine.
          should: [$icontains: fine]
        """,
    )
    project.rules(answer_rule("Say yes.", "yes"), answer_rule("Say fine.", "fine"))
    result = project.run("--weval-out=out", "-rA")
    outcomes = outcomes_by_id(result)
    assert outcomes[f"blueprints/m.yml::all-wrong[{MODEL_ID}]"] == "ERROR"
    assert outcomes[f"blueprints/m.yml::fine[{MODEL_ID}]"] == "PASSED"
    assert [r.last_user for r in project.requests(MODEL)] == ["Say fine."]  # nothing paid for the mistakes
    coverage = project.json("out/m.json")["evaluationResults"]["llmCoverageScores"]["all-wrong"][f"{MODEL_ID}[temp:0]"]
    assert coverage["avgCoverageExtent"] == 0  # an all-error prompt scores 0, as in the reference
    points = coverage["pointAssessments"]
    assert len(points) == 2 and all("coverageExtent" not in p for p in points)
    assert points[0]["error"].startswith("Unknown point function: 'contians'")
    assert "Invalid regular expression" in points[1]["error"]


GIL_HOLDER = """\
import gc
import threading


def _hold_the_gil():
    # Full collections over a large heap hold the GIL for hundreds of milliseconds at a time,
    # as a test suite's own fixtures can: V8's replies reach Python late.
    heap = [[i] for i in range(4_000_000)]
    while True:
        gc.collect()
        if not heap:
            break


def pytest_configure(config):
    threading.Thread(target=_hold_the_gil, daemon=True).start()
"""


def test_regex_scores_are_exact_while_the_gil_is_held(project: Project) -> None:
    prompts = "\n".join(
        f"""\
        - id: q{i}
          prompt: Question {i}.
          should:
            - $matches: "(?<n>an)\\\\k<n>"
            - $matches: "(x)\\\\1"
            - $imatches: "(\\\\w)\\\\1l"
        """
        for i in range(60)
    )
    project.write("blueprints/re.yml", f"models: [{MODEL_ID}]\n---\n" + textwrap.dedent(prompts))
    project.write("conftest.py", GIL_HOLDER)
    project.rules(Rule(model=MODEL, reply="Banana APPLE"))
    for run in range(2):
        project.run("--junitxml=j.xml", "--weval-cache=off", sub=True)
        cases = project.junit("j.xml")
        assert len(cases) == 60
        # 2 of 3 points match on every answer: 0.67, never an error, never another batch's result
        wrong = {name: (c["outcome"], c["properties"].get("weval_score")) for name, c in cases.items()}
        wrong = {name: got for name, got in wrong.items() if got != ("passed", "0.67")}
        assert wrong == {}, f"run {run + 1}: {wrong}"
