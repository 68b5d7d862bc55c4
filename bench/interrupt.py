"""How soon Ctrl-C stops a run, and what it still sends: serial and under xdist, the signal to the
whole process group (a terminal's Ctrl-C) or to the main process alone (``kill -INT``).

    python bench/interrupt.py [--items 300] [--latency-ms 200] [--concurrency 8] [--after 40]
                              [--rounds 3] [--modes serial,-n 2,-n 2 main]

Starts the fake server (in this process, a thread) with ``--latency-ms``; the suite has ``--items``
items of one generation and one judged point each. For each mode and round it starts pytest in
its own process group with a fresh cache, waits until the server has seen ``--after`` requests
(the run is well under way, every slot busy), sends SIGINT and prints: the time until every
process of the run is gone (xdist's workers included), how many requests reached the server
after the signal and how long after it the last one did; then the median and worst of the
rounds. ``tests/plugin/test_plugin_interrupt.py`` checks that nothing starts after the signal is
handled; these are the figures of how soon that is. Targets: stopped within 2 s; no request
later than 0.1 s after the signal (0.6 s when only the main process gets it: the workers hear of
it through the claims store, which they read every 0.1 s).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchlib import JUDGE, JUDGE_REPLY, write_judged_suite  # noqa: E402

from tests.fakeserver import FakeServer, Rule  # noqa: E402


def alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def one_stop(suite: Path, cache: Path, server: FakeServer, mode: str, concurrency: int, after: int) -> dict:
    """Start the run, interrupt it once ``after`` requests arrived; what the stop took."""
    server.reset()
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL")) and k != "PYTEST_ADDOPTS"}
    env.update(server.env())
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    workers = [] if mode == "serial" else mode.replace("main", "").split()
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    cmd += [f"--weval-judges={JUDGE}", f"--weval-concurrency={concurrency}", f"--weval-cache-dir={cache}", *workers]
    process = subprocess.Popen(
        cmd, cwd=suite, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        while server.count < after and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.005)
        if process.poll() is not None:
            raise SystemExit(f"the run ended before the signal:\n{process.communicate()[0][-3000:]}")
        signalled = time.time()
        if mode.endswith("main"):
            os.kill(process.pid, signal.SIGINT)
        else:
            os.killpg(process.pid, signal.SIGINT)
        process.communicate(timeout=120)
        while alive(process.pid) and time.time() - signalled < 120:
            time.sleep(0.005)
        stopped = time.time() - signalled
    finally:
        if alive(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
    time.sleep(0.5)  # anything still on its way arrives
    late = [r.at - signalled for r in list(server.requests) if r.at > signalled]
    return {"stopped": stopped, "late": len(late), "last": max(late, default=0.0), "sent": server.count}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--after", type=int, default=40, help="requests the server sees before the signal")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default="serial,-n 2,-n 2 main")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="weval-interrupt-"))
    suite = tmp / "suite"
    write_judged_suite(suite, args.items, "long")
    rules = [Rule(model=JUDGE.split(":", 1)[1], reply=JUDGE_REPLY)]
    print(
        f"{args.items} items x (1 generation + 1 judged point); latency {args.latency_ms:g} ms, "
        f"--weval-concurrency={args.concurrency}; SIGINT after {args.after} requests; {os.cpu_count()} CPUs"
    )
    with FakeServer(rules, latency_ms=args.latency_ms) as server:
        for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
            label = mode.replace("main", "main only")
            stops = []
            for n in range(args.rounds):
                cache = tmp / f"cache-{mode.replace(' ', '')}-{n}"
                stop = one_stop(suite, cache, server, mode, args.concurrency, args.after)
                stops.append(stop)
                print(
                    f"{label:>14} round {n + 1}: stopped in {stop['stopped']:5.2f} s; "
                    f"{stop['late']:3d} requests after the signal, the last {stop['last']:4.2f} s after it "
                    f"({stop['sent']} sent in all)"
                )
            for what, key in (("stopped in", "stopped"), ("last request after", "last")):
                values = [s[key] for s in stops]
                print(f"{label:>14} {what}: median {statistics.median(values):.2f} s, worst {max(values):.2f} s")


if __name__ == "__main__":
    main()
