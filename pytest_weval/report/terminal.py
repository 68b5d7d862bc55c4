"""The end-of-run summary as plain text lines (the plugin writes them to the terminal).

Written for people who do not read code: scores are 0 to 1 (higher is better) with two
decimals, counts are in words, and nothing depends on colour. Every line fits ``width``;
the same roll-up always renders to the same lines.
"""

from __future__ import annotations

import posixpath
import textwrap
from collections.abc import Sequence
from typing import Any

from pytest_weval.errors import STORE_KINDS
from pytest_weval.report._fmt import (
    fit,
    fit_middle,
    fit_name,
    fmt_mean,
    fmt_p,
    fmt_score,
    fmt_signed,
    js_number,
    one_line,
    plural,
    shorten,
)
from pytest_weval.report.baseline import Comparison, ModelComparison, fmt_difference
from pytest_weval.report.flaky import render_flaky
from pytest_weval.report.rollup import ROOT, ItemProblem, Rollup, Tally
from pytest_weval.results import Result

GAP = "  "
MAX_MODEL_COLUMNS = 6  # beyond this a wide table is hard to read: one line per model instead
MIN_NAME_WIDTH = 16


# ---------------------------------------------------------------- helpers


def _counts(t: Tally) -> str:
    parts = [f"{t.passed}/{t.items - t.skipped} passed"]
    if t.errors:
        parts.append(plural(t.errors, "error"))
    if t.skipped:
        parts.append(f"{t.skipped} skipped")
    return ", ".join(parts)


def _mean(t: Tally | None) -> str:
    """``0.83 (0.73-0.92)``: the mean and its 95% interval (docs/statistics.md)."""
    return "" if t is None else fmt_mean(t.mean, t.ci95)


def _table(rows: Sequence[Sequence[str]], aligns: str, width: int, *, names: bool = False) -> list[str]:
    """Columns padded to their widest cell, the first column cut to fit (``fit_name``); the
    other columns are never cut: a table that does not fit ``width`` even so becomes one record
    per row, its values labelled by the headers, so no number (the cost) is lost."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    rest = sum(widths[1:]) + len(GAP) * (len(widths) - 1)
    if MIN_NAME_WIDTH + rest > width and len(widths) > 1:
        return _records(rows, width, names=names)
    widths[0] = min(widths[0], width - rest)
    lines = []
    for n, row in enumerate(rows):
        cells = []
        for i, (cell, align) in enumerate(zip(row, aligns)):
            if i == 0:
                cell = fit_name(cell, widths[0], header=n == 0, model=names)
            cells.append(cell.rjust(widths[i]) if align == "r" else cell.ljust(widths[i]))
        lines.append(GAP.join(cells).rstrip())
    return lines


def _records(rows: Sequence[Sequence[str]], width: int, *, names: bool) -> list[str]:
    """A table too wide for ``width``: each row's name on a line, then its values, each after
    its column's header (``requests 12, ..., cost $0.0123``), wrapped."""
    headers = rows[0]
    lines = []
    for row in rows[1:]:
        lines.append(fit_name(row[0], width, model=names))
        indent = " " * (len(row[0]) - len(row[0].lstrip(" ")) + 2)
        values = [f"{header} {value}" for header, value in zip(headers[1:], row[1:]) if value]
        line = ""
        for number, value in enumerate(values):  # a value is never split ("0.0 s", "$0.0123")
            value += "," if number < len(values) - 1 else ""
            if line and len(line) + 1 + len(value) > width:
                lines.append(line)
                line = ""
            line = f"{line} {value}" if line else fit(indent + value, width)
        if line:
            lines.append(line)
    return lines


def short_model_name(model_id: str) -> str:
    """``openrouter:google/gemini-2.5-flash`` -> ``gemini-2.5-flash``."""
    return model_id.rsplit(":", 1)[-1].rsplit("/", 1)[-1] or model_id


# ---------------------------------------------------------------- sections


def render_overview(rollup: Rollup, width: int = 80) -> list[str]:
    t = rollup.overall
    weighted = ", weighted by prompt weight" if t.weighted and t.ci95 is not None else ""
    weighted = weighted or (" (weighted by prompt weight)" if t.weighted else "")
    line = (
        f"{plural(t.items, 'item')} in {plural(len(rollup.blueprints), 'blueprint')}: "
        f"{_counts(t)}; mean score {_mean(t)}{weighted}"
    )
    return textwrap.wrap(line, width) or [""]


