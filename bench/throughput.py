"""Throughput of a judged suite through pytest, against the fake server with real latency.

    python bench/throughput.py [--items 1200] [--latency-ms 100] [--concurrency 20] [--runs serial,-n 2]

Starts the fake server (``python -m tests.fakeserver``) with ``--latency-ms``, writes a suite of
blueprints into a temp dir (every item: one generation, two judged points, two function points),
and runs it through ``pytest`` in a fresh process: serial, then with ``-n 2``, each with a fresh
cache; then serial again over the warm cache. For each run it prints the wall time beside the
ideal (HTTP requests x latency / concurrency, the concurrency being ``--weval-concurrency``),
the HTTP requests the server saw beside the distinct requests among them, and the most it had in
flight at once; for the cached run, the time per item, and its wall and CPU per item beyond
pytest running as many empty tests (target: <= 1 ms).

Every run sets the provider's cap to ``--concurrency`` (``-o weval_provider_concurrency=openai:N``),
so that many requests can be in flight from the start; ``--provider-profile`` leaves OpenAI's
adaptive profile instead (20 at first, one more every 10 replies, up to 30).

Before the runs it prints what a bare aiohttp client takes for as many requests at the same
concurrency against the same server (``bare_client_wall``): the fake server's own turnaround,
which no client goes below.

Targets: wall within 1.3x the ideal, no request sent twice, -n 2 no slower than serial.
The default of 1,200 items (ideal 18 s) keeps pytest's own start-up and exit, about 2 s whatever
the suite (``floor`` below), from deciding the ratio; ``--items 400`` shows it.
The wall time includes pytest's start-up and collection, printed separately as ``floor``
(``pytest --collect-only`` of the same suite).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakeserver import FakeServerProcess  # noqa: E402

PROMPTS_PER_BLUEPRINT = 10
MODELS = ("openai:bench-model-a", "openai:bench-model-b")
JUDGE = "openai:bench-judge"
JUDGE_REPLY = "<reflection>The text meets it.</reflection><classification>CLASS_MAJOR</classification>"


def write_suite(folder: Path, items: int) -> int:
    """Blueprints with ``items`` items in all (prompts x models); returns the item count."""
    prompts = -(-items // len(MODELS))
    blueprints = -(-prompts // PROMPTS_PER_BLUEPRINT)
    written = 0
    for b in range(blueprints):
        lines = [f"title: Bench {b}", "models:"] + [f"  - {m}" for m in MODELS] + ["---"]
        for p in range(PROMPTS_PER_BLUEPRINT):
            if written >= prompts:
                break
            n = b * PROMPTS_PER_BLUEPRINT + p
            lines += [
                f"- id: q{n}",
                f"  prompt: Question number {n}, explain topic {n} in one line.",
                "  should:",
                f"    - explains topic {n} clearly",
                f"    - mentions the number {n}",
                f"    - $icontains: topic {n}",
                "    - $js: \"r.length > 5\"",
                "  should_not:",
                "    - $icontains: forbidden",
            ]
            written += 1
        path = folder / "blueprints" / f"group{b % 4}" / f"bench{b:03d}.yml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return written * len(MODELS)


LAST_RUN: dict[str, float] = {}  # epoch start/end of the last run, to place the server's log in it


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_pytest(suite: Path, env: dict[str, str], *args: str) -> tuple[float, subprocess.CompletedProcess]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args]
    LAST_RUN["start"] = time.time()
    start, cpu = time.perf_counter(), children_cpu()
    proc = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    LAST_RUN["end"] = time.time()
    LAST_RUN["cpu"] = children_cpu() - cpu  # the run's CPU (its processes', user + sys)
    if proc.returncode != 0 and "--collect-only" not in args:  # what went wrong, not only its count
        tail = (proc.stdout + proc.stderr).splitlines()[-60:]
        print(f"{' '.join(cmd)} exited {proc.returncode}:", *tail, sep="\n", file=sys.stderr)
    return wall, proc


def reset(server: FakeServerProcess) -> None:
    import httpx

    httpx.post(server.url + "/__reset", timeout=10)


def bare_client_wall(server: FakeServerProcess, requests: int, concurrency: int) -> float:
    """What the wire and the fake server alone allow: a bare aiohttp client sending ``requests``
    chat requests at ``concurrency`` in flight, each worker sending its next on each reply."""
    import asyncio

    import aiohttp

    async def send_all() -> float:
        left = iter(range(requests))
        async with aiohttp.ClientSession() as session:

            async def worker() -> None:
                for n in left:
                    body = {
                        "model": MODELS[0].split(":", 1)[1],
                        "messages": [{"role": "user", "content": f"Bare {n}?"}],
                    }
                    headers = {"Authorization": "Bearer test-openai-key"}
                    async with session.post(
                        server.url + "/openai/v1/chat/completions", json=body, headers=headers
                    ) as reply:
                        await reply.read()

            start = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return time.perf_counter() - start

    return asyncio.run(send_all())


def summary_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    return lines[-1] if lines else proc.stderr.strip()[-300:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1200)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--concurrency", type=int, default=20, help="--weval-concurrency for every run")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    parser.add_argument(
        "--runs",
        default="serial,-n 2,serial cached,-n 2 cached",
        help="comma separated subset of the four runs (a cached run needs its uncached one)",
    )
    parser.add_argument("--profile", help="py-spy record the serial run into this SVG")
    parser.add_argument(
        "--provider-profile",
        action="store_true",
        help="leave OpenAI's adaptive profile (20 in flight, up to 30) in place of a cap at --concurrency",
    )
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="weval-bench-"))
    suite = tmp / "suite"
    suite.mkdir()
    items = write_suite(suite, args.items)
    rules = tmp / "rules.json"
    # Each model answers differently, so every judge request is distinct too.
    rules.write_text(
        json.dumps(
            [{"model": JUDGE.split(":", 1)[1], "reply": JUDGE_REPLY}]
            + [{"model": m.split(":", 1)[1], "reply": "{model} says: {last}"} for m in MODELS]
        )
    )

    latency = args.latency_ms / 1000
    results: dict[str, dict] = {}
    with FakeServerProcess("--latency-ms", str(args.latency_ms), "--rules", str(rules)) as server:
        env = dict(os.environ)
        for name in list(env):
            if name.endswith(("_API_KEY", "_BASE_URL")) or name in ("PYTEST_ADDOPTS",):
                env.pop(name)
        env.update(server.env())
        common: tuple[str, ...] = (f"--weval-judges={JUDGE}", f"--weval-concurrency={args.concurrency}")
        if not args.provider_profile:
            # OpenAI's profile starts at 20 in flight and climbs to 30 (docs/engine.md,
            # 'Concurrency'): the ideal at --concurrency is reached only with the provider's cap
            # set to it, as a user who wants that many in flight sets it.
            common += ("-o", f"weval_provider_concurrency=openai:{args.concurrency}")

        floor, proc = run_pytest(suite, env, "--collect-only", *common)
        # What xdist itself costs here: the same number of empty Python tests, serial and -n 2,
        # without the plugin (under xdist it activates in every process, blueprints or not).
        empty = tmp / "empty"
        empty.mkdir()
        (empty / "test_empty.py").write_text(
            f"import pytest\n@pytest.mark.parametrize('i', range({items}))\ndef test_empty(i):\n    pass\n"
        )
        (empty / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
        empty_serial, _ = run_pytest(empty, env, "-p", "no:weval")
        empty_cpu = LAST_RUN["cpu"]
        empty_xdist, _ = run_pytest(empty, env, "-n", "2", "-p", "no:weval")
        empty_xdist_cpu = LAST_RUN["cpu"]
        print(
            f"suite: {items} items, each 1 generation + 2 judged + 3 function points; "
            f"latency {args.latency_ms:g} ms; --weval-concurrency={args.concurrency}; {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.2f}; bytecode "
            + (
                "not cached (PYTHONDONTWRITEBYTECODE: every process compiles the plugin)"
                if env.get("PYTHONDONTWRITEBYTECODE")
                else "cached"
            )
        )
        print(
            f"floor (pytest --collect-only, fresh process): {floor:.2f} s; {items} empty tests (-p no:weval): "
            f"serial {empty_serial:.2f} s (CPU {empty_cpu:.2f} s), -n 2 {empty_xdist:.2f} s (CPU {empty_xdist_cpu:.2f} s; "
            f"xdist's own cost {empty_xdist - empty_serial:+.2f} s, CPU {empty_xdist_cpu - empty_cpu:+.2f} s)"
        )

        requests = items * 3  # each item: one generation and two judged points
        bare = bare_client_wall(server, requests, args.concurrency)
        print(
            f"bare aiohttp client, {requests} requests at {args.concurrency} in flight to the same server: "
            f"{bare:.2f} s = {bare / (requests * latency / args.concurrency):.3f}x ideal (the server's own turnaround)"
        )
        reset(server)

        runs = [
            ("serial", (f"--weval-cache-dir={tmp / 'cache-serial'}",)),
            ("-n 2", ("-n", "2", f"--weval-cache-dir={tmp / 'cache-xdist'}")),
            ("serial cached", (f"--weval-cache-dir={tmp / 'cache-serial'}",)),
            ("-n 2 cached", ("-n", "2", f"--weval-cache-dir={tmp / 'cache-xdist'}")),
        ]
        wanted = {r.strip() for r in args.runs.split(",")}
        for label, extra in runs:
            if label not in wanted:
                continue
            reset(server)
            if args.profile and label == "serial":
                cmd_prefix = ["py-spy", "record", "-o", args.profile, "--subprocesses", "--"]
                start, cpu = time.perf_counter(), children_cpu()
                proc = subprocess.run(
                    cmd_prefix + [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *common, *extra],
                    cwd=suite,
                    env=env,
                    capture_output=True,
                    text=True,
                )
                wall = time.perf_counter() - start
                LAST_RUN["cpu"] = children_cpu() - cpu
            else:
                wall, proc = run_pytest(suite, env, *common, *extra)
            log = server.log()
            results[label] = dict(
                wall=wall,
                count=log["count"],
                distinct=log["distinct"],
                max_in_flight=log["max_in_flight"],
                outcome=summary_line(proc),
                rc=proc.returncode,
                cpu=LAST_RUN["cpu"],
            )
            ideal = log["count"] * latency / args.concurrency
            if log["count"]:
                arrivals = sorted(r["at"] for r in log["requests"])
                # from the first request's arrival to the last reply: the request phase
                span = arrivals[-1] - arrivals[0] + latency
                before = arrivals[0] - LAST_RUN["start"]
                after = LAST_RUN["end"] - (arrivals[-1] + latency)
                print(
                    f"{label:>15}: wall {wall:6.2f} s  CPU {LAST_RUN['cpu']:5.2f} s  ideal {ideal:5.2f} s  "
                    f"ratio {wall / ideal:4.2f}x  "
                    f"(minus floor {(wall - floor) / ideal:4.2f}x; start to first request {before:4.2f} s, "
                    f"request phase {span:5.2f} s = {span / ideal:4.2f}x, last reply to exit {after:4.2f} s)  "
                    f"requests {log['count']} distinct {log['distinct']}  "
                    f"max in flight {log['max_in_flight']}  | {summary_line(proc)}"
                )
            else:
                print(
                    f"{label:>15}: wall {wall:6.2f} s  requests 0  per item {1000 * wall / items:.2f} ms "
                    f"(minus floor {1000 * (wall - floor) / items:.2f} ms; beyond {items} empty tests: wall "
                    f"{1000 * (wall - empty_serial) / items:.2f} ms, CPU {1000 * (LAST_RUN['cpu'] - empty_cpu) / items:.2f} ms)"
                    f"  | {summary_line(proc)}"
                )
            if proc.returncode not in (0, 1):
                print(proc.stdout[-3000:], proc.stderr[-3000:])

    if "serial" in results and "-n 2" in results:
        serial, xdist = results["serial"], results["-n 2"]
        print()
        print(f"-n 2 / serial CPU: {xdist['cpu'] / serial['cpu']:.2f}")
        print(f"duplicates: serial {serial['count'] - serial['distinct']}, -n 2 {xdist['count'] - xdist['distinct']}")
        print(
            f"-n 2 / serial wall: {xdist['wall'] / serial['wall']:.2f} "
            f"(without xdist's own cost: {(xdist['wall'] - (empty_xdist - empty_serial)) / serial['wall']:.2f}); "
            f"load average now {os.getloadavg()[0]:.2f}"
        )
    if args.keep:
        print(f"kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
