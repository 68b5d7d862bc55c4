"""The ``$js`` / ``$expr`` sandbox (docs/functions.md, '$js and $expr') and ``tool_args_match``'s string
``where`` (docs/functions.md, 'Tool-trace functions'), on one V8 isolate kept for the whole process.

The reference gives each script a fresh Node ``vm`` context. Starting a fresh isolate per
script would cost ~5 ms, so scripts share one, and this module restores the "fresh context"
guarantees around each run instead:

* **Script semantics.** The script runs through *indirect* ``eval``: global code whose
  completion value is the result (``r.length / 10``, ``({score: 1})``, ``const x = 1;`` gives
  undefined); a top-level ``return`` throws "Illegal return statement", and the script is then
  re-run as the body of an arrow function, as the reference does. ``let``/``const``/``class``
  are scoped to one eval, so a second script may declare the same names.
* **Globals.** ``r``, ``response`` and ``context`` are set on the global object before the run;
  afterwards every global the run added (``var``, function declarations, sloppy assignments)
  is deleted.
* **Intrinsics.** At start-up the setup script records every object reachable from the global
  object with its property descriptors. Before a run the record is compared, unless every run
  since the last comparison was of a script that cannot change a built-in (``js_inert.py``:
  the comparison costs more than a one-line script); if a past script changed a built-in
  (``Array.prototype.x = ...``), froze one, or a promise job it left behind did, the isolate is
  replaced (~5 ms, only then).
* **What the vm context lacks.** ``console`` and mini-racer's timer functions are removed; so
  are the ways to schedule work after the eval returns (``Atomics.wait``/``waitAsync``,
  ``FinalizationRegistry``, ``WebAssembly``). Promise jobs cannot be removed: a job that never
  ends wedges the isolate, which is detected on the next run and the isolate replaced.
* **Limits.** 100 ms per run (the reference's ``timeout``), a hard heap cap (``max_memory``).
  There is no ``require``, ``process``, file system, network or environment in V8.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pytest_weval.scoring import js_inert, v8
from pytest_weval.scoring.types import FnError, FnScore, PointFunctionThrew, RawResult

JS_TIMEOUT_S = 0.1
MEMORY_LIMIT_MB = 128

_SETUP_JS = r"""
(() => {
  'use strict';
  const G = globalThis;
  const indirectEval = G.eval;
  const FunctionCtor = Function;
  const stringify = JSON.stringify, parse = JSON.parse;
  const ownKeys = Reflect.ownKeys, getDesc = Reflect.getOwnPropertyDescriptor;
  const getProto = Reflect.getPrototypeOf, isExtensible = Reflect.isExtensible;
  const del = Reflect.deleteProperty, defineProperty = Reflect.defineProperty;
  const same = Object.is, mathMax = Math.max, mathMin = Math.min, toStr = String;

  // What the reference's vm context does not have, and ways to run code after the eval.
  const removed = ['console', 'setTimeout', 'clearTimeout', '__timer_manager',
                   'queueMicrotask', 'FinalizationRegistry', 'WebAssembly'];
  for (let i = 0; i < removed.length; i++) {
    if (!del(G, removed[i])) { try { G[removed[i]] = undefined; } catch (e) {} }
  }
  del(Atomics, 'wait'); del(Atomics, 'waitAsync');

  let phase = 0;
  const errText = (e) => { try { return toStr(e && e.message); } catch (x) { return 'unknown error'; } };

  // processResult() of the reference's js.ts, plus what createAssessmentFromResult reads.
  const classify = (result) => {
    if (typeof result === 'object' && result !== null && 'score' in result) {
      const out = { ...result };
      let score = out.score;
      if (typeof score === 'boolean') score = score ? 1 : 0;
      else if (typeof score === 'number') score = mathMax(0, mathMin(1, score));
      else return stringify({ kind: 'error', message: `Invalid score type: ${typeof out.score}` });
      const rec = { kind: 'score', score: score !== score ? 'NaN' : score };
      if ('error' in out) { rec.hasError = true; rec.error = toStr(out.error); }
      if (typeof out.explain === 'string' && out.explain) rec.explain = out.explain;
      return stringify(rec);
    }
    if (typeof result === 'boolean') return stringify({ kind: 'bool', value: result });
    if (typeof result === 'number') {
      const v = mathMax(0, mathMin(1, result));
      return stringify({ kind: 'num', value: v !== v ? 'NaN' : v });
    }
    if (result === undefined) return stringify({ kind: 'bool', value: false });
    return stringify({ kind: 'error',
      message: `Script returned an invalid type: ${typeof result}. Must return a boolean or a number.` });
  };

  // Mirrors js.ts, including its catch blocks' own failures (a thrown null has no .message):
  // those escaped the point function, so they come back as kind 'throw'.
  // `check`: compare the intrinsics with their record first (the caller skips it only when
  // every run since the last comparison was of an inert script, and keeps that account itself:
  // a script can call these functions too, but cannot change what the caller asks next).
  const run = (src, r, ctxJson, check) => {
    if (check && !pristine()) return '{"kind":"dirty"}';
    G.r = r; G.response = r; G.context = parse(ctxJson);
    phase = 1;
    try {
      let result;
      try {
        result = indirectEval(src);
      } catch (e) {
        if (!e.message.includes('Illegal return statement')) {
          return stringify({ kind: 'error', message: `Expression evaluation failed: ${e.message}` });
        }
        phase = 2;
        try {
          result = indirectEval(`(() => {
                    ${src}
                })();`);
        } catch (e2) {
          return stringify({ kind: 'error', message: `Expression evaluation failed on retry: ${e2.message}` });
        }
      }
      return classify(result);
    } catch (e) {
      return stringify({ kind: 'throw', message: errText(e) });
    } finally {
      phase = 0;
      cleanup();
    }
  };

  // tool_args_match's string `where`: `new Function('args', 'return (<where>);')` per call,
  // truthy means a match, errors are ignored. Returns the index of the first match or -1.
  const where = (src, argsJson, check) => {
    if (check && !pristine()) return -2;
    try {
      const list = parse(argsJson);
      for (let i = 0; i < list.length; i++) {
        try {
          const fn = new FunctionCtor('args', `return (${src});`);
          if (fn(list[i])) return i;
        } catch (e) { /* ignored, as in the reference */ }
      }
      return -1;
    } finally {
      cleanup();
    }
  };

  defineProperty(G, '__wevalRun', { value: run });
  defineProperty(G, '__wevalWhere', { value: where });
  defineProperty(G, '__wevalPhase', { value: () => phase });

  // Globals present now; anything a run adds is deleted after it.
  const baseline = Object.create(null);
  const baseKeys = ownKeys(G);
  for (let i = 0; i < baseKeys.length; i++) baseline[baseKeys[i]] = true;
  const cleanup = () => {
    const keys = ownKeys(G);
    for (let i = 0; i < keys.length; i++) if (baseline[keys[i]] !== true) del(G, keys[i]);
  };

  // The intrinsics' state: every object reachable from the global object and a few hidden
  // prototypes, with their own property descriptors. Plain built-in functions (no own
  // `prototype`) are walked through but not recorded: they only carry `length` and `name`,
  // and recording their ~700 objects would triple the check's cost (~0.4 ms as it is).
  // Plain indexed loops: a tampered Array.prototype iterator must not fool the check.
  const hidden = [function* () {}, async function () {}, async function* () {}];
  const roots = [G, Object.getPrototypeOf(Int8Array),
                 Object.getPrototypeOf([][Symbol.iterator]()),
                 Object.getPrototypeOf(new Map()[Symbol.iterator]()),
                 Object.getPrototypeOf(new Set()[Symbol.iterator]()),
                 Object.getPrototypeOf(''[Symbol.iterator]()),
                 Object.getPrototypeOf('a'.matchAll(/a/g))];
  for (let i = 0; i < hidden.length; i++) roots.push(Object.getPrototypeOf(hidden[i]));
  const seen = new Set();
  const objects = [];
  const visit = (o) => {
    if ((typeof o === 'object' && o !== null) || typeof o === 'function') {
      if (!seen.has(o)) { seen.add(o); objects.push(o); }
    }
  };
  for (let i = 0; i < roots.length; i++) visit(roots[i]);
  const flagsOf = (d) => (d.writable ? 1 : 0) | (d.enumerable ? 2 : 0) | (d.configurable ? 4 : 0);
  const plainFunction = (o) => typeof o === 'function' && getDesc(o, 'prototype') === undefined;
  const snapshot = [];
  for (let i = 0; i < objects.length; i++) {
    const o = objects[i];
    const keys = ownKeys(o);
    const rec = [o, getProto(o), isExtensible(o), keys.length];
    visit(getProto(o));
    for (let j = 0; j < keys.length; j++) {
      const d = getDesc(o, keys[j]);
      rec.push(keys[j], d.value, d.get, d.set, flagsOf(d));
      visit(d.value); visit(d.get); visit(d.set);
    }
    if (!plainFunction(o)) snapshot.push(rec);
  }
  const pristine = () => {
    for (let i = 0; i < snapshot.length; i++) {
      const s = snapshot[i];
      const o = s[0];
      if (getProto(o) !== s[1] || isExtensible(o) !== s[2] || ownKeys(o).length !== s[3]) return false;
      for (let j = 4; j < s.length; j += 5) {
        const d = getDesc(o, s[j]);
        if (d === undefined || !same(d.value, s[j + 1]) || d.get !== s[j + 2] ||
            d.set !== s[j + 3] || flagsOf(d) !== s[j + 4]) return false;
      }
    }
    return true;
  };
  cleanup();
})();
"""

_SANDBOX = v8.Isolate("sandbox", _SETUP_JS, MEMORY_LIMIT_MB * 1024 * 1024)


class _Account:
    """Whether every run on the sandbox since its start or its last comparison was of an inert
    script (``js_inert.py``), so that the next run may skip the comparison. Kept here, not in
    the isolate, where a script could change it. Read and written under ``_SANDBOX.lock``."""

    clean = True

    def before_run(self) -> str:
        """The runner's ``check`` argument; the account stays unclean until the run is over."""
        check, self.clean = not self.clean, False
        return "true" if check else "false"

    def reset(self) -> None:
        _SANDBOX.reset()
        self.clean = True  # a fresh isolate is as its record says


