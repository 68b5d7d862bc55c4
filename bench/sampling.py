"""Accuracy and cost of --weval-repeat=1, =5 and =auto on the flaky stand-in model
(docs/sampling.md, the worked example).

    python bench/sampling.py [--seeds 5] [--max-repeat 11]

Starts the fake server in a subprocess, writes the 120-item workload (tests/fakeserver/flaky.py)
to a temporary project and runs pytest on it once per mode and seed (no cache: every run asks
the model afresh; another seed is another run of the same flaky model). For each mode it prints
the items whose outcome is wrong (against the true means) and the requests sent, per seed and
on average, beside the exact expectation of the rule (run/sampling.py, ``expect``), and how
often two runs of the mode agree on an item's outcome.

The last pass, ``auto+history``, keeps a store (``--weval-cache=refresh``: every run asks afresh
and is recorded in the history): ``HISTORY_RUNS`` runs first, unmeasured, then the measured
ones, each reading the runs before it (``expect_with_history`` after as many runs), under the
seeds of the ``auto`` pass, so the two face the same model's draws.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_weval.run.sampling import DEFAULT_MAX, HISTORY_RUNS, expect  # noqa: E402
from tests.fakeserver import FakeServerProcess  # noqa: E402
from tests.fakeserver.flaky import GROUPS, flaky_rules, workload_blueprint, wrong_outcomes  # noqa: E402
from tests.run.sampling_history import expect_with_history  # noqa: E402


def fixed_pass_probability(q: float, n: int, high: float = 1.0, low: float = 0.5, threshold: float = 0.75) -> float:
    """An item of n samples, each high with probability q, passes when its mean reaches the threshold."""
    return sum(
        math.comb(n, k) * q**k * (1 - q) ** (n - k) for k in range(n + 1) if (k * high + (n - k) * low) / n >= threshold
    )


def expected(mode: str, max_repeat: int, per_group: int, seeds: int) -> tuple[float, float, float]:
    """(wrong outcomes, requests, share of outcomes two runs agree on) the mode is expected to
    give on the workload, exactly; with the history, averaged over the measured runs (the
    ``HISTORY_RUNS`` + 1st to the last: the history still filling), their agreement as if
    the runs were independent."""
    wrong = requests = differ = 0.0
    for group, rate in GROUPS.items():
        q = 1.0 - rate  # a sample has both terms
        if mode == "auto+history":
            runs = [expect_with_history(q, max_repeat, after=HISTORY_RUNS + n) for n in range(seeds)]
            passes, samples = (math.fsum(getattr(r, name) for r in runs) / seeds for name in ("passes", "samples"))
        elif mode == "auto":
            got = expect(q, max_repeat)
            passes, samples = got.passes, got.samples
        else:
            samples = int(mode)
            passes = fixed_pass_probability(q, samples)
        should = group in ("steady", "p20")
        wrong += per_group * ((1 - passes) if should else passes)
        requests += per_group * samples
        differ += per_group * 2 * passes * (1 - passes)
    return wrong, requests, 1 - differ / (len(GROUPS) * per_group)


def run_mode(server: FakeServerProcess, project: Path, mode: str, seed: int, max_repeat: int) -> tuple[dict, int]:
    server.set_rules(flaky_rules(seed))
    httpx.post(server.url + "/__reset", timeout=60)  # the log of earlier runs is not read again
    out = project / f"out-{mode}-{seed}"
    env = {**os.environ, **server.env(), "PYTHONPATH": str(ROOT)}
    cache = ["--weval-cache=refresh", f"--weval-cache-dir={project / 'store'}"] if mode == "auto+history" else []
    args = [
        f"--weval-repeat={mode.split('+')[0]}",
        f"--weval-max-repeat={max_repeat}",
        *(cache or ["--weval-cache=off"]),
        "-q",
        "-p",
        "no:randomly",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "blueprints", *args, f"--weval-out={out}"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if not (out / "summary.json").exists():
        raise SystemExit(f"repeat={mode} seed {seed} wrote no summary:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return {i["promptId"]: i["outcome"] for i in summary["items"]}, server.log()["count"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5, help="runs of each mode, each its own seed")
    parser.add_argument("--max-repeat", type=int, default=DEFAULT_MAX)
    parser.add_argument("--modes", default="1,5,auto,auto+history", help="which passes, comma-separated")
    parser.add_argument("--per-group", type=int, default=30, help="items in each quarter of the workload")
    args = parser.parse_args()
    project = Path(tempfile.mkdtemp(prefix="weval-bench-sampling-"))
    (project / "blueprints").mkdir()
    (project / "blueprints" / "flaky.yml").write_text(workload_blueprint(args.per_group), encoding="utf-8")
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    items = 4 * args.per_group
    print(f"{items} items, threshold 0.75, --weval-max-repeat={args.max_repeat}, {args.seeds} seeds per mode")
    print(
        f"{'mode':<13}{'wrong (each seed)':<24}{'mean':>6}{'expected':>10}{'requests':>10}{'expected':>10}"
        f"{'agree':>8}{'expected':>10}"
    )
    with FakeServerProcess() as server:
        for mode in args.modes.split(","):
            # The history's measured runs draw what auto's runs drew (the same seeds: the
            # saving is paired); its warm-up runs draw their own.
            warm = [1000 * (n + 1) + 77 for n in range(HISTORY_RUNS)] if mode == "auto+history" else []
            seeds = [1000 * (n + 1) + len(mode.split("+")[0]) for n in range(args.seeds)]
            runs = [run_mode(server, project, mode, seed, args.max_repeat) for seed in warm + seeds][len(warm) :]
            wrongs = [wrong_outcomes(outcomes) for outcomes, _ in runs]
            requests = [count for _, count in runs]
            pairs = [(a, b) for i, (a, _) in enumerate(runs) for (b, _) in runs[i + 1 :]]
            agree = [sum(a[k] == b[k] for k in a) / len(a) for a, b in pairs]
            want_wrong, want_requests, want_agree = expected(mode, args.max_repeat, args.per_group, args.seeds)
            print(
                f"{('repeat=' + mode).replace('repeat=auto+', 'auto+'):<13}{' '.join(map(str, wrongs)):<24}{sum(wrongs) / len(wrongs):>6.1f}"
                f"{want_wrong:>10.2f}{sum(requests) / len(requests):>10.0f}{want_requests:>10.0f}"
                f"{(sum(agree) / len(agree) if agree else 1.0):>8.1%}{want_agree:>10.1%}"
            )


if __name__ == "__main__":
    main()
