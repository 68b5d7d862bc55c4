"""How a run grows with its size: wall, CPU, peak memory and report sizes at N items.

    python bench/scale.py [--sizes 4000,16000,64000] [--runs live,replay] [--workers 0]

For each N it writes N synthetic items (prompts x two models, every item one generation and one
judged point: two requests), starts the fake provider on loopback (no latency: the wire's speed),
and runs pytest in a fresh process:

- ``floor``: N empty parametrized Python tests, what pytest itself costs for N items;
- ``live``: a fresh cache, every request sent to the fake;
- ``replay``: the same cache read back with ``--weval-cache=ro``, nothing sent.

Each run writes ``--weval-html`` and ``--weval-out``; the table prints wall and CPU seconds,
the peak resident memory of the largest process (``ru_maxrss`` of the run's process tree), the
HTML page's and the Weval JSON folder's sizes, each also per item and against the floor. Between
the smallest and the largest N it prints the per-item slope and projects the configs repository
(164,118 items) from it. ``--workers 2`` runs the weval runs with ``-n 2`` (memory is then the
largest process, a worker or the controller).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchlib import write_empty_tests  # noqa: E402

from tests.fakeserver import FakeServerProcess  # noqa: E402

CONFIGS_ITEMS = 164_118
PROMPTS_PER_BLUEPRINT = 50
MODELS = ("openai:scale-model-a", "openai:scale-model-b")
JUDGE = "openai:scale-judge"
JUDGE_REPLY = "<reflection>The text meets it.</reflection><classification>CLASS_MAJOR</classification>"
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def write_suite(folder: Path, items: int) -> None:
    prompts = -(-items // len(MODELS))
    for b in range(-(-prompts // PROMPTS_PER_BLUEPRINT)):
        lines = [f"title: Scale {b}", "models:"] + [f"  - {m}" for m in MODELS] + ["---"]
        for n in range(b * PROMPTS_PER_BLUEPRINT, min(prompts, (b + 1) * PROMPTS_PER_BLUEPRINT)):
            lines += [
                f"- id: q{n}",
                f"  prompt: Question number {n}, explain topic {n} in a short paragraph.",
                "  should:",
                f"    - explains topic {n} clearly",
            ]
        path = folder / "blueprints" / f"group{b % 8}" / f"scale{b:04d}.yml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "pytest.ini").write_text(INI)


def measured(cwd: Path, env: dict[str, str], *args: str) -> dict[str, float | str]:
    """Runs pytest under a small parent that reports its process tree's peak memory and CPU."""
    probe = (
        "import resource, subprocess, sys, time, json\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "wall = time.perf_counter() - t\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "lines = [l for l in p.stdout.splitlines() if l.strip()]\n"
        "print(json.dumps(dict(wall=wall, cpu=u.ru_utime + u.ru_stime, rss_mb=u.ru_maxrss / 1024,\n"
        "    rc=p.returncode, last=(lines[-1] if lines else p.stderr[-300:]))))\n"
    )
    cmd = [
        sys.executable,
        "-c",
        probe,
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
    ]
    out = subprocess.run([*cmd, *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def size_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="4000,16000,64000")
    parser.add_argument("--runs", default="live,replay")
    parser.add_argument("--workers", type=int, default=0, help="-n for the weval runs (0: serial)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    runs = [r.strip() for r in args.runs.split(",")]
    if "replay" in runs and "live" not in runs:  # the replay reads the cache the live run fills
        parser.error("--runs replay needs live before it: --runs live,replay")
    tmp = Path(tempfile.mkdtemp(prefix="weval-scale-"))
    rules = tmp / "rules.json"
    rules.write_text(
        json.dumps(
            [{"model": JUDGE.split(":", 1)[1], "reply": JUDGE_REPLY}]
            + [{"model": m.split(":", 1)[1], "reply": "{model} says: {last}"} for m in MODELS]
        )
    )
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; -n {args.workers or 'off'}")
    header = f"{'N':>7} {'run':<7} {'wall s':>8} {'cpu s':>8} {'peak MB':>8} {'x floor':>16} {'html B/item':>12} {'json B/item':>12}  outcome"
    print(header)
    table: dict[tuple[int, str], dict] = {}
    try:
        with FakeServerProcess("--rules", str(rules)) as server:
            env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
            env.pop("PYTEST_ADDOPTS", None)
            env.update(server.env())
            for n in sizes:
                suite, floor_dir = tmp / f"suite{n}", tmp / f"floor{n}"
                write_suite(suite, n)
                write_empty_tests(floor_dir, n)
                floor = measured(floor_dir, env)
                table[(n, "floor")] = floor
                print(f"{n:>7} {'floor':<7} {floor['wall']:>8.2f} {floor['cpu']:>8.2f} {floor['rss_mb']:>8.0f}")
                cache = tmp / f"cache{n}"
                for run in runs:
                    html, out = tmp / f"{run}{n}.html", tmp / f"{run}{n}-out"
                    extra = ["--weval-cache=ro"] if run == "replay" else []
                    if args.workers:
                        extra += ["-n", str(args.workers)]
                    figures = measured(
                        suite,
                        env,
                        f"--weval-judges={JUDGE}",
                        f"--weval-concurrency={args.concurrency}",
                        f"--weval-cache-dir={cache}",
                        f"--weval-html={html}",
                        f"--weval-out={out}",
                        *extra,
                    )
                    figures["html"], figures["json"] = size_of(html), size_of(out)
                    table[(n, run)] = figures
                    ratio = f"{figures['wall'] / floor['wall']:.2f}x t {figures['rss_mb'] / floor['rss_mb']:.2f}x m"
                    print(
                        f"{n:>7} {run:<7} {figures['wall']:>8.2f} {figures['cpu']:>8.2f} {figures['rss_mb']:>8.0f} "
                        f"{ratio:>16} {figures['html'] / n:>12.0f} {figures['json'] / n:>12.0f}  {figures['last']}"
                    )
            if len(sizes) > 1:
                small, large = sizes[0], sizes[-1]
                print(
                    f"\nper item between N={small} and N={large}, projected to the configs repository ({CONFIGS_ITEMS:,} items):"
                )
                for run in ["floor", *runs]:
                    a, b = table[(small, run)], table[(large, run)]
                    for key, unit in (("wall", "s"), ("rss_mb", "MB")):
                        slope = (b[key] - a[key]) / (large - small)
                        projected = b[key] + slope * (CONFIGS_ITEMS - large)
                        print(
                            f"  {run:<7} {key:<7} {slope * 1000:>9.3f} {unit} per 1,000 items -> {projected:,.0f} {unit}"
                        )
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
