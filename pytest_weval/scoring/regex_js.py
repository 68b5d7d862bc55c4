"""ECMAScript regular expressions, as the reference's ``new RegExp(pattern, flags).test(text)``.

Patterns run on V8 itself (docs/functions.md, 'Regex dialect': no ``u`` flag, UTF-16 code units, ASCII
``\\d\\w\\b``, Annex-B leniency, simple upper-case folding for ``i``): a translation to Python's
``re``/``regex`` would have to re-implement all of that. Three things keep it fast and safe:

* **Batching.** A :class:`TextMatcher` collects every pattern a prompt's points need and tests
  them against the response in one V8 call (a call costs ~0.25 ms; a test, microseconds).
  Compiled ``RegExp`` objects are cached inside V8.
* **Exact fast paths.** A pattern with no metacharacter is a plain substring test; a pattern
  in the common subset ``regex_translate`` accepts runs on Python's ``regex`` module; the word
  functions' boundary check is decidable in Python when the neighbouring characters are
  ASCII. Only those cases skip V8, each provably identical (see the comments, and the tests
  that compare them with V8).
* **A time bound per pattern.** A batch that times out is resumed after the pattern it was on;
  that pattern gets a run of its own with the full budget and, if it times out again, becomes a
  point error instead of a hang (catastrophic backtracking).

The reference ran on Node 20 (V8 11.3). The V8 here is newer and accepts two syntaxes Node 20
rejects: pattern modifiers ``(?i:...)`` and duplicate named groups. ``_node20_rejects`` rejects
them first, with Node 20's messages.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Iterable
from typing import Any

from pytest_weval.errors import WevalError
from pytest_weval.scoring import regex_translate, v8

REGEX_TIMEOUT_S = 0.25  # per pattern; the reference has none (a bomb hangs it)
_MEMORY_LIMIT = 256 * 1024 * 1024

_SETUP_JS = r"""
(() => {
  const cache = new Map();
  let state = {tag: -1, out: []};
  const compile = (p, f) => {
    const key = f + '\u0000' + p;
    let re = cache.get(key);
    if (re === undefined) {
      try { re = new RegExp(p, f); } catch (e) { re = String(e && e.message); }
      if (cache.size >= 4096) cache.clear();
      cache.set(key, re);
    }
    return re;
  };
  // Tests jobs[start:] against text; results land in the state one by one, under the batch's
  // tag, so after a timeout __wevalReState(tag) tells how far *this* batch got.
  globalThis.__wevalReBatch = (text, jobs, start, tag) => {
    state = {tag: tag, out: []};
    for (let i = start; i < jobs.length; i++) {
      const re = compile(jobs[i][0], jobs[i][1]);
      state.out.push(typeof re === 'string' ? re : re.test(text));
    }
    return JSON.stringify(state.out);
  };
  // null when the batch of this tag never started; else its results so far.
  globalThis.__wevalReState = (tag) => state.tag === tag ? JSON.stringify(state.out) : null;
  globalThis.__wevalReCheck = (p, f) => {
    const re = compile(p, f);
    return typeof re === 'string' ? re : null;
  };
})();
"""

_ISOLATE = v8.Isolate("regex", _SETUP_JS, _MEMORY_LIMIT)

# Characters that make a pattern more than a literal (in either mode). Anything else in a
# pattern stands for itself, so the pattern is a substring test.
_META = frozenset("\\^$.|?*+()[]{}")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# Non-ASCII characters that case-fold onto an ASCII letter (Kelvin sign, long s, dotless i):
# while none occurs in the text, an ASCII word matches case-insensitively exactly where the
# ASCII-lowered strings match.
_FOLDS_TO_ASCII = ("\u212a", "\u017f", "\u0131")
_WORD_ESCAPES = frozenset(".*+?^${}()|[]\\")
_NOT_BMP = re.compile("[\ud800-\udfff\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class RegexSyntaxError(WevalError):
    """``new RegExp`` threw; the message is V8's (``Invalid regular expression: /[/: ...``)."""


class RegexTimeout(WevalError):
    """The pattern ran past ``REGEX_TIMEOUT_S`` on this text (catastrophic backtracking)."""


