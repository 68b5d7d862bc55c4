"""CPU cost of the engine's HTTP send path, per request, against the fake server.

    python bench/requests.py [--requests 2000] [--concurrency 20] [--latency-ms 20] [--rounds 3]

Starts the fake server in a subprocess (``python -m tests.fakeserver``, so its work is not
counted), starts one ``Engine`` (cache off) and sends ``--requests`` distinct OpenAI chat
requests at ``--concurrency`` per round, after a warm-up round. For each round it prints this
process's CPU time (user + sys, every thread: the engine loop does almost all of it) per request,
the wall time and requests/s; then the best and median round. CPU per request is the figure to
watch on a shared machine: wall time depends on the latency and on what else runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_weval.blueprint.model import ModelSpec  # noqa: E402
from pytest_weval.engine import ChatMessage, Engine, EngineSettings, ModelRequest  # noqa: E402
from tests.fakeserver import FakeServerProcess  # noqa: E402

MODEL = ModelSpec(id="openai:bench-model")


def requests_for(tag: str, count: int) -> list[ModelRequest]:
    return [
        ModelRequest(
            model=MODEL,
            messages=(
                ChatMessage("system", "You answer in one line."),
                ChatMessage("user", f"Question {tag}-{i}: explain topic {i}."),
            ),
            temperature=0,
        )
        for i in range(count)
    ]


def run_round(engine: Engine, requests: list[ModelRequest]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) to get every reply."""

    async def all_replies() -> None:
        replies = await asyncio.gather(*(engine.complete(r) for r in requests))
        assert all(reply.text.startswith("echo: ") for reply in replies), replies[:3]

    cpu, wall = time.process_time(), time.perf_counter()
    engine.run_coroutine(all_replies()).result()
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000, help="requests per round")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--store",
        choices=("off", "sqlite", "sqlite-claims"),
        default="off",
        help="off: no cache; sqlite: replies written to a SQLite cache; sqlite-claims: the same, each request "
        "claimed first (what a serial run does by default, so that two runs on one cache never buy a reply twice)",
    )
    args = parser.parse_args()

    with FakeServerProcess("--latency-ms", str(args.latency_ms)) as server:
        cache_dir = tempfile.mkdtemp(prefix="weval-bench-")
        settings = EngineSettings(
            env=server.env(),
            cache_mode="off" if args.store == "off" else "rw",
            cache_dir=cache_dir,
            coordinate={"off": None, "sqlite": False, "sqlite-claims": None}[args.store],
            provider_concurrency={"openai": args.concurrency},
        )
        with Engine(settings) as engine:
            run_round(engine, requests_for("warm-up", min(args.requests, 200)))
            print(
                f"{args.requests} requests per round, concurrency {args.concurrency}, latency "
                f"{args.latency_ms:g} ms, store {args.store} (claims {'on' if engine.coordinator else 'off'}); "
                f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
            )
            per_request: list[float] = []
            for n in range(args.rounds):
                cpu, wall = run_round(engine, requests_for(f"round{n}", args.requests))
                per_request.append(cpu / args.requests)
                print(
                    f"round {n + 1}: CPU {1000 * cpu / args.requests:.3f} ms/request  wall {wall:.2f} s  "
                    f"{args.requests / wall:.0f} requests/s"
                )
            sent = engine.stats["http_requests"]
        count = server.log()["count"]
    print(
        f"CPU per request: best {1000 * min(per_request):.3f} ms, median {1000 * statistics.median(per_request):.3f} ms"
        f"  (engine sent {sent} HTTP requests, the server saw {count})"
    )


if __name__ == "__main__":
    main()
