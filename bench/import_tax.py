"""What the installed plugin costs a pytest run: the median of paired runs with and without
``-p no:weval`` (issue 43 item 4; docs/engine.md, 'What the plugin costs a run without blueprints').

    python bench/import_tax.py [--pairs 15] [--compare /path/to/other/checkout] [-n 2] [--tests 40]

Two throwaway projects, each run in a fresh ``python -m pytest`` process, the two runs of a pair
back to back in alternating order:

* plain: one test file (and YAML/JSON data files that are not blueprints). The goal: the plugin
  adds <= 0.1 s.
* blueprint: the same plus one one-item blueprint (the built-in ``ideal`` model, nothing sent),
  its cache warm. Without the plugin the blueprint is not collected: the difference is what
  the plugin costs a one-item blueprint run.

Prints, per project, the median wall and CPU time with the plugin, without it, and the median of
the pairs' differences (CPU time is the steadier on a shared machine). ``--compare``: the same runs with another checkout's ``pytest_weval`` first
on PYTHONPATH (e.g. main, to see what changed). ``-n 2``: every run under pytest-xdist with two
workers (a controller and two workers, each of which loads the plugin's entry module);
``--tests``: how many empty tests the test file holds (one by default).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

PLAIN_TEST = """\
def test_plain():
    assert 1 + 1 == 2
"""


def plain_tests(count: int) -> str:
    return PLAIN_TEST + "".join(f"\n\ndef test_empty_{i}():\n    pass\n" for i in range(1, count))


BLUEPRINT = """\
title: One item
models: [ideal]
---
- id: greet
  prompt: Say hello.
  ideal: hello there
  should:
    - $contains: hello
"""


def make_project(root: Path, *, blueprint: bool, tests: int = 1) -> Path:
    (root / "tests" / "data").mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    (root / "tests" / "test_plain.py").write_text(plain_tests(tests))
    (root / "tests" / "data" / "settings.yaml").write_text("name: not a blueprint\n")
    (root / "tests" / "data" / "values.json").write_text("[1, 2]\n")
    if blueprint:
        (root / "blueprints").mkdir()
        (root / "blueprints" / "one.yml").write_text(BLUEPRINT)
    return root


@dataclasses.dataclass(frozen=True)
class Run:
    wall: float
    cpu: float  # the child's user + system time: steadier than wall on a shared machine


def run_once(project: Path, env: dict[str, str], *extra: str) -> Run:
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, cwd=project, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"pytest failed in {project} ({' '.join(extra)}):\n{done.stdout}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall, cpu)


def paired(project: Path, env: dict[str, str], pairs: int, *extra: str) -> dict[str, tuple[float, float, float]]:
    """For wall and CPU time: the median with the plugin, without it, and of the pairs' differences."""
    run_once(project, env, *extra)  # warms the page cache, the .pyc files and the blueprint's cache
    run_once(project, env, *extra, "-p", "no:weval")
    runs: list[tuple[Run, Run]] = []
    for i in range(pairs):
        if i % 2 == 0:
            a = run_once(project, env, *extra)
            b = run_once(project, env, *extra, "-p", "no:weval")
        else:
            b = run_once(project, env, *extra, "-p", "no:weval")
            a = run_once(project, env, *extra)
        runs.append((a, b))
    return {
        what: (
            statistics.median(getattr(a, what) for a, _ in runs),
            statistics.median(getattr(b, what) for _, b in runs),
            statistics.median(getattr(a, what) - getattr(b, what) for a, b in runs),
        )
        for what in ("wall", "cpu")
    }


def measure(label: str, env: dict[str, str], pairs: int, *, tests: int, workers: int | None) -> None:
    extra = ("-n", str(workers)) if workers else ()
    with tempfile.TemporaryDirectory(prefix="weval-import-tax-") as tmp:
        for name, blueprint in (("plain", False), ("blueprint", True)):
            project = make_project(Path(tmp) / name, blueprint=blueprint, tests=tests)
            for what, (with_plugin, without, diff) in paired(project, env, pairs, *extra).items():
                print(
                    f"{label:<10} {name:<10} {what:<4} with plugin {with_plugin:6.3f} s   -p no:weval {without:6.3f} s   "
                    f"added (median of {pairs} pairs) {diff:+6.3f} s",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=15)
    parser.add_argument("--compare", type=Path, help="another checkout whose pytest_weval to measure the same way")
    parser.add_argument(
        "-n", dest="workers", type=int, help="run every pytest under pytest-xdist with this many workers"
    )
    parser.add_argument("--tests", type=int, default=1, help="how many empty tests the test file holds")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    xdist = f", -n {args.workers}" if args.workers else ""
    print(
        textwrap.dedent(
            f"python {sys.version.split()[0]}, {os.cpu_count()} cores, {args.pairs} pairs per project, "
            f"{args.tests} tests{xdist}"
        )
    )
    measure("this", env, args.pairs, tests=args.tests, workers=args.workers)
    if args.compare is not None:
        other = dict(env, PYTHONPATH=os.pathsep.join([str(args.compare.resolve()), env.get("PYTHONPATH", "")]))
        measure(args.compare.name, other, args.pairs, tests=args.tests, workers=args.workers)


if __name__ == "__main__":
    main()
