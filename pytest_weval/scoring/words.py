"""``contains_word`` / ``icontains_word`` (docs/functions.md, 'Word functions').

The reference searches the escaped word with the unicode-mode regex
``(?<![\\p{L}\\p{N}_])word(?![\\p{L}\\p{N}_])`` (flags ``u`` or ``iu``). The matcher decides it
in Python when the neighbours of every occurrence are ASCII and on V8 otherwise.
"""

from __future__ import annotations

from typing import Any

from pytest_weval.scoring.regex_js import RegexSyntaxError, RegexTimeout, TextMatcher
from pytest_weval.scoring.types import FnError, RawResult


def _word(name: str, ignore_case: bool, args: Any, matcher: TextMatcher) -> RawResult:
    if not isinstance(args, str):
        return FnError(f"Invalid arguments for '{name}'. Expected a string.")
    if args == "":
        return True  # the empty word is vacuously present
    try:
        return matcher.word(args, ignore_case)
    except (RegexSyntaxError, RegexTimeout) as exc:
        return FnError(f"Error in '{name}': {exc}")


def contains_word(args: Any, matcher: TextMatcher) -> RawResult:
    return _word("contains_word", False, args, matcher)


def icontains_word(args: Any, matcher: TextMatcher) -> RawResult:
    return _word("icontains_word", True, args, matcher)


def word_jobs(args: Any, matcher: TextMatcher, ignore_case: bool) -> list[tuple[str, str]]:
    """The V8 regex job the word test needs, if the Python fast path cannot decide it."""
    if not isinstance(args, str):
        return []
    job = matcher.word_job(args, ignore_case)
    return [job] if job else []