_ACCOUNT = _Account()


def _timeout_message(prefix: str) -> str:
    return f"{prefix}: Script execution timed out after {int(JS_TIMEOUT_S * 1000)}ms"


def run_script(src: str, response: str, messages: list[dict[str, Any]], model_id: str) -> RawResult:
    """Run a ``$js`` script; the raw result as the reference's ``js`` point function gives it."""
    context_json = json.dumps({"messages": messages, "modelId": model_id})
    inert = js_inert.is_inert(src)
    code = f"__wevalRun({json.dumps(src)},{json.dumps(response)},{json.dumps(context_json)},"
    with _SANDBOX.lock:
        for attempt in (1, 2):
            try:
                out = json.loads(_SANDBOX.eval(code + _ACCOUNT.before_run() + ")", JS_TIMEOUT_S))
            except v8.JsTimeout:
                if attempt == 1:
                    # Either a job an earlier script left behind still holds the isolate, or the
                    # machine was too busy to give this script its 100 ms (a loaded CI runner):
                    # one more run on a fresh isolate tells a slow machine from a script that
                    # never ends, at the cost of a second 100 ms for the latter.
                    _SANDBOX.reset()
                    continue
                prefix = "Expression evaluation failed"
                if _current_phase() == 2:
                    prefix += " on retry"
                _SANDBOX.reset()  # cut off mid-run: its globals were never cleaned up
                return FnError(_timeout_message(prefix))
            except v8.JsOutOfMemory:
                _SANDBOX.reset()
                return FnError(
                    "Expression evaluation failed: the script exceeded the sandbox's memory "
                    f"limit ({MEMORY_LIMIT_MB} MB)"
                )
            except v8.JsEngineError as exc:  # our runner never throws; be safe and start over
                _SANDBOX.reset()
                return FnError(f"Expression evaluation failed: {exc}")
            if out["kind"] == "dirty":
                _ACCOUNT.reset()  # a past script changed the built-ins: start from a fresh one
                continue
            _ACCOUNT.clean = inert
            return _convert(out)
    _SANDBOX.reset()
    return FnError("Expression evaluation failed: the JavaScript sandbox could not be restored")


