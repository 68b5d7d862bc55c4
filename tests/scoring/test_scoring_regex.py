"""The Python fast paths for regexes give exactly V8's answers: every corpus pattern and a few
thousand generated ones, on texts built to probe the dialect's corners."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_weval.blueprint import load_blueprint
from pytest_weval.scoring import PATTERN_FUNCTIONS
from pytest_weval.scoring.regex_js import RegexSyntaxError, TextMatcher, _run_batch
from pytest_weval.scoring.regex_translate import compiled, known_valid, translate

CORPUS = Path("/work/shared/corpus/weval-configs/blueprints")

TEXTS = [
    "A",
    "B\n",
    "Entailment",
    "10",
    "The answer is 42.\nFINAL_ANSWER: b",
    '{ "Answer": "Option A" }',
    "Algeria, DR Congo and Sudan; K2 then Kangchenjunga",
    "naïve café — Paraná, 8,848 m; Mount Everest\u00a0K2",
    "x\u2028y\u2029z\rw\ufeffv\u3000u",
    "kelvin \u212a, long \u017f, dotless \u0131, sharp ß, CAPITAL É",
    "",
]


def _corpus_patterns() -> list[tuple[str, str]]:
    jobs: set[tuple[str, str]] = set()
    for path in sorted(CORPUS.rglob("*.yml")):
        try:
            blueprint = load_blueprint(path, keep_unresolved_placeholders=True)
        except Exception:  # noqa: BLE001 - unreadable files are the collection tests' business
            continue
        for prompt in blueprint.prompts:
            for point in prompt.points:
                flags = PATTERN_FUNCTIONS.get(point.fn or "")
                if flags is None or point.authoring_error:
                    continue
                args = point.fn_args
                patterns = args if isinstance(args, list) else [args]
                if isinstance(args, list) and len(args) == 2 and isinstance(args[1], list):
                    patterns = args[1]
                jobs.update((p, flags) for p in patterns if isinstance(p, str))
    return sorted(jobs)


def _compare(text: str, jobs: list[tuple[str, str]]) -> int:
    """Check every job the translation accepts against V8; return how many were compared."""
    accepted = [job for job in jobs if compiled(*job) is not None]
    if not accepted:
        return 0
    on_v8 = _run_batch(text, accepted)
    for job, expected in zip(accepted, on_v8):
        got = compiled(*job).search(text) is not None
        assert got == expected, (job, text, translate(*job))
    return len(accepted)


def test_corpus_patterns_agree_with_v8() -> None:
    jobs = _corpus_patterns()
    assert len(jobs) > 250  # distinct (pattern, flags) pairs
    compared = sum(_compare(text, jobs) for text in TEXTS)
    share = sum(1 for job in jobs if compiled(*job) is not None) / len(jobs)
    assert share > 0.8  # the subset covers most real patterns
    assert compared > 1000


ATOMS = [
    "a",
    "b",
    "K",
    "k",
    "s",
    "é",
    "É",
    "\\d",
    "\\D",
    "\\w",
    "\\W",
    "\\s",
    "\\S",
    ".",
    "[a-c]",
    "[^a ]",
    "[\\s\\S]",
    "[\\w-]",
    "[A-Z\\d]",
    "\\.",
    "\\u00e9",
    "\\x41",
    "\\n",
    "[\\b]",
    "\\-",
    "\\/",
    "[.]",
    "[^\\n]",
    "[a\\-c]",
    "\\0",
    "[\\u2028]",
    "\\r",
    "[^\\s]",
    "[\\d\\D]",
    "[^\\W]",
    "[\\W\\d]",
    "\\u212a",
    "[\\x00-\\x7f]",
    "[\\u00c0-\\u00ff]",
    "\\x08",
]
ASSERTIONS = ["^", "$", "\\b", "\\B"]
QUANTS = ["*", "+", "?", "{1,2}", "{2}", "{0,}", "*?", "+?", "??"]


def _random_pattern(rng: random.Random, depth: int = 0) -> str:
    parts = []
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.15:
            parts.append(rng.choice(ASSERTIONS))
            continue
        if roll < 0.3 and depth < 2:
            inner = _random_pattern(rng, depth + 1)
            if rng.random() < 0.3:
                inner += "|" + _random_pattern(rng, depth + 1)
            opener = rng.choice(["(", "(?:", "(?=", "(?!"])
            atom = opener + inner + ")"
        else:
            atom = rng.choice(ATOMS)
        if rng.random() < 0.4:
            atom += rng.choice(QUANTS)
        parts.append(atom)
    pattern = "".join(parts)
    if depth == 0 and rng.random() < 0.2:
        pattern += "|" + _random_pattern(rng, 1)
    return pattern


ALPHABET = list("aAbBkKsS é É.-/_1\n") + ["\u212a", "\u017f", "\u0131", "\u2028", "\u00a0", "\ufeff", "\x08"]


@pytest.mark.parametrize("seed", range(4))
def test_generated_patterns_agree_with_v8(seed: int) -> None:
    rng = random.Random(seed)
    compared = 0
    for _ in range(60):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12)))
        jobs = [(_random_pattern(rng), rng.choice(["", "i"])) for _ in range(25)]
        compared += _compare(text, jobs)
    assert compared > 400


def test_texts_with_astral_characters_go_to_v8() -> None:
    matcher = TextMatcher("😀")
    assert matcher._fast_test("^..$", "") is None
    assert matcher.test("^..$") is True and matcher.test("^.$") is False


@pytest.mark.parametrize(
    "pattern",
    [
        "(a+)+$",
        "(a|aa)*b",
        "^[0-9]+(,[0-9]+)*$",
        "(?:x+x+)+y",
        r"\1(a)",
        "(?<=a)b",
        "(?<n>a)",
        "a{1",
        "]",
        "[]",
        "[^]",
        r"\e",
        r"\p{L}",
        "[z-a]",
        r"[\d-z]",
        r"[\S]",
        "(?=a)*",
        r"\x4",
    ],
)
def test_outside_the_subset(pattern: str) -> None:
    assert translate(pattern, "") is None


def test_i_flag_needs_an_ascii_pattern() -> None:
    assert translate("é", "i") is None
    assert translate("e", "i") is not None


# Patterns V8 rejects (Node 20 alike, without ``u``): none may be vouched for without V8.
INVALID = [
    "a**",
    "a{2}{3}",
    "*a",
    "a|*b",
    "(a",
    "a)",
    "[a",
    "[z-a]",
    "a{3,2}",
    "\\",
    "(?<n>a)(?<n>b)",
    "(?i:a)",
    "(?",
    "+",
    "(a+)+*",
    "[\\Sz-a]",
    "x{1}?{2}",
]


def _v8_accepts(jobs: list[tuple[str, str]]) -> list[bool]:
    return [not isinstance(outcome, RegexSyntaxError) for outcome in _run_batch("", jobs)]


def test_patterns_known_valid_are_valid_on_v8() -> None:
    """``known_valid`` (the collection-time check without V8) never vouches for a pattern V8
    rejects: the corpus's patterns, generated ones, and those V8 rejects."""
    rng = random.Random(7)
    jobs = _corpus_patterns() + [(_random_pattern(rng), rng.choice(["", "i"])) for _ in range(1500)]
    jobs += [(p, "") for p in INVALID] + [(p + '\\"' + q, "") for p, q in zip(ATOMS, reversed(ATOMS))]
    vouched = [job for job in jobs if known_valid(job[0])]
    assert all(_v8_accepts(vouched)), [job for job, ok in zip(vouched, _v8_accepts(vouched)) if not ok]
    assert not any(known_valid(p) for p in INVALID)
    assert len(vouched) > 1000


def test_checking_valid_patterns_starts_no_v8() -> None:
    """A blueprint's valid patterns are checked at collection without starting V8 (~40 MB of a
    process), the corpus's nested quantifiers, escaped quotes and non-ASCII ``i`` patterns too;
    an invalid one still gets V8's own words."""
    script = (
        "import sys\n"
        "from pytest_weval.scoring import check_pattern_syntax\n"
        "valid = [('^[0-9]+(,[0-9]+)*$', ''), ('\\\\{\\\\s*\\\\\"Answer\\\\\"\\\\s*\\\\}', ''),\n"
        "         ('T[üu]rkiye', 'i'), ('Ob[\\\\s\\\\S]+(?:Paraná|Parana)', 'i'), ('^(?:a|b){2,3}\\\\b', '')]\n"
        "print([check_pattern_syntax(p, f) for p, f in valid], 'py_mini_racer' in sys.modules)\n"
        "print(check_pattern_syntax('a**', ''), 'py_mini_racer' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "[None, None, None, None, None] False",
        "Invalid regular expression: /a**/: Nothing to repeat True",
    ]
