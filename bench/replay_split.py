"""Where a replayed run's CPU goes, phase by phase and thread by thread, against pytest's floor.

    python bench/replay_split.py [--items 4000] [--runs 4] [--paths CHECKOUT,CHECKOUT...]

Writes ``bench/scale.py``'s synthetic suite (every item one generation and one judged point),
records its replies once against the loopback fake, then runs, alternating, the replay
(``--weval-cache=ro`` with ``--weval-html``, ``--weval-out`` and ``--junitxml``, nothing sent)
with each checkout first on ``PYTHONPATH`` (default: this one), and pytest's floor (as many
empty parametrized tests). A small probe plugin (``-p``) notes the process's CPU at the
session's start, after collection, at the first item and after the last one (with each
thread's CPU then: pytest's main thread, the engine's, the SQLite store's) and at the end, and
the CPU of each writer run after the last item. Medians are printed per checkout; ``x floor``
compares wall and CPU. Pairs alternate so that a shared machine's load falls on each alike.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from benchlib import write_empty_tests  # noqa: E402
from scale import JUDGE, JUDGE_REPLY, MODELS, write_suite  # noqa: E402

from tests.fakeserver import FakeServerProcess  # noqa: E402

PROBE = '''
import json, os, resource, threading, time
import pytest

T0 = time.perf_counter()
marks, spent, first = {}, {}, []


def mark(name):
    u = resource.getrusage(resource.RUSAGE_SELF)
    marks[name] = (time.perf_counter() - T0, u.ru_utime + u.ru_stime)


def threads():
    names = {t.native_id: t.name for t in threading.enumerate()}
    tick, out = os.sysconf("SC_CLK_TCK"), {}
    for tid in os.listdir("/proc/self/task"):
        try:
            fields = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = names.get(int(tid), "?").rstrip("_0123456789")
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def timed(module, name):
    fn = getattr(module, name)

    def wrapper(*args, **kwargs):
        start = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.thread_time() - start

    setattr(module, name, wrapper)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    mark("start")


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    mark("collected")
    try:
        import pytest_weval.report.finish as finish
    except ImportError:
        return
    for name in ("build_rollup", "write_outputs", "write_html", "write_run_record"):
        if hasattr(finish, name):
            timed(finish, name)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if not first:
        first.append(mark("first"))
    try:
        return (yield)
    finally:
        if nextitem is None:
            mark("last")
            marks["threads"] = threads()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    mark("end")
    with open(os.environ["WEVAL_SPLIT_OUT"], "w") as f:
        json.dump({"marks": marks, "spent": spent}, f)
'''

ROWS = (
    ("wall s", lambda m, s: m["end"][0]),
    ("CPU s", lambda m, s: m["end"][1]),
    ("  to session start", lambda m, s: m["start"][1]),
    ("  collection", lambda m, s: m["collected"][1] - m["start"][1]),
    ("  the items", lambda m, s: m["last"][1] - m["first"][1]),
    ("    main thread", lambda m, s: m["threads"].get("MainThread", 0.0) - m["first"][1]),
    ("    engine thread", lambda m, s: m["threads"].get("weval-engine", 0.0)),
    ("    SQLite thread", lambda m, s: m["threads"].get("weval-sqlite", 0.0)),
    ("  after the last item", lambda m, s: m["end"][1] - m["last"][1]),
    ("    roll-up", lambda m, s: s.get("build_rollup", 0.0)),
    ("    Weval JSON", lambda m, s: s.get("write_outputs", 0.0)),
    ("    HTML page", lambda m, s: s.get("write_html", 0.0)),
    ("    run record", lambda m, s: s.get("write_run_record", 0.0)),
)


def run(cwd: Path, env: dict[str, str], pythonpath: str, probe_dir: Path, out: Path, *args: str) -> dict:
    env = {**env, "PYTHONPATH": os.pathsep.join([pythonpath, str(probe_dir)]), "WEVAL_SPLIT_OUT": str(out)}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-p", "weval_split"]
    subprocess.run([*cmd, *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=4000)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--paths", default=str(ROOT), help="checkouts to compare, comma-separated")
    args = parser.parse_args()
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    tmp = Path(tempfile.mkdtemp(prefix="weval-split-"))
    try:
        (tmp / "probe").mkdir()
        (tmp / "probe" / "weval_split.py").write_text(PROBE)
        rules = tmp / "rules.json"
        rules.write_text(
            json.dumps(
                [{"model": JUDGE.split(":", 1)[1], "reply": JUDGE_REPLY}]
                + [{"model": m.split(":", 1)[1], "reply": "{model} says: {last}"} for m in MODELS]
            )
        )
        suite, floor = tmp / "suite", tmp / "floor"
        write_suite(suite, args.items)
        write_empty_tests(floor, args.items)
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env.pop("PYTEST_ADDOPTS", None)
        weval = [f"--weval-judges={JUDGE}", f"--weval-cache-dir={tmp / 'cache'}"]
        with FakeServerProcess("--rules", str(rules)) as server:
            env.update(server.env())
            run(suite, env, paths[0], tmp / "probe", tmp / "live.json", *weval)
        print(
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {args.items} items, {args.runs} runs each"
        )
        kinds = [*paths, "floor"]
        found: dict[str, list[dict]] = {kind: [] for kind in kinds}
        for n in range(args.runs):
            for kind in kinds if n % 2 == 0 else kinds[::-1]:
                out = tmp / "split.json"
                if kind == "floor":
                    found[kind].append(run(floor, env, paths[0], tmp / "probe", out))
                else:
                    extra = [f"--weval-html={tmp / 'page.html'}", f"--weval-out={tmp / 'out'}"]
                    extra.append(f"--junitxml={tmp / 'junit.xml'}")
                    found[kind].append(run(suite, env, kind, tmp / "probe", out, *weval, "--weval-cache=ro", *extra))
                    shutil.rmtree(tmp / "out", ignore_errors=True)
        print(f"load average after: {os.getloadavg()[0]:.2f}; medians:")
        width = max(len(k) for k in kinds) + 2
        print(f"{'':<24}" + "".join(f"{kind:>{width}}" for kind in kinds))
        for label, value in ROWS:
            cells = []
            for kind in kinds:
                runs = found[kind]
                try:
                    cells.append(f"{statistics.median(value(r['marks'], r['spent']) for r in runs):>{width}.2f}")
                except KeyError:
                    cells.append(f"{'-':>{width}}")
            print(f"{label:<24}" + "".join(cells))
        floor_wall = statistics.median(r["marks"]["end"][0] for r in found["floor"])
        floor_cpu = statistics.median(r["marks"]["end"][1] for r in found["floor"])
        for kind in paths:
            wall = statistics.median(r["marks"]["end"][0] for r in found[kind])
            cpu = statistics.median(r["marks"]["end"][1] for r in found[kind])
            print(f"{kind}: {wall / floor_wall:.2f}x the floor's wall, {cpu / floor_cpu:.2f}x its CPU")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
