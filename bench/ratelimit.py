"""A throttled provider, and a faulty one, through pytest: does every item pass, how close to the
provider's pace does the run go, and how often is it refused?

    python bench/ratelimit.py [--items 400] [--rate 40] [--latency-ms 100] [--runs serial,-n 2]

Starts the fake server (``python -m tests.fakeserver``) with a token bucket of ``--rate``
requests per second (as many in a burst) that answers as OpenAI does: ``x-ratelimit-*`` headers
on every reply, 429 with ``Retry-After`` beyond the rate. The suite has ``--items`` items, each one
generation and one judged point: 2 distinct requests an item (800 for 400 items), so the provider's
own pace is ``2 x items / rate`` seconds (20 s for 400 items at 40/s).

Each run gets a fresh cache. For each it prints: items passed; the wall time beside the
provider's pace (target: within 1.25x); the 429s as a share of the requests served (target: at
most 10%); then the same runs again with 15% of replies a 500 and 5% malformed (target: every
item passes; the attempts per request stay within ``--weval-max-attempts``).
"""

from __future__ import annotations

import argparse
import json
import os
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
JUDGE = "openai:bench-judge"
JUDGE_REPLY = "<reflection>The text meets it.</reflection><classification>CLASS_EXACT</classification>"
PER_BLUEPRINT = 20


def write_suite(folder: Path, items: int) -> None:
    for b in range(-(-items // PER_BLUEPRINT)):
        lines = [f"title: Throttled {b}", f"models: [{MODEL}]", "---"]
        for n in range(b * PER_BLUEPRINT, min(items, (b + 1) * PER_BLUEPRINT)):
            lines += [
                f"- id: q{n}",
                f"  prompt: Question {n}, explain topic {n}.",
                "  should:",
                f"    - explains topic {n}",
                f"    - $icontains: question {n},",
            ]
        path = folder / "blueprints" / f"throttled{b:03d}.yml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def outcome_counts(stdout: str) -> str:
    lines = [line for line in stdout.splitlines() if line.strip()]
    return lines[-1].strip("= ") if lines else "(no output)"


def attempts_per_request(log: dict) -> Counter:
    """How many times each distinct request body reached the server (faults and refusals)."""
    sent = Counter(json.dumps(r["body"], sort_keys=True) for r in log["requests"])
    return Counter(sent.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--rate", type=float, default=40.0)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--runs", default="serial,-n 2")
    parser.add_argument("--faults", default="yes", help="also run with 15%% 500s and 5%% malformed replies (yes/no)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="weval-ratelimit-"))
    suite = tmp / "suite"
    write_suite(suite, args.items)
    rules = tmp / "rules.json"
    rules.write_text(
        json.dumps(
            [
                {"model": JUDGE.split(":", 1)[1], "reply": JUDGE_REPLY},
                {"model": MODEL.split(":", 1)[1], "reply": "{last} Here it is."},
            ]
        )
    )
    pace = 2 * args.items / args.rate
    print(
        f"{args.items} items x (1 generation + 1 judged point) = {2 * args.items} distinct requests; "
        f"provider: {args.rate:g} requests/s, OpenAI headers, latency {args.latency_ms:g} ms; "
        f"its pace: {pace:.1f} s; {os.cpu_count()} CPUs"
    )
    scenarios = [("throttled", ())]
    if args.faults == "yes":
        scenarios.append(
            ("throttled + faults", ("--fault-rate", "0.2", "--fault-kinds", "500,500,500,malformed", "--seed", "7"))
        )
    for scenario, fault_args in scenarios:
        for label in [r.strip() for r in args.runs.split(",") if r.strip()]:
            with FakeServerProcess(
                "--latency-ms",
                str(args.latency_ms),
                "--rules",
                str(rules),
                "--rate-limit",
                str(args.rate),
                "--rate-headers",
                "openai",
                "--retry-after",
                "seconds",
                *fault_args,
            ) as server:
                env = {
                    k: v
                    for k, v in os.environ.items()
                    if not k.endswith(("_API_KEY", "_BASE_URL")) and k != "PYTEST_ADDOPTS"
                }
                env.update(server.env())
                cache = tmp / f"cache-{scenario.replace(' ', '')}-{label.replace(' ', '')}"
                extra = [] if label == "serial" else label.split()
                cmd = [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "-p",
                    "no:randomly",
                    f"--weval-judges={JUDGE}",
                    f"--weval-cache-dir={cache}",
                    *extra,
                ]
                started = time.perf_counter()
                proc = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True)
                wall = time.perf_counter() - started
                log = server.log()
            outcomes = Counter(r["outcome"] for r in log["requests"])
            served = outcomes["200"]
            refused = sum(n for kind, n in outcomes.items() if kind.startswith("429"))
            faults = {k: n for k, n in outcomes.items() if k not in ("200",) and not k.startswith("429")}
            tries = attempts_per_request(log)
            print(
                f"{scenario:>18} {label:>6}: {outcome_counts(proc.stdout)}; wall {wall:5.1f} s = "
                f"{wall / pace:4.2f}x the pace; served {served}, refused {refused} "
                f"({100 * refused / max(1, served):.1f}% of served); faults {faults or 'none'}; "
                f"sends per distinct request {dict(sorted(tries.items()))}"
            )
            if proc.returncode not in (0, 1):
                print(proc.stdout[-3000:], proc.stderr[-3000:])


if __name__ == "__main__":
    main()
