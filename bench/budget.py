"""How far past ``--weval-budget`` a run goes, serial and under xdist, and what the budget costs.

    python bench/budget.py [--items 60] [--budget 8] [--latency-ms 200] [--runs serial,-n 4]
                           [--ledger-rounds 2000]

Starts the fake server (``python -m tests.fakeserver``) with ``--latency-ms``; the suite has
``--items`` items of one generation each (a 42-word prompt, a function point only), priced by ini
``weval_prices`` at $10,000 / $100 per million input / output tokens. The fake server counts a
word a token and echoes the prompt, so each reply costs about $0.42; the engine reserves about
$0.73 for it (four characters a token of input, 1,000 tokens of output). For each run (fresh
cache) it prints what the requests the server answered cost beside the budget: the overshoot in
dollars and in requests, how many requests were in flight at most, and the wall time; then the
same run with a budget that is never reached and without one, for the time a budget adds.

``--engine-requests``: the time a budget adds to a request in the engine: one coordinated engine
(as an xdist worker's: claims, and the ledger under a budget), cache off, sends that many distinct
requests (20 at a time, 20 ms latency) without a budget and with one never reached; prints CPU
(this process, every thread) and wall per request, best of 3 rounds each, taken in turns.

``--ledger-rounds``: the cross-process ledger alone (``SpendLedger`` on one SQLite file): one
reserve and one settle, in turn, from one process, then from 4 processes at once; prints the
time per request (reserve + settle). Skipped where the engine has no ledger.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakeserver import FakeServerProcess  # noqa: E402

MODEL = "openai:bench-model"
PER_MTOK_IN, PER_MTOK_OUT = 10_000.0, 100.0
FILLER = " ".join(["word"] * 40)


def write_suite(folder: Path, items: int) -> None:
    lines = [f"models: [{MODEL}]", "---"]
    for n in range(items):
        lines += [
            f"- id: q{n}",
            f"  prompt: 'Question {n}: {FILLER}'",
            "  should:",
            f"    - $icontains: 'question {n}:'",
        ]
    path = folder / "blueprints" / "priced.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "pytest.ini").write_text(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        f"weval_prices =\n    {MODEL} {PER_MTOK_IN:g} {PER_MTOK_OUT:g}\n"
    )


def cost_of(request: dict) -> float:
    """What the fake server's reply to ``request`` costs (it counts a word a token)."""
    prompt = request["last_user"]
    return (max(1, len(prompt.split())) * PER_MTOK_IN + len(f"echo: {prompt}".split()) * PER_MTOK_OUT) / 1e6


def outcome_counts(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.strip()]
    return lines[-1].strip("= ") if lines else "(no output)"


def run_suite(suite: Path, cache: Path, label: str, budget: float | None, latency_ms: float) -> dict:
    with FakeServerProcess("--latency-ms", str(latency_ms)) as server:
        env = {
            k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL")) and k != "PYTEST_ADDOPTS"
        }
        env.update(server.env())
        extra = [] if label == "serial" else label.split()
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
        cmd += [f"--weval-cache-dir={cache}", *extra]
        if budget is not None:
            cmd.append(f"--weval-budget={budget:g}")
        started = time.perf_counter()
        proc = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
        log = server.log()
    served = [r for r in log["requests"] if r["outcome"] == "200"]
    if proc.returncode not in (0, 1):
        print(proc.stdout[-3000:], proc.stderr[-3000:])
    return {
        "served": served,
        "cost": sum(cost_of(r) for r in served),
        "wall": wall,
        "outcome": outcome_counts(proc.stdout),
        "in_flight": log["max_in_flight"],
        "sent_twice": sum(n - 1 for n in Counter(r["last_user"] for r in served).values()),
    }


# -- the ledger alone --------------------------------------------------------------------------
def _ledger_worker(path: str, run_id: str, rounds: int, start_at: float, out: multiprocessing.Queue) -> None:
    from pytest_weval.engine.claims import Coordinator, SpendLedger
    from pytest_weval.engine.store.db import SqliteDB

    async def main() -> list[float]:
        db = SqliteDB(path)
        coordinator = Coordinator(db, run_id=run_id, worker_id=f"w{os.getpid()}", lease_s=30, poll_s=0.05)
        await coordinator.start()
        ledger = SpendLedger(coordinator)
        await ledger.reserve(0.0, 1e12)  # the row exists; the connection is open
        await ledger.settle(0.0, 0.0)
        while time.time() < start_at:
            await asyncio.sleep(0.001)
        times = []
        for _ in range(rounds):
            began = time.perf_counter()
            verdict = await ledger.reserve(1.0, 1e12)
            assert verdict.admitted, verdict
            await ledger.settle(1.0, 0.5)
            times.append(time.perf_counter() - began)
        await coordinator.close()
        db.close()
        return times

    out.put(asyncio.run(main()))


def ledger_overhead(rounds: int, processes: int) -> tuple[float, float]:
    """(median, p99) seconds per reserve + settle, with ``processes`` processes at it at once."""
    tmp = Path(tempfile.mkdtemp(prefix="weval-ledger-"))
    context = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue = context.Queue()
    start_at = time.time() + 2.0
    workers = [
        context.Process(target=_ledger_worker, args=(str(tmp / "ledger.sqlite"), "bench", rounds, start_at, out))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    times = [t for _ in workers for t in out.get(timeout=300)]
    for worker in workers:
        worker.join()
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99)]


