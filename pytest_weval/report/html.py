"""``--weval-html``: the run as one self-contained HTML page (docs/options.md, 'HTML report').

Read from the same records as every other reporter (``ItemResult``s, the ``Rollup`` and the
parsed ``Blueprint``s), written once, by the process that writes the other outputs.

- **Overview**, rendered here as HTML: a models x blueprints heatmap of mean scores grouped by
  folder (each folder row is the folder's roll-up), pass counts and thresholds, and the run's
  facts (date, options, usage and cache hits per model, duration, judges and their agreement).
- **Per blueprint and per item**, rendered by the page's script when opened: each blueprint's
  data is its own block, JSON deflated and base64'd (``packed_json``) in a
  ``<script type="application/octet-stream">``, decoded with the browser's own
  ``DecompressionStream`` and drawn only when the blueprint is shown, so a run of 16,000 items
  opens as fast as its overview and weighs about 60 bytes per item.
- Hooks for tests and scripts (docs/options.md): ``data-weval-cell="<path>|<model id>"`` with
  ``data-score`` on each overview cell, ``data-weval-item="<node id>"`` on each prompt x model
  cell, ``data-weval-detail`` on the detail shown.
- With ``--weval-baseline``, the ``Comparison`` of ``report.baseline`` as it is (no statistic is
  computed here): beside each model's run mean its baseline mean, the paired difference with its
  95% interval, p and the verdict; in the run's facts the same per model in a table, the
  unpaired counts and items, and the prompts that moved most. The comparison is per model and
  per item, not per blueprint, so the blueprint x model cells show none.

Nothing is loaded from the network (inline CSS and JS; a Content-Security-Policy that allows
no fetch and only the page's own script). Text from blueprints and models reaches the page
HTML-escaped here or inside the JSON (the run's blob as it is, each blueprint's compressed) with
``<``, ``>`` and ``&`` escaped, and the script
shows it with ``textContent``, so an answer holding ``<script>`` is shown, never run.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import os
import re
import secrets
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pydantic_core

from pytest_weval.blueprint.model import Blueprint, Prompt
from pytest_weval.files import write_atomic
from pytest_weval.report._fmt import SURROGATE, fmt_duration, fmt_p, fmt_score, js_number, judge_label, plural
from pytest_weval.report._fmt import html_text as _e
from pytest_weval.report.baseline import Comparison, ModelComparison, fmt_difference
from pytest_weval.report.facts import RunFacts
from pytest_weval.report.history import HistoryView
from pytest_weval.report.html_analyses import analyses_section
from pytest_weval.report.html_assets import CSS, JS
from pytest_weval.report.html_history import CSS as HISTORY_CSS
from pytest_weval.report.html_history import JS as HISTORY_JS
from pytest_weval.report.html_history import has_content, history_data, history_section
from pytest_weval.report.rollup import (
    ROOT,
    BlueprintRollup,
    Rollup,
    Tally,
    build_rollup,
    folder_of,
    item_key,
    usage_dict,
)
from pytest_weval.report.similarity import similarity_tables
from pytest_weval.report.spool import FullResults, whole_results
from pytest_weval.report.terminal import short_model_name
from pytest_weval.report.weval_json import conversation_turns, generation_failed
from pytest_weval.results import ItemResult, PointAssessment, Result
from pytest_weval.scoring.similarity import IDEAL_MODEL_ID

# Viridis (matplotlib's), readable by people with the common colour-vision deficiencies and in
# greyscale: dark purple for 0, yellow for 1. Eleven stops, interpolated.
VIRIDIS = (
    (0x44, 0x01, 0x54),
    (0x48, 0x24, 0x75),
    (0x41, 0x44, 0x87),
    (0x35, 0x5F, 0x8D),
    (0x2A, 0x78, 0x8E),
    (0x21, 0x91, 0x8C),
    (0x22, 0xA8, 0x84),
    (0x44, 0xBF, 0x70),
    (0x7A, 0xD1, 0x51),
    (0xBD, 0xDF, 0x26),
    (0xFD, 0xE7, 0x25),
)
BLOB_PREFIX = "weval-bp-"
# A blueprint's data: its JSON, deflated (zlib's format, what the browser's
# ``DecompressionStream("deflate")`` reads) and base64'd inside a script element the browser
# never runs. Answers, conversations and reflections are most of a page and compress 8 to 20
# times; the page decodes a blueprint's block when the blueprint is opened.
BLOB_TYPE = "application/octet-stream"
BLOB_ENCODING = "deflate"
PROBLEMS_SHOWN = 200  # item errors listed on the overview (all are one click away in their grid)


# ---------------------------------------------------------------- colours and escaping


def _mix(score: float) -> tuple[int, int, int]:
    x = min(max(score, 0.0), 1.0) * (len(VIRIDIS) - 1)
    i = min(int(x), len(VIRIDIS) - 2)
    f = x - i
    lo, hi = VIRIDIS[i], VIRIDIS[i + 1]
    return (round(lo[0] + (hi[0] - lo[0]) * f), round(lo[1] + (hi[1] - lo[1]) * f), round(lo[2] + (hi[2] - lo[2]) * f))


def _luminance(rgb: tuple[int, int, int]) -> float:
    """WCAG relative luminance."""

    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def score_colours(score: float) -> tuple[str, str]:
    """(background, text) for a score: the viridis colour, and black or white text, whichever
    contrasts more with it."""
    rgb = _mix(round(score * 100) / 100)
    lum = _luminance(rgb)
    text = "#000000" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#ffffff"
    return "#{:02x}{:02x}{:02x}".format(*rgb), text


SCALE = tuple(score_colours(i / 100) for i in range(101))  # what the page's script paints with


def script_json(data: Any) -> str:
    """JSON to sit inside ``<script type="application/json">``: ``<``, ``>`` and ``&`` (which
    only occur inside strings) as ``\\u`` escapes, so no text can close the element or open a
    comment; lone surrogates escaped too, so the page is valid UTF-8."""
    text = _compact_json(data)
    surrogates = text is None
    if text is None:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if surrogates else text


def _compact_json(data: Any) -> str | None:
    """``data``'s compact JSON by pydantic's serialiser, three times as fast as the standard
    library's on a blueprint's data (the same text but for a float's spelling, ``1e-05`` as
    ``0.00001``: the page's script reads the same numbers). None when it does not write what
    ``json.dumps`` would: a lone surrogate (which it refuses), NaN or an infinity (which
    ``allow_nan=False`` refuses), or what it cannot write."""
    try:
        text = pydantic_core.to_json(data, inf_nan_mode="constants").decode("utf-8")
    except (ValueError, TypeError):
        return None
    return None if "NaN" in text or "Infinity" in text else text


def packed_json(data: Any) -> str:
    """``data`` as a blueprint's block holds it: ``script_json``'s text (so it decodes to valid
    UTF-8), deflated at zlib's default level (the same bytes every time; level 9 saves some 7%
    for four times the CPU) and base64'd, which leaves nothing that could end the element."""
    return base64.b64encode(zlib.compress(script_json(data).encode("utf-8"), 6)).decode("ascii")


