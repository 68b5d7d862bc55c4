"""A judged suite live and through the providers' batch APIs (docs/batch.md), against the fake
server's OpenAI Batch API and Anthropic Message Batches.

    python bench/batch.py [--items 120] [--batch-delay-s 1] [--expire-rate 0.2]

The suite: ``--items`` items, each an OpenAI candidate answer judged by an Anthropic judge (a
third of them judged unmet), priced by ini ``weval_prices``. Runs, each in a fresh pytest
process with a fresh cache: live; ``--weval-batch=wait``; ``--weval-batch=submit`` then a
second process with ``wait``; and ``wait`` with ``--expire-rate`` of the lines expiring. For
each it prints the outcomes, the live chat requests the server saw, the batch lines submitted
(and the most times one line was), the batches, the cost from ``summary.json`` and its ratio
to the live run's, and the wall time.
Targets (issue 32): the same outcomes as live, zero live requests, as many lines as the live
run's requests, no line twice (expired ones aside), cost 0.45-0.55 of live; submit exits in
seconds.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakeserver import FakeServer, Rule  # noqa: E402

MODEL, JUDGE = "openai:gpt-4o-mini", "anthropic:claude-judge"
VERDICT = "<reflection>The fake judge.</reflection><classification>{}</classification>"


def write_suite(folder: Path, items: int) -> list[Rule]:
    lines = [f"models: [{MODEL}]", "---"]
    for n in range(items):
        lines += [f"- id: p{n}", f"  prompt: Question {n}, please answer.", "  should:", f"    - answers question {n}"]
    (folder / "blueprints").mkdir(parents=True)
    (folder / "blueprints" / "suite.yml").write_text("\n".join(lines) + "\n")
    (folder / "pytest.ini").write_text(f"[pytest]\nweval_prices =\n    {MODEL} 2.5 10\n    {JUDGE} 3 15\n")
    judge = JUDGE.split(":", 1)[1]
    return [
        *[
            Rule(model=judge, contains=f"answers question {n}\n", reply=VERDICT.format("CLASS_UNMET"))
            for n in range(0, items, 3)
        ],
        Rule(model=judge, reply=VERDICT.format("CLASS_EXACT")),
    ]


def run(folder: Path, env: dict[str, str], cache: str, out: str, *args: str) -> tuple[str, float]:
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "blueprints",
        f"--weval-judges={JUDGE}", "--weval-check-models=off", "--weval-batch-poll=0.2",
        f"--weval-cache-dir={cache}", f"--weval-out={out}", *args,
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=3600)
    return done.stdout, time.monotonic() - started


def cost_of(folder: Path, out: str) -> float:
    """What the run's replies cost (``summary.json``; nothing collected yet: 0)."""
    data = json.loads((folder / out / "summary.json").read_text())
    return float(data["usageTotal"]["costUsd"] or 0.0)


def outcomes(stdout: str) -> str:
    found = re.findall(r"(\d+) (passed|failed|skipped|errors?)", stdout.splitlines()[-1] if stdout else "")
    return ", ".join(f"{n} {what}" for n, what in found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=120)
    parser.add_argument("--batch-delay-s", type=float, default=1.0)
    parser.add_argument("--expire-rate", type=float, default=0.2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeServer(batch_delay_s=args.batch_delay_s) as server:
        folder = Path(tmp)
        server.rules = write_suite(folder, args.items)
        env = {**os.environ, **server.env(), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        env.pop("PYTEST_ADDOPTS", None)
        live_cost = None
        print(f"{args.items} judged items; batches end {args.batch_delay_s:g} s after they are created")
        print(
            f"{'run':<22} {'outcomes':<26} {'live':>5} {'lines':>6} {'most':>5} {'batches':>8} {'cost':>10} {'ratio':>6} {'wall':>7}"
        )
        runs = [
            ("live", [("live", ())]),
            ("wait", [("wait", ("--weval-batch=wait",))]),
            ("submit, then wait", [("submit", ("--weval-batch=submit",)), ("wait", ("--weval-batch=wait",))]),
            (f"wait, {args.expire_rate:.0%} expire", [("expire", ("--weval-batch=wait",))]),
        ]
        for index, (label, steps) in enumerate(runs):
            server.reset()
            server.set_batch(batch_expire_rate=args.expire_rate if label.startswith("wait,") else 0.0)
            cache = f"cache-{index}"  # a fresh cache per run; the steps of one run share it
            for number, (step, extra) in enumerate(steps):
                stdout, wall = run(folder, env, cache, f"out-{index}-{step}", *extra)
                log = server.log()
                per_line = collections.Counter(log["batch_lines"]["by_custom_id"])
                cost = cost_of(folder, f"out-{index}-{step}")
                if label == "live":
                    live_cost = cost
                ratio = f"{cost / live_cost:.2f}" if live_cost and number == len(steps) - 1 else ""
                name = label if len(steps) == 1 else f"  {step}"
                if len(steps) > 1 and number == 0:
                    print(label)
                print(
                    f"{name:<22} {outcomes(stdout):<26} {log['count']:>5} {sum(per_line.values()):>6} "
                    f"{max(per_line.values(), default=0):>5} {len(log['batches']):>8} ${cost:>9.4f} {ratio:>6} {wall:>6.1f}s"
                )


if __name__ == "__main__":
    main()
