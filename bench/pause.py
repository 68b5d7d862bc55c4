"""How soon one worker's rate-limit pause holds back the other xdist workers.

    python bench/pause.py [--items 80] [--latency-ms 100] [--pause-s 6] [--workers 2] [--rounds 3]

Starts the fake server (in this process, a thread) with ``--latency-ms``; the suite has ``--items``
items of one generation and one judged point each. The run's first request is refused once with
``Retry-After: --pause-s``; the worker it came from pauses, and the others hear of it through the
claims store (read every 0.1 s). For each round (``-n --workers``, ``--weval-concurrency=4``, a
fresh cache) it prints how many requests reached the server during the pause and how long after
the refusal the last of them did (the time the pause took to reach every worker, plus the
latency of what was already on the wire), and when the first request after the pause came; then
the median and worst. ``tests/plugin/test_plugin_ratelimit.py`` checks that the pause holds;
this is how soon. Target: nothing later than 0.5 s after the refusal.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchlib import JUDGE, JUDGE_REPLY, MODEL, write_judged_suite  # noqa: E402

from tests.fakeserver import FakeServer, Rule  # noqa: E402


def one_pause(suite: Path, cache: Path, server: FakeServer, pause_s: float, workers: int) -> dict:
    server.reset()
    server.rules = [
        Rule(model=MODEL.split(":", 1)[1], contains="Question 0,", fault="429", retry_after=f"{pause_s:g}", times=1),
        Rule(model=JUDGE.split(":", 1)[1], reply=JUDGE_REPLY),
    ]
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL")) and k != "PYTEST_ADDOPTS"}
    env.update(server.env())
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    cmd += [f"--weval-judges={JUDGE}", "--weval-concurrency=4", f"--weval-cache-dir={cache}", "-n", str(workers)]
    proc = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
    requests = list(server.requests)
    refused_at = next(r.at for r in requests if r.outcome == "429")
    during = [r.at - refused_at for r in requests if refused_at < r.at < refused_at + pause_s]
    resumed = min((r.at - refused_at for r in requests if r.at >= refused_at + pause_s), default=float("nan"))
    return {"during": len(during), "last": max(during, default=0.0), "resumed": resumed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=80)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--pause-s", type=float, default=6.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="weval-pause-"))
    suite = tmp / "suite"
    write_judged_suite(suite, args.items, "paused")
    print(
        f"{args.items} items x (1 generation + 1 judged point); latency {args.latency_ms:g} ms; "
        f"-n {args.workers}, --weval-concurrency=4; the first request refused with Retry-After "
        f"{args.pause_s:g} s; {os.cpu_count()} CPUs"
    )
    pauses = []
    with FakeServer(latency_ms=args.latency_ms) as server:
        for n in range(args.rounds):
            pause = one_pause(suite, tmp / f"cache-{n}", server, args.pause_s, args.workers)
            pauses.append(pause)
            print(
                f"round {n + 1}: {pause['during']} requests during the pause, the last {pause['last']:4.2f} s "
                f"after the refusal; the first after it at {pause['resumed']:5.2f} s"
            )
    lasts = [p["last"] for p in pauses]
    print(
        f"last request in the pause: median {statistics.median(lasts):.2f} s, worst {max(lasts):.2f} s after the refusal"
    )


if __name__ == "__main__":
    main()