def unpacked_json(text: str) -> Any:
    """What the page's script decodes from a block ``packed_json`` wrote (for tests and scripts
    that read a page without a browser)."""
    return json.loads(zlib.decompress(base64.b64decode(text.strip())).decode("utf-8"))


def _num(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def _hash_link(**params: str) -> str:
    return "#" + "&".join(f"{k}={quote(v, safe='')}" for k, v in params.items())


# ---------------------------------------------------------------- per-blueprint data (the blobs)


def _ci95(t: Tally | None) -> tuple[float, float] | None:
    """The mean's 95% interval when the roll-up gives one (docs/statistics.md)."""
    ci = getattr(t, "ci95", None)
    return (float(ci[0]), float(ci[1])) if ci is not None else None


def _ci_text(t: Tally | None) -> str:
    ci = _ci95(t)
    return f"95% interval {fmt_score(ci[0])}\u2013{fmt_score(ci[1])}" if ci is not None else ""


def variant_label(result: ItemResult) -> str:
    """The model as the node id shows it: ``openai:gpt-4o-mini,temp=0.7`` (the brackets' content)."""
    nodeid = result.nodeid
    at = nodeid.rfind("[" + result.model_id)
    if at >= 0 and nodeid.endswith("]"):
        return nodeid[at + 1 : -1]
    return result.effective_model_id


def _content(value: Any) -> Any:
    return value if value is None or isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


# A turn's flag: written (in the prompt, or the system prompt), generated by the model, the turn
# that records an answer that never came, or an answer from the --weval-fixtures file.
WRITTEN, GENERATED, NO_ANSWER, FIXTURE = 0, 1, 2, 3

# Error kinds of an item nothing was asked for: no turn stands for its answer (the item's error
# says why), where the Weval JSON keeps the reference's error turn.
_NOTHING_ASKED = frozenset({"blueprint", "no_points", "missing_key", "not_allowed", "config", "no_fixture"})

# The reference's error turn, ``<<error>>message<</error>>``: the page shows the message.
_ERROR_TURN = re.compile(r"^<<error>>(.*)<</error>>$", re.DOTALL)


def _turns_shown(result: ItemResult, prompt: Prompt | None) -> tuple[list[dict[str, Any]], list[int]]:
    """The item's conversation as the page shows it, and each turn's flag."""
    history = conversation_turns(result, prompt)  # a turn changed is replaced, not changed
    flags = _generated_flags(history, result, prompt)
    if flags and flags[-1] == NO_ANSWER:
        if result.not_run or result.error_kind in _NOTHING_ASKED:
            return history[:-1], flags[:-1]
        content = str(history[-1].get("content") or "")
        unmarked = _ERROR_TURN.match(content)
        history[-1] = {**history[-1], "content": unmarked.group(1) if unmarked else content}
    if result.fixture is not None:  # docs/fixtures.md: the file answered, not the model
        answered = [i for i, flag in enumerate(flags) if flag == GENERATED]
        for i in answered[-1:] if result.fixture == "final" else answered:
            flags[i] = FIXTURE
    return history, flags


def _shown_sample(result: ItemResult) -> int | None:
    """--weval-repeat: which sample's answer and points the item shows (1-based): the first of
    the lowest-scoring ones (``run/pipeline.py`` keeps that one)."""
    scores = result.sample_scores
    if len(scores) < 2 or result.outcome not in ("passed", "failed"):
        return None
    return scores.index(min(scores)) + 1


def _generated_flags(history: list[dict[str, Any]], result: ItemResult, prompt: Prompt | None) -> list[int]:
    """Per turn: 1 generated by the model, 2 the turn that records a failed generation, 0 written."""
    flags = [0] * len(history)
    if generation_failed(result):
        if history and str(history[-1].get("content") or "").startswith("<<error>>"):
            flags[-1] = 2
        return flags
    texts = list(result.generated_texts)
    if prompt is not None and result.source == "blueprint" and prompt.messages:
        # The pipeline's history is [system] + the authored turns, each ``assistant: null`` filled
        # in, + the final answer when the last authored turn is a user's (docs/format.md).
        offset = 1 if history and history[0].get("role") == "system" else 0
        authored = prompt.messages
        if len(history) in (offset + len(authored), offset + len(authored) + 1):
            marked = [offset + i for i, m in enumerate(authored) if m.role == "assistant" and m.content is None]
            if len(history) == offset + len(authored) + 1:
                marked.append(len(history) - 1)
            if len(marked) == len(texts):
                for i in marked:
                    flags[i] = 1
                return flags
    # Otherwise (agent eval cases, histories of another shape): the generated texts, matched
    # from the end against the assistant turns.
    i = len(history) - 1
    for text in reversed(texts):
        while i >= 0 and not (history[i].get("role") == "assistant" and history[i].get("content") == text):
            i -= 1
        if i < 0:
            break
        flags[i] = 1
        i -= 1
    return flags


def _point_json(p: PointAssessment, judges: dict[str, int]) -> dict[str, Any]:
    """One point; judges by their index in the blueprint's ``judges`` list (an id is long, and
    the same few judge every point)."""
    data: dict[str, Any] = {
        "text": p.key_point_text,
        "score": _num(p.coverage_extent),
        "weight": js_number(p.multiplier),
        "path": p.path_id,
        "kind": p.kind,
    }
    if p.is_inverted:
        data["inverted"] = True
    # a panel's reflection is the reference's fixed sentence, which says only what the score and
    # the judges' list show, and its note
    reflection = p.consensus_note if p.individual_judgements else p.reflection
    if reflection:
        data["reflection"] = reflection
    if p.error:
        data["error"] = p.error
    if p.individual_judgements:
        data["judges"] = [
            [judges.setdefault(j.judge_model_id, len(judges)), _num(j.coverage_extent), j.reflection]
            for j in p.individual_judgements
        ]
    if p.citation is not None:
        data["citation"] = p.citation
    if p.line:
        data["line"] = p.line
    return data


def _item_json(
    result: ItemResult,
    prompt_index: int,
    variant_index: int,
    prompt: Prompt | None,
    written: Mapping[tuple[str, Any], int],
    judges: dict[str, int],
) -> dict[str, Any]:
    """One item. A turn is ``[role, content, flag]`` (flag: 1 generated, 2 no answer came, 3 from
    the fixtures file, 0 written), or, for a turn written in the prompt, its index in the prompt's
    ``messages``."""
    history, flags = _turns_shown(result, prompt)
    turns: list[Any] = []
    for m, flag in zip(history, flags):
        role, content = str(m.get("role", "")), _content(m.get("content"))
        at = written.get((role, content)) if flag == 0 else None
        turns.append(at if at is not None else [role, content, flag])
    data: dict[str, Any] = {
        "nodeid": result.nodeid,
        "prompt": prompt_index,
        "variant": variant_index,
        "outcome": result.outcome,
        "score": _num(result.score),
        "threshold": result.threshold,
        "turns": turns,
        "points": [_point_json(p, judges) for p in result.points],
    }
    # The answer scored, when the conversation does not end with it (an error, a multi-turn subject).
    last_generated = next((t[1] for t in reversed(turns) if isinstance(t, list) and t[2] in (GENERATED, FIXTURE)), None)
    if result.response is not None and result.response != last_generated:
        data["response"] = result.response
    optional: dict[str, Any] = {
        "error": result.error,
        "verdict": result.verdict,
        "weight": result.prompt_weight,
        "sample": result.sample or None,
        # --weval-repeat: every sample's score (the score is their mean) and whether they fall
        # on both sides of the threshold
        "samples": list(result.sample_scores) or None,
        "shownSample": _shown_sample(result),
        "flaky": result.flaky or None,
        "duration": round(result.duration_s, 3) if result.duration_s else None,
        "agreement": result.judge_agreement or None,
        "usage": {model: usage_dict(u) for model, u in sorted(result.usage.items())} or None,
        # --weval-eval-methods with embedding: the answer's similarity to the ideal answer
        "idealSimilarity": (result.similarities or {}).get(IDEAL_MODEL_ID),
    }
    data.update((k, v) for k, v in optional.items() if v is not None)
    return data


def _first_messages(results: Sequence[ItemResult]) -> list[list[Any]]:
    """A prompt's written turns when its blueprint is not at hand (agent eval cases): the first
    item's history up to its first generated turn."""
    for r in results:
        history = conversation_turns(r, None)
        flags = _generated_flags(history, r, None)
        head = []
        for m, flag in zip(history, flags):
            if flag:
                break
            head.append([str(m.get("role", "")), _content(m.get("content"))])
        return head
    return []


def _thresholds(results: Iterable[Result]) -> str:
    values = sorted({r.threshold for r in results})
    if not values:
        return ""
    if len(values) == 1:
        return fmt_score(values[0])
    return f"{fmt_score(values[0])}\u2013{fmt_score(values[-1])}"


def blueprint_json(
    path: str, results: Sequence[ItemResult], rollup: BlueprintRollup, blueprint: Blueprint | None
) -> dict[str, Any]:
    """What the page's script needs to draw one blueprint's grid and its items' details."""
    ordered = sorted(results, key=item_key)
    prompts: dict[str, Prompt] = {}
    if blueprint is not None:
        for p in blueprint.prompts:
            prompts.setdefault(p.id, p)
    listed_order = {p: i for i, p in enumerate(prompts)}
    seen = {r.prompt_id for r in ordered}
    prompt_ids = sorted(seen, key=lambda pid: (listed_order.get(pid, len(listed_order)), pid))

    model_order = {m.id: i for i, m in enumerate(blueprint.models)} if blueprint is not None else {}
    variants: dict[str, ItemResult] = {}
    for r in ordered:
        variants.setdefault(r.effective_model_id, r)
    variant_ids = sorted(
        variants,
        key=lambda v: (
            model_order.get(variants[v].model_id, len(model_order)),
            variants[v].model_id,
            -math.inf if variants[v].temperature is None else variants[v].temperature,
            -1 if variants[v].system_index is None else variants[v].system_index,
            v,
        ),
    )
    p_index = {pid: i for i, pid in enumerate(prompt_ids)}
    v_index = {vid: i for i, vid in enumerate(variant_ids)}

    by_prompt: dict[str, list[ItemResult]] = {}
    for r in ordered:
        by_prompt.setdefault(r.prompt_id, []).append(r)
    prompt_data = []
    for pid in prompt_ids:
        prompt = prompts.get(pid)
        entry: dict[str, Any] = {"id": pid}
        if prompt is not None:
            entry["messages"] = [[m.role, m.content] for m in prompt.messages]
            for key, value in (
                ("ideal", prompt.ideal),
                ("description", prompt.description),
                ("weight", prompt.weight),
                ("line", prompt.location.line or None),
            ):
                if value is not None:
                    entry[key] = value
        else:
            entry["messages"] = _first_messages(by_prompt[pid])
        prompt_data.append(entry)

    written = [{(role, content): k for k, (role, content) in enumerate(p["messages"])} for p in prompt_data]
    judges: dict[str, int] = {}
    items = [
        _item_json(
            r,
            p_index[r.prompt_id],
            v_index[r.effective_model_id],
            prompts.get(r.prompt_id),
            written[p_index[r.prompt_id]],
            judges,
        )
        for r in ordered
    ]
    first = ordered[0]
    similarities = similarity_tables(prompt_ids, ordered)
    return {
        "path": path,
        "id": rollup.id,
        "title": rollup.title,
        "description": blueprint.description if blueprint is not None else None,
        "source": first.source,
        "folder": folder_of(path),
        "tally": rollup.overall.to_dict(),
        "thresholds": _thresholds(ordered),
        "variants": [
            {
                "id": vid,
                "model": variants[vid].model_id,
                "label": variant_label(variants[vid]),
                "tally": rollup.by_effective_model.get(vid, rollup.overall).to_dict(),
            }
            # the mean over prompts of its similarity to the ideal (docs/options.md, 'Similarity to the ideal')
            | ({"idealSimilarity": similarities.to_ideal(vid)} if similarities is not None else {})
            for vid in variant_ids
        ],
        "similarity": similarities is not None and IDEAL_MODEL_ID in similarities.model_ids,
        "prompts": prompt_data,
        "judges": [judge_label(j) for j in judges],
        "items": items,
    }


# ---------------------------------------------------------------- the overview (HTML)


def _counts_text(t: Tally) -> str:
    return f"{t.passed}/{t.items - t.skipped}"


def _cell(t: Tally | None, attrs: str, *, title: str, clickable: bool) -> str:
    """One heatmap cell: the mean (two decimals) over the pass count, coloured by the mean."""
    if t is None:
        return f'<td class="cell none agg"{attrs} title="{_e(title + ": no item")}"><span class="n">\u00b7</span></td>'
    extra = ' tabindex="0" role="button"' if clickable else ""
    classes = "cell" if clickable else "cell agg"
    tip = f"{title}: mean {fmt_score(t.mean)}"
    if _ci95(t) is not None:
        tip += f" ({_ci_text(t)})"
    tip += f", {t.passed} of {t.items - t.skipped} passed"
    if t.errors:
        tip += f", {plural(t.errors, 'error')}"
    if t.skipped:
        tip += f", {t.skipped} skipped"
    if t.mean is None:
        return (
            f'<td class="{classes} {"error" if t.errors else "none"}"{attrs}{extra} title="{_e(tip)}">'
            f'<span class="n">\u2014</span><span class="c">{_e(_counts_text(t))}</span></td>'
        )
    bg, fg = score_colours(t.mean)
    return (
        f'<td class="{classes}"{attrs} data-score="{js_number(t.mean)}"{extra} title="{_e(tip)}" '
        f'style="background:{bg};color:{fg}"><span class="n">{fmt_score(t.mean)}</span>'
        f'<span class="c">{_e(_counts_text(t))}</span></td>'
    )


def _baseline_sentence(m: ModelComparison) -> str:
    """A model's comparison in words (a tooltip, and what the header's short text stands for)."""
    return (
        f"{m.model} against the baseline, on {plural(m.items, 'paired item')}: baseline mean "
        f"{fmt_score(m.baseline_mean)}, this run {fmt_score(m.current_mean)}, difference "
        f"{fmt_difference(m.delta, m.ci95)} (this run minus the baseline, 95% interval), "
        f"p {fmt_p(m.p_holm)} (one-sided for a drop, Holm-adjusted across models): {m.verdict}"
    )


def _baseline_header(model: str, comparison: Comparison | None) -> str:
    """Under a model's run mean: its baseline mean, the paired difference with its interval, p
    and the verdict (a regression in the colour of errors)."""
    if comparison is None:
        return ""
    m = comparison.models.get(model)
    if m is None:
        return (
            f'<span class="sub baseline" data-weval-baseline="{_e(model)}" '
            f'title="{_e(model + ": no item of this run pairs with one of the baseline")}">baseline: no paired item</span>'
        )
    classes = "sub baseline regressed" if m.regressed else "sub baseline"
    text = f"baseline {fmt_score(m.baseline_mean)}, difference {fmt_difference(m.delta, m.ci95)}, p {fmt_p(m.p_holm)}, "
    return (
        f'<span class="{classes}" data-weval-baseline="{_e(model)}" data-delta="{js_number(m.delta)}" '
        f'data-verdict="{_e(m.verdict)}" title="{_e(_baseline_sentence(m))}">{_e(text)}'
        f'<span class="verdict">{_e(m.verdict)}</span></span>'
    )


def _model_header(model: str, t: Tally | None, comparison: Comparison | None = None) -> str:
    short = short_model_name(model)
    sub = f"run mean {fmt_score(t.mean if t else None)}"
    ci = _ci95(t)
    if ci is not None:
        sub += f" ({fmt_score(ci[0])}\u2013{fmt_score(ci[1])})"
    m = comparison.models.get(model) if comparison is not None else None
    regressed = ' class="regressed"' if m is not None and m.regressed else ""
    return (
        f'<th scope="col"{regressed} data-sort="{_e(model)}" data-model="{_e(model)}" title="{_e(model)}">'
        f'<button type="button"><span class="model">{_e(short)}</span></button>'
        f'<span class="sub mono">{_e(model) if short != model else ""}</span><span class="sub">{_e(sub)}</span>'
        f"{_baseline_header(model, comparison)}</th>"
    )


def _folder_order(rollup: Rollup) -> list[str]:
    """Folders depth first, each before its subfolders; the top level (files in no folder) last."""
    order: list[str] = []

    def walk(path: str) -> None:
        order.append(path)
        for sub in rollup.folders[path].folders:
            walk(sub)

    if ROOT in rollup.folders:
        for sub in rollup.folders[ROOT].folders:
            walk(sub)
        order.append(ROOT)
    return order


def _overview_table(rollup: Rollup, thresholds: Mapping[str, str], comparison: Comparison | None = None) -> str:
    models = list(rollup.models)
    out = ['<table class="heat" id="weval-overview">', "<thead><tr>"]
    out.append('<th scope="col" data-sort="name"><button type="button">Blueprint</button></th>')
    out += [_model_header(m, rollup.by_model.get(m), comparison) for m in models]
    out.append(
        '<th scope="col" data-sort="__all" data-after-models><button type="button">All models</button></th>'
        '<th scope="col">Passed</th><th scope="col">Pass mark</th></tr></thead>'
    )
    index = 0
    for group, folder_path in enumerate(_folder_order(rollup)):
        folder = rollup.folders[folder_path]
        out.append(f'<tbody data-folder="{_e(folder_path)}">')
        depth = folder.depth
        if folder_path == ROOT and folder.blueprints and folder.folders:
            out.append(f'<tr class="folder-row"><th scope="row" colspan="{len(models) + 4}">(top level)</th></tr>')
        if folder_path != ROOT:
            label = folder_path + "/"
            out.append(
                f'<tr class="folder-row" data-folder="{_e(folder_path)}"><th scope="row" style="padding-left:{(depth - 1) * 16 + 6}px">'
                f"{_e(label)}</th>"
            )
            for m in models:
                attrs = f' data-col="{_e(m)}" data-model="{_e(m)}" data-weval-folder-cell="{_e(folder_path + "|" + m)}"'
                out.append(_cell(folder.by_model.get(m), attrs, title=f"{m} on {label}", clickable=False))
            out.append(_cell(folder.overall, ' data-col="__all" data-after-models', title=label, clickable=False))
            out.append(f'<td class="num">{_e(_counts_text(folder.overall))}</td><td></td></tr>')
        for path in folder.blueprints:
            bp = rollup.blueprints[path]
            search = f"{path} {bp.title} {bp.id}".lower()
            out.append(
                f'<tr class="bp-row" data-name="{_e(path)}" data-i="{index}" data-group="{group}" data-search="{_e(search)}">'
                f'<th scope="row" style="padding-left:{depth * 16 + 6}px"><a href="{_e(_hash_link(bp=path))}">{_e(bp.title)}</a>'
                f'<span class="path mono">{_e(path)}</span></th>'
            )
            for m in models:
                attrs = (
                    f' data-col="{_e(m)}" data-model="{_e(m)}" data-path="{_e(path)}" '
                    f'data-weval-cell="{_e(path + "|" + m)}"'
                )
                out.append(_cell(bp.by_model.get(m), attrs, title=f"{m} on {path}", clickable=m in bp.by_model))
            out.append(_cell(bp.overall, ' data-col="__all" data-after-models', title=path, clickable=False))
            out.append(
                f'<td class="num">{_e(_counts_text(bp.overall))}</td><td class="num">{_e(thresholds.get(path, ""))}</td></tr>'
            )
            index += 1
        out.append("</tbody>")
    out.append('<tbody id="weval-flat" class="hidden"></tbody>')
    out.append('<tfoot><tr><th scope="row">All blueprints</th>')
    for m in models:
        attrs = f' data-col="{_e(m)}" data-model="{_e(m)}"'
        out.append(_cell(rollup.by_model.get(m), attrs, title=f"{m}, whole run", clickable=False))
    out.append(_cell(rollup.overall, ' data-col="__all" data-after-models', title="whole run", clickable=False))
    out.append(f'<td class="num">{_e(_counts_text(rollup.overall))}</td><td></td></tr></tfoot></table>')
    return "".join(out)


def _judges_seen(results: Iterable[Result]) -> dict[str, int]:
    """Judge -> assessments it gave, over every judged point of the run."""
    seen: dict[str, int] = {}
    for r in results:
        for p in r.points:
            for j in p.individual_judgements or ():
                seen[j.judge_model_id] = seen.get(j.judge_model_id, 0) + 1
    return dict(sorted(seen.items()))


def _usage_table(rollup: Rollup) -> str:
    if not rollup.usage:
        return '<p class="muted">No model request was recorded.</p>'
    throttled = rollup.usage_total.refused > 0 or rollup.usage_total.rate_wait_s >= 1.0
    priced = rollup.usage_total.cost_usd is not None
    head = ["model", "requests", "cache hits", "tokens in", "tokens out"]
    head += ["refused", "waited"] if throttled else []
    head += ["cost"] if priced else []
    rows = ['<div class="scroll-x"><table class="plain" id="weval-usage"><thead><tr>']
    rows += [f'<th scope="col">{_e(h)}</th>' for h in head]
    rows.append("</tr></thead><tbody>")
    for model, u in [*rollup.usage.items(), ("total", rollup.usage_total)]:
        cells = [model, f"{u.requests:,}", f"{u.cache_hits:,}", f"{u.input_tokens:,}", f"{u.output_tokens:,}"]
        if throttled:
            cells += [f"{u.refused:,}", f"{u.rate_wait_s:,.1f} s"]
        if priced:
            cells.append("no price" if u.cost_usd is None else f"${u.cost_usd:,.4f}")
        tag = "th" if model == "total" else "td"
        rows.append("<tr>" + "".join(f"<{tag}>{_e(c)}</{tag}>" for c in cells) + "</tr>")
    rows.append("</tbody></table></div>")
    return "".join(rows)


def _unpaired_text(comparison: Comparison) -> str:
    counts = comparison.unpaired_counts()
    return (
        f"{counts['onlyCurrent']:,} only in this run, {counts['onlyBaseline']:,} only in the baseline, "
        f"{counts['unscored']:,} without a score in one of the runs"
    )


def _baseline_fact(comparison: Comparison) -> str:
    regressed = [m.model for m in comparison.regressed]
    said = (
        f"{plural(len(regressed), 'model')} regressed ({', '.join(regressed)})" if regressed else "no model regressed"
    )
    return (
        f"{comparison.directory}: {plural(comparison.paired, 'paired item')}, {said}; "
        f"not paired: {_unpaired_text(comparison)}"
    )


def _item_link(text: str, nodeid: str, paths: Mapping[str, str]) -> str:
    """A link to an item's detail when the item is on this page, else the text alone."""
    path = paths.get(nodeid) if nodeid else None
    if path is None:
        return _e(text)
    return f'<a href="{_e(_hash_link(bp=path, item=nodeid))}">{_e(text)}</a>'


def _baseline_section(comparison: Comparison, results: Sequence[Result]) -> str:
    """The comparison as the terminal gives it: per model the baseline and current means over the
    paired items, the difference with its interval, p and the verdict; what did not pair; the
    prompts that moved most (each a link to its item)."""
    intro = (
        f"Against {comparison.directory}: this run minus the baseline, on items paired by blueprint, prompt, "
        "model, temperature and system prompt; p one-sided for a drop, Holm-adjusted across models; a "
        f"regression is a drop with p \u2264 {comparison.alpha:g} larger than {comparison.max_drop:g}."
    )
    out = [f'<div id="weval-baseline"><h2>Compared with the baseline</h2><p class="muted">{_e(intro)}</p>']
    if comparison.models:
        head = ["model", "paired items", "baseline", "this run", "difference (95% interval)", "p", "verdict"]
        out.append('<table class="plain" id="weval-baseline-models"><thead><tr>')
        out += [f'<th scope="col">{_e(h)}</th>' for h in head]
        out.append("</tr></thead><tbody>")
        for model, m in comparison.models.items():
            cells = [
                model,
                f"{m.items:,}",
                fmt_score(m.baseline_mean),
                fmt_score(m.current_mean),
                fmt_difference(m.delta, m.ci95),
                fmt_p(m.p_holm),
            ]
            row = ' class="regressed"' if m.regressed else ""
            out.append(
                f'<tr{row} data-model="{_e(model)}">'
                + "".join(f"<td>{_e(c)}</td>" for c in cells)
                + f'<td class="verdict">{_e(m.verdict)}</td></tr>'
            )
        out.append("</tbody></table>")
    else:
        out.append("<p>No item of this run pairs with one of the baseline.</p>")
    paths = {r.nodeid: r.blueprint_path for r in results}
    if comparison.unpaired:
        items = []
        for u in comparison.unpaired[:PROBLEMS_SHOWN]:
            label = f"{u.blueprint_id} \u203a {u.prompt_id} \u203a {u.effective_model_id}"
            link = _item_link(label, u.nodeid, paths) if u.kind != "only-baseline" else _e(label)
            items.append(f"<li>{link}: {_e(u.why)}</li>")
        more = len(comparison.unpaired) - PROBLEMS_SHOWN
        tail = f"<p>\u2026 and {more:,} more (all are in summary.json with --weval-out).</p>" if more > 0 else ""
        out.append(
            f"<details><summary>Items not paired ({len(comparison.unpaired):,}): {_e(_unpaired_text(comparison))}"
            f'</summary><ul class="problems">{"".join(items)}</ul>{tail}</details>'
        )
    if comparison.moved:
        items = []
        for pair in comparison.moved:
            r = pair.current
            label = f"{r.blueprint_path} \u203a {r.prompt_id} \u203a {r.effective_model_id}"
            items.append(
                f"<li>{_e(fmt_score(pair.baseline.score))} \u2192 {_e(fmt_score(r.score))} "
                f"({_e(fmt_difference(pair.delta, None))}) {_item_link(label, r.nodeid, paths)}</li>"
            )
        out.append(
            f"<details><summary>Prompts that moved most ({len(comparison.moved)})</summary>"
            f'<ul class="problems">{"".join(items)}</ul></details>'
        )
    out.append("</div>")
    return "".join(out)


def _facts(rollup: Rollup, results: Sequence[Result], facts: RunFacts, comparison: Comparison | None = None) -> str:
    t = rollup.overall
    started = facts.started or dt.datetime.now(dt.timezone.utc)
    if started.tzinfo is None:
        started = started.replace(tzinfo=dt.timezone.utc)
    rows = [
        ("Date", f"{started.astimezone(dt.timezone.utc):%Y-%m-%d %H:%M:%S} UTC"),
        ("Duration", fmt_duration(facts.duration_s) if facts.duration_s is not None else "\u2014"),
        (
            "Items",
            f"{t.items:,} in {plural(len(rollup.blueprints), 'blueprint')}: {t.passed:,} passed, {t.failed:,} failed, "
            f"{plural(t.errors, 'error')}, {t.skipped:,} skipped",
        ),
        ("Mean score", fmt_score(t.mean) + (" (weighted by prompt weight)" if t.weighted else "")),
        ("Models", ", ".join(rollup.models) or "\u2014"),
    ]
    judges = _judges_seen(results)
    judge_text = ", ".join(f"{judge_label(j)} ({plural(n, 'assessment')})" for j, n in judges.items())
    if facts.judges:
        judge_text = "asked for: " + ", ".join(facts.judges) + ("; answered: " + judge_text if judge_text else "")
    rows.append(("Judges", judge_text or "none (no judged point)"))
    agreement = rollup.agreement
    if agreement:
        alpha = agreement.get("krippendorffsAlpha")
        text = f"Krippendorff's alpha {js_number(alpha) if isinstance(alpha, (int, float)) else '?'}"
        if agreement.get("interpretation"):
            text += f", {agreement['interpretation']}"
        counts = [
            plural(int(agreement[k]), w)
            for k, w in (("numItems", "judged point"), ("numJudges", "judge"))
            if k in agreement
        ]
        if counts:
            text += f" ({', '.join(counts)})"
        rows.append(("Judge agreement", text))
    if comparison is not None:
        rows.append(("Baseline", _baseline_fact(comparison)))
    options = "; ".join(f"{name}={value}" for name, value in facts.options) or "defaults"
    rows.append(("Options", options))
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows)
    baseline = _baseline_section(comparison, results) if comparison is not None else ""
    return (
        f'<section class="facts" id="weval-facts"><div><h2>The run</h2><dl>{dl}</dl></div>'
        f"<div><h2>Usage per model</h2>{_usage_table(rollup)}</div>{baseline}</section>"
    )


