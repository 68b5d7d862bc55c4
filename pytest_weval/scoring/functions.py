"""The point-function registry and the string/regex/word/JSON functions
(docs/functions.md, 'Contract' and 'Text functions').

Every function takes ``(text, args, env)`` and returns a ``RawResult`` the way its TypeScript
original does, with the same argument checks and error texts. ``not_*`` functions wrap the
positive one: errors pass through, booleans flip, numbers become ``1 - n``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytest_weval.blueprint.functions import CANONICAL_FUNCTIONS, FUNCTION_ALIASES
from pytest_weval.jsvalues import count_words, is_number, js_min
from pytest_weval.scoring import jsbox, tools, words
from pytest_weval.scoring.context import PointContext
from pytest_weval.scoring.regex_js import RegexSyntaxError, RegexTimeout, TextMatcher
from pytest_weval.scoring.types import FnError, RawResult

Job = tuple[str, str]


@dataclass
class CallEnv:
    """What a function may use besides its text and arguments (one per text)."""

    text: str
    ctx: PointContext
    matcher: TextMatcher
    _trace: list[Any] | None = field(default=None, repr=False)

    def trace(self) -> list[Any]:
        if self._trace is None:
            given = self.ctx.tool_calls
            self._trace = given if isinstance(given, list) else tools.trace_from_text(self.text)
        return self._trace


Impl = Callable[[str, Any, CallEnv], RawResult]
JobsOf = Callable[[Any, TextMatcher], list[Job]]


@dataclass(frozen=True)
class FunctionSpec:
    impl: Impl
    # The regex tests the function will need, so one V8 call can run a whole prompt's.
    jobs: JobsOf | None = None
    uses_sandbox: bool = False  # runs JS in the $js sandbox (never for a pure-Python path)


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _is_n_of(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and is_number(value[0]) and _is_str_list(value[1])


# -- substring functions ---------------------------------------------------------------------


def _contains(text: str, args: Any, env: CallEnv) -> RawResult:
    if not isinstance(args, str):
        return FnError("Invalid arguments for 'contains'. Expected a string.")
    return args in text


def _icontains(text: str, args: Any, env: CallEnv) -> RawResult:
    if not isinstance(args, str):
        return FnError("Invalid arguments for 'icontains'. Expected a string.")
    return args.lower() in text.lower()  # JS toLowerCase: full Unicode lowering, no folding


def _affix(name: str, kind: str, ignore_case: bool, starts: bool) -> Impl:
    def impl(text: str, args: Any, env: CallEnv) -> RawResult:
        if not isinstance(args, str):
            return FnError(f"Invalid arguments for '{name}'. Expected a string {kind}.")
        subject, affix = (text.lower(), args.lower()) if ignore_case else (text, args)
        return subject.startswith(affix) if starts else subject.endswith(affix)

    return impl


def _any_of(name: str, ignore_case: bool) -> Impl:
    def impl(text: str, args: Any, env: CallEnv) -> RawResult:
        if not _is_str_list(args):
            return FnError(f"Invalid arguments for '{name}'. Expected an array of strings.")
        subject = text.lower() if ignore_case else text
        return any((s.lower() if ignore_case else s) in subject for s in args)

    return impl


def _all_of(name: str, ignore_case: bool) -> Impl:
    def impl(text: str, args: Any, env: CallEnv) -> RawResult:
        if not _is_str_list(args):
            return FnError(f"Invalid arguments for '{name}'. Expected an array of strings.")
        if not args:
            return 1.0  # vacuously true
        subject = text.lower() if ignore_case else text
        found = sum(1 for s in args if (s.lower() if ignore_case else s) in subject)
        return found / len(args)

    return impl


def _n_of_score(n: float, total: int, count_found: Callable[[], int | FnError]) -> RawResult:
    if n <= 0:
        return 1.0  # a requirement of 0 or fewer is always met
    if total == 0:
        return 0.0 if n > 0 else 1.0
    found = count_found()
    if isinstance(found, FnError):
        return found
    return js_min(1.0, found / n)


def _at_least_n_of(name: str, ignore_case: bool) -> Impl:
    def impl(text: str, args: Any, env: CallEnv) -> RawResult:
        if not _is_n_of(args):
            return FnError(
                f"Invalid arguments for '{name}'. Expected an array of the format "
                "[n, ['substring1', 'substring2', ...]]."
            )
        subject = text.lower() if ignore_case else text
        needles = args[1]
        return _n_of_score(
            args[0],
            len(needles),
            lambda: sum(1 for s in needles if (s.lower() if ignore_case else s) in subject),
        )

    return impl


# -- regex functions -------------------------------------------------------------------------


def _regex_error(where: str, name: str, exc: Exception) -> FnError:
    if isinstance(exc, RegexSyntaxError):
        # Response-independent: the blueprint's mistake (docs/rulings.md, ruling 9).
        return FnError(f"Invalid regex pattern {where} '{name}': {exc}", authoring=True)
    return FnError(f"Regex pattern {where} '{name}' timed out: {exc}")


def _matches(name: str, flags: str) -> Impl:
    def impl(text: str, args: Any, env: CallEnv) -> RawResult:
        if not isinstance(args, str):
            return FnError(f"Invalid arguments for '{name}'. Expected a regex string.")
        try:
            return env.matcher.test(args, flags)
        except (RegexSyntaxError, RegexTimeout) as exc:
            return _regex_error("for", name, exc)

    return impl


def _count_matching(name: str, patterns: list[str], flags: str, matcher: TextMatcher) -> int | FnError:
    found = 0
    for pattern in patterns:  # in order: the first failing pattern decides the error
        try:
            found += matcher.test(pattern, flags)
        except (RegexSyntaxError, RegexTimeout) as exc:
            return _regex_error("in", name, exc)
    return found


def _matches_all_of(name: str, flags: str) -> Impl:
    def impl(text: str, args: Any, env: CallEnv) -> RawResult:
        if not _is_str_list(args):
            return FnError(f"Invalid arguments for '{name}'. Expected an array of regex strings.")
        if not args:
            return 1.0
        found = _count_matching(name, args, flags, env.matcher)
        return found if isinstance(found, FnError) else found / len(args)

    return impl


def _matches_at_least_n_of(name: str, flags: str) -> Impl:
    def impl(text: str, args: Any, env: CallEnv) -> RawResult:
        if not _is_n_of(args):
            return FnError(
                f"Invalid arguments for '{name}'. Expected an array of the format [n, ['pattern1', 'pattern2', ...]]."
            )
        patterns = args[1]
        return _n_of_score(args[0], len(patterns), lambda: _count_matching(name, patterns, flags, env.matcher))

    return impl


def _pattern_jobs(flags: str) -> JobsOf:
    def jobs(args: Any, matcher: TextMatcher) -> list[Job]:
        if isinstance(args, str):
            return [(args, flags)]
        if _is_str_list(args):
            return [(p, flags) for p in args]
        if _is_n_of(args) and args[0] > 0:
            return [(p, flags) for p in args[1]]
        return []

    return jobs


# -- the rest --------------------------------------------------------------------------------


def _word_count_between(text: str, args: Any, env: CallEnv) -> RawResult:
    if not (
        isinstance(args, list)
        and len(args) == 2
        and is_number(args[0])
        and is_number(args[1])
        and not args[0] < 0
        and not args[1] < args[0]
    ):
        return FnError(
            "Invalid arguments for 'word_count_between'. Expected an array with two numbers "
            "[min, max] where 0 <= min <= max."
        )
    low, high = args
    count = count_words(text)
    if count < low:
        return 1.0 if low == 0 else count / low
    if count > high:
        return 0.0 if high == 0 else high / count
    return 1.0


_JSON_PARSE_IS_CONTAINER = (
    "(() => { try { const v = JSON.parse(r); return typeof v === 'object' && v !== null; } "
    "catch (e) { return false; } })()"
)


def _is_json(text: str, args: Any, env: CallEnv) -> RawResult:
    # JSON.parse succeeds and gives an object or array. Python's json is JSON.parse once
    # NaN/Infinity are refused; only nesting too deep for it needs V8's parser.
    try:
        return isinstance(tools.parse_strict_json(text), (dict, list))
    except RecursionError:
        return jsbox.run_script(_JSON_PARSE_IS_CONTAINER, text, [], "")
    except ValueError:
        return False


def _js(text: str, args: Any, env: CallEnv) -> RawResult:
    if not isinstance(args, str):
        return FnError("Argument for js must be a string expression.")
    return jsbox.run_script(args, text, env.ctx.messages, env.ctx.model_id)


def _factcheck(text: str, args: Any, env: CallEnv) -> RawResult:
    if args is not None and not isinstance(args, str):
        return FnError(
            "Argument for 'factcheck' must be a string instruction (e.g., 'focus on city names "
            "only'), or omitted for general fact-checking"
        )
    return FnError(
        "$factcheck is not supported by pytest-weval: it calls the fact-checking service hosted "
        "by Weval itself. Use $call with a fact-checking service of your own, or a judged point."
    )


def _no_executor(text: str, args: Any, env: CallEnv) -> RawResult:
    return FnError("External service call failed: no HTTP executor is available here, so $call cannot run")


def _tool(fn: Callable[[Any, list[Any]], RawResult]) -> Impl:
    return lambda text, args, env: fn(args, env.trace())


def _word(ignore_case: bool) -> Impl:
    fn = words.icontains_word if ignore_case else words.contains_word
    return lambda text, args, env: fn(args, env.matcher)


def _word_jobs(ignore_case: bool) -> JobsOf:
    return lambda args, matcher: words.word_jobs(args, matcher, ignore_case)


def _negate(base_name: str, base: FunctionSpec) -> FunctionSpec:
    def impl(text: str, args: Any, env: CallEnv) -> RawResult:
        result = base.impl(text, args, env)
        if isinstance(result, FnError):
            return result
        if isinstance(result, bool):
            return not result
        if is_number(result):
            return 1.0 - result
        return FnError(f"Unexpected result type from {base_name} function")

    return FunctionSpec(impl, base.jobs, base.uses_sandbox)


_POSITIVE: dict[str, FunctionSpec] = {
    "contains": FunctionSpec(_contains),
    "icontains": FunctionSpec(_icontains),
    "starts_with": FunctionSpec(_affix("starts_with", "prefix", False, True)),
    "istarts_with": FunctionSpec(_affix("istarts_with", "prefix", True, True)),
    "ends_with": FunctionSpec(_affix("ends_with", "suffix", False, False)),
    "iends_with": FunctionSpec(_affix("iends_with", "suffix", True, False)),
    "contains_any_of": FunctionSpec(_any_of("contains_any_of", False)),
    "icontains_any_of": FunctionSpec(_any_of("icontains_any_of", True)),
    "contains_all_of": FunctionSpec(_all_of("contains_all_of", False)),
    "icontains_all_of": FunctionSpec(_all_of("icontains_all_of", True)),
    "contains_at_least_n_of": FunctionSpec(_at_least_n_of("contains_at_least_n_of", False)),
    "icontains_at_least_n_of": FunctionSpec(_at_least_n_of("icontains_at_least_n_of", True)),
    "matches": FunctionSpec(_matches("matches", ""), _pattern_jobs("")),
    "imatches": FunctionSpec(_matches("imatches", "i"), _pattern_jobs("i")),
    "matches_all_of": FunctionSpec(_matches_all_of("matches_all_of", ""), _pattern_jobs("")),
    "imatch_all_of": FunctionSpec(_matches_all_of("imatch_all_of", "i"), _pattern_jobs("i")),
    "matches_at_least_n_of": FunctionSpec(_matches_at_least_n_of("matches_at_least_n_of", ""), _pattern_jobs("")),
    "imatch_at_least_n_of": FunctionSpec(_matches_at_least_n_of("imatch_at_least_n_of", "i"), _pattern_jobs("i")),
    "contains_word": FunctionSpec(_word(False), _word_jobs(False)),
    "icontains_word": FunctionSpec(_word(True), _word_jobs(True)),
    "word_count_between": FunctionSpec(_word_count_between),
    "is_json": FunctionSpec(_is_json),
    "js": FunctionSpec(_js, uses_sandbox=True),
    "factcheck": FunctionSpec(_factcheck),
    "call": FunctionSpec(_no_executor),  # the evaluator runs $call itself when it has an executor
    "tool_called": FunctionSpec(_tool(tools.tool_called)),
    "tool_args_match": FunctionSpec(_tool(tools.tool_args_match), uses_sandbox=True),
    "tool_call_count_between": FunctionSpec(_tool(tools.tool_call_count_between)),
    "tool_call_order": FunctionSpec(_tool(tools.tool_call_order)),
}


def _build_registry() -> dict[str, FunctionSpec]:
    """Implementations for every name the parser knows (one table of names and aliases, in
    ``blueprint.functions``): negations wrap their positive function."""
    registry: dict[str, FunctionSpec] = {}
    for name in CANONICAL_FUNCTIONS:
        base = name.removeprefix("not_")
        registry[name] = _negate(base, _POSITIVE[base]) if name != base else _POSITIVE[name]
    for alias, target in FUNCTION_ALIASES.items():
        registry[alias] = registry[target]
    return registry


REGISTRY: dict[str, FunctionSpec] = _build_registry()

#: Every name a blueprint may use after ``$`` (post-pluralisation), as the reference's
#: ``pointFunctions`` map. ``imatches_all_of``, ``start_with``, ``matches_any_of`` ... are not.
REGISTERED_FUNCTIONS: frozenset[str] = frozenset(REGISTRY)

#: Functions that need an HTTP executor (the evaluator awaits them).
EXTERNAL_FUNCTIONS: frozenset[str] = frozenset(("call", "external"))

#: Functions whose string argument is a regex pattern (no flags / ``i``), for linters.
PATTERN_FUNCTIONS: dict[str, str] = {
    name: ("i" if name.removeprefix("not_").startswith("imatch") else "")
    for name in REGISTERED_FUNCTIONS
    if "match" in name
}


def patterns_of(args: Any) -> list[str]:
    """The patterns a `$matches`-family point runs: a string, a list, or `[n, [...]]`."""
    if isinstance(args, str):
        return [args]
    if isinstance(args, list):
        if all(isinstance(p, str) for p in args):
            return list(args)
        if len(args) == 2 and isinstance(args[1], list):
            return [p for p in args[1] if isinstance(p, str)]
    return []
