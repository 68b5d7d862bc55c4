"""The HTML report's history section (docs/history.md): each model's means over the recorded runs
as an inline SVG line (nothing from the network), the items whose score changed since the
previous run, and, for the one chosen, its previous and current answers side by side with both
scores point by point.

Hooks for tests and tools: ``[data-weval-trend="<model id>"]`` with ``data-points`` (the JSON
list of means, oldest first, this run last), ``[data-weval-change="<node id>"]`` (one per changed
item, and no other) and ``[data-weval-compare]`` (the panel, filled by a click).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pytest_weval.report._fmt import fmt_score, fmt_signed, plural
from pytest_weval.report._fmt import html_text as _e
from pytest_weval.report.history import Change, HistoryView, run_label

WIDTH, HEIGHT, PAD = 260, 64, 6
CSS = """
#weval-history .trends { display: flex; flex-wrap: wrap; gap: 10px 24px; }
#weval-history figure { margin: 0; }
#weval-history figcaption { font-size: 12px; color: var(--muted); overflow-wrap: anywhere; max-width: 260px; }
#weval-history svg { background: var(--panel); border: 1px solid var(--line); }
#weval-history svg polyline { fill: none; stroke: var(--accent); stroke-width: 2; }
#weval-history svg circle { fill: var(--accent); }
#weval-history svg circle.current { fill: var(--fg); }
#weval-changes button { font: inherit; background: none; border: 0; padding: 0; color: var(--accent); cursor: pointer; text-align: left; }
#weval-changes button[aria-pressed="true"] { font-weight: 600; }
#weval-changes .worse { color: var(--bad); }
.compare { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; margin-top: 8px; }
.compare pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--panel); padding: 6px; margin: 0; }
"""

JS = """
(() => {
  "use strict";
  const blob = document.getElementById("weval-history-data");
  if (!blob) return;
  const DATA = JSON.parse(blob.textContent);
  const pane = document.getElementById("weval-compare-pane");
  const fmt = (s) => (typeof s === "number" && isFinite(s) ? s.toFixed(2) : "\\u2014");
  function h(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      node.append(kid instanceof Node ? kid : String(kid)); // text nodes: an answer's markup is shown, never run
    }
    return node;
  }
  function side(title, run) {
    return h("div", { "data-side": title },
      h("h4", null, `${title}: score ${fmt(run.score)}`),
      h("div", { class: "muted mono" }, run.run),
      h("pre", { class: "text", "data-answer": title }, run.answer === null || run.answer === undefined ? "(no answer)" : run.answer));
  }
  function show(nodeid) {
    const change = DATA.changes[nodeid];
    if (!change) return;
    for (const b of document.querySelectorAll("#weval-changes button")) {
      b.setAttribute("aria-pressed", b.dataset.wevalChange === nodeid ? "true" : "false");
    }
    const rows = change.points.map(([text, before, after]) =>
      h("tr", null, h("td", null, text), h("td", null, fmt(before)), h("td", null, fmt(after))));
    pane.replaceChildren(h("article", { "data-weval-compare": true, "data-weval-for": nodeid },
      h("h3", { class: "mono" }, nodeid),
      h("div", { class: "compare" }, side("previous", change.previous), side("current", change.current)),
      h("h4", null, "Points"),
      rows.length
        ? h("table", { class: "plain" }, h("thead", null, h("tr", null, h("th", null, "point"), h("th", null, "previous"), h("th", null, "current"))), h("tbody", null, rows))
        : h("p", { class: "muted" }, "No point was recorded.")));
    pane.hidden = false;
  }
  const list = document.getElementById("weval-changes");
  if (list) list.addEventListener("click", (event) => {
    const button = event.target.closest("[data-weval-change]");
    if (button) show(button.dataset.wevalChange);
  });
})();
"""


def _svg(model: str, means: Sequence[float], runs: Sequence[str]) -> str:
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    step = inner_w / (len(means) - 1) if len(means) > 1 else 0.0
    points = [
        (PAD + (i * step if len(means) > 1 else inner_w / 2), PAD + (1 - min(1.0, max(0.0, m))) * inner_h)
        for i, m in enumerate(means)
    ]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    current = [' class="current"' if i == len(points) - 1 else "" for i in range(len(points))]
    dots = "".join(
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3"{current[i]}><title>{_e(run)}: {_e(fmt_score(m))}</title></circle>'
        for i, ((x, y), m, run) in enumerate(zip(points, means, runs))
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'role="img" aria-label="{_e(model)}: mean score per run, 0 to 1">'
        f'<polyline points="{line}"></polyline>{dots}</svg>'
    )


def _points(change: Change) -> list[list[Any]]:
    """[point text, previous score, current score] for each point of either run, current order
    first."""
    before: dict[str, Any] = {}
    for recorded in change.previous.detail.points:
        before.setdefault(recorded.text, recorded.score)
    rows: list[list[Any]] = []
    seen: set[str] = set()
    for p in change.current.points:
        if p.key_point_text in seen:
            continue
        seen.add(p.key_point_text)
        rows.append([p.key_point_text, before.get(p.key_point_text), p.coverage_extent])
    rows += [[text, score, None] for text, score in before.items() if text not in seen]
    return rows


def history_data(view: HistoryView) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if view.changes is not None:
        for change in view.changes.items:
            previous_id = (change.run or view.changes.previous).id
            changes[change.nodeid] = {
                "previous": {"run": previous_id, "score": change.old, "answer": change.previous.answer},
                "current": {"run": "this run", "score": change.new, "answer": change.current.response},
                "points": _points(change),
            }
    return {"changes": changes}


def history_section(view: HistoryView) -> str:
    """The section's markup; the page adds ``history_data(view)`` as the blob
    ``#weval-history-data`` and ``JS`` under its nonce."""
    parts = ['<section id="weval-history"><h2>Mean score over the runs</h2>']
    if view.trends:
        parts.append(
            '<p class="muted">Each model\'s mean in this run and in every recorded run over the same items '
            "(runs of another selection, such as -k, are left out), oldest first; the last point is this run.</p>"
            '<div class="trends">'
        )
        for model, means in sorted(view.trends.items()):
            runs = view.trend_runs.get(model, [])
            caption = f"{model}: {fmt_score(means[-1])} in this run"
            if len(means) > 1:
                caption += (
                    f", {fmt_signed(means[-1] - means[-2])} since the last run over the same items "
                    f"({plural(len(means), 'run')})"
                )
            parts.append(
                f'<figure data-weval-trend="{_e(model)}" data-points="{_e(json.dumps(list(means)))}">'
                f"{_svg(model, means, runs)}<figcaption>{_e(caption)}</figcaption></figure>"
            )
        parts.append("</div>")
    changes = view.changes
    if changes is not None:
        parts.append(f"<h2>Changed since {_e(run_label(changes.previous))}</h2>")
        if changes.older:
            parts.append(
                f'<p class="muted">{_e(plural(changes.older, "item"))} compared with an older run: '
                "the newer runs did not score them.</p>"
            )
        if changes.items:
            parts.append(
                f'<p class="muted">{_e(changes.count_text())}, scored differently: '
                f"{changes.better} better, {changes.worse} worse. Choose one to compare the answers.</p>"
                '<ul id="weval-changes">'
            )
            for change in changes.items:
                css = "worse" if change.new < change.old else "better"
                parts.append(
                    f'<li class="{css}"><button type="button" data-weval-change="{_e(change.nodeid)}" aria-pressed="false">'
                    f'<span class="mono">{_e(change.nodeid)}</span>: {_e(fmt_score(change.old))} \u2192 '
                    f"{_e(fmt_score(change.new))}</button></li>"
                )
            parts.append('</ul><div id="weval-compare-pane" hidden></div>')
        elif changes.compared:
            parts.append('<p class="muted">No item\'s score changed.</p>')
        else:
            parts.append('<p class="muted">No item of this run was scored by an earlier run.</p>')
    parts.append("</section>")
    return "".join(parts)


def has_content(view: HistoryView | None) -> bool:
    return view is not None and (bool(view.trends) or view.changes is not None)


__all__ = ["CSS", "JS", "has_content", "history_data", "history_section"]
