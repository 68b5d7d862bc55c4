"""promptfoo's python assertions: the script promptfoo 0.123.1 builds around the written code,
and what the value ``main`` returns means (its ``normalizeScriptResult``). The program itself
runs in the run layer (tests/plugin/test_plugin_promptfoo.py)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_weval.blueprint.model import Location
from pytest_weval.scoring.promptfoo import AssertionContext, parse_assertion, python_call, python_result
from pytest_weval.scoring.promptfoo.python import build_script

WHERE = Location(path="promptfooconfig.yaml", line=7, column=9, field="tests[0].assert[0]")


def _result(raw: dict[str, Any], value: Any = None, error: str | None = None):
    assertion = parse_assertion({"type": "python", **raw}, WHERE)
    call = python_call(assertion, AssertionContext(output="the answer"))
    return python_result(assertion, call, value, error)


def test_a_one_line_value_is_returned_and_a_block_is_the_body_indented_as_written():
    assert build_script("output == 'x'") == "import json\n\ndef main(output, context):\n    return output == 'x'\n"
    block = "if output:\n  return True\nreturn False"
    assert build_script(block) == (
        "import json\n\ndef main(output, context):\n  if output:\n    return True\n  return False\n"
    )


@pytest.mark.parametrize(
    ("raw", "value", "passed", "score"),
    [
        ({"value": "True"}, True, True, 1.0),
        ({"value": "False"}, "false", False, 0.0),  # the text "false" is a boolean too
        ({"value": "0.4"}, 0.4, True, 0.4),  # a number passes above 0 without a threshold
        ({"value": "0.4", "threshold": 0.5}, 0.4, False, 0.4),
        ({"value": "0", "type": "not-python"}, 0, True, 0.0),
        ({"value": "x"}, '{"pass": true, "score": 0.9, "reason": "fine"}', True, 0.9),  # JSON text
    ],
)
def test_the_value_main_returns_means_what_it_means_to_promptfoo(raw, value, passed, score):
    result = _result(raw, value)
    assert (result.pass_, result.score) == (passed, score)


def test_an_object_is_read_with_its_snake_case_keys_and_held_to_the_threshold():
    result = _result(
        {"value": "x", "threshold": 0.8},
        {"pass": True, "score": 0.6, "reason": "ok", "named_scores": {"tone": 0.6}},
    )
    assert result.pass_ is False and result.reason == "Python score 0.6 is less than threshold 0.8: ok"
    assert result.named_scores == {"tone": 0.6}


def test_what_is_no_result_fails_the_assertion_with_the_reason():
    assert _result({"value": "x"}, None).reason.startswith(
        "Python code execution failed: Python assertion must return a boolean, number"
    )
    failed = _result({"value": "x"}, error="NameError: name 'y' is not defined")
    assert (failed.pass_, failed.score) == (False, 0.0)
    assert failed.reason == "Python code execution failed: NameError: name 'y' is not defined"
