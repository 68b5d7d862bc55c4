"""Names of the point functions the reference registers (docs/functions.md, 'Registry'; the reference's `index.ts`).

Only the names live here: the parser uses them to flag unknown functions at collection time
(docs/rulings.md, ruling 9), and the scoring layer implements the functions under these names.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from functools import lru_cache

# Registered alias -> the function it calls (the reference registers both names).
FUNCTION_ALIASES: dict[str, str] = {
    "contain": "contains",
    "match": "matches",
    "contain_all_of": "contains_all_of",
    "match_all_of": "matches_all_of",
    "icontain": "icontains",
    "imatch": "imatches",
    "icontain_all_of": "icontains_all_of",
    "icontain_any_of": "icontains_any_of",
    "istart_with": "istarts_with",
    "iend_with": "iends_with",
    "contain_at_least_n_of": "contains_at_least_n_of",
    "icontain_at_least_n_of": "icontains_at_least_n_of",
    "match_at_least_n_of": "matches_at_least_n_of",
    "expr": "js",
    "external": "call",
    "contain_word": "contains_word",
    "icontain_word": "icontains_word",
    "not_contain": "not_contains",
    "not_icontain": "not_icontains",
    "not_contain_any_of": "not_contains_any_of",
    "not_icontain_any_of": "not_icontains_any_of",
    "not_contain_all_of": "not_contains_all_of",
    "not_icontain_all_of": "not_icontains_all_of",
    "not_match": "not_matches",
    "not_imatch": "not_imatches",
    "not_start_with": "not_starts_with",
    "not_istart_with": "not_istarts_with",
    "not_end_with": "not_ends_with",
    "not_iend_with": "not_iends_with",
    "not_contain_word": "not_contains_word",
    "not_icontain_word": "not_icontains_word",
}

# Functions registered under their own name.
CANONICAL_FUNCTIONS: frozenset[str] = frozenset(
    {
        "contains", "matches", "is_json", "starts_with", "ends_with", "word_count_between",
        "contains_any_of", "contains_all_of", "matches_all_of", "imatch_all_of",
        "icontains", "imatches", "icontains_all_of", "icontains_any_of", "istarts_with",
        "iends_with", "contains_at_least_n_of", "icontains_at_least_n_of",
        "matches_at_least_n_of", "imatch_at_least_n_of", "js", "call", "factcheck",
        "tool_called", "tool_args_match", "tool_call_count_between", "tool_call_order",
        "contains_word", "icontains_word",
        "not_contains", "not_icontains", "not_contains_any_of", "not_icontains_any_of",
        "not_contains_all_of", "not_icontains_all_of", "not_matches", "not_imatches",
        "not_starts_with", "not_istarts_with", "not_ends_with", "not_iends_with",
        "not_contains_word", "not_icontains_word",
    }
)  # fmt: skip

# Every name a point may use after the parser's pluralisation (docs/format.md, 'Function names and pluralisation').
FUNCTION_NAMES: frozenset[str] = CANONICAL_FUNCTIONS | frozenset(FUNCTION_ALIASES)

assert set(FUNCTION_ALIASES.values()) <= CANONICAL_FUNCTIONS


def pluralise_function_name(name: str) -> str:
    """The parser's rewrite of singular names: `contain…` -> `contains…`, `match…` -> `matches…`."""
    if name.startswith("contain") and not name.startswith("contains"):
        name = "contains" + name[len("contain") :]
    if name.startswith("match") and not name.startswith("matches"):
        name = "matches" + name[len("match") :]
    return name


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate name, if one is close enough to be a likely typo."""
    return _closest(name, frozenset(candidates))


@lru_cache(maxsize=4096)
def _closest(name: str, candidates: frozenset[str]) -> str | None:
    matches = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


# Names the reference's docs use or invite that are not registered (docs/functions.md, 'Registry').
_KNOWN_MISTAKES = {
    "imatches_all_of": "imatch_all_of",
    "imatches_at_least_n_of": "imatch_at_least_n_of",
    "start_with": "starts_with",
    "end_with": "ends_with",
    "not_matches_all_of": "not_matches",
}


def unknown_function_message(name: str) -> str:
    """The reference's error for an unregistered name, with a suggestion when one is close."""
    message = f"Unknown point function: '{name}'"
    head, colon, rest = name.partition(":")
    if colon and pluralise_function_name(head.strip()) in FUNCTION_NAMES:
        # "- '$icontains: (A)'" quotes the whole point, so it is a zero-argument call named
        # "icontains: (A)"; the author meant a mapping.
        return message + f" (the point is one quoted string; write it unquoted: ${head.strip()}:{rest})"
    # A leading `$` in `fn:` is kept verbatim by the parser (docs/format.md, 'Points').
    bare = name[1:] if name.startswith("$") else name
    if bare != name and bare in FUNCTION_NAMES:
        suggestion: str | None = bare
    else:
        suggestion = _KNOWN_MISTAKES.get(bare) or did_you_mean(bare, FUNCTION_NAMES)
    if suggestion:
        message += f" (did you mean '{suggestion}'?)"
    return message
