"""The text metrics of promptfoo 0.123.1's assertions: Levenshtein distance (fastest-levenshtein,
on UTF-16 code units as JavaScript strings are), ROUGE-N with clipped counts (its ``rouge.ts``
over js-rouge's Treebank tokenizer and F-measure), BLEU (its ``bleu.ts``), and
``Number.prototype.toPrecision`` for the cost reason."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from pytest_weval.jsvalues import JS_WHITESPACE, js_number_str, js_trim
from pytest_weval.scoring.promptfoo import js

__all__ = ["bleu", "f_measure", "levenshtein", "rouge_n", "to_precision"]


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [data[i] | (data[i + 1] << 8) for i in range(0, len(data), 2)]


def levenshtein(a: str, b: str) -> int:
    """The edit distance between ``a`` and ``b`` in UTF-16 code units (Myers' bit-vector
    algorithm: one pass over ``b`` with ``a`` as a bit mask, exact for any lengths)."""
    pattern, text = _utf16_units(a), _utf16_units(b)
    if len(pattern) < len(text):
        pattern, text = text, pattern
    m = len(pattern)
    if m == 0:
        return len(text)
    if not text:
        return m
    peq: dict[int, int] = {}
    for i, unit in enumerate(pattern):
        peq[unit] = peq.get(unit, 0) | (1 << i)
    mask = (1 << m) - 1
    top = 1 << (m - 1)
    pv, mv, score = mask, 0, m
    for unit in text:
        eq = peq.get(unit, 0)
        xv = eq | mv
        xh = ((((eq & pv) + pv) & mask) ^ pv) | eq
        ph = mv | (~(xh | pv) & mask)
        mh = pv & xh
        if ph & top:
            score += 1
        if mh & top:
            score -= 1
        ph = ((ph << 1) | 1) & mask
        mh = (mh << 1) & mask
        pv = mh | (~(xv | ph) & mask)
        mv = ph & xv
    return score


def f_measure(precision: float, recall: float, beta: float = 1.0) -> float:
    """js-rouge's ``fMeasure``."""
    if precision == 0 and recall == 0:
        return 0.0
    b2 = beta * beta
    denominator = b2 * precision + recall
    return 0.0 if denominator == 0 else (1 + b2) * precision * recall / denominator


def _ngrams(tokens: Sequence[str], n: int) -> list[str]:
    return [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def rouge_n(candidate: str, reference: str, n: int = 1) -> float:
    """promptfoo's ``rougeNScore``: F1 of the clipped n-gram overlap (the caller lowercases)."""
    candidate_tokens = js.treebank_tokens(candidate)
    reference_tokens = js.treebank_tokens(reference)
    if len(candidate_tokens) < n or len(reference_tokens) < n:
        return 0.0
    candidate_grams = _ngrams(candidate_tokens, n)
    reference_grams = _ngrams(reference_tokens, n)
    reference_counts = Counter(reference_grams)
    overlap = sum(min(count, reference_counts[gram]) for gram, count in Counter(candidate_grams).items())
    if overlap == 0:
        return 0.0
    return f_measure(overlap / len(candidate_grams), overlap / len(reference_grams))


_WS_RUN = re.compile(f"[{re.escape(JS_WHITESPACE)}]+")


def _bleu_tokens(text: str) -> list[str]:
    """``text.toLowerCase().trim().split(/\\s+/)`` (an empty text is one empty token)."""
    return _WS_RUN.split(js_trim(text.lower()))


def bleu(candidate: str, references: Sequence[str]) -> float:
    """promptfoo's ``calculateBleuScore`` with the default weights (0.25 for 1- to 4-grams)."""
    weights = (0.25, 0.25, 0.25, 0.25)
    if js_trim(candidate) == "":
        return 0.0
    words = _bleu_tokens(candidate)
    reference_words = [_bleu_tokens(r) for r in references]
    closest = len(reference_words[0])
    for ref in reference_words[1:]:
        current, best = abs(len(ref) - len(words)), abs(closest - len(words))
        if current < best or (current == best and len(ref) < closest):
            closest = len(ref)
    orders: list[tuple[float, float]] = []
    for n in range(1, 5):
        grams = _ngrams(words, n) if n <= len(words) else []
        if not grams:
            continue
        counts = Counter(grams)
        best_clipped = 0
        for ref in reference_words:
            ref_counts = Counter(_ngrams(ref, n) if n <= len(ref) else [])
            clipped = sum(min(count, ref_counts[gram]) for gram, count in counts.items())
            best_clipped = max(best_clipped, clipped)
        orders.append((best_clipped / len(grams), weights[n - 1]))
    penalty = 1.0 if len(words) > closest else math.exp(1 - closest / len(words))
    weight_sum = sum(w for _, w in orders)
    if weight_sum == 0:
        return 0.0
    total = sum(w / weight_sum * math.log(p if p != 0 else 1e-7) for p, w in orders)
    return penalty * math.exp(total)


def to_precision(value: float, digits: int) -> str:
    """``Number.prototype.toPrecision(digits)``."""
    if not math.isfinite(value):
        return js_number_str(value)
    if value == 0:
        return "0" if digits == 1 else "0." + "0" * (digits - 1)
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    power = int(exponent)
    if power < -6 or power >= digits:
        sign = "+" if power >= 0 else "-"
        return f"{mantissa}e{sign}{abs(power)}"
    return f"{value:.{max(0, digits - 1 - power)}f}"
