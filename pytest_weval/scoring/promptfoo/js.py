"""JavaScript of promptfoo suites, in a V8 isolate of our own: ``javascript`` assertions and
``transform`` (the test's ``options.transform`` and an assertion's ``transform``).

promptfoo 0.123.1 compiles inline code with ``new Function('output', 'context', 'process', body)``
in its own Node realm: a one-line assertion becomes ``return <line>`` (after any leading
``const``/``let``/``var`` statements), a multi-line one is the body as written; a one-line
transform becomes ``return <line>``. We compile the same bodies the same way, in V8, with what
V8 lacks compared with Node: no ``require``, no file system, network or environment
(``process`` is ``{env: {}}``), no ``console``, no timers. A script runs at most
``JS_TIMEOUT_S`` (promptfoo has no limit: a loop that never ends hangs it) and within a memory
cap; globals a script adds are removed after it, so one script cannot leave state for another.
An asynchronous result (a promise) is not awaited: such a script is an error here.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pytest_weval.errors import WevalError
from pytest_weval.scoring import v8
from pytest_weval.scoring.promptfoo.model import AssertionContext

__all__ = [
    "JS_TIMEOUT_S",
    "JsOutcome",
    "ScriptError",
    "apply_transform",
    "assertion_body",
    "run_function",
    "run_transform",
    "treebank_tokens",
]

JS_TIMEOUT_S = 1.0
MEMORY_LIMIT_MB = 128

_SETUP_JS = r"""
(() => {
  'use strict';
  const G = globalThis;
  const FunctionCtor = Function, stringify = JSON.stringify, parse = JSON.parse;
  const ownKeys = Reflect.ownKeys, del = Reflect.deleteProperty, defineProperty = Reflect.defineProperty;
  const toStr = String, isFinite = Number.isFinite, freeze = Object.freeze;
  for (const name of ['console', 'setTimeout', 'clearTimeout', '__timer_manager', 'queueMicrotask',
                      'FinalizationRegistry', 'WebAssembly']) {
    if (!del(G, name)) { try { G[name] = undefined; } catch (e) {} }
  }
  del(Atomics, 'wait'); del(Atomics, 'waitAsync');

  const encode = (value) => {
    const t = typeof value;
    if (t === 'number') return { t, v: isFinite(value) ? value : toStr(value) };
    if (t === 'undefined') return { t };
    if (t === 'function' || t === 'symbol' || t === 'bigint') return { t, text: toStr(value) };
    if (value !== null && t === 'object' && typeof value.then === 'function') return { t: 'promise' };
    let json;
    try { json = stringify(value); } catch (e) { return { t: 'unserializable', text: toStr(e && e.message) }; }
    return { t, json };
  };

  const errorOf = (e) => {
    let message = 'unknown error', stack = '';
    try { message = toStr(e && e.message !== undefined ? e.message : e); } catch (x) {}
    try { stack = toStr(e && e.stack !== undefined ? e.stack : ''); } catch (x) {}
    return { error: true, message, stack };
  };

  // Runs `body` as promptfoo's new Function(param, 'context', 'process', body)(input, context, process).
  const run = (param, body, inputJson, contextJson, providerJson) => {
    try {
      const context = parse(contextJson);
      if (providerJson !== '') {
        const provider = parse(providerJson);
        context.provider = { ...provider, id: () => provider.id };
      }
      const processShim = freeze({ env: freeze({}) });
      let fn;
      try {
        fn = new FunctionCtor(param, 'context', 'process', body);
      } catch (e) {
        return stringify(errorOf(e));
      }
      try {
        return stringify({ result: encode(fn(parse(inputJson), context, processShim)) });
      } catch (e) {
        return stringify(errorOf(e));
      }
    } finally {
      cleanup();
    }
  };
  defineProperty(G, '__pfRun', { value: run });

  // js-rouge 3's treeBankTokenize (Penn Treebank conventions), which promptfoo's rouge-n uses:
  // the same replacements in the same order, on V8 so that \b, \s and the rest are ECMAScript's.
  const contractions = [/\b(can)(not)\b/i, /\b(d)('ye)\b/i, /\b(gim)(me)\b/i, /\b(gon)(na)\b/i,
    /\b(got)(ta)\b/i, /\b(lem)(me)\b/i, /\b(more)('n)\b/i, /\b(wan)(na) /i, / ('t)(is)\b/i,
    / ('t)(was)\b/i];
  const treebank = (text) => {
    if (text.length === 0) return [];
    let s = text.replace(/^"/, ' `` ').replace(/([ ([{<])"/g, '$1 `` ').replace(/\.\.\.*/g, ' ... ')
      .replace(/[;@#$%&]/g, ' $& ').replace(/([^.])(\.)([\])}>"']*)\s*$/g, '$1 $2$3 ')
      .replace(/[,?!]/g, ' $& ').replace(/[\][(){}<>]/g, ' $& ').replace(/---*/g, ' -- ');
    s = ` ${s} `;
    s = s.replace(/"/g, " '' ").replace(/([^'])' /g, "$1 ' ").replace(/'([sSmMdD]) /g, " '$1 ")
      .replace(/('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) /g, ' $1 ');
    for (let i = 0; i < contractions.length; i++) s = s.replace(contractions[i], ' $1 $2 ');
    return s.replace(/ {2,}/g, ' ').replace(/^ | $/g, '').split(' ');
  };
  defineProperty(G, '__pfTreebank', { value: (textJson) => stringify(treebank(parse(textJson))) });

  const baseline = Object.create(null);
  for (const key of ownKeys(G)) baseline[key] = true;
  const cleanup = () => {
    const keys = ownKeys(G);
    for (let i = 0; i < keys.length; i++) if (baseline[keys[i]] !== true) del(G, keys[i]);
  };
  cleanup();
})();
"""

_ISOLATE = v8.Isolate("promptfoo", _SETUP_JS, MEMORY_LIMIT_MB * 1024 * 1024)

_ABSENT = object()


class ScriptError(WevalError):
    """The script could not run to a value: it threw, ran too long, or ran out of memory."""

    def __init__(self, message: str, stack: str = ""):
        super().__init__(message)
        self.message = message
        self.stack = stack


class JsOutcome:
    """What a script returned: ``typeof`` and the value (JSON values as Python; NaN/Infinity as
    floats; ``undefined`` as ``is_undefined``)."""

    def __init__(self, typeof: str, value: Any = None, text: str = ""):
        self.typeof = typeof
        self.value = value
        self.text = text

    @property
    def is_undefined(self) -> bool:
        return self.typeof == "undefined"


def _decode(encoded: dict[str, Any]) -> JsOutcome:
    kind = encoded["t"]
    if kind == "number":
        value = encoded["v"]
        return JsOutcome("number", float(value) if isinstance(value, str) else value)
    if "json" in encoded:
        return JsOutcome(kind, json.loads(encoded["json"]))
    return JsOutcome(kind, None, encoded.get("text", ""))


def run_function(
    param: str, body: str, argument: Any, context: dict[str, Any], provider: dict[str, Any] | None
) -> JsOutcome:
    """``new Function(param, 'context', 'process', body)(argument, context, process)``."""
    code = (
        f"__pfRun({json.dumps(param)},{json.dumps(body)},{json.dumps(_json(argument))},"
        f"{json.dumps(_json(context))},{json.dumps('' if provider is None else _json(provider))})"
    )
    with _ISOLATE.lock:
        out = _eval_once_more_on_timeout(code)
    if out.get("error"):
        raise ScriptError(out["message"], out.get("stack", ""))
    return _decode(out["result"])


def treebank_tokens(text: str) -> list[str]:
    """js-rouge's ``treeBankTokenize(text)`` (run on V8: its regexes are ECMAScript's)."""
    with _ISOLATE.lock:
        try:
            return list(json.loads(_ISOLATE.eval(f"__pfTreebank({json.dumps(_json(text))})", 5.0)))
        except (v8.JsTimeout, v8.JsOutOfMemory, v8.JsEngineError) as exc:
            _ISOLATE.reset()
            raise ScriptError(f"rouge-n could not tokenize the output: {exc or type(exc).__name__}") from None


def _eval_once_more_on_timeout(code: str) -> dict[str, Any]:
    """Evaluate a run (the caller holds the lock). A timeout is tried once more on a fresh
    isolate: the time is measured from Python, so a busy machine can make a quick script look
    slow; a script that never ends times out twice."""
    for attempt in (1, 2):
        try:
            return dict(json.loads(_ISOLATE.eval(code, JS_TIMEOUT_S)))
        except v8.JsTimeout:
            _ISOLATE.reset()  # cut off mid-run: its globals were never removed
            if attempt == 1:
                continue
            raise ScriptError(f"the script did not finish within {JS_TIMEOUT_S:g} s") from None
        except v8.JsOutOfMemory:
            _ISOLATE.reset()
            raise ScriptError(f"the script exceeded the sandbox's memory limit ({MEMORY_LIMIT_MB} MB)") from None
        except v8.JsEngineError as exc:
            _ISOLATE.reset()
            raise ScriptError(str(exc)) from None
    raise AssertionError("unreachable")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)


def _is_escaped(code: str, index: int) -> bool:
    count, i = 0, index - 1
    while i >= 0 and code[i] == "\\":
        count += 1
        i -= 1
    return count % 2 == 1


def _last_statement_semicolon(code: str) -> int:
    single = double = template = False
    last = -1
    for i, ch in enumerate(code):
        if not _is_escaped(code, i):
            if ch == "'" and not double and not template:
                single = not single
            elif ch == '"' and not single and not template:
                double = not double
            elif ch == "`" and not single and not double:
                template = not template
        if ch == ";" and not single and not double and not template:
            last = i
    return last


_TRAILING_SEMICOLONS = re.compile(r";+\s*$")
_DECLARATION = re.compile(r"^(const|let|var)\s")


def assertion_body(code: str) -> str:
    """The function body promptfoo makes of an inline ``javascript`` assertion (``code`` already
    without trailing whitespace): multi-line as written; one line as ``return <line>``, or, after
    leading declarations, ``<declarations> return <last expression>``."""
    if "\n" in code:
        return code
    trimmed = _TRAILING_SEMICOLONS.sub("", code.strip())
    if _DECLARATION.match(trimmed):
        last = _last_statement_semicolon(trimmed)
        if last != -1:
            statements, expression = trimmed[: last + 1], trimmed[last + 1 :].strip()
            if expression:
                return f"{statements} return {expression}"
        return trimmed
    return f"return {trimmed}"


def _transform_label(code: str) -> str:
    single = re.sub(r"\s+", " ", code).strip()
    shown = f"{single[:79]}…" if len(single) > 80 else single
    return f"[inline transform]: {shown}"


def run_transform(code: str, output: Any, ctx: AssertionContext, *, test_level: bool = False) -> Any:
    """promptfoo's ``transform``: the value ``code`` makes of ``output``. Raises ``ScriptError``
    with promptfoo's messages when it throws or returns nothing (the row is then an error)."""
    body = code if "\n" in code else f"return {code}"
    context: dict[str, Any] = {"vars": dict(ctx.vars)}
    if test_level:
        context["prompt"] = {"raw": ctx.prompt, "label": ctx.prompt_label or ctx.prompt}
    else:
        context["prompt"] = {"label": ctx.prompt}
    if ctx.provider_metadata:
        context["metadata"] = dict(ctx.provider_metadata)
    try:
        outcome = run_function("output", body, output, context, None)
    except ScriptError as exc:
        raise ScriptError(f"Transform failed ({_transform_label(code)}): {exc.message}", exc.stack) from None
    if outcome.is_undefined or (outcome.typeof == "object" and outcome.value is None):
        raise ScriptError(f"Transform function did not return a value\n\n{_transform_label(code)}")
    if outcome.typeof == "promise":
        raise ScriptError(
            f"Transform failed ({_transform_label(code)}): it returned a promise; asynchronous transforms are not supported"
        )
    if outcome.typeof == "number" and isinstance(outcome.value, float) and not math.isfinite(outcome.value):
        return outcome.value
    return outcome.value if outcome.typeof not in {"function", "symbol", "bigint"} else outcome.text


def apply_transform(code: str, ctx: AssertionContext) -> Any:
    """A test's ``options.transform`` applied to ``ctx.output``: the output its assertions score.
    Raises ``ScriptError`` (promptfoo's message) when the transform fails: the row is an error."""
    return run_transform(code, ctx.output, ctx, test_level=True)


def assertion_context(ctx: AssertionContext, config: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``context`` as promptfoo hands it to a ``javascript`` assertion, and the provider (whose
    ``id()`` the sandbox makes a function)."""
    context: dict[str, Any] = {
        "prompt": ctx.prompt,
        "vars": dict(ctx.vars),
        "test": dict(ctx.test),
        "providerResponse": {
            "output": ctx.output,
            **({"cost": ctx.cost} if ctx.cost is not None else {}),
            **({"latencyMs": ctx.latency_ms} if ctx.latency_ms is not None else {}),
            **({"metadata": dict(ctx.provider_metadata)} if ctx.provider_metadata else {}),
        },
    }
    if config is not None:
        context["config"] = config
    if ctx.provider_metadata:
        context["metadata"] = dict(ctx.provider_metadata)
    provider = {"id": ctx.provider_id, **({"label": ctx.provider_label} if ctx.provider_label else {})}
    return context, provider
