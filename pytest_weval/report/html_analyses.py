"""The HTML report's analyses section (docs/history.md, 'In the HTML report'): when the store
holds an earlier run, the regressions since it, and this run's pain points and deltas, as
``python -m pytest_weval history regressions|pain-points|deltas`` compute them
(``report/analyses.py``, ``run_analyses``). Rendered on the server: the lists are bounded
(``RunAnalyses.limit`` rows each, worst first) and need no script.

Hooks for tests and tools: ``#weval-analyses``, one table per analysis
(``[data-weval-analysis="regressions|pain-points|deltas"]``), and one row per finding:
``[data-weval-regression="<node id>"]`` (with ``data-point`` for a point's, ``data-severity``),
``[data-weval-pain="<node id>"]``, ``[data-weval-delta="<blueprint id> prompt <prompt id>"]``
(with ``data-model``, the base model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_weval.report._fmt import fmt_score, fmt_signed, plural
from pytest_weval.report._fmt import html_text as _e
from pytest_weval.report.analyses import MIN_SCORE_DELTA, PAIN_MAX, PAIN_MIN, POINT_FAILED_BELOW, RunAnalyses
from pytest_weval.report.history import HistoryView, run_label

CSS = """
#weval-analyses td.text { text-align: left; white-space: normal; overflow-wrap: anywhere; }
#weval-analyses tr.major td:first-child { color: var(--bad); font-weight: 600; }
#weval-analyses ul { margin: 0; padding-left: 1.2em; }
"""


def analyses_section(history: HistoryView | None) -> str:
    """The section's markup; nothing when the run has no earlier run to be analysed against."""
    found = history.analyses if history is not None else None
    if found is None:
        return ""
    parts = [
        '<section id="weval-analyses">',
        f"<style>{CSS}</style>",
        _regressions(found),
        _pain_points(found),
        _deltas(found),
        "</section>",
    ]
    return "".join(parts)


def _more(found: RunAnalyses, key: str, command: str) -> str:
    total = found.totals.get(key, 0)
    if total <= found.limit:
        return ""
    return (
        f'<p class="muted">The {found.limit} worst of {total:,}; all of them: '
        f"<code>python -m pytest_weval history {command}</code>.</p>"
    )


def _table(name: str, heads: Sequence[str], rows: Sequence[str]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in heads)
    return (
        f'<table class="plain" data-weval-analysis="{name}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _regressions(found: RunAnalyses) -> str:
    previous = found.previous
    parts = [
        f"<h2>Regressions since {_e(run_label(previous))}</h2>",
        f'<p class="muted">Each prompt, and each point, that this run scored at least {MIN_SCORE_DELTA:g} lower '
        f"than run {_e(previous.id)} did, per blueprint and model, the largest drop first "
        "(<code>history regressions</code>).</p>",
    ]
    if not found.regressions:
        parts.append('<p class="muted">No regression.</p>')
        return "".join(parts)
    rows = []
    for r in found.regressions:
        point = r.get("point")
        attrs = f'data-weval-regression="{_e(r["nodeid"])}" data-severity="{_e(r["severity"])}"'
        if point is not None:
            attrs += f' data-point="{_e(point)}"'
        what = _e(point if point is not None else "(the prompt's score)")
        rows.append(
            f'<tr class="{_e(r["severity"])}" {attrs}><td>{_e(r["severity"])}</td>'
            f"<td>{_e(fmt_signed(float(r['delta'])))}</td>"
            f"<td>{_e(fmt_score(r['older']))} \u2192 {_e(fmt_score(r['newer']))}</td>"
            f'<td class="text mono">{_e(r["nodeid"])}</td>'
            f'<td class="text">{what}</td></tr>'
        )
    parts.append(_table("regressions", ("severity", "change", "score", "item", "point"), rows))
    parts.append(_more(found, "regressions", "regressions"))
    return "".join(parts)


def _pain_points(found: RunAnalyses) -> str:
    parts = [
        "<h2>Pain points</h2>",
        f'<p class="muted">This run\'s items scoring between {PAIN_MIN:g} and {PAIN_MAX:g}: near failures, not '
        f"breakdowns, with their points below {POINT_FAILED_BELOW:g}, the worst first "
        "(<code>history pain-points</code>).</p>",
    ]
    if not found.pain_points:
        parts.append('<p class="muted">No item scores within the window.</p>')
        return "".join(parts)
    rows = []
    for p in found.pain_points:
        points = "".join(f"<li>{_e(fmt_score(f['score']))} {_e(f['point'])}</li>" for f in p["failedPoints"])
        rows.append(
            f'<tr data-weval-pain="{_e(p["nodeid"])}"><td>{_e(fmt_score(p["score"]))}</td>'
            f'<td class="text mono">{_e(p["nodeid"])}</td><td class="text"><ul>{points}</ul></td></tr>'
        )
    parts.append(_table("pain-points", ("score", "item", "points below " + f"{POINT_FAILED_BELOW:g}"), rows))
    parts.append(_more(found, "painPoints", "pain-points"))
    return "".join(parts)


def _deltas(found: RunAnalyses) -> str:
    parts = [
        "<h2>Against the peers</h2>",
        '<p class="muted">Per prompt, each model\'s score (the mean over its variants) against the mean of the '
        "other models' (each averaged over its variants first), the furthest below first "
        "(<code>history deltas</code>).</p>",
    ]
    if not found.deltas:
        parts.append('<p class="muted">No prompt was scored for a model and a peer.</p>')
        return "".join(parts)
    rows = [_delta_row(d) for d in found.deltas]
    parts.append(_table("deltas", ("change", "model", "score", "peers' mean", "peers", "rank", "prompt"), rows))
    parts.append(_more(found, "deltas", "deltas"))
    return "".join(parts)


def _delta_row(d: Mapping[str, Any]) -> str:
    where = f"{d['blueprint']} prompt {d['prompt']}"
    return (
        f'<tr data-weval-delta="{_e(where)}" data-model="{_e(d["model"])}">'
        f"<td>{_e(fmt_signed(float(d['delta'])))}</td><td class=\"text mono\">{_e(d['model'])}</td>"
        f"<td>{_e(fmt_score(d['score']))}</td><td>{_e(fmt_score(d['peerMean']))}</td>"
        f"<td>{_e(plural(int(d['peers']), 'peer'))}</td><td>{int(d['rank'])}</td>"
        f'<td class="text mono">{_e(where)}</td></tr>'
    )


__all__ = ["analyses_section"]
