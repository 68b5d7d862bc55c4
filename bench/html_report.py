"""The HTML report of a large run: how long it takes to write, how big it is, how fast it opens.

    python bench/html_report.py [--corpus ../shared/corpus/weval-configs] [--models 3] [--out DIR]

Builds synthetic results for every prompt of every corpus blueprint (196 blueprints) x N
models: the blueprints' own prompts and points, answers of 600 to 2,000 characters, and for
each point written in words three judges' verdicts with a sentence or two of reflection each
(Weval's default panel), scores and outcomes from those. Then times ``build_rollup``, writing
the page (``write_html``) and, in headless Chromium (Debian's ``chromium``), the page's load:
navigation start to DOMContentLoaded, to load, and to the overview being ready (the script's
``weval-ready`` mark), the median of a few loads; then opening the largest blueprint's grid,
an item's detail, and the frame times while the overview scrolls.

    python bench/html_report.py --page PATH

times a page written elsewhere instead (e.g. ``bench/scale.py --keep``'s ``live16000.html``):
the same load, scroll and open figures, its largest blueprint found by decoding its blocks.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from pytest_weval.blueprint import load_blueprint  # noqa: E402
from pytest_weval.blueprint.ids import effective_model_id  # noqa: E402
from pytest_weval.blueprint.model import Blueprint, BlueprintError  # noqa: E402
from pytest_weval.jsvalues import js_number_str  # noqa: E402
from pytest_weval.report.html import BLOB_TYPE, unpacked_json, write_html  # noqa: E402
from pytest_weval.report.rollup import build_rollup  # noqa: E402
from pytest_weval.results import ItemResult, JudgeVerdict, PointAssessment, Usage  # noqa: E402
from pytest_weval.scoring.aggregate import aggregate, round2  # noqa: E402

DEFAULT_CORPUS = HERE.parent.parent / "shared" / "corpus" / "weval-configs"
MODELS = ("openai:gpt-4o-mini", "anthropic:claude-3-5-haiku", "openrouter:google/gemini-2.5-flash", "xai:grok-3-mini")
JUDGES = (
    "holistic-gemini-2-5-flash(openrouter:google/gemini-2.5-flash)",
    "holistic-gpt-4-1-mini(openrouter:openai/gpt-4.1-mini)",
    "holistic-claude-haiku-4-5(openrouter:anthropic/claude-haiku-4.5)",
)
WORDS = (
    "the",
    "model",
    "answer",
    "should",
    "consider",
    "context",
    "safety",
    "patient",
    "law",
    "risk",
    "evidence",
    "guidance",
    "explain",
    "clearly",
    "however",
    "because",
    "therefore",
    "although",
    "important",
    "recommend",
    "avoid",
    "consult",
    "professional",
    "local",
    "rules",
    "data",
    "privacy",
    "user",
    "request",
    "information",
    "source",
    "reliable",
    "example",
    "specific",
    "general",
    "policy",
    "response",
    "harm",
)


def _text(rng: random.Random, low: int, high: int) -> str:
    n = rng.randint(low, high)
    words: list[str] = []
    size = 0
    while size < n:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
        if rng.random() < 0.08:
            words[-1] += "."
    return " ".join(words).capitalize() + "."


def _points(blueprint: Blueprint, prompt: Any, rng: random.Random) -> list[PointAssessment]:
    points = list(prompt.points)
    if not points:  # key points extracted from the ideal: three judged points
        return [_judged(f"Key point {i + 1}: {_text(rng, 30, 90)}", rng, 1.0, None, False) for i in range(3)]
    out = []
    for p in points:
        if p.fn:
            score = rng.choice((0.0, 1.0, 1.0, rng.random()))
            out.append(
                PointAssessment(
                    key_point_text=p.display_text,
                    coverage_extent=score,
                    reflection=f"Function '{p.fn}' evaluated to {score:.2f}.",
                    multiplier=p.multiplier,
                    path_id=p.path_id,
                    is_inverted=p.is_inverted,
                    kind="function",
                    line=p.location.line if p.location else None,
                )
            )
        else:
            out.append(_judged(p.display_text, rng, p.multiplier, p.path_id, p.is_inverted))
    return out


def _judged(text: str, rng: random.Random, multiplier: float, path_id: str | None, inverted: bool) -> PointAssessment:
    verdicts = [
        JudgeVerdict(
            judge_model_id=j, coverage_extent=rng.choice((0.0, 0.25, 0.5, 0.75, 1.0)), reflection=_text(rng, 80, 260)
        )
        for j in JUDGES
    ]
    mean = sum(v.coverage_extent for v in verdicts) / len(verdicts)
    score = 1 - mean if inverted else mean
    return PointAssessment(
        key_point_text=text,
        coverage_extent=score,
        reflection=f"Consensus from {len(verdicts)} judge(s). Average score: {score:.2f}. See breakdown for individual reflections.",
        multiplier=multiplier,
        path_id=path_id,
        is_inverted=inverted,
        judge_model_id="consensus(" + ", ".join(JUDGES) + ")",
        individual_judgements=verdicts,
        kind="judged",
    )


def synthetic_run(corpus: Path, models: int, seed: int = 7) -> tuple[dict[str, Blueprint], list[ItemResult]]:
    rng = random.Random(seed)
    blueprints: dict[str, Blueprint] = {}
    results: list[ItemResult] = []
    for path in sorted((corpus / "blueprints").rglob("*.y*ml")):
        rel = path.relative_to(corpus).as_posix()
        try:
            bp = load_blueprint(path, rel_path=rel, display_path=rel, model_override=list(MODELS[:models]))
        except BlueprintError as exc:  # a file the parser refuses: left out, as a collection error would be
            print(f"skipped {rel}: {exc}", file=sys.stderr)
            continue
        blueprints[rel] = bp
        # the items collection makes: prompt x model x temperature x system prompt (plugin/collect.py)
        variants = [
            (model.id, temperature, system_index)
            for model in bp.models
            for temperature in bp.temperatures
            for system_index in range(len(bp.systems))
        ]
        for prompt in bp.prompts:
            for model, temperature, system_index in variants:
                label = model
                if bp.sets_temperature:
                    label += f",temp={js_number_str(temperature if temperature is not None else 0)}"
                if bp.multi_system:
                    label += f",sp={system_index}"
                common: dict[str, Any] = {
                    "nodeid": f"{rel}::{prompt.id}[{label}]",
                    "blueprint_id": bp.id,
                    "blueprint_path": rel,
                    "blueprint_title": bp.title,
                    "prompt_id": prompt.id,
                    "prompt_weight": prompt.weight,
                    "model_id": model,
                    "effective_model_id": effective_model_id(
                        model, temperature, system_index if bp.multi_system else None, bp.multi_system
                    ),
                    "temperature": temperature,
                    "system_index": system_index if bp.multi_system else None,
                    "system_prompt": bp.systems[system_index],
                }
                if rng.random() < 0.01:
                    error = f"generation failed for {model}: HTTP 500 after 5 attempts"
                    results.append(ItemResult(**common, outcome="error", error=error))
                    continue
                answer = _text(rng, 600, 2000)
                generated = [answer]
                history = [{"role": m.role, "content": m.content} for m in prompt.messages]
                for i, m in enumerate(history):
                    if m["role"] == "assistant" and m["content"] is None:
                        turn = _text(rng, 200, 600)
                        history[i] = {"role": "assistant", "content": turn}
                        generated.insert(-1, turn)
                if bp.systems[system_index]:
                    history.insert(0, {"role": "system", "content": bp.systems[system_index]})
                history.append({"role": "assistant", "content": answer})
                points = _points(bp, prompt, rng)
                score = round2(aggregate(points)) if points else None
                threshold = prompt.threshold if prompt.threshold is not None else (bp.threshold or 0.5)
                results.append(
                    ItemResult(
                        **common,
                        outcome="skipped" if score is None else ("passed" if score >= threshold else "failed"),
                        score=score,
                        threshold=threshold,
                        response=answer,
                        generated_texts=generated,
                        history=history,
                        points=points,
                        usage={
                            model: Usage(
                                requests=1, cache_hits=int(rng.random() < 0.3), input_tokens=300, output_tokens=400
                            )
                        },
                        duration_s=rng.uniform(0.5, 9.0),
                    )
                )
    return blueprints, results


# ---------------------------------------------------------------- the browser

_SCROLL = """
const done = arguments[arguments.length - 1];
const frames = [];
let last = performance.now();
const end = last + 2000;
function step(now) {
  frames.push(now - last); last = now;
  window.scrollBy(0, 120);
  if (now < end) requestAnimationFrame(step);
  else { window.scrollTo(0, 0); done(frames.slice(1)); }
}
requestAnimationFrame(step);
"""

_OPEN = """
const [hash, selector, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
const t0 = performance.now();
location.hash = hash;
function check() {
  if (document.querySelector(selector)) requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));
  else setTimeout(check, 1);
}
check();
"""


def browser_figures(page: Path, largest: str, item: str, loads: int) -> dict[str, Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        return {"skipped": "no chromium / chromedriver (apt-get install chromium chromium-driver)"}
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    options.page_load_strategy = "none"  # driver.get returns at once; the figures come from the page
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_script_timeout(60)
    try:
        url = page.resolve().as_uri()
        runs = []
        for _ in range(loads):
            driver.get("about:blank")
            started = time.perf_counter()
            driver.get(url)
            while driver.execute_script("return document.documentElement.dataset.wevalReady") != "true":
                time.sleep(0.01)
            wall = time.perf_counter() - started
            while not driver.execute_script(
                "return document.readyState === 'complete' && performance.getEntriesByType('navigation')[0].loadEventEnd > 0"
            ):
                time.sleep(0.01)
            timing = driver.execute_script(
                """const n = performance.getEntriesByType('navigation')[0];
                   const ready = performance.getEntriesByName('weval-ready')[0];
                   const paint = performance.getEntriesByName('first-contentful-paint')[0];
                   return {dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd, ready: ready ? ready.startTime : null,
                           fcp: paint ? paint.startTime : null};"""
            )
            timing["wall"] = wall * 1000
            runs.append(timing)
        figures: dict[str, Any] = {
            key: statistics.median(r[key] for r in runs if r[key] is not None)
            for key in ("dcl", "load", "ready", "fcp", "wall")
        }
        frames = driver.execute_async_script(_SCROLL)
        figures["scroll_frames"] = len(frames)
        figures["scroll_p50_ms"] = statistics.median(frames)
        figures["scroll_p95_ms"] = sorted(frames)[int(len(frames) * 0.95) - 1]
        from urllib.parse import quote

        figures["open_blueprint_ms"] = driver.execute_async_script(
            _OPEN, "bp=" + quote(largest, safe=""), "[data-weval-item]"
        )
        figures["open_detail_ms"] = driver.execute_async_script(
            _OPEN, f"bp={quote(largest, safe='')}&item={quote(item, safe='')}", "[data-weval-detail]"
        )
        figures["console"] = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
        return figures
    finally:
        driver.quit()


def _largest_in(page: Path) -> tuple[str, str, int]:
    """A written page's largest blueprint (path, one of its node ids, its items), read as the
    page's script reads it: the run's blob names each blueprint's block."""
    text = page.read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="weval-run">(.*?)</script>', text, re.S)
    if found is None:
        raise SystemExit(f"{page}: not a weval report (no weval-run data)")
    run = json.loads(found.group(1))
    # a page from before issue 43 held each blueprint as plain JSON: timed the same way
    blocks = {
        block: (kind, body)
        for kind, block, body in re.findall(
            rf'<script type="({BLOB_TYPE}|application/json)" id="([^"]+)"[^>]*>(.*?)</script>', text, re.S
        )
    }
    sizes = {path: len(blocks[block][1]) for path, block in run["blueprints"].items()}
    path = max(sizes, key=sizes.__getitem__)
    kind, body = blocks[run["blueprints"][path]]
    items = (unpacked_json(body) if kind == BLOB_TYPE else json.loads(body))["items"]
    return path, items[0]["nodeid"], len(items)