def _problems(rollup: Rollup) -> str:
    problems = rollup.item_problems
    if not problems:
        return ""
    items = []
    for p in problems[:PROBLEMS_SHOWN]:
        link = _hash_link(bp=p.blueprint_path, item=p.nodeid) if p.nodeid else _hash_link(bp=p.blueprint_path)
        items.append(
            f'<li><a href="{_e(link)}">{_e(p.blueprint_path)} \u203a {_e(p.prompt_id)} \u203a {_e(p.model)}</a>: '
            f"{_e(p.error)}</li>"
        )
    more = len(problems) - PROBLEMS_SHOWN
    tail = f"<p>\u2026 and {more:,} more (each is in its blueprint's grid).</p>" if more > 0 else ""
    return (
        f'<section id="weval-problems"><h2>Items that could not be scored ({len(problems):,})</h2>'
        f'<ul class="problems">{"".join(items)}</ul>{tail}</section>'
    )


def _legend() -> str:
    stops = ", ".join(f"{score_colours(i / 10)[0]} {i * 10}%" for i in range(11))
    return (
        '<span class="legend">0 <span class="bar" style="background:linear-gradient(to right, '
        f'{stops})"></span> 1 <span class="muted">(mean score; the number is in each cell, with passed / run)</span></span>'
    )


