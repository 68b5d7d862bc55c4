"""What a function point can score at all, from its arguments alone (no response needed).

`score_range(fn, args)` gives (lowest, highest) for the few argument shapes that pin a
function's result whatever the response: an empty list, an empty string, more required matches
than there are candidates. None when the result depends on the response, as it normally does.
"""

from __future__ import annotations

import math
from typing import Any

from pytest_weval.jsvalues import is_number

Range = tuple[float, float]
ALWAYS = (1.0, 1.0)
NEVER = (0.0, 0.0)

_SUBSTRING = {"contains", "icontains", "starts_with", "istarts_with", "ends_with", "iends_with", "matches", "imatches"}
_ANY_OF = {"contains_any_of", "icontains_any_of"}
_ALL_OF = {"contains_all_of", "icontains_all_of", "matches_all_of", "imatch_all_of"}
_N_OF = {"contains_at_least_n_of", "icontains_at_least_n_of", "matches_at_least_n_of", "imatch_at_least_n_of"}
# Singular and other registered spellings -> the names above.
_SPELLINGS = {
    "contain": "contains",
    "icontain": "icontains",
    "match": "matches",
    "imatch": "imatches",
    "start_with": "starts_with",
    "istart_with": "istarts_with",
    "end_with": "ends_with",
    "iend_with": "iends_with",
    "contain_any_of": "contains_any_of",
    "icontain_any_of": "icontains_any_of",
    "contain_all_of": "contains_all_of",
    "icontain_all_of": "icontains_all_of",
    "match_all_of": "matches_all_of",
    "contain_at_least_n_of": "contains_at_least_n_of",
    "icontain_at_least_n_of": "icontains_at_least_n_of",
    "match_at_least_n_of": "matches_at_least_n_of",
}


def base_name(fn: str) -> tuple[str, bool]:
    """('contains', True) for 'not_contain': the positive function and whether it is negated."""
    negated = fn.startswith("not_")
    name = fn[4:] if negated else fn
    return _SPELLINGS.get(name, name), negated


def score_range(fn: str, args: Any) -> Range | None:
    """The function's possible scores before `should_not` inversion, when pinned by its args."""
    name, negated = base_name(fn)
    found = _positive_range(name, args)
    if found is None:
        return None
    return (1.0 - found[1], 1.0 - found[0]) if negated else found


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _positive_range(name: str, args: Any) -> Range | None:
    if name in _SUBSTRING:
        return ALWAYS if args == "" else None
    if name in _ANY_OF and _str_list(args):
        if not args:
            return NEVER
        return ALWAYS if "" in args else None
    if name in _ALL_OF and _str_list(args):
        return ALWAYS if not args or all(a == "" for a in args) else None
    if name in _N_OF and isinstance(args, list) and len(args) == 2 and is_number(args[0]) and _str_list(args[1]):
        n, candidates = args[0], args[1]
        if n <= 0:
            return ALWAYS
        if not candidates:
            return NEVER
        if n > len(candidates):
            return (0.0, len(candidates) / n)
        return None
    if name == "tool_call_count_between" and isinstance(args, list):
        low = args[0] if len(args) > 0 and is_number(args[0]) else 0
        high = args[1] if len(args) > 1 and is_number(args[1]) else math.inf
        if low > high or high < 0:
            return NEVER
        if low <= 0 and high == math.inf:
            return ALWAYS
        return None
    return None
