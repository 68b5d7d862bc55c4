"""What a run writes (--weval-out, --weval-html, --junitxml) and says on the terminal: output
paths checked before anything is sent, full disks, the cache header, notices between progress
lines, narrow terminals and text from files made safe to print."""

from __future__ import annotations

import json

import pytest
from plugin_helpers import JUDGE_ID, MODEL_ID, Project, answer_rule

ESC = "\x1b"

SIMPLE = f"""\
title: Simple
models: [{MODEL_ID}]
---
- id: greet
  prompt: Say hello.
  should:
    - $contains: hello
- id: part
  prompt: Say goodbye.
  should:
    - $contains: goodbye
"""


def _simple(project: Project, rel: str = "blueprints/simple.yml") -> None:
    project.write(rel, SIMPLE)
    project.rules(answer_rule("Say hello.", "hello"), answer_rule("Say goodbye.", "goodbye"))


# -- issue 40 item 9: the header says a cache is new ------------------------------------------
def test_the_header_says_new_for_a_cache_the_run_creates(project: Project):
    _simple(project)
    first = project.run("-p", "no:randomly")
    assert first.ret == pytest.ExitCode.OK
    header = [line for line in first.outlines if line.startswith("weval: cache ")]
    assert header and header[0].endswith("(sqlite, rw, new)"), header
    again = project.run("-p", "no:randomly")
    header = [line for line in again.outlines if line.startswith("weval: cache ")]
    assert header and header[0].endswith("(sqlite, rw)"), header


# -- issue 40 item 16: a project below a dot-directory still gets the hint ---------------------
def test_a_project_below_a_hidden_folder_gets_the_no_blueprint_hint(project: Project):
    project.write(".work/proj/evals/one.yml", SIMPLE)
    result = project.run(".work/proj/evals")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    out = result.stdout.str()
    assert "holds 1 YAML/JSON file, but no blueprint was collected" in out, out


def test_hidden_folders_below_the_named_one_are_still_not_counted(project: Project):
    project.write("evals/.venv/lib/x.yml", SIMPLE)
    result = project.run("evals")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "no blueprint was collected" not in result.stdout.str()


# -- issue 41 item 8: escape bytes from files are written out, never sent to the terminal -------
def test_the_plan_table_shows_a_model_id_with_escapes_written_out(project: Project):
    project.write(
        "blueprints/esc.yml",
        'title: Escapes\nmodels: ["openai:gpt\\e]0;owned\\a-4o\\e[2J"]\n---\n- id: p\n  prompt: Hi.\n'
        "  should:\n    - $contains: hi\n",
    )
    result = project.run("--collect-only", "-p", "no:randomly")
    text = result.stdout.str() + result.stderr.str()
    assert "weval plan" in text, text
    assert ESC not in text and "\a" not in text
    assert "\\x1b[2J" in text


def test_an_unused_fixture_id_with_escapes_is_written_out_in_the_warning(project: Project):
    _simple(project)
    project.write("fixtures.json", json.dumps({"responses": {f"gre{ESC}[31met": {"default": "hello"}}}))
    result = project.run("--weval-fixtures=fixtures.json", "-p", "no:randomly")
    text = result.stdout.str() + result.stderr.str()
    assert "matches no collected prompt" in text, text
    assert ESC not in text
    assert "gre\\x1b[31met" in text


def test_a_model_id_with_escapes_is_written_out_when_the_pre_flight_stops(project: Project):
    project.write(
        "blueprints/esc.yml",
        'title: Escapes\nmodels: ["anthropic:clau\\e[2Jde"]\n---\n- id: p\n  prompt: Hi.\n'
        "  should:\n    - $contains: hi\n",
    )
    result = project.run("-p", "no:randomly", f"--weval-judges={JUDGE_ID}")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert ESC not in text
    assert project.requests() == []