Outcome = bool | RegexSyntaxError | RegexTimeout

_syntax_lock = threading.Lock()
_syntax_cache: dict[tuple[str, str], str | None] = {}
_SYNTAX_CACHE_MAX = 8192


def _has_surrogate(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def is_literal(pattern: str) -> bool:
    """True when ``pattern`` matches exactly its own text: no metacharacter, and no lone
    surrogate (without ``u`` a pattern works on UTF-16 units, Python strings on code points)."""
    return not any(ch in _META for ch in pattern) and not _has_surrogate(pattern)


def _node20_rejects(pattern: str, flags: str) -> str | None:
    """Node 20's SyntaxError for syntax that only newer V8 accepts, else None.

    Scans the pattern as the non-unicode grammar does: ``\\`` escapes the next character, a
    class runs to the first unescaped ``]`` (so ``[]`` is an empty class and ``[^]`` any char).
    """
    if "(?" not in pattern:
        return None
    names: set[str] = set()
    in_class = False
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(" and pattern.startswith("?", i + 1):
            after = pattern[i + 2 : i + 3]
            if after in ("i", "m", "s", "-"):  # modifiers, (?i:...): V8 12.5+
                return f"Invalid regular expression: /{pattern}/{flags}: Invalid group"
            if after == "<" and pattern[i + 3 : i + 4] not in ("=", "!"):
                end = pattern.find(">", i + 3)
                if end > 0:
                    name = pattern[i + 3 : end]
                    if name in names:  # duplicate names in separate alternatives: V8 12.5+
                        return f"Invalid regular expression: /{pattern}/{flags}: Duplicate capture group name"
                    names.add(name)
        i += 1
    return None


def _remember_syntax(pattern: str, flags: str, error: str | None) -> None:
    with _syntax_lock:
        if len(_syntax_cache) >= _SYNTAX_CACHE_MAX:
            _syntax_cache.clear()
        _syntax_cache[(pattern, flags)] = error


def check_pattern_syntax(pattern: str, flags: str = "") -> str | None:
    """V8's error message if ``new RegExp(pattern, flags)`` throws on Node 20, else None.

    For collection-time warnings (docs/rulings.md, ruling 9) and for the point functions themselves.
    """
    if is_literal(pattern) and flags in ("", "i", "u", "iu"):
        return None
    early = _node20_rejects(pattern, flags)
    if early is not None:
        return early
    if flags in ("", "i") and regex_translate.known_valid(pattern):
        return None  # no V8 to start for it: a collection of valid patterns needs none (~40 MB)
    key = (pattern, flags)
    with _syntax_lock:
        if key in _syntax_cache:
            return _syntax_cache[key]
    with _ISOLATE.lock:
        error = _eval_patient(f"__wevalReCheck({json.dumps(pattern)},{json.dumps(flags)})")
    _remember_syntax(pattern, flags, error)
    return error


def escape_word(word: str) -> str:
    """The reference's ``word.replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&')`` (``-`` and ``/``
    stay as they are)."""
    return "".join("\\" + ch if ch in _WORD_ESCAPES else ch for ch in word)


def word_pattern(word: str) -> str:
    """The ``contains_word`` pattern: the word, not preceded or followed by ``[\\p{L}\\p{N}_]``
    (used with flags ``u`` / ``iu``)."""
    return r"(?<![\p{L}\p{N}_])" + escape_word(word) + r"(?![\p{L}\p{N}_])"


def _is_ascii_word_char(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "_")


class TextMatcher:
    """Tests patterns against one text, remembering each outcome.

    Call :meth:`prefetch` with every (pattern, flags) a batch of points will need, so they are
    tested in one V8 call; :meth:`test` and :meth:`word` then answer from memory.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._outcomes: dict[tuple[str, str], Outcome] = {}
        self._ascii_lower: str | None = None
        self._bmp: bool | None = None

    # -- fast paths (exact; anything they cannot decide goes to V8) -------------------------

    def _lowered(self) -> str:
        if self._ascii_lower is None:
            self._ascii_lower = self.text.translate(_ASCII_LOWER)
        return self._ascii_lower

    def _fast_test(self, pattern: str, flags: str) -> bool | None:
        if is_literal(pattern):
            if flags == "":
                return pattern in self.text
            if flags == "i" and pattern.isascii():
                # Non-unicode `i` canonicalizes with toUpperCase but never maps a non-ASCII
                # character onto an ASCII one, so an ASCII pattern matches exactly the text's
                # ASCII case variants.
                return pattern.translate(_ASCII_LOWER) in self._lowered()
        if not self._code_points_are_units():
            return None
        translated = regex_translate.compiled(pattern, flags)
        if translated is None:
            return None
        try:
            return translated.search(self.text, timeout=REGEX_TIMEOUT_S, concurrent=True) is not None
        except TimeoutError:
            return None  # let V8 decide (and bound) it

    def _code_points_are_units(self) -> bool:
        """No astral character or surrogate: JS's UTF-16 units are Python's code points."""
        if self._bmp is None:
            self._bmp = _NOT_BMP.search(self.text) is None
        return self._bmp

    def _fast_word(self, word: str, ignore_case: bool) -> bool | None:
        if ignore_case:
            if not word.isascii() or any(ch in self.text for ch in _FOLDS_TO_ASCII):
                return None
            haystack, needle = self._lowered(), word.translate(_ASCII_LOWER)
        else:
            haystack, needle = self.text, word
        if _has_surrogate(needle) or _has_surrogate(haystack):
            return None
        undecided = False
        at = haystack.find(needle)
        while at >= 0:
            end = at + len(needle)
            before = haystack[at - 1] if at > 0 else ""
            after = haystack[end] if end < len(haystack) else ""
            if (before and not before.isascii()) or (after and not after.isascii()):
                undecided = True  # \p{L}/\p{N} membership of a non-ASCII neighbour: ask V8
            elif not (before and _is_ascii_word_char(before)) and not (after and _is_ascii_word_char(after)):
                return True
            at = haystack.find(needle, at + 1)
        return None if undecided else False

    # -- public ------------------------------------------------------------------------------

    def decided_without_engine(self, job: tuple[str, str]) -> bool:
        """True when ``job`` is known or the Python fast path answers it (no V8 call)."""
        if job in self._outcomes or _node20_rejects(*job) is not None:
            return True
        fast = self._fast_test(*job)
        if fast is not None:
            self._outcomes[job] = fast
        return fast is not None

    def word_job(self, word: str, ignore_case: bool) -> tuple[str, str] | None:
        """The V8 job ``contains_word`` needs, or None when the fast path decides it."""
        if word == "" or self._fast_word(word, ignore_case) is not None:
            return None
        return (word_pattern(word), "iu" if ignore_case else "u")

    def prefetch(self, jobs: Iterable[tuple[str, str]]) -> None:
        pending: list[tuple[str, str]] = []
        seen: set[tuple[str, str]] = set()
        for job in jobs:
            if job in self._outcomes or job in seen:
                continue
            fast = self._fast_test(*job)
            if fast is not None:
                self._outcomes[job] = fast
                continue
            early = _node20_rejects(*job)
            if early is not None:
                self._outcomes[job] = RegexSyntaxError(early)
                continue
            seen.add(job)
            pending.append(job)
        if pending:
            for job, outcome in zip(pending, _run_batch(self.text, pending)):
                self._outcomes[job] = outcome

    def test(self, pattern: str, flags: str = "") -> bool:
        """``new RegExp(pattern, flags).test(text)``; raises RegexSyntaxError / RegexTimeout."""
        key = (pattern, flags)
        if key not in self._outcomes:
            self.prefetch([key])
        outcome = self._outcomes[key]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def word(self, word: str, ignore_case: bool) -> bool:
        """The reference's ``contains_word`` / ``icontains_word`` regex test (word non-empty)."""
        fast = self._fast_word(word, ignore_case)
        if fast is not None:
            return fast
        return self.test(word_pattern(word), "iu" if ignore_case else "u")


_batch_tags = itertools.count()
# Scripts that cannot run long (reading a batch's state, compiling a pattern) get these time
# limits in turn: a limit is measured on the Python side, so a process that holds the GIL (a
# full garbage collection over a large heap) can make a finished script look late.
_PATIENT_TIMEOUTS_S = (1.0, 4.0, 16.0)
# A batch that times out without having started in V8 (its state is another tag's) is sent
# again, at most this many times, before its patterns are errors.
_MAX_LATE_STARTS = 5


def _eval_patient(code: str) -> Any:
    """``code`` is quick: a timeout means the answer came back late, so ask again."""
    for timeout_s in _PATIENT_TIMEOUTS_S[:-1]:
        try:
            return _ISOLATE.eval(code, timeout_s)
        except v8.JsTimeout:
            continue
    try:
        return _ISOLATE.eval(code, _PATIENT_TIMEOUTS_S[-1])
    except v8.JsTimeout:
        _ISOLATE.reset()  # wedged: the next use starts a fresh isolate
        raise


def _run_batch(text: str, jobs: list[tuple[str, str]]) -> list[Outcome]:
    """Test ``jobs`` on V8 in as few calls as the time bound allows.

    A pattern times out only when V8 was still testing it when the time ran out: after a
    timeout the batch's own tagged state says how far it got, so a reply that finished in
    time but reached us late (the GIL held elsewhere) is used as it is, and results of another
    batch are never read (docs/functions.md, 'Regex dialect')."""
    results: list[Outcome] = []
    text_js = json.dumps(text)
    jobs_js = json.dumps(jobs)
    with _ISOLATE.lock:
        start = 0
        late_starts = 0
        alone_next = False
        while start < len(jobs):
            tag = next(_batch_tags)
            size = 1 if alone_next else len(jobs) - start
            batch_js = json.dumps([jobs[start]]) if alone_next else jobs_js
            offset = 0 if alone_next else start
            try:
                out = json.loads(_ISOLATE.eval(f"__wevalReBatch({text_js},{batch_js},{offset},{tag})", REGEX_TIMEOUT_S))
            except (v8.JsTimeout, v8.JsOutOfMemory) as exc:
                state = _state_after_failure(exc, tag)
                if state is None:  # the batch never ran: send it again
                    late_starts += 1
                    if late_starts > _MAX_LATE_STARTS:
                        raise v8.JsEngineError(
                            f"the regex engine did not start a batch in {late_starts} tries"
                        ) from None
                    continue
                out = state
                if len(out) < size:
                    results.extend(_outcome(job, value) for job, value in zip(jobs[start:], out))
                    start += len(out)
                    if alone_next:  # V8 was still on it after a whole budget of its own
                        results.append(
                            _out_of_memory(jobs[start])
                            if isinstance(exc, v8.JsOutOfMemory)
                            else _timed_out(jobs[start])
                        )
                        start += 1
                    _ISOLATE.ensure_healthy_after_failure()
                    # else: it may have shared the budget, or started late: a run of its own decides
                    alone_next = not alone_next
                    continue
            results.extend(_outcome(job, value) for job, value in zip(jobs[start:], out))
            start += len(out)
            alone_next = False
    return results


def _state_after_failure(exc: Exception, tag: int) -> list[bool | str] | None:
    """What the batch of ``tag`` finished before it was stopped; None if it never started."""
    if isinstance(exc, v8.JsOutOfMemory):
        _ISOLATE.reset()
        return []
    try:
        state = _eval_patient(f"__wevalReState({tag})")
    except (v8.JsTimeout, v8.JsOutOfMemory, v8.JsEngineError):
        _ISOLATE.reset()
        return None
    return None if state is None else json.loads(state)


def _out_of_memory(job: tuple[str, str]) -> RegexTimeout:
    return RegexTimeout(f"pattern /{job[0]}/{job[1]} exhausted the regex engine's memory")


def _timed_out(job: tuple[str, str]) -> RegexTimeout:
    return RegexTimeout(
        f"pattern /{job[0]}/{job[1]} did not finish within {int(REGEX_TIMEOUT_S * 1000)} ms "
        "on this response (catastrophic backtracking?)"
    )


def _outcome(job: tuple[str, str], value: bool | str) -> Outcome:
    if isinstance(value, str):
        _remember_syntax(job[0], job[1], value)
        return RegexSyntaxError(value)
    return bool(value)
