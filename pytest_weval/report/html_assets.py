"""The HTML report's stylesheet and script, inlined into every page by ``report/html.py``.

Kept as Python strings so the page needs no package data and nothing from the network. The
script builds every piece of text with ``textContent`` (``Node.append`` of strings), never
``innerHTML``: text from blueprints and models can hold markup, and it is shown, never run.
It reads the run's overview data from a ``<script type="application/json">`` blob and each
blueprint's from a compressed block (``report/html.py``, ``packed_json``) that it decodes with
the browser's ``DecompressionStream`` and renders, grid and item details, only when opened.
"""

from __future__ import annotations

CSS = """
:root {
  --fg: #1b1f24; --muted: #5b6470; --line: #d6dae0; --bg: #ffffff; --panel: #f6f7f9;
  --accent: #0b5cad; --bad: #a3120f; --none: #e4e6ea; --none-fg: #3c4450;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 14px; color: var(--fg); background: var(--bg);
}
body { margin: 0; }
header.top { padding: 12px 20px; border-bottom: 1px solid var(--line); background: var(--panel); }
header.top h1 { font-size: 18px; margin: 0 0 4px; }
header.top p { margin: 0; color: var(--muted); }
main { padding: 12px 20px 40px; }
h2 { font-size: 16px; margin: 18px 0 8px; }
h3 { font-size: 15px; margin: 0 0 6px; }
h4 { font-size: 13px; margin: 14px 0 6px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
a { color: var(--accent); }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 12.5px; }
.muted { color: var(--muted); }
.facts { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 12px 24px; }
.facts dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; overflow-wrap: anywhere; }
table.plain { border-collapse: collapse; }
table.plain th, table.plain td { padding: 2px 8px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
table.plain th:first-child, table.plain td:first-child { text-align: left; }
/* a long model id wraps instead of pushing the numbers (the cost column) out of view */
#weval-usage td:first-child, #weval-usage th:first-child { white-space: normal; overflow-wrap: anywhere; }
.scroll-x { overflow-x: auto; max-width: 100%; }
.controls { display: flex; flex-wrap: wrap; gap: 8px 18px; align-items: center; margin: 8px 0; }
.legend { display: inline-flex; align-items: center; gap: 6px; }
.legend .bar { width: 160px; height: 12px; border: 1px solid var(--line); }
.scroll { overflow: auto; max-width: 100%; }
table.heat { border-collapse: separate; border-spacing: 2px; }
table.heat thead th { position: sticky; top: 0; background: var(--bg); z-index: 1; vertical-align: bottom; }
table.heat th { font-weight: 600; text-align: left; padding: 2px 6px; }
table.heat th button { font: inherit; background: none; border: 0; padding: 0; cursor: pointer; color: var(--fg); text-align: left; }
table.heat th button::after { content: " \\2195"; color: var(--muted); font-weight: 400; }
table.heat th[aria-sort="ascending"] button::after { content: " \\2191"; color: var(--fg); }
table.heat th[aria-sort="descending"] button::after { content: " \\2193"; color: var(--fg); }
table.heat th .model { display: inline; overflow-wrap: normal; word-break: normal; }
table.heat th.variant { min-width: 64px; }
table.heat thead th { max-width: 13em; }
table.heat th .sub { display: block; font-weight: 400; color: var(--muted); font-size: 12px; }
table.heat th[scope=row] { font-weight: 400; max-width: 38em; }
table.heat th[scope=row] .path, table.heat th[scope=row] .snippet { display: block; color: var(--muted); font-size: 12px; overflow-wrap: anywhere; }
table.heat th[scope=row] .snippet { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; max-width: 26em; }
td.cell { min-width: 58px; height: 34px; text-align: center; vertical-align: middle; padding: 2px 4px; cursor: pointer; border-radius: 3px; font-variant-numeric: tabular-nums; }
td.cell:focus-visible, td.cell.selected { outline: 3px solid var(--fg); outline-offset: 1px; }
td.cell .n { display: block; font-size: 14px; font-weight: 600; }
td.cell .c { display: block; font-size: 11px; opacity: .9; }
td.cell.none { background: var(--none); color: var(--none-fg); }
td.cell.error { background: repeating-linear-gradient(45deg, #e4e6ea, #e4e6ea 5px, #ccd0d6 5px, #ccd0d6 10px); color: var(--bad); }
td.cell.dim { opacity: .35; }
td.agg { cursor: default; }
td.num { text-align: right; padding: 0 6px; white-space: nowrap; font-variant-numeric: tabular-nums; }
tr.folder-row th { font-weight: 600; }
tr.folder-row td.cell { cursor: default; }
tr.hidden, tbody.hidden { display: none; }
tfoot th, tfoot td { border-top: 2px solid var(--line); }
.crumbs { margin: 4px 0 8px; }
.bp-layout { display: flex; gap: 18px; align-items: flex-start; }
.bp-layout > .grid { flex: 0 1 auto; min-width: 0; }
.bp-layout > aside { flex: 1 1 420px; min-width: 320px; position: sticky; top: 8px; max-height: calc(100vh - 16px); overflow: auto;
  border: 1px solid var(--line); border-radius: 6px; padding: 12px; background: var(--bg); }
@media (max-width: 1000px) { .bp-layout { flex-direction: column; } .bp-layout > aside { position: static; max-height: none; width: 100%; box-sizing: border-box; } }
.badges { display: flex; flex-wrap: wrap; gap: 6px; margin: 6px 0; }
.badge { border: 1px solid var(--line); border-radius: 10px; padding: 1px 8px; font-size: 12px; background: var(--panel); }
.badge.passed { border-color: #2e7d32; }
.badge.failed, .badge.error { border-color: var(--bad); color: var(--bad); }
.error-text { color: var(--bad); white-space: pre-wrap; overflow-wrap: anywhere; }
ol.turns { list-style: none; padding: 0; margin: 0; }
ol.turns li { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 8px; padding: 6px 8px; background: var(--panel); }
ol.turns li.generated { background: #fff; border: 2px solid var(--accent); }
ol.turns li.failed { border: 2px solid var(--bad); }
ol.turns .role { font-size: 12px; color: var(--muted); margin-bottom: 2px; }
ol.turns li.generated .role { color: var(--accent); font-weight: 600; }
pre.text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; font-family: inherit; font-size: 13.5px; }
table.points { border-collapse: collapse; width: 100%; }
table.points th, table.points td { border-bottom: 1px solid var(--line); padding: 4px 6px; vertical-align: top; text-align: left; }
table.heat td.sim, table.heat th.sim { font-size: 12px; color: #555; text-align: center; min-width: 44px; }
table.points td.score { width: 44px; text-align: center; font-weight: 600; border-radius: 3px; }
table.points .judges { margin: 4px 0 0; padding-left: 16px; }
table.points .why { white-space: pre-wrap; overflow-wrap: anywhere; }
.tag { font-size: 11px; border: 1px solid var(--line); border-radius: 8px; padding: 0 5px; margin-left: 4px; color: var(--muted); }
ul.problems { padding-left: 18px; }
#weval-baseline { grid-column: 1 / -1; }
#weval-baseline details { margin: 6px 0; }
#weval-baseline summary { cursor: pointer; }
td.verdict, .sub.baseline .verdict { font-weight: 600; }
table.plain tr.regressed td { color: var(--bad); background: #fdecea; }
table.heat th.regressed { box-shadow: inset 0 3px 0 var(--bad); }
table.heat th .sub.regressed { color: var(--bad); }
ul.problems li { margin: 2px 0; overflow-wrap: anywhere; }
input[type=search] { padding: 3px 6px; min-width: 16em; }
"""

