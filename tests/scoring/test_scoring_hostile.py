"""Hostile blueprints: every runaway script or pattern is a point error within its bound, the
sandbox offers no host access, nothing a script does leaks into the next, and the point
after it still works."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from pytest_weval.blueprint.model import EvalPoint
from pytest_weval.scoring import FnError, PointContext, call_point_function, score_function_points

CTX = PointContext(messages=[{"role": "user", "content": "hi"}], model_id="m", prompt_id="p", config={})
# A runaway stopped by its limit (100 ms of JavaScript, 250 ms a pattern) comes back in well under
# a second; one that is not stopped runs for ever. The bound tells them apart on any machine.
BOUND_S = 30.0


def run(fn: str, args: Any, text: str = "some response text") -> tuple[Any, float]:
    start = time.perf_counter()
    result = call_point_function(fn, args, text, CTX)
    return result, time.perf_counter() - start


def assert_next_point_works() -> None:
    assert run("js", "r.length > 0 && [1, 2].includes(2)")[0] is True
    assert run("matches", r"\bresponse\b")[0] is True


@pytest.mark.parametrize(
    "script, message",
    [
        ("while (true) {}", "Script execution timed out after 100ms"),
        ("for (;;) { Math.random(); }", "Script execution timed out after 100ms"),
        ("return (function f() { while (true) {} })()", "failed on retry: Script execution timed out"),
        ("let a = []; while (1) a.push(new Array(1e6))", "Expression evaluation failed"),
        ("let s = 'x'; while (true) s += s;", "Expression evaluation failed"),
        ("const f = () => f(); f()", "Maximum call stack size exceeded"),
    ],
    ids=["infinite-loop", "busy-loop", "loop-on-retry", "memory-bomb", "string-bomb", "stack-bomb"],
)
def test_runaway_script_is_a_bounded_point_error(script: str, message: str) -> None:
    result, elapsed = run("js", script)
    assert isinstance(result, FnError), result
    assert message in result.message
    assert elapsed < BOUND_S
    assert_next_point_works()


@pytest.mark.parametrize(
    "script, message",
    [
        ("require('fs').readFileSync('/etc/passwd', 'utf8')", "require is not defined"),
        ("process.env.HOME", "process is not defined"),
        ("console.log('hi'); true", "console is not defined"),
        ("fetch('http://127.0.0.1:9/')", "fetch is not defined"),
        ("new XMLHttpRequest()", "XMLHttpRequest is not defined"),
        ("this.constructor.constructor('return process')().exit(1)", "process is not defined"),
        ("setTimeout(() => {}, 1)", "setTimeout is not a function"),
        ("Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)", "not a function"),
        ("new __TimerManager().setTimeout(() => { while (true) {} }, 1)", "not a function"),
        ("new FinalizationRegistry(() => {})", "FinalizationRegistry is not defined"),
        ("WebAssembly.compile(new Uint8Array(8))", "WebAssembly is not defined"),
    ],
    ids=[
        "require-fs",
        "process-env",
        "console",
        "fetch",
        "xhr",
        "constructor-escape",
        "setTimeout",
        "atomics-wait",
        "timer-manager",
        "finalization-registry",
        "wasm",
    ],
)
def test_no_host_access(script: str, message: str) -> None:
    result, elapsed = run("js", script)
    assert isinstance(result, FnError), result
    assert message in result.message
    assert elapsed < BOUND_S
    assert_next_point_works()


def test_sandbox_globals_are_the_reference_vm_context() -> None:
    names = [
        "require",
        "process",
        "console",
        "fetch",
        "XMLHttpRequest",
        "WebSocket",
        "setTimeout",
        "setInterval",
        "clearTimeout",
        "queueMicrotask",
        "Deno",
        "Bun",
        "module",
        "exports",
        "__dirname",
        "Buffer",
        "FinalizationRegistry",
        "WebAssembly",
    ]
    script = f"{names!r}.every(n => typeof globalThis[n] === 'undefined')"
    assert run("js", script)[0] is True
    assert run("js", "typeof r === 'string' && r === response && this.process === undefined")[0]


def test_dynamic_import_is_not_a_score() -> None:
    result, elapsed = run("js", "import('fs')")
    assert isinstance(result, FnError) and "invalid type: object" in result.message
    assert elapsed < BOUND_S
    assert_next_point_works()


@pytest.mark.parametrize(
    "script",
    [
        "Promise.resolve().then(() => { while (true) {} }); true",
        "(async () => { for (;;) await null; })(); true",
    ],
    ids=["endless-promise-job", "endless-await-chain"],
)
def test_work_left_behind_does_not_wedge_the_next_point(script: str) -> None:
    # The script itself returns at once; its leftover job would hold V8 forever. The next
    # point detects it, replaces the isolate and still gets its own answer.
    assert run("js", script)[0] is True
    start = time.perf_counter()
    assert_next_point_works()
    assert time.perf_counter() - start < BOUND_S


@pytest.mark.parametrize(
    "tamper, check",
    [
        ("Array.prototype.includes = () => true; true", "[1].includes(2) === false"),
        ("Object.prototype.polluted = 1; true", "({}).polluted === undefined"),
        ("Math.max = () => 42; true", "Math.max(1, 2) === 2"),
        ("JSON = null; true", "JSON.stringify(1) === '1'"),
        ("Object.freeze(String.prototype); true", "Object.isFrozen(String.prototype) === false"),
        ("var leaked = 1; globalLeak = 2; true", "typeof leaked + typeof globalLeak === 'undefinedundefined'"),
        ("Object.defineProperty(globalThis, 'stuck', {value: 1}); true", "typeof stuck === 'undefined'"),
        ("Promise.resolve().then(() => { Array.prototype.map = null; }); true", "[1].map(x => x)[0] === 1"),
        ("let r2 = 1; const c = 2; class K {}; true", "let r2 = 3; const c = 4; class K {}; r2 === 3"),
    ],
    ids=[
        "prototype-method",
        "object-prototype",
        "namespace",
        "global-binding",
        "freeze",
        "var-and-sloppy-globals",
        "non-configurable-global",
        "late-promise-job",
        "lexical-names",
    ],
)
def test_scripts_do_not_leak_into_the_next(tamper: str, check: str) -> None:
    assert run("js", tamper)[0] is True
    assert run("js", check)[0] is True


def test_where_expression_is_bounded() -> None:
    args = {"name": "search", "where": "(() => { while (true) {} })()"}
    text = 'TOOL_CALL {"name": "search", "arguments": {"q": "x"}}'
    result, elapsed = run("tool_args_match", args, text)
    assert isinstance(result, FnError) and "did not finish" in result.message
    assert elapsed < BOUND_S
    ok = {"name": "search", "where": "args.q === 'x' && typeof process === 'undefined'"}
    assert run("tool_args_match", ok, text)[0] is True


BOMB_TEXT = "a" * 40 + "!"


def test_backtracking_bomb_is_a_bounded_point_error() -> None:
    result, elapsed = run("matches", "(a+)+$", BOMB_TEXT)
    assert isinstance(result, FnError) and "did not finish" in result.message
    assert not result.authoring  # the pattern is valid; this response makes it explode
    assert elapsed < BOUND_S
    assert run("matches", "a+!", BOMB_TEXT)[0] is True
    assert_next_point_works()


def test_bomb_in_a_batch_only_costs_its_own_point() -> None:
    patterns = ["^a", "(a+)+$", "!$", "(x+x+)+y"]
    result, _elapsed = run("matches_all_of", patterns[:1] + patterns[2:], BOMB_TEXT)
    assert result == pytest.approx(2 / 3)
    points = [
        EvalPoint(fn="matches", fn_args=p, has_args=True, display_text=f"Function: matches({p})") for p in patterns
    ]
    start = time.perf_counter()
    out = asyncio.run(score_function_points(points, BOMB_TEXT, CTX))
    assert time.perf_counter() - start < BOUND_S
    assert [a.coverage_extent for a in out] == [1.0, None, 1.0, 0.0]
    assert "did not finish" in (out[1].error or "")


async def test_runaway_points_do_not_block_the_event_loop() -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    points = [
        EvalPoint(fn="js", fn_args="while (true) {}", has_args=True, display_text="js"),
        EvalPoint(fn="matches", fn_args="(a+)+$", has_args=True, display_text="re"),
    ]
    out = await score_function_points(points, BOMB_TEXT, CTX)
    task.cancel()
    assert all(a.error for a in out)
    # ~350 ms of V8 time ran off the loop while the ticker kept going; a loop held by the
    # points would not have ticked at all until they were done
    assert ticks >= 3
