"""Flaky items: an item whose samples (--weval-repeat) fall on both sides of its threshold
(docs/sampling.md). Its outcome is its mean's; the terminal says how many there were and
which were the worst, and --weval-fail-flaky makes any of them fail the session."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from pytest_weval.report._fmt import fit_middle, fmt_score, plural
from pytest_weval.results import Result, passes


def flaky_items(results: Sequence[Result]) -> list[Result]:
    """The scored flaky items, worst first: the closest to an even split of passing and
    failing samples (the least settled), then the mean nearest its threshold."""
    flaky = [r for r in results if r.flaky and r.outcome in ("passed", "failed")]

    def unsettled(r: Result) -> tuple[float, float, str]:
        ayes = sum(1 for s in r.sample_scores if passes(s, r.threshold))
        share = ayes / len(r.sample_scores)
        return (abs(share - 0.5), abs((r.score or 0.0) - r.threshold), r.nodeid)

    return sorted(flaky, key=unsettled)


def describe(result: Result) -> str:
    ayes = sum(1 for s in result.sample_scores if passes(s, result.threshold))
    return (
        f"{ayes} of {len(result.sample_scores)} samples pass ({', '.join(fmt_score(s) for s in result.sample_scores)}); "
        f"mean {fmt_score(result.score)} vs threshold {fmt_score(result.threshold)}: {result.outcome}"
    )


def render_flaky(results: Sequence[Result], width: int = 80, limit: int = 5) -> list[str]:
    sampled = [r for r in results if len(r.sample_scores) > 1 and r.outcome in ("passed", "failed")]
    flaky = flaky_items(results)
    if not flaky:
        return []
    lines = textwrap.wrap(
        f"Flaky: {plural(len(flaky), 'item')} of {len(sampled)} had samples on both sides of the threshold "
        "(each outcome is its mean's; docs/sampling.md). The least settled:",
        width,
    )
    for r in flaky[:limit]:
        lines.append("- " + fit_middle(r.nodeid, width - 2))
        lines += textwrap.wrap(describe(r), width, initial_indent="    ", subsequent_indent="    ")
    if len(flaky) > limit:
        lines.append(f"... and {len(flaky) - limit} more")
    return lines


def flaky_gate_lines(results: Sequence[Result]) -> list[str]:
    """--weval-fail-flaky: one line per flaky item."""
    return [f"{r.nodeid} is flaky: {describe(r)}" for r in flaky_items(results)]