JS = r"""
"use strict";
(() => {
  const RUN = JSON.parse(document.getElementById("weval-run").textContent);
  const SCALE = RUN.scale; // 101 [background, text colour] pairs, for scores 0.00 .. 1.00
  const overviewView = document.getElementById("weval-overview-view");
  const blueprintView = document.getElementById("weval-blueprint-view");
  const loaded = new Map();
  let shownPath = null;

  // ---------------------------------------------------------------- helpers
  function fill(node, ...kids) {
    node.replaceChildren();
    for (const kid of kids.flat(Infinity)) {
      if (kid === null || kid === undefined || kid === false) continue;
      node.append(kid instanceof Node ? kid : String(kid)); // strings become text nodes
    }
    return node;
  }
  function h(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    return fill(node, ...kids);
  }
  function paint(node, score) {
    if (typeof score !== "number" || !isFinite(score)) return;
    const [bg, fg] = SCALE[Math.round(Math.min(1, Math.max(0, score)) * 100)];
    node.style.background = bg;
    node.style.color = fg;
  }
  const fmt = (score) => (typeof score === "number" && isFinite(score) ? score.toFixed(2) : "\u2014");
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  function safeUrl(text) {
    try {
      const url = new URL(String(text));
      return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
    } catch (_) {
      return null;
    }
  }
  function asText(value) {
    if (value === null || value === undefined) return "";
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }
  // A blueprint's data, decoded on first use: its block is JSON deflated and base64'd
  // (report/html.py, packed_json), inflated by the browser's own DecompressionStream. The
  // script runs as soon as the overview is parsed, before the blocks that follow it, so the
  // document's end is waited for. Resolves to null for a path the page does not hold.
  function whenParsed() {
    return document.readyState === "loading"
      ? new Promise((resolve) => document.addEventListener("DOMContentLoaded", resolve, { once: true }))
      : Promise.resolve();
  }
  async function unpack(node) {
    if (typeof DecompressionStream !== "function") {
      throw new Error("this browser has no DecompressionStream (Chrome 80, Firefox 113, Safari 16.4 and later have it)");
    }
    const text = atob(node.textContent.trim());
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream(node.dataset.encoding || "deflate"));
    return JSON.parse(await new Response(stream).text());
  }
  async function decode(path) {
    const id = Object.prototype.hasOwnProperty.call(RUN.blueprints, path) ? RUN.blueprints[path] : null;
    if (!id) return null;
    await whenParsed(); // a block the parser is still reading is in the document, but not whole
    const node = document.getElementById(id);
    return node ? unpack(node) : null;
  }
  function blueprint(path) {
    if (!loaded.has(path)) {
      const pending = decode(path);
      loaded.set(path, pending);
      pending.catch(() => loaded.delete(path)); // a failure is shown; the next visit tries again
    }
    return loaded.get(path);
  }
  function hashFor(params) {
    return "#" + Object.entries(params).filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&");
  }
  function activate(table, selector, handler) {
    table.addEventListener("click", (event) => {
      const cell = event.target.closest(selector);
      if (cell && table.contains(cell)) handler(cell, event);
    });
    table.addEventListener("keydown", (event) => {
      if (event.key !== "Enter" && event.key !== " ") return;
      const cell = event.target.closest(selector);
      if (cell && table.contains(cell)) { event.preventDefault(); handler(cell, event); }
    });
  }

  // ---------------------------------------------------------------- sorting rows
  function scoreOf(row, col) {
    const cell = row.querySelector(`:scope > [data-col="${CSS.escape(col)}"]`);
    const value = cell ? cell.getAttribute("data-sort-score") ?? cell.getAttribute("data-score") : null;
    return value === null || value === "" ? null : Number(value);
  }
  function sortRows(rows, key, dir) {
    const sign = dir === "ascending" ? 1 : -1;
    const keyed = rows.map((row) => [row, key === "name" ? row.dataset.name : scoreOf(row, key)]);
    keyed.sort((a, b) => {
      if (key === "name") return sign * (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);
      if (a[1] === null && b[1] === null) return Number(a[0].dataset.i) - Number(b[0].dataset.i);
      if (a[1] === null) return 1; // rows without a score last, either way
      if (b[1] === null) return -1;
      return sign * (a[1] - b[1]) || Number(a[0].dataset.i) - Number(b[0].dataset.i);
    });
    return keyed.map(([row]) => row);
  }
  function markSorted(table, key, dir) {
    for (const th of table.querySelectorAll("thead th[data-sort]")) {
      if (th.dataset.sort === key) th.setAttribute("aria-sort", dir);
      else th.removeAttribute("aria-sort");
    }
  }
  function nextDir(table, key) {
    const th = table.querySelector(`thead th[data-sort="${CSS.escape(key)}"]`);
    const now = th ? th.getAttribute("aria-sort") : null;
    if (key === "name") return now === "ascending" ? "descending" : "ascending";
    return now === "descending" ? "ascending" : "descending"; // scores: best first
  }

  // ---------------------------------------------------------------- the overview
  const overview = document.getElementById("weval-overview");
  const groupBox = document.getElementById("weval-group");
  const filterBox = document.getElementById("weval-filter");
  const modelOrder = document.getElementById("weval-model-order");
  const flat = document.getElementById("weval-flat");
  const groups = Array.from(overview.tBodies).filter((tb) => tb !== flat);
  const bpRows = Array.from(overview.querySelectorAll("tr.bp-row"));
  let overviewSort = null;

  function regroup() {
    const grouped = groupBox.checked;
    for (const row of bpRows) (grouped ? groups[Number(row.dataset.group)] : flat).append(row);
    if (grouped) for (const tb of groups) {
      const rows = Array.from(tb.querySelectorAll("tr.bp-row")).sort((a, b) => a.dataset.i - b.dataset.i);
      tb.append(...rows);
    } else flat.append(...bpRows.slice().sort((a, b) => a.dataset.i - b.dataset.i));
    for (const tb of groups) tb.classList.toggle("hidden", !grouped);
    flat.classList.toggle("hidden", grouped);
    if (overviewSort) sortOverview(overviewSort[0], overviewSort[1]);
  }
  function sortOverview(key, dir) {
    overviewSort = [key, dir];
    const bodies = groupBox.checked ? groups : [flat];
    for (const tb of bodies) tb.append(...sortRows(Array.from(tb.querySelectorAll("tr.bp-row")), key, dir));
    markSorted(overview, key, dir);
  }
  function filterOverview() {
    const needle = filterBox.value.trim().toLowerCase();
    for (const row of bpRows) row.classList.toggle("hidden", needle !== "" && !row.dataset.search.includes(needle));
  }
  function orderModels() {
    const models = RUN.models.slice();
    if (modelOrder.value === "mean") {
      const mean = (m) => (typeof RUN.modelMeans[m] === "number" ? RUN.modelMeans[m] : -1);
      models.sort((a, b) => mean(b) - mean(a));
    }
    for (const row of overview.rows) {
      const cells = new Map();
      for (const cell of row.children) if (cell.dataset.model !== undefined) cells.set(cell.dataset.model, cell);
      if (!cells.size) continue;
      const after = row.querySelector(":scope > [data-after-models]");
      for (const m of models) if (cells.has(m)) row.insertBefore(cells.get(m), after);
    }
  }
  overview.querySelector("thead").addEventListener("click", (event) => {
    const th = event.target.closest("th[data-sort]");
    if (th) sortOverview(th.dataset.sort, nextDir(overview, th.dataset.sort));
  });
  groupBox.addEventListener("change", regroup);
  filterBox.addEventListener("input", filterOverview);
  modelOrder.addEventListener("change", orderModels);
  activate(overview, "td[data-weval-cell]", (cell) => {
    location.hash = hashFor({ bp: cell.dataset.path, model: cell.dataset.model });
  });

  // ---------------------------------------------------------------- a blueprint
  // A model id that may wrap only after its separators (":", ",", "/"), never inside a name.
  function breakable(text) {
    return String(text).split(/(?<=[:,/])/).flatMap((part, i) => (i ? [h("wbr"), part] : [part]));
  }
  function variantHeader(bp, v, index) {
    const variant = bp.variants[v];
    const t = variant.tally;
    return h("th", { "data-sort": `v${index}`, scope: "col", title: variant.id, class: "variant" },
      h("button", { type: "button" }, h("span", { class: "model" }, breakable(variant.label))),
      h("span", { class: "sub" }, `mean ${fmt(t.mean)}` + (t.ci95 ? ` (${fmt(t.ci95[0])}\u2013${fmt(t.ci95[1])})` : "")),
      h("span", { class: "sub" }, `${t.passed}/${t.items - t.skipped} passed`),
    );
  }
  // --weval-eval-methods with embedding: a variant's similarity to the ideal answer, in a column
  // beside its scores (the header: its mean over prompts, similarityMatrix's).
  function similarityHeader(bp, v) {
    return h("th", { scope: "col", class: "sim", "data-sim": v, title: "similarity to the ideal answer: the cosine of their embeddings" },
      "\u2248 ideal", h("span", { class: "sub" }, `mean ${fmt(bp.variants[v].idealSimilarity)}`));
  }
  function similarityCell(item, v) {
    return h("td", { class: "sim", "data-sim": v, title: "similarity to the ideal answer" }, fmt(item ? item.idealSimilarity : null));
  }
  function itemCell(bp, item, index) {
    const attrs = { "data-weval-item": item.nodeid, "data-col": `v${index}`, tabindex: 0, role: "button", class: "cell" };
    let label = fmt(item.score);
    let mark = "";
    if (item.outcome === "error") { attrs.class += " error"; label = "error"; }
    else if (item.outcome === "skipped") { attrs.class += " none"; label = "skipped"; }
    else if (typeof item.score !== "number") attrs.class += " none";
    if (item.outcome === "passed") mark = "\u2713 pass";
    if (item.outcome === "failed") mark = "\u2717 fail";
    if (typeof item.score === "number") attrs["data-score"] = item.score;
    attrs.title = `${item.outcome}${typeof item.score === "number" ? `: ${fmt(item.score)}` : ""} (pass mark ${fmt(item.threshold)})` +
      (item.error ? ` \u2014 ${item.error}` : "");
    const cell = h("td", attrs, h("span", { class: "n" }, label), mark ? h("span", { class: "c" }, mark) : null);
    paint(cell, item.score);
    return cell;
  }
  function renderBlueprint(bp) {
    const byCell = new Map();
    bp.items.forEach((item, i) => byCell.set(`${item.prompt}|${item.variant}`, i));
    const head = h("tr", null,
      h("th", { "data-sort": "name", scope: "col" }, h("button", { type: "button" }, bp.source === "blueprint" ? "Prompt" : bp.source === "promptfoo suite" ? "Test" : "Case")),
      bp.variants.map((_, v) => (bp.similarity ? [variantHeader(bp, v, v), similarityHeader(bp, v)] : variantHeader(bp, v, v))));
    const rows = bp.prompts.map((prompt, p) => {
      const first = (prompt.messages.find((m) => m[0] === "user") || [null, ""])[1];
      const row = h("tr", { "data-name": prompt.id, "data-i": p },
        h("th", { scope: "row" }, h("span", { class: "mono" }, prompt.id),
          first ? h("span", { class: "snippet", title: asText(first).slice(0, 500) }, asText(first).slice(0, 200)) : null));
      bp.variants.forEach((_, v) => {
        const i = byCell.get(`${p}|${v}`);
        row.append(i === undefined ? h("td", { class: "cell none", "data-col": `v${v}` }, "") : itemCell(bp, bp.items[i], v));
        if (bp.similarity) row.append(similarityCell(i === undefined ? null : bp.items[i], v));
      });
      return row;
    });
    const table = h("table", { class: "heat", id: "weval-prompts" }, h("thead", null, head), h("tbody", null, rows));
    table.querySelector("thead").addEventListener("click", (event) => {
      const th = event.target.closest("th[data-sort]");
      if (!th) return;
      const dir = nextDir(table, th.dataset.sort);
      const body = table.tBodies[0];
      body.append(...sortRows(Array.from(body.rows), th.dataset.sort, dir));
      markSorted(table, th.dataset.sort, dir);
    });
    activate(table, "td[data-weval-item]", (cell) => {
      location.hash = hashFor({ bp: bp.path, item: cell.dataset.wevalItem });
    });
    const t = bp.tally;
    const facts = [
      `${plural(t.items, "item")}: ${t.passed} passed, ${t.failed} failed` +
        (t.errors ? `, ${plural(t.errors, "error")}` : "") + (t.skipped ? `, ${t.skipped} skipped` : ""),
      `mean ${fmt(t.mean)}${t.ci95 ? ` (95% interval ${fmt(t.ci95[0])}\u2013${fmt(t.ci95[1])})` : ""}` +
        (t.weighted ? " (weighted by prompt weight)" : ""),
      bp.thresholds ? `pass mark ${bp.thresholds}` : null,
    ].filter(Boolean).join(" \u00b7 ");
    fill(blueprintView,
      h("div", { class: "crumbs" }, h("a", { href: "#" }, "\u2190 Overview"), " \u00b7 ",
        h("span", { class: "mono" }, bp.path)),
      h("h2", null, bp.title),
      bp.description ? h("p", { class: "muted" }, bp.description) : null,
      h("p", null, facts),
      h("div", { class: "bp-layout" },
        h("div", { class: "grid scroll" }, table),
        h("aside", { id: "weval-detail-pane", "aria-live": "polite" },
          h("p", { class: "muted" }, "Choose a cell to see the conversation and how each point scored."))),
    );
  }
  function highlightModel(bp, model) {
    const cols = new Set();
    bp.variants.forEach((variant, v) => { if (model && variant.model === model) cols.add(`v${v}`); });
    for (const cell of blueprintView.querySelectorAll("td.cell")) cell.classList.toggle("dim", cols.size > 0 && !cols.has(cell.dataset.col));
  }

  // ---------------------------------------------------------------- an item's detail
  // A turn's flag (report/html.py): 0 written, 1 generated, 2 no answer came, 3 from the fixtures file.
  const TURN_CLASS = { 1: "generated", 2: "failed", 3: "generated fixture" };
  const TURN_LABEL = {
    1: " \u00b7 generated by the model",
    2: " \u00b7 no answer (see the error above)",
    3: " \u00b7 from the --weval-fixtures file, not the model",
  };
  function pointRow(judges, point, n) {
    const score = h("td", { class: "score" }, fmt(point.score));
    paint(score, point.score);
    const result = h("td", null);
    if (point.reflection) result.append(h("div", { class: "why" }, point.reflection));
    if (point.judges && point.judges.length) {
      result.append(h("ul", { class: "judges" }, point.judges.map(([judge, extent, reflection]) =>
        h("li", null, h("span", { class: "mono" }, judges[judge]), `: ${fmt(extent)}`, reflection ? ` \u2014 ${reflection}` : ""))));
    }
    if (point.error) result.append(h("div", { class: "error-text" }, `Error: ${point.error}`));
    let citation = null;
    if (point.citation !== null && point.citation !== undefined) {
      const text = asText(point.citation);
      const url = safeUrl(text);
      citation = h("div", { class: "muted" }, "Citation: ",
        url ? h("a", { href: url, rel: "noopener noreferrer nofollow", target: "_blank" }, text) : text);
    }
    return h("tr", null,
      h("td", { class: "num" }, n + 1),
      score,
      h("td", { class: "num", title: "weight (multiplier)" }, point.weight),
      h("td", { class: "mono" }, point.path || "\u2014"),
      h("td", null,
        h("span", { class: "why" }, point.text),
        point.inverted ? h("span", { class: "tag" }, "should not") : null,
        h("span", { class: "tag" }, point.kind === "judged" ? "judged" : "function"),
        point.line ? h("span", { class: "tag" }, `line ${point.line}`) : null,
        citation),
      result);
  }
  function renderDetail(bp, nodeid) {
    const pane = document.getElementById("weval-detail-pane");
    const item = bp.items.find((it) => it.nodeid === nodeid);
    for (const cell of blueprintView.querySelectorAll("td.cell.selected")) cell.classList.remove("selected");
    if (!item) {
      fill(pane, h("p", { class: "muted" }, "Choose a cell to see the conversation and how each point scored."));
      return;
    }
    const cell = blueprintView.querySelector(`td[data-weval-item="${CSS.escape(nodeid)}"]`);
    if (cell) cell.classList.add("selected");
    const prompt = bp.prompts[item.prompt];
    const variant = bp.variants[item.variant];
    const badges = [
      h("span", { class: `badge ${item.outcome}` }, item.outcome),
      h("span", { class: "badge" }, `score ${fmt(item.score)} \u00b7 pass mark ${fmt(item.threshold)}`),
      typeof item.idealSimilarity === "number" ? h("span", { class: "badge" }, `similarity to the ideal ${fmt(item.idealSimilarity)}`) : null,
      item.verdict ? h("span", { class: "badge" }, `verdict ${item.verdict}`) : null,
      item.weight !== null && item.weight !== undefined ? h("span", { class: "badge" }, `prompt weight ${item.weight}`) : null,
      item.sample ? h("span", { class: "badge" }, `attempt ${item.sample + 1}`) : null,
      item.samples ? h("span", { class: "badge", "data-weval-samples": item.samples.join(" ") },
        `${plural(item.samples.length, "sample")}: ${item.samples.map(fmt).join(", ")}`) : null,
      item.shownSample ? h("span", { class: "badge", "data-weval-shown-sample": item.shownSample },
        `answer and points below: sample ${item.shownSample} (${fmt(item.samples[item.shownSample - 1])}), the lowest-scoring`) : null,
      item.flaky ? h("span", { class: "badge failed", "data-weval-flaky": true }, "flaky: samples on both sides of the pass mark") : null,
      typeof item.duration === "number" ? h("span", { class: "badge" }, `${item.duration.toFixed(2)} s`) : null,
    ];
    const turns = item.turns.map((turn) => (typeof turn === "number" ? [...prompt.messages[turn], 0] : turn)).map(([role, content, flag]) =>
      h("li", { class: TURN_CLASS[flag] || null, "data-role": role, "data-weval-turn": flag },
        h("div", { class: "role" }, role, TURN_LABEL[flag] || ""),
        h("pre", { class: "text" }, asText(content))));
    const usage = Object.entries(item.usage || {}).map(([model, u]) =>
      h("li", null, h("span", { class: "mono" }, model),
        `: ${plural(u.requests, "request")}, ${u.cacheHits} from the cache, ${u.inputTokens} tokens in, ${u.outputTokens} out` +
        (u.costUsd !== null && u.costUsd !== undefined ? `, $${u.costUsd.toFixed(4)}` : "")));
    const agreement = item.agreement;
    fill(pane, h("article", { "data-weval-detail": true, "data-weval-for": item.nodeid },
      h("h3", null, h("span", { class: "mono" }, prompt.id), " \u00b7 ", variant.label),
      h("div", { class: "mono muted" }, item.nodeid),
      h("div", { class: "badges" }, badges),
      item.error ? h("div", { class: "error-text" }, `Error: ${item.error}`) : null,
      prompt.description ? h("p", { class: "muted" }, prompt.description) : null,
      h("h4", null, "Conversation"),
      turns.length ? h("ol", { class: "turns" }, turns) : h("p", { class: "muted" }, "No conversation was recorded."),
      item.response !== undefined && item.response !== null
        ? [h("h4", null, "Answer scored"), h("pre", { class: "text" }, item.response)] : null,
      prompt.ideal ? h("details", null, h("summary", null, "Ideal answer"), h("pre", { class: "text" }, prompt.ideal)) : null,
      h("h4", null, `Points (${item.points.length})`),
      item.points.length
        ? h("table", { class: "points" },
          h("thead", null, h("tr", null, ["#", "score", "weight", "path", "point", "result"].map((t) => h("th", null, t)))),
          h("tbody", null, item.points.map((point, n) => pointRow(bp.judges, point, n))))
        : h("p", { class: "muted" }, "No point was scored."),
      agreement ? h("p", { class: "muted" }, `Judge agreement (Krippendorff's alpha): ${asText(agreement.krippendorffsAlpha)}` +
        (agreement.interpretation ? `, ${agreement.interpretation}` : "")) : null,
      usage.length ? [h("h4", null, "Usage"), h("ul", null, usage)] : null,
    ));
  }

  // ---------------------------------------------------------------- navigation
  // The view changes once the blueprint's data is decoded, so what is shown is always whole;
  // a later address wins over an earlier one still decoding.
  let routed = 0;
  async function route() {
    const turn = ++routed;
    const params = new URLSearchParams(location.hash.slice(1));
    const path = params.get("bp");
    let bp = null;
    if (path !== null) {
      try {
        bp = await blueprint(path);
      } catch (error) {
        if (turn !== routed) return;
        fill(blueprintView, h("div", { class: "crumbs" }, h("a", { href: "#" }, "\u2190 Overview")),
          h("p", { class: "error-text" }, `This blueprint's data could not be read: ${error && error.message ? error.message : error}`));
        shownPath = null;
        overviewView.hidden = true;
        blueprintView.hidden = false;
        return;
      }
    }
    if (turn !== routed) return;
    if (!bp) {
      blueprintView.hidden = true;
      overviewView.hidden = false;
      return;
    }
    if (shownPath !== path) {
      renderBlueprint(bp);
      shownPath = path;
      window.scrollTo(0, 0);
    }
    overviewView.hidden = true;
    blueprintView.hidden = false;
    highlightModel(bp, params.get("model"));
    renderDetail(bp, params.get("item"));
  }
  window.addEventListener("hashchange", route);
  route();
  document.documentElement.dataset.wevalReady = "true";
  performance.mark("weval-ready"); // bench/html_report.py times the page to here
})();
"""
