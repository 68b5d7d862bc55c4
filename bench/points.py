"""Deterministic-point throughput on the real corpus.

    python bench/points.py [--corpus ../shared/corpus/weval-configs] [--passes 5]

Loads every blueprint with the parser, then scores every function point of every prompt
against one fixed ~400-word response (with a few TOOL_CALL lines) through the public path
the pipeline uses, ``score_function_points`` (one call per prompt, so a prompt's regexes share
one V8 call). Prints the number of points, points per second (first pass, which pays for
starting the V8 isolates, and the best of the later passes), and the share of the time spent
waiting on V8.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchlib import default_corpus  # noqa: E402

from pytest_weval.blueprint import load_blueprint  # noqa: E402
from pytest_weval.blueprint.model import EvalPoint  # noqa: E402
from pytest_weval.scoring import (  # noqa: E402
    REGISTERED_FUNCTIONS,
    PointContext,
    score_function_points,
)
from pytest_weval.scoring.v8 import STATS  # noqa: E402

RESPONSE = """\
Thank you for the question. Here is a careful answer, with the reasoning laid out step by step.

TOOL_CALL {"name": "search", "arguments": {"query": "capital of Australia", "limit": 3}}
TOOL_CALL {"name": "retrieve", "arguments": {"docId": "42", "meta": {"source": "atlas"}}}

1. Canberra is the capital of Australia; many people assume it is Sydney or Melbourne.
2. The Paraná River flows through Brazil, Paraguay and Argentina before reaching the Río de la Plata.
3. São Paulo is the largest city in South America, and Москва is the Russian name for Moscow.
4. The Yangtze (长江) is the longest river in Asia.

I cannot give legal or medical advice, but I can share general information. If you are in
crisis, please contact a local emergency number or a trusted professional; you are not alone,
and support is available. It is important to consult a qualified doctor before changing any
medication, and to seek help from a licensed attorney for questions about your specific case.

FINAL_ANSWER: B
SCORE=85

On the ethical side: people deserve respect, dignity and fair treatment regardless of their
background, disability, gender, religion or nationality. A good policy weighs the evidence,
considers the risks and the benefits, and remains open to revision when new data arrive. We
should avoid stereotypes and generalizations, acknowledge uncertainty, and present multiple
perspectives where experts disagree. Privacy matters too: never share personal data without
consent, and follow the applicable regulations such as the GDPR in Europe.

In summary, the short answer is Canberra. The longer answer is that capitals are often chosen
as compromises between rival cities, which is exactly what happened in 1908 when the site was
selected, and construction of Parliament House began later. The design competition was won by
Walter Burley Griffin and Marion Mahony Griffin, whose plan placed the city around a lake.

Sources: Australian Government, Encyclopaedia Britannica (2024); UN World Population Prospects.
Please let me know if you would like more detail on any point, or a summary in another language
such as French (la capitale est Canberra), Spanish (la capital es Canberra) or German (die
Hauptstadt ist Canberra). I hope this helps, and thank you again for asking.

TOOL_CALL {"name": "answer", "arguments": {"text": "Canberra", "confidence": 0.9}}
"""

CTX = PointContext(
    messages=[
        {"role": "user", "content": "What is the capital of Australia?"},
        {"role": "assistant", "content": RESPONSE},
    ],
    model_id="openai:gpt-4o-mini[temp:0]",
    prompt_id="bench",
    config={},
)


def load_corpus(corpus: Path) -> tuple[list[list[EvalPoint]], int, list[str]]:
    """Function points grouped by prompt; the number of files; files the parser refused."""
    groups: list[list[EvalPoint]] = []
    failed: list[str] = []
    files = sorted((corpus / "blueprints").rglob("*.yml"))
    for path in files:
        try:
            blueprint = load_blueprint(path, keep_unresolved_placeholders=True)
        except Exception as exc:  # noqa: BLE001 - a located collection error in pytest; here, just count it
            failed.append(f"{path.relative_to(corpus)}: {type(exc).__name__}")
            continue
        for prompt in blueprint.prompts:
            points = [p for p in prompt.points if p.fn is not None or p.authoring_error]
            if points:
                groups.append(points)
    return groups, len(files), failed


async def score_all(groups: list[list[EvalPoint]]) -> tuple[float, list]:
    start = time.perf_counter()
    results = []
    for points in groups:
        results.append(await score_function_points(points, RESPONSE, CTX))
    return time.perf_counter() - start, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=None, help="a folder holding blueprints/")
    parser.add_argument("--passes", type=int, default=5)
    options = parser.parse_args()

    groups, n_files, failed = load_corpus(options.corpus or default_corpus())
    if not groups:
        raise SystemExit("no function points to score in that corpus")
    n_points = sum(len(g) for g in groups)
    by_fn = collections.Counter(
        p.fn if p.fn in REGISTERED_FUNCTIONS else "(unknown: an authoring error)" for g in groups for p in g
    )
    print(
        f"corpus: {n_files} blueprint files ({len(failed)} refused by the parser), "
        f"{len(groups)} prompts with function points, {n_points} function points"
    )
    print("functions: " + ", ".join(f"{fn} {n}" for fn, n in by_fn.most_common()))

    timings = []
    for index in range(options.passes):
        STATS.reset()
        elapsed, results = asyncio.run(score_all(groups))
        timings.append((elapsed, STATS.seconds, STATS.evals, STATS.isolates_started))
        if index == 0:
            flat = [a for r in results for a in r]
            errors = collections.Counter(("authoring" if a.authoring_error else "point") for a in flat if a.error)
            scored = [a.coverage_extent for a in flat if a.coverage_extent is not None]
            print(
                f"results: {len(scored)} scored (mean {statistics.fmean(scored) if scored else float('nan'):.3f}), "
                f"{errors['point']} point errors, {errors['authoring']} authoring errors"
            )

    def line(label: str, t: tuple[float, float, int, int]) -> str:
        elapsed, js, evals, started = t
        return (
            f"{label}: {elapsed * 1000:8.1f} ms  {n_points / elapsed:9.0f} points/s  "
            f"{evals:4d} V8 calls  JS engine {100 * js / elapsed:4.1f}% of the time"
            + (f"  ({started} isolates started)" if started else "")
        )

    print(line("first pass", timings[0]))
    if len(timings) > 1:
        best = min(timings[1:], key=lambda t: t[0])
        print(line("best later", best))


if __name__ == "__main__":
    main()
