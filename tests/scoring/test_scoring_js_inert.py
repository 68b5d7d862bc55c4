"""Inert ``$js`` scripts skip the sandbox's comparison of the built-ins; nothing another script
does leaks into them all the same."""

from __future__ import annotations

import pytest

from pytest_weval.scoring import PointContext, call_point_function, jsbox
from pytest_weval.scoring.js_inert import is_inert

CTX = PointContext(messages=[{"role": "user", "content": "hi"}], model_id="m", prompt_id="p", config={})


def js(script: str, text: str = "some response text") -> object:
    return call_point_function("js", script, text, CTX)


@pytest.mark.parametrize(
    "script",
    [
        "r.length > 5",
        "r.includes('x') && !response.includes(\"y\")",
        "return r.split(' ').length < 50",
        "({score: r.length / 100, explain: `long`})",
        "context.messages.at(-1).content.toLowerCase().includes('hi')",
        "Math.max(1, 2) === 2 && typeof r === 'string'",
        "r?.length >= 1.5e3 || JSON.parse('1') === 1",
        "(r.length) / 2 > 1",
    ],
)
def test_read_only_scripts_are_inert(script: str) -> None:
    assert is_inert(script)


@pytest.mark.parametrize(
    "script",
    [
        "Math.max = () => 42; true",  # an assignment
        "String.prototype.includes = () => true",
        "r.length++",
        "delete Math.max",
        "x => 1",  # a function of its own
        "r.constructor.constructor('return 1')()",  # a name outside the list
        "Object.freeze(Math)",
        "r['constr' + 'uctor']",  # a computed member
        "`${r}`",  # a template with code in it
        "r.\\u0063onstructor",  # an escaped name
        "1..constructor",
        "return /'/.test(r); Math.max = 1; /'/",  # a regular expression read as code
        "r //x\n",  # a comment
        "typeof /x/",
        "r <!-- x",  # an HTML-like comment
        "'unterminated",
        "r.length;\u00a0true",  # a space JavaScript knows and this reading does not
        "__wevalRun('Math.max = 1', '', '{}', false)",
    ],
)
def test_scripts_that_could_write_are_not(script: str) -> None:
    assert not is_inert(script)


@pytest.mark.parametrize(
    "tamper, check",
    [
        ("Math.max = () => 42; true", "Math.max(1, 2) === 2"),
        ("String.prototype.includes = () => true; true", "!r.includes('zzz')"),
        ("Object.defineProperty(String.prototype, 'trim', {value: () => 'x'}); true", "r.trim() === r"),
        ("Promise.resolve().then(() => { JSON.parse = () => 7; }); true", "JSON.parse('1') === 1"),
        # a script calling the runner itself, claiming no comparison is needed
        ("__wevalRun('Math.max = () => 42', '', '{}', false); true", "Math.max(1, 2) === 2"),
    ],
    ids=["namespace", "prototype", "define-property", "late-promise-job", "runner-called-by-a-script"],
)
def test_an_inert_script_after_a_tampering_one_sees_fresh_built_ins(tamper: str, check: str) -> None:
    assert is_inert(check) and not is_inert(tamper)
    assert js(tamper) is True
    assert js(check) is True
    assert js(check) is True  # and the inert one after it too


def test_the_account_is_clean_only_after_inert_runs() -> None:
    assert js("r.length > 0") is True
    assert jsbox._ACCOUNT.clean
    assert js("const n = r.length; n > 0") is True
    assert not jsbox._ACCOUNT.clean
    assert js("r.length > 0") is True  # compared first, then clean again
    assert jsbox._ACCOUNT.clean