def _column_labels(
    models: Sequence[str], name_width: int, width: int, cell_width: int = 4
) -> tuple[list[str], bool] | None:
    """Headers for a models-as-columns table, or None when it cannot fit ``width``."""
    if not models or len(models) > MAX_MODEL_COLUMNS:
        return None
    short = [short_model_name(m) for m in models]
    candidates = [(list(models), False)]
    if len(set(short)) == len(short):
        candidates.append((short, True))
    for labels, legend in candidates:
        needed = name_width + sum(len(GAP) + max(len(label), cell_width) for label in labels) + len(GAP) + cell_width
        if needed <= width:
            return labels, legend
    return None


def render_score_table(rollup: Rollup, width: int = 80, *, note: bool = True) -> list[str]:
    """Mean score per blueprint x model: models as columns when they fit, else one line each."""
    if not rollup.blueprints:
        return []
    models = list(rollup.models)
    paths = list(rollup.blueprints)
    name_width = min(max(len(p) for p in paths + ["blueprint"]), max(width // 2, MIN_NAME_WIDTH))
    cells = {
        path: ([_mean(bp.by_model.get(m)) for m in models], _mean(bp.overall)) for path, bp in rollup.blueprints.items()
    }
    bottom = ([_mean(rollup.by_model[m]) for m in models], _mean(rollup.overall))
    cell_width = max(len(cell) for row, total in [*cells.values(), bottom] for cell in [*row, total])
    chosen = _column_labels(models, name_width, width, cell_width)
    lines = textwrap.wrap("Mean score per blueprint and model (0 to 1, higher is better)", width)
    if chosen is not None:
        labels, legend = chosen
        rows = [["blueprint", *labels, "all"]]
        for path, (row, total) in cells.items():
            rows.append([path, *row, total])
        rows.append(["all blueprints", *bottom[0], bottom[1]])
        lines += _table(rows, "l" + "r" * (len(models) + 1), width)
        if legend:
            lines.append("Columns:")
            for label, model in zip(labels, models):
                legend_line = f"  {label} = "
                lines.append(legend_line + fit_middle(model, width - len(legend_line)))
    else:
        rows = [["blueprint / model", "mean", "passed"]]
        for path, bp in rollup.blueprints.items():
            rows.append([path, _mean(bp.overall), _counts(bp.overall)])
            for model, t in bp.by_model.items():
                rows.append(["  " + model, _mean(t), _counts(t)])
        if len(rollup.blueprints) > 1:
            rows.append(["all blueprints", _mean(rollup.overall), _counts(rollup.overall)])
            for model, t in rollup.by_model.items():
                rows.append(["  " + model, _mean(t), _counts(t)])
        lines += _table(rows, "lrl", width)
    if any(bp.overall.weighted for bp in rollup.blueprints.values()):
        lines += textwrap.wrap("Means are weighted by each prompt's weight where a blueprint sets one.", width)
    tallies = [rollup.overall, *rollup.by_model.values()]
    tallies += [t for bp in rollup.blueprints.values() for t in (bp.overall, *bp.by_model.values())]
    if note and any(t.ci95 is not None for t in tallies):  # the note explains brackets only where there are some
        lines += textwrap.wrap(
            "In brackets: the mean's 95% confidence interval, clustered by blueprint over several blueprints, "
            "else by prompt; none for a single prompt (docs/statistics.md).",
            width,
        )
    return lines


def render_repeats(rollup: Rollup, width: int = 80) -> list[str]:
    """With --weval-repeat: how much an item's samples disagree, per model."""
    per_model = {m: t.within_item_variance for m, t in rollup.by_model.items() if t.within_item_variance is not None}
    if not per_model:
        return []
    lines = textwrap.wrap(
        "Repeats: each item's score is the mean of its samples (--weval-repeat); the variance of an item's "
        "sample scores, averaged over the items:",
        width,
    )
    rows = [["model", "variance", "sd"]]
    for model, variance in per_model.items():
        rows.append([model, f"{variance:.4f}", f"{variance**0.5:.3f}"])
    return lines + _table(rows, "lrr", width)


def render_folder_tree(rollup: Rollup, width: int = 80) -> list[str]:
    """Folders, subfolders and files with their mean score and pass counts."""
    if not rollup.folders:
        return []
    rows = [["folder / file", "mean", "passed"]]

    def walk(folder_path: str, depth: int) -> None:
        folder = rollup.folders[folder_path]
        indent = "  " * depth
        label = "(all)" if folder_path == ROOT else posixpath.basename(folder_path) + "/"
        rows.append([indent + label, _mean(folder.overall), _counts(folder.overall)])
        for sub in folder.folders:
            walk(sub, depth + 1)
        for path in folder.blueprints:
            t = rollup.blueprints[path].overall
            rows.append(["  " * (depth + 1) + posixpath.basename(path), _mean(t), _counts(t)])

    walk(ROOT, 0)
    return [fit("Scores by folder", width)] + _table(rows, "lrl", width)


def render_metrics(rollup: Rollup, width: int = 80) -> list[str]:
    """promptfoo suites' named metrics: mean score and the rows whose assertions of it passed."""
    if not rollup.metrics:
        return []
    rows = [["metric", "mean", "passed"]]
    for name, metric in rollup.metrics.items():
        rows.append([name, fmt_score(metric.mean), f"{metric.passed}/{metric.rows}"])
    return [fit("Scores by metric (promptfoo suites)", width)] + _table(rows, "lrl", width)


def render_usage(rollup: Rollup, width: int = 80) -> list[str]:
    """Requests, cache hits and tokens per model (generation and judging)."""
    if not rollup.usage:
        return []
    # Rate limits get their columns only when some provider refused or paced a request.
    throttled = rollup.usage_total.refused > 0 or rollup.usage_total.rate_wait_s >= 1.0
    priced = rollup.usage_total.cost_usd is not None
    rows = [
        ["model", "requests", "cached", "tokens in", "tokens out"]
        + (["refused", "waited"] if throttled else [])
        + (["cost"] if priced else [])
    ]
    for model, u in [*rollup.usage.items(), ("total", rollup.usage_total)]:
        row = [model, f"{u.requests:,}", f"{u.cache_hits:,}", f"{u.input_tokens:,}", f"{u.output_tokens:,}"]
        if throttled:
            row += [f"{u.refused:,}", f"{u.rate_wait_s:,.1f} s"]
        if priced:
            row.append("no price" if u.cost_usd is None else f"${u.cost_usd:,.4f}")
        rows.append(row)
    align = "lrrrr" + ("rr" if throttled else "") + ("r" if priced else "")
    title = "Usage per model (answers and judging" + (
        "; refused: rate-limit refusals, waited: time spent" if throttled else ""
    )
    title += " waiting on rate limits)" if throttled else ")"
    return textwrap.wrap(title, width) + _table(rows, align, width, names=True)


def render_baseline(comparison: Comparison | None, width: int = 80, limit: int = 20) -> list[str]:
    """The "Compared with baseline" table: per model the baseline and current means over the paired items,
    the difference with its interval, the p-value and the verdict; then what did not pair and
    the prompts that moved most."""
    if comparison is None:
        return []
    lines = textwrap.wrap(
        f"Compared with baseline {comparison.directory} (this run minus the baseline, on items paired by "
        "blueprint, prompt, model, temperature and system prompt; p: one-sided for a drop, Holm-adjusted "
        f"across models; a regression is a drop with p <= {comparison.alpha:g} larger than "
        f"{comparison.max_drop:g}; sees: the smallest drop the test would find with 80% power)",
        width,
    )
    if comparison.models:
        rows = [["model", "items", "baseline", "current", "difference (95% CI)", "p", "sees", "verdict"]]
        for model, m in comparison.models.items():
            rows.append(
                [
                    model,
                    str(m.items),
                    fmt_score(m.baseline_mean),
                    fmt_score(m.current_mean),
                    fmt_difference(m.delta, m.ci95),
                    fmt_p(m.p_holm),
                    _fmt_mde(m),
                    m.verdict,
                ]
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        needed = max(widths[0], MIN_NAME_WIDTH) + sum(widths[1:]) + len(GAP) * (len(widths) - 1)
        if needed <= width:
            lines += _table(rows, "lrrrrrrl", width)
            for model, m in comparison.models.items():
                why = m.why_not_significant()
                if why is not None:
                    lines += textwrap.wrap(f"{model}: not significant: {why}", width, subsequent_indent="  ")
        else:  # too wide to be a table: a few lines per model
            for model, m in comparison.models.items():
                lines.append(fit(f"{model}: {m.verdict}", width))
                lines += textwrap.wrap(
                    f"{plural(m.items, 'paired item')}, baseline {fmt_score(m.baseline_mean)}, current "
                    f"{fmt_score(m.current_mean)}, difference {fmt_difference(m.delta, m.ci95)}, p {fmt_p(m.p_holm)}, "
                    f"sees {_fmt_mde(m)}",
                    width,
                    initial_indent="  ",
                    subsequent_indent="  ",
                )
                why = m.why_not_significant()
                if why is not None:
                    lines += textwrap.wrap(why, width, initial_indent="  ", subsequent_indent="  ")
    else:
        lines.append(fit("No item of this run pairs with one of the baseline.", width))
    counts = comparison.unpaired_counts()
    if comparison.unpaired:
        said = [
            f"{counts['onlyCurrent']} only in this run",
            f"{counts['onlyBaseline']} only in the baseline",
            f"{counts['unscored']} without a score in one of the runs",
        ]
        lines += textwrap.wrap(f"Items not paired ({len(comparison.unpaired)}): " + ", ".join(said) + ":", width)
        for u in comparison.unpaired[:limit]:
            text = f"- {u.blueprint_id} > prompt '{u.prompt_id}' > {u.effective_model_id}: {u.why}"
            lines += textwrap.wrap(text, width, subsequent_indent="    ")
        if len(comparison.unpaired) > limit:
            lines += textwrap.wrap(
                f"... and {len(comparison.unpaired) - limit} more (all are in summary.json with --weval-out)", width
            )
    if comparison.moved:
        lines.append(fit("Prompts that moved most (baseline -> this run):", width))
        for pair in comparison.moved[: min(limit, 10)]:
            r = pair.current
            text = (
                f"- {fmt_score(pair.baseline.score)} -> {fmt_score(r.score)} ({fmt_difference(pair.delta, None)}) "
                f"{r.blueprint_path} > prompt '{r.prompt_id}' > {r.effective_model_id}"
            )
            lines += textwrap.wrap(text, width, subsequent_indent="    ")
    return lines


def _fmt_mde(m: ModelComparison) -> str:
    """The smallest drop the test would find with 80% power: ``-0.09``; a dash with no test;
    ``none`` when no drop could be that large (too few items to see any)."""
    if m.mde is None:
        return "-"
    return "none" if m.blind else fmt_signed(-m.mde)


_AGREEMENT_WORDS = {
    "reliable": "the judges agree well",
    "tentative": "the judges mostly agree; read judged scores with some care",
    "unstable": "the judges gave nearly identical scores, so alpha says little here",
    "unreliable": "the judges often disagree; treat judged scores with caution",
}


def render_agreement(agreement: dict[str, Any] | None, width: int = 80) -> list[str]:
    if not agreement:
        return []
    alpha = agreement.get("krippendorffsAlpha")
    interp = str(agreement.get("interpretation", ""))
    facts = []
    if "numItems" in agreement:
        facts.append(plural(int(agreement["numItems"]), "judged point"))
    if "numJudges" in agreement:
        facts.append(plural(int(agreement["numJudges"]), "judge"))
    alpha_text = js_number(alpha) if isinstance(alpha, (int, float)) else "?"
    text = (
        f"Judge agreement (Krippendorff's alpha, 1 = always agree): {alpha_text}, {interp}"
        f"{' — ' + _AGREEMENT_WORDS[interp] if interp in _AGREEMENT_WORDS else ''}"
        f"{' (' + ', '.join(facts) + ')' if facts else ''}."
    )
    return textwrap.wrap(text, width, subsequent_indent="  ")


def render_point_errors(rollup: Rollup, width: int = 80, limit: int = 20) -> list[str]:
    """Errored points (left out of the score) and judge warnings (score kept): file, prompt,
    model, point, error. Meant for the end-of-run warnings."""
    problems = rollup.point_problems
    if not problems:
        return []
    lines = [fit(f"Points with problems ({len(problems)}):", width)]
    for p in problems[:limit]:
        effect = "score kept" if p.score_kept else "left out of the score"
        text = (
            f"- {p.blueprint_path} > prompt '{p.prompt_id}' > {p.model} > "
            f"\"{shorten(one_line(p.point), 120)}\" ({effect}): {shorten(one_line(p.error), 300)}"
        )
        lines += textwrap.wrap(text, width, subsequent_indent="    ")
    if len(problems) > limit:
        lines += textwrap.wrap(
            f"... and {len(problems) - limit} more (all are in summary.json with --weval-out)", width
        )
    return lines


def render_item_errors(rollup: Rollup, width: int = 80, limit: int = 20) -> list[str]:
    """Items with no score, one line each; those the budget stopped as one line (one stop, one message)."""
    every = rollup.item_problems
    if not every:
        return []
    stopped = [p for p in every if p.kind == "budget"]
    unknown: dict[str, list[ItemProblem]] = {}  # a model the provider does not have: one line for all its items
    for p in every:
        if p.kind == "unknown_model":
            unknown.setdefault(p.model.split("[", 1)[0], []).append(p)
    unsent = [p for p in every if p.kind in STORE_KINDS]  # the cache could keep no reply: one stop, one message
    problems = [p for p in every if p.kind not in ("budget", "unknown_model") and p.kind not in STORE_KINDS]
    lines = [fit(f"Items that could not be scored ({len(every)}):", width)]
    if stopped:
        text = (
            f"- {plural(len(stopped), 'item')} stopped by --weval-budget: {shorten(one_line(stopped[-1].error), 300)}"
        )
        lines += textwrap.wrap(text, width, subsequent_indent="    ")
    if unsent:
        text = f"- {plural(len(unsent), 'item')} not sent: {shorten(one_line(unsent[-1].error), 300)}"
        lines += textwrap.wrap(text, width, subsequent_indent="    ")
    for model, items in unknown.items():
        files = sorted({p.blueprint_path for p in items})
        named = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        text = (
            f"- {plural(len(items), 'item')} of {model} (in {named}): the provider has no such model (HTTP 404); "
            "fix the id where it is named"
        )
        lines += textwrap.wrap(text, width, subsequent_indent="    ")
    for p in problems[:limit]:
        text = f"- {p.blueprint_path} > prompt '{p.prompt_id}' > {p.model}: {shorten(one_line(p.error), 300)}"
        lines += textwrap.wrap(text, width, subsequent_indent="    ")
    if len(problems) > limit:
        lines.append(f"... and {len(problems) - limit} more")
    return lines


def render_summary(
    rollup: Rollup,
    *,
    width: int = 80,
    limit: int = 20,
    comparison: Comparison | None = None,
    quiet: bool = False,
    results: Sequence[Result] = (),
) -> list[str]:
    """Every section, separated by blank lines, each line at most ``width`` characters.
    ``quiet`` (``-q``): the overview, the score table, repeats, flaky items and the baseline
    only; each failed or errored item has said its own reason above. ``results``: the items,
    for the flaky ones among them."""
    width = max(int(width or 80), 40)
    if quiet:
        sections = [render_overview(rollup, width), render_score_table(rollup, width, note=False)]
        sections += [render_repeats(rollup, width), render_flaky(results, width)]
        sections += [render_baseline(comparison, width, limit)]
        return [line for section in sections if section for line in section]
    sections = [
        render_overview(rollup, width),
        render_score_table(rollup, width),
        render_repeats(rollup, width),
        render_flaky(results, width),
        render_folder_tree(rollup, width),
        render_metrics(rollup, width),
        render_baseline(comparison, width, limit),
        render_usage(rollup, width),
        render_agreement(rollup.agreement, width),
        render_item_errors(rollup, width, limit),
        render_point_errors(rollup, width, limit),
    ]
    lines: list[str] = []
    for section in sections:
        if section:
            if lines:
                lines.append("")
            lines += section
    return lines
