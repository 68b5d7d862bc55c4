"""Two machines, one run: the same suite on one machine and on two joined by ``--weval-run-id``
through a PostgreSQL store, against the fake server with real latency.

    python bench/shared_run.py [--items 300] [--latency-ms 100] [--concurrency 20] [--workers 2]

Writes ``bench/throughput.py``'s suite (each item one generation and two judged points, so
3 x items distinct requests) into two folders, starts a throwaway PostgreSQL server
(``tests/store/pg_server.py``, Debian's postgresql package) and the fake server, then runs:

- one machine: ``pytest -n WORKERS`` with the SQLite store, then with the PostgreSQL store;
- two machines: two such pytest processes at once, each in its own folder, one run id, one
  PostgreSQL database (a fresh one, so nothing is cached);
- two machines, one killed: the same, and machine A (its whole process group) is SIGKILLed once
  the server has seen a sixth of the requests; machine B must finish the run alone, within 2x
  the one-machine wall time, its concurrency kept (the items A held go back to B's feeder).

For each it prints the wall time, the request phase (first request to last reply: what more
machines shorten; start-up is each machine's own), the requests the server saw (and how many
were distinct) and what each machine sent. ``--weval-concurrency`` caps each machine, so two machines have twice
the requests in flight: the ideal is requests x latency / (machines x concurrency). Both
machines run on this one computer here, sharing its CPUs, unlike real CI runners.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.throughput import JUDGE, JUDGE_REPLY, MODELS, write_suite  # noqa: E402
from tests.fakeserver import FakeServerProcess  # noqa: E402
from tests.store.pg_server import PostgresServer  # noqa: E402


def start(folder: Path, env: dict[str, str], args: list[str]) -> subprocess.Popen:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args]
    return subprocess.Popen(
        command,
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # a machine of its own: one killpg takes its xdist workers too
    )


def sent_by(folder: Path) -> int:
    summary = json.loads((folder / "out" / "summary.json").read_text())
    return int(summary["usageTotal"]["requests"]) - int(summary["usageTotal"]["cacheHits"])


def last_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--concurrency", type=int, default=20, help="--weval-concurrency of each machine")
    parser.add_argument("--workers", type=int, default=2, help="-n of each machine")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="weval-shared-"))
    folders = [tmp / "machine-a", tmp / "machine-b"]
    for folder in folders:
        folder.mkdir()
        items = write_suite(folder, args.items)
    rules = tmp / "rules.json"
    rules.write_text(
        json.dumps(
            [{"model": JUDGE.split(":", 1)[1], "reply": JUDGE_REPLY}]
            + [{"model": m.split(":", 1)[1], "reply": "{model} says: {last}"} for m in MODELS]
        )
    )
    latency = args.latency_ms / 1000
    with (
        PostgresServer() as pg,
        FakeServerProcess("--latency-ms", str(args.latency_ms), "--rules", str(rules)) as server,
    ):
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env.pop("PYTEST_ADDOPTS", None)
        env.update(server.env())
        common = [
            f"--weval-judges={JUDGE}",
            f"--weval-concurrency={args.concurrency}",
            "-n",
            str(args.workers),
            "--weval-out=out",
        ]
        print(
            f"suite: {items} items, {3 * items} distinct requests; latency {args.latency_ms:g} ms; each machine "
            f"-n {args.workers}, --weval-concurrency={args.concurrency}; {os.cpu_count()} CPUs"
        )

        runs = [
            ("one machine, SQLite", [[f"--weval-cache-dir={tmp / 'cache-sqlite'}"]]),
            ("one machine, PostgreSQL", [[f"--weval-cache-store={pg.create_database('one')}"]]),
        ]
        two = pg.create_database("two")
        runs.append(
            (
                "two machines, one run",
                [[f"--weval-cache-store={two}", "--weval-run-id=bench-1"]] * 2,
            )
        )
        walls: dict[str, float] = {}
        phases: dict[str, float] = {}
        for label, machines in runs:
            httpx.post(server.url + "/__reset", timeout=10)
            began = time.perf_counter()
            processes = [start(folders[n], env, common + extra) for n, extra in enumerate(machines)]
            outputs = [p.communicate()[0] for p in processes]
            wall = time.perf_counter() - began
            walls[label] = wall
            log = server.log()
            ideal = log["count"] * latency / (args.concurrency * len(machines))
            sent = [sent_by(folders[n]) for n in range(len(machines))]
            arrivals = sorted(r["at"] for r in log["requests"]) or [0.0]
            phase = arrivals[-1] - arrivals[0] + latency  # first request to last reply
            phases[label] = phase
            print(
                f"{label:>24}: wall {wall:6.2f} s, request phase {phase:6.2f} s (ideal {ideal:5.2f} s)  "
                f"requests {log['count']} "
                f"distinct {log['distinct']}  sent by machine: {' + '.join(map(str, sent))}  "
                f"| {' | '.join(last_line(o) for o in outputs)}"
            )
            for process, output in zip(processes, outputs):
                if process.returncode != 0:
                    print(output[-3000:])
        # A machine killed mid-run: the survivor's wall time against one machine's.
        httpx.post(server.url + "/__reset", timeout=10)
        killed = pg.create_database("killed")
        began = time.perf_counter()
        pair = [
            start(folder, env, [*common, f"--weval-cache-store={killed}", "--weval-run-id=bench-2"])
            for folder in folders
        ]
        while server.log()["count"] < args.items // 2 and pair[0].poll() is None:
            time.sleep(0.05)
        os.killpg(pair[0].pid, signal.SIGKILL)
        pair[0].communicate()
        output = pair[1].communicate()[0]
        survivor = time.perf_counter() - began
        log = server.log()
        print(
            f"{'two machines, A killed':>24}: B's wall {survivor:6.2f} s = "
            f"{survivor / walls['one machine, PostgreSQL']:.2f}x one machine's  requests {log['count']} "
            f"distinct {log['distinct']} (sent twice: {log['count'] - log['distinct']}, what A had in flight)  "
            f"| {last_line(output)}"
        )
        if pair[1].returncode != 0:
            print(output[-3000:])
        print(
            f"\ntwo machines / one machine (PostgreSQL): "
            f"{walls['two machines, one run'] / walls['one machine, PostgreSQL']:.2f} of the wall time, "
            f"{phases['two machines, one run'] / phases['one machine, PostgreSQL']:.2f} of the request phase"
        )


if __name__ == "__main__":
    main()
