"""The judged workload through promptfoo and through us, against one fake server (issue 43 item 5).

    WEVAL_PROMPTFOO_MAIN=<dir>/node_modules/promptfoo/dist/src/main.js \\
    python bench/peers.py [--items 400] [--latency-ms 100] [--concurrency 32] [--repeat 3]

The workload is ``bench/throughput.py``'s: ``--items`` items (prompts x two models), each one
generation, two judged points, a case-insensitive "contains", a JavaScript check and a "does not
contain"; ``items x 3`` requests in all. It is written twice, once as Weval blueprints and once
as a ``promptfooconfig.yaml`` (200 test rows x two providers, two ``llm-rubric``s graded by
one judge model), and run three ways, each in a fresh process against the fake provider with
``--latency-ms`` on every reply, nothing cached, at the same concurrency:

- ``promptfoo``: ``node main.js eval -c promptfooconfig.yaml --max-concurrency C --no-cache``
  (its CLI, promptfoo 0.123.1: ``npm install promptfoo@0.123.1``; ``main.js`` runs on Node 20);
- ``ours (blueprints)``: ``pytest`` over the blueprints with ``--weval-concurrency C``;
- ``ours (promptfoo file)``: ``pytest promptfooconfig.yaml`` with ``--weval-concurrency C``.

It prints each run's wall and CPU (min / median of ``--repeat``), the requests the server saw,
and ours over promptfoo's wall (the goal: <= 0.4). Without promptfoo's CLI it runs ours only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import INI
from throughput import JUDGE, JUDGE_REPLY, MODELS, children_cpu, write_suite

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakeserver import FakeServerProcess  # noqa: E402

GRADER = "openai:bench-grader"  # promptfoo's rubric grader answers in its own JSON
GRADER_REPLY = json.dumps({"reason": "The text meets it.", "pass": True, "score": 1})


def write_promptfoo_suite(folder: Path, items: int, concurrency: int) -> None:
    """The same workload as ``throughput.write_suite``, as one promptfoo config."""
    prompts = -(-items // len(MODELS))
    lines = [
        "description: bench",
        "prompts:",
        '  - "Question number {{ n }}, explain topic {{ n }} in one line."',
        "providers:",
        *[f"  - openai:chat:{m.split(':', 1)[1]}" for m in MODELS],
        "defaultTest:",
        "  options:",
        f"    provider: openai:chat:{GRADER.split(':', 1)[1]}",
        "evaluateOptions:",
        f"  maxConcurrency: {concurrency}",
        "tests:",
    ]
    for n in range(prompts):
        lines += [
            f"  - vars: {{n: {n}}}",
            "    assert:",
            f"      - {{type: llm-rubric, value: explains topic {n} clearly}}",
            f"      - {{type: llm-rubric, value: mentions the number {n}}}",
            f"      - {{type: icontains, value: topic {n}}}",
            "      - {type: javascript, value: output.length > 5}",
            "      - {type: not-icontains, value: forbidden}",
        ]
    (folder / "promptfooconfig.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "pytest.ini").write_text(INI)


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    start, cpu = time.perf_counter(), children_cpu()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    return time.perf_counter() - start, children_cpu() - cpu, proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    promptfoo_main = os.environ.get("WEVAL_PROMPTFOO_MAIN", "")
    has_promptfoo = bool(promptfoo_main and Path(promptfoo_main).is_file() and shutil.which("node"))

    tmp = Path(tempfile.mkdtemp(prefix="weval-peers-"))
    blueprints, promptfoo = tmp / "blueprints", tmp / "promptfoo"
    blueprints.mkdir()
    promptfoo.mkdir()
    items = write_suite(blueprints, args.items)
    write_promptfoo_suite(promptfoo, args.items, args.concurrency)
    rules = tmp / "rules.json"
    rules.write_text(
        json.dumps(
            [{"model": JUDGE.split(":", 1)[1], "reply": JUDGE_REPLY}]
            + [{"model": GRADER.split(":", 1)[1], "reply": GRADER_REPLY}]
            + [{"model": m.split(":", 1)[1], "reply": "{model} says: {last}"} for m in MODELS]
        )
    )
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    # promptfoo keeps maxConcurrency requests in flight; ours, with the provider's cap set to the
    # same (OpenAI's own profile starts at 20: docs/engine.md, 'Concurrency')
    caps = [f"--weval-concurrency={args.concurrency}", "-o", f"weval_provider_concurrency=openai:{args.concurrency}"]
    runs: dict[str, tuple[Path, list[str]]] = {
        "ours (blueprints)": (
            blueprints,
            [*pytest, f"--weval-judges={JUDGE}", *caps],
        ),
        "ours (promptfoo file)": (
            promptfoo,
            [*pytest, "promptfooconfig.yaml", *caps],
        ),
    }
    if has_promptfoo:
        runs["promptfoo"] = (
            promptfoo,
            ["node", promptfoo_main, "eval", "-c", "promptfooconfig.yaml", "-o", "pf.json", "--no-cache"]
            + ["--no-progress-bar", "--max-concurrency", str(args.concurrency)],
        )
    else:
        print("(promptfoo's CLI not found: set WEVAL_PROMPTFOO_MAIN to its dist/src/main.js; measuring ours only)")

    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    with FakeServerProcess("--latency-ms", str(args.latency_ms), "--rules", str(rules)) as server:
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env.pop("PYTEST_ADDOPTS", None)
        env.update(server.env())
        env.update(
            PROMPTFOO_DISABLE_TELEMETRY="1",
            PROMPTFOO_DISABLE_UPDATE="1",
            PROMPTFOO_CACHE_ENABLED="false",
            PROMPTFOO_CONFIG_DIR=str(tmp / ".promptfoo"),
        )
        for attempt in range(args.repeat):
            for number, (name, (cwd, cmd)) in enumerate(runs.items()):
                __import__("httpx").post(server.url + "/__reset", timeout=30).raise_for_status()
                fresh_cache = [f"--weval-cache-dir={tmp / f'cache-{attempt}-{number}'}"]
                wall, cpu, proc = timed(cmd + (fresh_cache if cmd[0] != "node" else []), cwd, env)
                log = server.log()
                if proc.returncode not in (0, 1, 100):
                    print(f"{name}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
                figures[name].append((wall, cpu))
                print(
                    f"  run {attempt + 1} {name:>22}: wall {wall:6.2f} s  CPU {cpu:6.2f} s  requests {log['count']} "
                    f"({log['distinct']} distinct), most in flight {log['max_in_flight']}"
                )

    ideal = items * 3 * args.latency_ms / 1000 / args.concurrency
    print(
        f"\nworkload: {items} items x (1 generation + 2 judged points); latency {args.latency_ms:g} ms; "
        f"concurrency {args.concurrency}; ideal {ideal:.2f} s; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    medians = {}
    for name, pairs in figures.items():
        walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
        medians[name] = statistics.median(walls)
        print(
            f"{name:>22}: wall min {min(walls):6.2f} / median {medians[name]:6.2f} s ({medians[name] / ideal:4.2f}x ideal)  "
            f"CPU min {min(cpus):6.2f} / median {statistics.median(cpus):6.2f} s"
        )
    if "promptfoo" in medians:
        for name in ("ours (blueprints)", "ours (promptfoo file)"):
            print(f"{name} / promptfoo, median wall: {medians[name] / medians['promptfoo']:.2f} (goal <= 0.4)")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
