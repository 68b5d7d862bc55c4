"""Collection speed and memory on the real corpus, beside a floor measured in the same run.

    python bench/collect.py [--corpus ../shared/corpus/weval-configs]

For the corpus with and without ``--weval-models``, runs ``pytest --collect-only`` in a fresh
process and prints wall and CPU time, peak RSS and the item count, beside two floors: pytest
collecting the same number of empty items per file from a trivial plugin that also does a plain
YAML load of each file (C loader), and pytest collecting the same number of empty parametrized
tests (``benchlib.write_empty_tests``). Goal (issue 43): at most 1.25x the floor in time and
1.5x in memory.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from benchlib import default_corpus, write_empty_tests

HERE = Path(__file__).resolve().parent


# Runs pytest in-process in a fresh interpreter and reports time, peak RSS and per-file counts.
_DRIVER = textwrap.dedent(
    """
    import json, resource, sys, time, collections
    import pytest

    class Count:
        def __init__(self):
            self.per_file = collections.Counter()
        def pytest_collection_finish(self, session):
            for item in session.items:
                self.per_file[str(item.path)] += 1

    args = json.loads(sys.argv[1])
    counter = Count()
    start = time.perf_counter()
    pytest.main(args, plugins=[counter])
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak_mb = usage.ru_maxrss / 1024
    print("BENCH " + json.dumps({"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak_mb": peak_mb,
                                  "items": sum(counter.per_file.values()), "per_file": counter.per_file}))
    """
)

_FLOOR_PLUGIN = textwrap.dedent(
    """
    import json, os
    import pytest, yaml

    COUNTS = json.load(open(os.environ["WEVAL_BENCH_COUNTS"]))

    class EmptyItem(pytest.Item):
        def runtest(self):
            pass

    class FloorFile(pytest.File):
        def collect(self):
            with open(self.path, "rb") as fh:
                list(yaml.load_all(fh, Loader=yaml.CSafeLoader))
            for index in range(COUNTS.get(str(self.path), 0)):
                yield EmptyItem.from_parent(self, name=f"item{index}")

    def pytest_collect_file(file_path, parent):
        if str(file_path) in COUNTS:
            return FloorFile.from_parent(parent, path=file_path)
    """
)


def run_pytest(args: list[str], cwd: Path, env: dict[str, str]) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps(args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("BENCH "):
            return json.loads(line[6:])
    raise SystemExit(f"pytest run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=None, help="a folder holding blueprints/")
    options = parser.parse_args()
    corpus = (options.corpus or default_corpus()).resolve()
    blueprints = corpus / "blueprints"
    base_args = [
        "--collect-only",
        "-qq",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(corpus),
        "-W",
        "ignore",
        str(blueprints),
    ]
    env = dict(os.environ)
    print(f"corpus: {blueprints} ({sum(1 for _ in blueprints.rglob('*.y*ml'))} YAML files)")
    # CPU seconds beside the wall: on a machine others share, the wall of the longer run takes
    # more of their load than the floor's does.
    print(f"uptime: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (load average)")
    print(
        f"{'run':<38}{'items':>9}{'wall s':>9}{'cpu s':>8}{'peak MB':>9}{'x floor t':>11}{'x cpu':>7}{'x floor m':>11}"
    )
    for label, extra in (
        ("placeholders from models/", []),
        ("--weval-models=openai:gpt-4o-mini", ["--weval-models=openai:gpt-4o-mini"]),
    ):
        ours = run_pytest(base_args + extra, corpus, env)
        with tempfile.TemporaryDirectory() as tmp:
            counts = Path(tmp) / "counts.json"
            counts.write_text(json.dumps(ours["per_file"]))
            (Path(tmp) / "floor_plugin.py").write_text(_FLOOR_PLUGIN)
            floor_env = dict(
                env, WEVAL_BENCH_COUNTS=str(counts), PYTHONPATH=tmp + os.pathsep + env.get("PYTHONPATH", "")
            )
            floor = run_pytest(
                base_args[:-1] + ["-p", "no:weval", "-p", "floor_plugin", str(blueprints)], corpus, floor_env
            )
            write_empty_tests(Path(tmp) / "empty", ours["items"])
            empty = run_pytest(
                ["--collect-only", "-qq", "-p", "no:cacheprovider", "-p", "no:weval", str(Path(tmp) / "empty")],
                Path(tmp) / "empty",
                env,
            )
        print(
            f"{'floor for ' + label:<38}{floor['items']:>9}{floor['wall']:>9.2f}{floor['cpu']:>8.2f}"
            f"{floor['peak_mb']:>9.0f}"
        )
        print(
            f"{'  empty parametrized tests':<38}{empty['items']:>9}{empty['wall']:>9.2f}{empty['cpu']:>8.2f}"
            f"{empty['peak_mb']:>9.0f}{ours['wall'] / empty['wall']:>11.2f}{ours['cpu'] / empty['cpu']:>7.2f}"
            f"{ours['peak_mb'] / empty['peak_mb']:>11.2f}  (ours against it)"
        )
        print(
            f"{label:<38}{ours['items']:>9}{ours['wall']:>9.2f}{ours['cpu']:>8.2f}{ours['peak_mb']:>9.0f}"
            f"{ours['wall'] / floor['wall']:>11.2f}{ours['cpu'] / floor['cpu']:>7.2f}"
            f"{ours['peak_mb'] / floor['peak_mb']:>11.2f}"
        )


if __name__ == "__main__":
    main()