# ---------------------------------------------------------------- the page


def _stopped(facts: RunFacts) -> str:
    if facts.not_run is None:
        return ""
    return (
        '<p class="error-text" id="weval-interrupted">This run was stopped early: '
        f"{_e(plural(facts.not_run, 'item'))} did not run; the figures cover the items that did.</p>"
    )


def build_html(
    blueprints_by_path: Mapping[str, Blueprint],
    results: Sequence[Result],
    *,
    rollup: Rollup | None = None,
    facts: RunFacts | None = None,
    comparison: Comparison | None = None,
    history: HistoryView | None = None,
    full: FullResults | None = None,
) -> str:
    """The page for a run. ``blueprints_by_path`` is keyed by ``ItemResult.blueprint_path``, as
    for ``write_outputs``; a file missing from it (an agent eval file) is drawn from its results.
    ``comparison`` (``--weval-baseline``) is shown beside the means and in the run's facts;
    ``history`` (the store's recorded runs) as trends and the items changed since the last run."""
    return "".join(
        page_parts(
            blueprints_by_path, results, rollup=rollup, facts=facts, comparison=comparison, history=history, full=full
        )
    )


def page_parts(
    blueprints_by_path: Mapping[str, Blueprint],
    results: Sequence[Result],
    *,
    rollup: Rollup | None = None,
    facts: RunFacts | None = None,
    comparison: Comparison | None = None,
    history: HistoryView | None = None,
    full: FullResults | None = None,
    blocks: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """``build_html``'s page in pieces, one blueprint's data at a time: ``full`` gives each
    blueprint's results their texts back as its piece is made (``report/spool.py``). ``blocks``:
    the ``blueprint_block`` of blueprint paths already made (by a writer that read their
    results first), used as they are."""
    rollup = rollup if rollup is not None else build_rollup(results)
    facts = facts or RunFacts()
    groups: dict[str, list[Result]] = {}
    for r in results:
        groups.setdefault(r.blueprint_path, []).append(r)
    thresholds = {path: _thresholds(items) for path, items in groups.items()}
    blob_ids = {path: f"{BLOB_PREFIX}{i}" for i, path in enumerate(sorted(groups))}
    nonce = secrets.token_urlsafe(18)

    t = rollup.overall
    summary = (
        f"{t.items:,} items in {plural(len(rollup.blueprints), 'blueprint')}, {plural(len(rollup.models), 'model')}: "
        f"{t.passed:,} passed, {t.failed:,} failed, {plural(t.errors, 'error')}, {t.skipped:,} skipped; "
        f"mean score {fmt_score(t.mean)}"
    )
    run_data = {
        "blueprints": blob_ids,
        "models": list(rollup.models),
        "modelMeans": {m: _num(rollup.by_model[m].mean) for m in rollup.models if m in rollup.by_model},
        "scale": [list(pair) for pair in SCALE],
    }
    csp = (
        "default-src 'none'; "
        f"script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
    parts = [
        "<!DOCTYPE html>\n",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="generator" content="pytest-weval">',
        '<link rel="icon" href="data:,">',
        f"<title>weval report: {_e(summary)}</title>",
        f"<style>{CSS}{HISTORY_CSS if has_content(history) else ''}</style></head><body>",
        f'<header class="top"><h1>weval report</h1><p id="weval-summary">{_e(summary)}</p>{_stopped(facts)}</header>',
        '<main><div id="weval-overview-view">',
        _facts(rollup, results, facts, comparison),
        history_section(history) if history is not None and has_content(history) else "",
        analyses_section(history),
        '<section id="weval-heatmap"><h2>Mean score per blueprint and model</h2><div class="controls">',
        '<label><input type="checkbox" id="weval-group" checked> group by folder</label>',
        '<label>models: <select id="weval-model-order"><option value="name">by id</option>'
        '<option value="mean">by run mean, best first</option></select></label>',
        '<label>filter: <input type="search" id="weval-filter" placeholder="blueprint path or title"></label>',
        _legend(),
        '</div><p class="muted">Choose a cell to see that blueprint\'s prompts; choose a column heading to sort.</p>',
        f'<div class="scroll">{_overview_table(rollup, thresholds, comparison)}</div></section>',
        _problems(rollup),
        '</div><div id="weval-blueprint-view" hidden></div></main>',
        f'<script type="application/json" id="weval-run">{script_json(run_data)}</script>\n',
        # The script runs once the overview is parsed; the blueprints' data follows it.
        f'<script nonce="{nonce}">{JS}</script>\n',
    ]
    if history is not None and has_content(history):
        blob = script_json(history_data(history))
        parts.append(f'<script type="application/json" id="weval-history-data">{blob}</script>\n')
        parts.append(f'<script nonce="{nonce}">{HISTORY_JS}</script>\n')
    yield "".join(parts)
    for i, path in enumerate(sorted(groups)):
        block = blocks.get(path) if blocks is not None else None
        if block is not None:
            yield block
            continue
        bp_rollup = rollup.blueprints.get(path)
        if bp_rollup is None:
            continue
        items = list(whole_results(groups[path], full))
        yield blueprint_block(i, path, items, bp_rollup, blueprints_by_path.get(path))
    yield "</body></html>\n"


def blueprint_block(
    number: int, path: str, results: Sequence[ItemResult], rollup: BlueprintRollup, blueprint: Blueprint | None
) -> str:
    """The page's element that holds one blueprint's data (``blueprint_json``, packed):
    ``number`` is the blueprint's place among the run's blueprint paths, sorted."""
    return (
        f'<script type="{BLOB_TYPE}" id="{BLOB_PREFIX}{number}" data-encoding="{BLOB_ENCODING}">'
        f"{packed_json(blueprint_json(path, results, rollup, blueprint))}</script>\n"
    )


def write_html(
    path: str | os.PathLike[str],
    blueprints_by_path: Mapping[str, Blueprint],
    results: Sequence[Result],
    *,
    rollup: Rollup | None = None,
    facts: RunFacts | None = None,
    comparison: Comparison | None = None,
    history: HistoryView | None = None,
    full: FullResults | None = None,
    blocks: Mapping[str, str] | None = None,
) -> Path:
    """Write the page (to a temporary name, then renamed into place), a blueprint at a time;
    returns its path. ``blocks``: as for ``page_parts``."""
    target = Path(path)
    parts = page_parts(
        blueprints_by_path,
        results,
        rollup=rollup,
        facts=facts,
        comparison=comparison,
        history=history,
        full=full,
        blocks=blocks,
    )
    write_atomic(target, (part.encode("utf-8") for part in parts))
    return target


__all__ = [
    "RunFacts",
    "blueprint_block",
    "blueprint_json",
    "build_html",
    "packed_json",
    "score_colours",
    "script_json",
    "unpacked_json",
    "variant_label",
    "write_html",
]
