"""Small formatting helpers shared by the reporters (numbers the JavaScript way, text fitting)."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

ELLIPSIS = "…"


def round2(value: float) -> float:
    """JS ``parseFloat(x.toFixed(2))``: half away from zero on the exact binary value."""
    return float(Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def fmt_score(value: float | None) -> str:
    """A score for people: two decimals (as Weval shows them), a dash when there is none."""
    if value is None:
        return "—"
    return str(Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def fmt_compare(value: float, bound: float) -> tuple[str, str]:
    """``(value, bound)`` as text for a line saying ``value < bound``.

    The bound reads as the user wrote it, with at least two decimals (``0.50``, ``0.576``);
    the value gets two decimals, or more when two would hide the difference (0.4996 vs 0.50).
    """
    bound_text = js_number(bound)
    if "e" not in bound_text:
        decimals = len(bound_text.partition(".")[2])
        if decimals < 2:
            bound_text = f"{Decimal(bound_text):.2f}"
    for places in (2, 3, 4, 6, 9):
        shown = Decimal(value).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
        if (value < bound) == (shown < Decimal(repr(bound))):
            return str(shown), bound_text
    return js_number(value), bound_text


def js_number(value: float | int) -> str:
    """JavaScript's Number-to-string: ``1`` not ``1.0``, ``0.00001``, ``1e-7``, ``1e+21``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    x = float(value)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    # repr gives the shortest round-tripping digits, which is what JS prints too.
    tup = Decimal(repr(abs(x))).as_tuple()
    digits = "".join(map(str, tup.digits)).rstrip("0") or "0"
    n = len(tup.digits) + tup.exponent  # the value is 0.<digits> x 10**n
    k = len(digits)
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        exp = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        body = f"{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp)}"
    return sign + body


def utf16_key(text: str) -> bytes:
    """Sort key matching JavaScript's default ``.sort()`` (UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")


def shorten(text: str, limit: int) -> str:
    """At most ``limit`` characters, ending in "…" when cut."""
    if limit <= 0 or len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)].rstrip() + ELLIPSIS


def one_line(text: str) -> str:
    """Whitespace runs (newlines included) become single spaces: for table cells and lists."""
    return " ".join(text.split())


def fit(line: str, width: int) -> str:
    """A terminal line no wider than ``width`` (cut with "…")."""
    return shorten(line, width) if width > 0 else line


def fit_left(text: str, width: int) -> str:
    """Cut from the left ("…/medical/triage.yml"): the end of a path says the most."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[-width:] if width > 0 else ""
    return ELLIPSIS + text[-(width - 1):]


def plural(count: int, word: str, words: str | None = None) -> str:
    return f"{count} {word if count == 1 else (words or word + 's')}"