# -- a budget in the engine -------------------------------------------------------------------
def engine_per_request(requests: int, rounds: int = 3) -> dict[str, tuple[float, float]]:
    """{"no budget" | "budget": (CPU s, wall s) per request, best round}."""
    from pytest_weval.blueprint.model import ModelSpec
    from pytest_weval.engine import ChatMessage, Engine, EngineSettings, ModelRequest
    from pytest_weval.engine.prices import Price

    best: dict[str, tuple[float, float]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="weval-budget-engine-"))
    with FakeServerProcess("--latency-ms", "20") as server:
        engines = {
            name: Engine(
                EngineSettings(
                    cache_mode="off",
                    cache_dir=tmp / name.replace(" ", "-"),
                    coordinate=True,
                    run_id=f"bench-{name}",
                    budget_usd=budget,
                    prices={MODEL: Price(PER_MTOK_IN, PER_MTOK_OUT)},
                    env=server.env(),
                )
            ).start()
            for name, budget in (("no budget", None), ("budget", 1e9))
        }
        for round_ in range(rounds + 1):  # the first is a warm-up
            for name, engine in engines.items():
                batch = [
                    ModelRequest(
                        model=ModelSpec(id=MODEL),
                        messages=(ChatMessage("user", f"Question {name}-{round_}-{i}: {FILLER}"),),
                        temperature=0,
                    )
                    for i in range(requests if round_ else 200)
                ]

                async def all_replies(engine=engine, batch=batch) -> None:
                    await asyncio.gather(*(engine.complete(r) for r in batch))

                cpu, wall = time.process_time(), time.perf_counter()
                engine.run_coroutine(all_replies()).result()
                cpu, wall = (time.process_time() - cpu) / len(batch), (time.perf_counter() - wall) / len(batch)
                if round_ and (name not in best or cpu < best[name][0]):
                    best[name] = (cpu, wall)
        for engine in engines.values():
            engine.close()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=60)
    parser.add_argument("--budget", type=float, default=8.0)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--runs", default="serial,-n 4")
    parser.add_argument("--overhead", default="yes", help="also time runs with a budget never reached (yes/no)")
    parser.add_argument("--engine-requests", type=int, default=2000, help="0 skips the engine measure")
    parser.add_argument("--ledger-rounds", type=int, default=2000, help="0 skips the ledger measure")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="weval-budget-"))
    suite = tmp / "suite"
    write_suite(suite, args.items)
    per_request = cost_of({"last_user": f"Question 10: {FILLER}"})
    print(
        f"{args.items} items, one request each, ~${per_request:.4f} a request (the engine reserves more); "
        f"budget ${args.budget:g}; latency {args.latency_ms:g} ms; {os.cpu_count()} CPUs"
    )
    labels = [r.strip() for r in args.runs.split(",") if r.strip()]
    for label in labels:
        result = run_suite(suite, tmp / f"cache-{label.replace(' ', '')}", label, args.budget, args.latency_ms)
        over = result["cost"] - args.budget
        print(
            f"{label:>8}: {result['outcome']}; served {len(result['served'])} requests costing "
            f"${result['cost']:.4f}: overshoot ${over:+.4f} ({over / per_request:+.2f} requests); "
            f"at most {result['in_flight']} in flight; sent twice {result['sent_twice']}; wall {result['wall']:.2f} s"
        )
    if args.overhead == "yes":
        for label in labels:
            walls = {}
            for name, budget in (("no budget", None), ("budget never reached", 1e9)):
                cache = tmp / f"cache-free-{label.replace(' ', '')}-{name.replace(' ', '')}"
                walls[name] = run_suite(suite, cache, label, budget, args.latency_ms)["wall"]
            print(
                f"{label:>8}: all {args.items} items, wall {walls['no budget']:.2f} s without a budget, "
                f"{walls['budget never reached']:.2f} s with one never reached"
            )
    if args.engine_requests:
        best = engine_per_request(args.engine_requests)
        for name, (cpu, wall) in best.items():
            print(
                f"engine, coordinated, {name:>9}: {cpu * 1e3:.3f} ms CPU and {wall * 1e3:.3f} ms wall a request "
                f"({args.engine_requests} requests, 20 at a time)"
            )
        added = best["budget"][0] - best["no budget"][0]
        print(f"engine: a budget adds {added * 1e3:+.3f} ms of CPU a request")
    if args.ledger_rounds:
        try:
            from pytest_weval.engine.claims import SpendLedger  # noqa: F401
        except ImportError:
            print("ledger: none in this engine")
            return
        for processes in (1, 4):
            median, p99 = ledger_overhead(args.ledger_rounds, processes)
            print(
                f"ledger, {processes} process{'es' if processes > 1 else ''} at once: reserve + settle "
                f"{median * 1e3:.3f} ms median, {p99 * 1e3:.3f} ms p99"
            )


if __name__ == "__main__":
    main()
