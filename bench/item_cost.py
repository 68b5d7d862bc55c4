"""What one item costs: CPU per item beyond pytest's empty test, against a bare aiohttp request.

    python bench/item_cost.py [--items 2000] [--concurrency 20] [--latency-ms 20] [--rounds 3]
                              [--one-item-runs 5] [--skip cpu,cached,one]

Starts the fake server (``python -m tests.fakeserver``, in its own process, so its work is not
counted) and writes, in a temp dir, ``--items`` items with one ``$contains`` point each (no
judges) and as many empty pytest tests. Each round measures, as CPU time (user + sys) of the
pytest subprocess (``getrusage(RUSAGE_CHILDREN)``), not wall:

  (a) pytest running the empty tests;
  (b) the suite with ``--weval-cache=off`` (one request per item);
  (c) (b - a) / items: what an item costs beyond an empty test;
  (d) a bare aiohttp client sending the same number of chat requests to the same server at the
      same concurrency (one session, a semaphore, the body sent as JSON and the reply parsed),
      its CPU per request (this process's, around the requests only), and c / d;
  (e) the suite replayed from a warm cache: CPU and wall per item beyond the empty tests.

The empty run loads the same plugins as the suite's (pytest-weval included), so a fixed start-up
cost is left out of (c) and (e); the one-item run below is where start-up is measured: the
median wall of ``--one-item-runs`` runs of a one-item blueprint, uncached (cache off: one
request) and cached, beside ``python -c pass`` and bare ``pytest`` on a file of one empty test.

Targets (issue 30): c <= 4 x d; cached replay <= 1 ms per item beyond the empty tests; a
one-item run <= 1.0 s wall. The machine's load average is printed: on a shared machine compare
figures from the same run, and quote medians.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchlib import write_empty_tests  # noqa: E402

from tests.fakeserver import FakeServerProcess  # noqa: E402

MODEL = "openai:bench-model"
PROMPTS_PER_FILE = 100
PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly")
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def write_suite(folder: Path, items: int) -> None:
    """``items`` prompts on one model, one ``$contains`` point each (the fake server echoes)."""
    for first in range(0, items, PROMPTS_PER_FILE):
        lines = [f"title: Item cost {first}", f"models: [{MODEL}]", "---"]
        for n in range(first, min(items, first + PROMPTS_PER_FILE)):
            lines += [
                f"- id: q{n}",
                f"  prompt: Question {n}, explain topic {n}.",
                "  should:",
                f"    - $contains: topic {n}",
            ]
        path = folder / "blueprints" / f"items{first:05d}.yml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "pytest.ini").write_text(INI)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(cmd: tuple[str, ...] | list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, last line of output) of one subprocess run to its end."""
    cpu, wall = children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - wall, children_cpu() - cpu
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode not in (0, 5):
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}")
    return cpu, wall, lines[-1] if lines else ""


def bare_aiohttp(url: str, requests: int, concurrency: int) -> float:
    """CPU seconds of this process for ``requests`` chat requests over one aiohttp session."""
    import aiohttp

    endpoint = url + "/openai/v1/chat/completions"
    headers = {"Authorization": "Bearer sk-bench"}

    async def all_requests() -> float:
        gate = asyncio.Semaphore(concurrency)
        async with aiohttp.ClientSession() as session:

            async def one(i: int) -> None:
                body = {
                    "model": MODEL.split(":", 1)[1],
                    "messages": [{"role": "user", "content": f"Bare {time.time()} question {i}, explain topic {i}."}],
                    "temperature": 0,
                }
                async with gate, session.post(endpoint, json=body, headers=headers) as response:
                    reply = await response.json()
                    assert "topic" in reply["choices"][0]["message"]["content"], reply

            await one(-1)  # the connection and the first-use imports, not counted
            cpu = time.process_time()
            await asyncio.gather(*(one(i) for i in range(requests)))
            return time.process_time() - cpu

    return asyncio.run(all_requests())