def _current_phase() -> int:
    try:
        return int(_SANDBOX.eval("__wevalPhase()", 0.05))
    except (v8.JsTimeout, v8.JsOutOfMemory, v8.JsEngineError):
        return 0


def _number(value: Any) -> float:
    return math.nan if value == "NaN" else float(value)


def _convert(out: dict[str, Any]) -> RawResult:
    kind = out["kind"]
    if kind == "bool":
        return bool(out["value"])
    if kind == "num":
        return _number(out["value"])
    if kind == "score":
        if out.get("hasError"):
            return FnError(out.get("error", "undefined"))
        return FnScore(_number(out["score"]), out.get("explain"))
    if kind == "error":
        return FnError(out["message"])
    raise PointFunctionThrew(out["message"])


def where_matches(where_src: str, args_list: list[Any]) -> bool | FnError:
    """True when ``where_src`` is truthy for one of ``args_list`` (each bound as ``args``)."""
    if not args_list:
        return False
    code = f"__wevalWhere({json.dumps(where_src)},{json.dumps(json.dumps(args_list))},"
    with _SANDBOX.lock:
        for attempt in (1, 2):
            try:
                index = _SANDBOX.eval(code + _ACCOUNT.before_run() + ")", JS_TIMEOUT_S)
            except v8.JsTimeout:
                if attempt == 1 and not _SANDBOX.probe():
                    _SANDBOX.reset()
                    continue
                _SANDBOX.reset()
                return FnError(
                    f"tool_args_match: the 'where' expression did not finish within {int(JS_TIMEOUT_S * 1000)}ms"
                )
            except v8.JsOutOfMemory:
                _SANDBOX.reset()
                return FnError(f"tool_args_match: the 'where' expression exceeded {MEMORY_LIMIT_MB} MB")
            except v8.JsEngineError as exc:
                _SANDBOX.reset()
                return FnError(f"tool_args_match: the 'where' expression failed: {exc}")
            if index == -2:
                _ACCOUNT.reset()
                continue
            return index >= 0
    _SANDBOX.reset()
    return FnError("tool_args_match: the JavaScript sandbox could not be restored")
