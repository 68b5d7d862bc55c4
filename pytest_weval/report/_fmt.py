"""Small formatting helpers shared by the reporters (numbers the JavaScript way, text fitting).

``fmt_score`` lives in ``scoring/aggregate.py``, where the linter and ``Weval`` reach it too.
"""

from __future__ import annotations

import html
import re
from decimal import ROUND_HALF_UP, Decimal

from pytest_weval.jsvalues import js_number_str as js_number  # one JS number formatter
from pytest_weval.scoring.aggregate import fmt_score  # beside the scores: lint and the API show them too

ELLIPSIS = "…"

SURROGATE = re.compile("[\ud800-\udfff]")  # lone surrogates: not valid UTF-8 on a page


def html_text(value: object) -> str:
    """Text for HTML (element content or a quoted attribute), the one escaping rule of every
    HTML section: lone surrogates become U+FFFD so the page stays valid UTF-8."""
    return html.escape(SURROGATE.sub("\ufffd", str(value)), quote=True)


# Characters a terminal acts on instead of showing: C0 and C1 controls (ESC starts the sequences
# that set a window's title or clear the screen), DEL, and the bidirectional overrides and
# isolates that reorder what follows them (U+202E shows "txt.exe" as "exe.txt").
_INVISIBLE = {
    code: (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    for code in (
        *range(0x20),
        0x7F,
        *range(0x80, 0xA0),
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
        0x200E,
        0x200F,
        0x061C,
    )
    if chr(code) not in "\n\t"
}


def visible(text: str) -> str:
    """``text`` safe to print to a terminal: what would act on the terminal is written out
    (``\\x1b``, ``\\u202e``); line breaks and tabs stay. Model answers, judge replies, prompts
    and ids come from models and strangers' files: every one that reaches the terminal goes
    through here. Files keep the exact text (JSON and HTML escape it themselves)."""
    return text.translate(_INVISIBLE)


def fmt_mean(value: float | None, ci95: tuple[float, float] | None) -> str:
    """A mean with its 95% interval: ``0.83 (0.73-0.92)``; the mean alone when it has none."""
    if value is None or ci95 is None:
        return fmt_score(value)
    return f"{fmt_score(value)} ({fmt_score(ci95[0])}-{fmt_score(ci95[1])})"


def fmt_signed(value: float, places: int = 2) -> str:
    """A difference, always signed: ``+0.03``, ``-0.12``, ``+0.00``."""
    shown = Decimal(value).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    if shown == 0:
        shown = abs(shown)
    return f"+{shown}" if shown >= 0 else str(shown)


def fmt_p(p: float | None) -> str:
    """A p-value for people: three decimals, ``<0.001`` below that, a dash when there is none."""
    if p is None:
        return "—"
    if p < 0.001:
        return "<0.001"
    return f"{Decimal(p).quantize(Decimal('0.001'), rounding=ROUND_HALF_UP)}"


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


def fit_middle(text: str, width: int) -> str:
    """Cut in the middle ("anthropic:claude…haiku-latest"): a model id's provider and its end
    both say which model it is."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[:width]
    head = (width - 1) // 2
    return text[:head] + ELLIPSIS + text[len(text) - (width - 1 - head) :]


def fit_left(text: str, width: int) -> str:
    """Cut from the left ("…/medical/triage.yml"): the end of a path says the most."""
    if len(text) <= width:
        return text
    if width <= 1:
        return text[-width:] if width > 0 else ""
    return ELLIPSIS + text[-(width - 1) :]


def fit_name(cell: str, width: int, *, header: bool = False, model: bool = False) -> str:
    """The one rule for cutting a table's first column to ``width``: a header loses its end; a
    path (not indented) its start ("…/medical/triage.yml"); a model id, or any indented name, its
    middle ("anthropic:clau…-haiku-latest"), its indent kept."""
    if len(cell) <= width:
        return cell
    if header:
        return fit(cell, width)
    indent = cell[: len(cell) - len(cell.lstrip(" "))]
    if model or indent:
        return indent + fit_middle(cell[len(indent) :], width - len(indent))
    return fit_left(cell, width)


def judge_label(judge_model_id: str) -> str:
    """A judge as people read it: ``holistic-x (openai:y)``. The Weval JSON keeps the
    reference's ``judgeModelId`` (``holistic-x(openai:y)``, no space) exactly."""
    head, sep, rest = judge_model_id.partition("(")
    return f"{head} ({rest}" if sep and head and not head.endswith(" ") else judge_model_id


def plural(count: int, word: str, words: str | None = None) -> str:
    return f"{count} {word if count == 1 else (words or word + 's')}"


def fmt_duration(seconds: float) -> str:
    """``42.0 s``, ``3 min 05 s``, ``26 h 03 min 05 s``: a run's length, a batch's age."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min {secs:02d} s" if hours else f"{minutes} min {secs:02d} s"
