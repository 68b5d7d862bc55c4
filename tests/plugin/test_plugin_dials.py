"""pytest's own dials on our items: --tb styles, -q/-v/-vv, the short summary, junit's failure
message, and reruns (pytest-rerunfailures) that ask the model again."""

from __future__ import annotations

from plugin_helpers import MODEL, MODEL_ID, Project, answer_rule, section

from tests.fakeserver import Rule

LETTERS = f"""\
models: [{MODEL_ID}]
---
- id: letters
  prompt: Say the first Greek letters.
  should:
    - $contains: alpha
    - $contains: beta
  should_not:
    - $icontains: "I don't know"
"""


def _failing(project: Project) -> None:
    project.write("blueprints/letters.yml", LETTERS)
    project.rules(answer_rule("Greek", "alpha... I don't know the rest."))


def test_tb_line_is_one_located_line_with_score_and_reason(project: Project):
    _failing(project)
    result = project.run("--tb=line", "-n", "2")
    failures = [line for line in section(result.outlines, "FAILURES") if line.strip()]
    # located at the costliest point's line, under xdist too (the report crossed from a worker)
    assert failures[-1] == (
        "blueprints/letters.yml:7: [openai:gpt-4o-mini] score 0.33 < pass mark 0.50; lost most on point 2, "
        'should: contains("beta") (0.00)'
    ), failures
    assert "What the model answered" not in result.stdout.str()


def test_tb_styles_change_what_a_failure_shows(project: Project):
    _failing(project)
    outputs = {}
    for style in ("no", "line", "short", "auto", "long"):
        outputs[style] = section(project.run(f"--tb={style}").outlines, "FAILURES")
    assert outputs["no"] == []
    assert len(outputs["line"]) == 1
    assert 'must not: icontains("I don\'t know"): it does' in "\n".join(outputs["short"])
    assert "What pulled the score down:" not in "\n".join(outputs["short"])
    assert "What pulled the score down:" in "\n".join(outputs["auto"])
    assert len(outputs["short"]) < len(outputs["auto"])
    # the same answer shown whole or cut by detail
    assert len(outputs["auto"]) <= len(outputs["long"])


def test_the_short_summary_gives_one_line_per_item_even_at_vv(project: Project):
    _failing(project)
    result = project.run("-vv", "-rA")
    summary = section(result.outlines, "short test summary info")
    assert len(summary) == 1
    assert summary[0].startswith(
        "FAILED blueprints/letters.yml::letters[openai:gpt-4o-mini] - score 0.33 < pass mark 0.50"
    )


def test_junit_failure_message_is_the_one_line_reason(project: Project):
    _failing(project)
    project.run("--junitxml=junit.xml")
    import xml.etree.ElementTree as ET

    failure = next(ET.parse(project.path / "junit.xml").iter("failure"))
    assert failure.get("message", "").startswith("score 0.33 < pass mark 0.50; lost most on point")
    assert "What the model answered" in (failure.text or "")


def test_a_rerun_asks_the_model_again_and_says_which_attempt_counted(project: Project):
    project.write("blueprints/letters.yml", LETTERS)
    project.rules(
        Rule(model=MODEL, contains="Greek", reply="I don't know.", times=1),
        answer_rule("Greek", "alpha, beta."),
    )
    result = project.run("--reruns=2", "--junitxml=junit.xml", "-rA")
    assert result.parseoutcomes() == {"passed": 1, "rerun": 1}
    assert len(project.requests(MODEL)) == 2  # the first answer and one re-sample, no more
    props = project.junit()["letters[openai:gpt-4o-mini]"]["properties"]
    assert props["weval_score"] == "1"
    assert props["weval_attempt"] == "2"

    # Recorded under its own cache key, a cached rerun replays every attempt and sends nothing.
    again = project.run("--reruns=2", "--junitxml=junit.xml")
    assert again.parseoutcomes() == {"passed": 1, "rerun": 1}
    assert len(project.requests(MODEL)) == 2


def test_a_rerun_that_fails_again_reports_the_last_attempt(project: Project):
    _failing(project)
    result = project.run("--reruns=1")
    assert result.parseoutcomes() == {"failed": 1, "rerun": 1}
    assert len(project.requests(MODEL)) == 2
    assert "attempt:   2 (a rerun asked the model again" in result.stdout.str()
    # one result per item in the roll-up, the attempt that counted
    assert "1 item in 1 blueprint: 0/1 passed" in result.stdout.str()


def test_a_reason_pytest_has_no_room_for_is_said_below_the_summary(project: Project, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
    monkeypatch.setenv("COLUMNS", "60")  # the node id alone fills the summary line
    _failing(project)
    result = project.run()
    summary = section(result.outlines, "short test summary info")
    assert summary[0] == "FAILED blueprints/letters.yml::letters[openai:gpt-4o-mini]"
    assert summary[1] == "reasons the lines above had no room for (-vv shows them in place):"
    assert summary[2].startswith("  letters[openai:gpt-4o-mini]: score 0.33 < pass mark 0.50")
    assert len(summary) == 3
    # with room (or at -vv) pytest says it in place and nothing is added
    monkeypatch.setenv("COLUMNS", "200")
    wide = section(project.run().outlines, "short test summary info")
    assert len(wide) == 1 and " - score 0.33" in wide[0]


def test_dropped_reasons_when_pytest_runs_below_the_rootdir(project: Project, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
    monkeypatch.setenv("COLUMNS", "50")
    _failing(project)
    monkeypatch.chdir(project.path / "blueprints")  # node ids are shown relative to here
    summary = section(project.run(".").outlines, "short test summary info")
    assert summary[0] == "FAILED letters.yml::letters[openai:gpt-4o-mini]"
    assert summary[2].startswith("  letters[openai:gpt-4o-mini]: score 0.33")