def _print_browser(figures: dict[str, Any], loads: int, largest: str, items: int) -> None:
    print(
        f"page load in headless Chromium (median of {loads}): DOMContentLoaded {figures['dcl']:.0f} ms, "
        f"load {figures['load']:.0f} ms, overview ready {figures['ready']:.0f} ms, first paint {figures['fcp']:.0f} ms "
        f"(driver.get returning to the overview ready, wall: {figures['wall']:.0f} ms)"
    )
    print(
        f"scrolling the overview: {figures['scroll_frames']} frames in 2 s, frame time p50 {figures['scroll_p50_ms']:.1f} ms, "
        f"p95 {figures['scroll_p95_ms']:.1f} ms"
    )
    print(
        f"opening the largest blueprint ({largest}, {items} items): "
        f"{figures['open_blueprint_ms']:.0f} ms; an item's detail: {figures['open_detail_ms']:.0f} ms"
    )
    print(f"console errors and warnings: {len(figures['console'])}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--page", type=Path, default=None, help="time this page instead of writing one")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--loads", type=int, default=5, help="page loads to take the median of")
    parser.add_argument("--out", type=Path, default=None, help="folder for the page (default: a temporary one)")
    options = parser.parse_args()

    if options.page is not None:
        largest, item, count = _largest_in(options.page)
        print(f"{options.page}: {options.page.stat().st_size / 1e6:.1f} MB")
        figures = browser_figures(options.page, largest, item, options.loads)
        if "skipped" in figures:
            print("browser:", figures["skipped"])
        else:
            _print_browser(figures, options.loads, largest, count)
        return

    started = time.perf_counter()
    blueprints, results = synthetic_run(options.corpus.resolve(), options.models)
    made = time.perf_counter() - started
    print(
        f"{len(results):,} synthetic items, {len(blueprints)} blueprints x {options.models} models ({made:.1f} s to make)"
    )

    started = time.perf_counter()
    rollup = build_rollup(results)
    rolled = time.perf_counter() - started
    folder = options.out or Path(tempfile.mkdtemp(prefix="weval-html-bench-"))
    page = folder / "report.html"
    started = time.perf_counter()
    write_html(page, blueprints, results, rollup=rollup)
    written = time.perf_counter() - started
    size = page.stat().st_size
    print(
        f"build_rollup: {rolled:.2f} s; write_html: {written:.2f} s; "
        f"file: {size / 1e6:.1f} MB, {size / len(results):,.0f} bytes per item ({page})"
    )

    largest = max(rollup.blueprints.values(), key=lambda b: b.overall.items).path
    item = next(r.nodeid for r in results if r.blueprint_path == largest and r.points)
    figures = browser_figures(page, largest, item, options.loads)
    if "skipped" in figures:
        print("browser:", figures["skipped"])
        return
    _print_browser(figures, options.loads, largest, rollup.blueprints[largest].overall.items)


if __name__ == "__main__":
    main()