def spread(values: list[float], scale: float = 1.0, unit: str = "ms") -> str:
    values = [v * scale for v in values]
    return f"median {statistics.median(values):.2f} {unit} (min {min(values):.2f}, max {max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=20, help="--weval-concurrency, and the bare client's")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one-item-runs", type=int, default=5)
    parser.add_argument("--skip", default="", help="comma separated: cpu, cached, one")
    parser.add_argument(
        "--pyc",
        action="store_true",
        help="let the runs keep bytecode (in the temp dir) as an installed package has it, even when "
        "PYTHONDONTWRITEBYTECODE is set: a checkout without it compiles every module at every start",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = parser.parse_args()
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}

    tmp = Path(tempfile.mkdtemp(prefix="weval-item-cost-"))
    suite, empty = tmp / "suite", tmp / "empty"
    write_suite(suite, args.items)
    write_empty_tests(empty, args.items)
    one, tiny = tmp / "one", tmp / "tiny"
    write_suite(one, 1)
    write_empty_tests(tiny, 1)
    n = args.items
    common = (f"--weval-concurrency={args.concurrency}",)
    print(
        f"{n} items, one $contains point each, no judges; latency {args.latency_ms:g} ms; concurrency "
        f"{args.concurrency}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; bytecode "
        f"{'kept' if args.pyc or not os.environ.get('PYTHONDONTWRITEBYTECODE') else 'not written (PYTHONDONTWRITEBYTECODE)'}"
    )
    with FakeServerProcess("--latency-ms", str(args.latency_ms)) as server:
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env.pop("PYTEST_ADDOPTS", None)
        env.update(server.env())
        if args.pyc:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
            run((*PYTEST, "--weval-cache=off"), one, env)  # compiles what the runs import

        empty_cpu: list[float] = []
        empty_wall: list[float] = []
        per_item: list[float] = []
        bare: list[float] = []
        ratios: list[float] = []
        cached_cpu: list[float] = []
        cached_wall: list[float] = []
        for r in range(args.rounds):
            cpu_a, wall_a, _ = run(PYTEST, empty, env)
            empty_cpu.append(cpu_a)
            empty_wall.append(wall_a)
            line = f"round {r + 1}: (a) empty tests {cpu_a:.2f} s CPU"
            if "cpu" not in skip:
                cpu_b, _, outcome = run((*PYTEST, "--weval-cache=off", *common), suite, env)
                cpu_d = bare_aiohttp(server.url, n, args.concurrency)
                c, d = (cpu_b - cpu_a) / n, cpu_d / n
                per_item.append(c)
                bare.append(d)
                ratios.append(c / d)
                line += (
                    f"; (b) cache off {cpu_b:.2f} s [{outcome}]; (c) per item {1000 * c:.2f} ms; "
                    f"(d) bare aiohttp {1000 * d:.2f} ms/request; c/d {c / d:.1f}x"
                )
            if "cached" not in skip:
                cache = (f"--weval-cache-dir={tmp / f'cache{r}'}",)
                run((*PYTEST, *common, *cache), suite, env)
                cpu_e, wall_e, outcome = run((*PYTEST, *common, *cache), suite, env)
                cached_cpu.append((cpu_e - cpu_a) / n)
                cached_wall.append((wall_e - wall_a) / n)
                line += (
                    f"; (e) cached {cpu_e:.2f} s CPU, {wall_e:.2f} s wall [{outcome}]: per item "
                    f"{1000 * (cpu_e - cpu_a) / n:.2f} ms CPU, {1000 * (wall_e - wall_a) / n:.2f} ms wall"
                )
            print(line, flush=True)

        print()
        print(f"(a) pytest, {n} empty tests: CPU {spread(empty_cpu, 1, 's')}, wall {spread(empty_wall, 1, 's')}")
        if per_item:
            print(f"(c) CPU per item beyond an empty test (cache off): {spread(per_item, 1000)}")
            print(f"(d) bare aiohttp CPU per request: {spread(bare, 1000)}")
            print(f"    ratio c/d: {spread(ratios, 1, 'x')}  (target <= 4x)")
        if cached_cpu:
            print(f"(e) cached replay beyond an empty test, per item: CPU {spread(cached_cpu, 1000)}")
            print(
                f"                                                  wall {spread(cached_wall, 1000)}  (target <= 1 ms)"
            )

        if "one" not in skip:
            cache = (f"--weval-cache-dir={tmp / 'cache-one'}",)
            run((*PYTEST, *cache), one, env)  # fills the cache the cached runs replay
            walls: dict[str, list[float]] = {"python -c pass": [], "pytest, one empty test": []}
            walls.update({"one item, cache off": [], "one item, cached": []})
            for _ in range(args.one_item_runs):
                walls["python -c pass"].append(run((sys.executable, "-c", "pass"), tmp, env)[1])
                walls["pytest, one empty test"].append(run(PYTEST, tiny, env)[1])
                walls["one item, cache off"].append(run((*PYTEST, "--weval-cache=off"), one, env)[1])
                walls["one item, cached"].append(run((*PYTEST, *cache), one, env)[1])
            print()
            for label, values in walls.items():
                print(f"{label:>24}: wall {spread(values, 1, 's')}")
            print("(target: a one-item run <= 1.0 s wall)")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    if args.keep:
        print(f"kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
