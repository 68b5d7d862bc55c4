"""The configs repository in one run against the loopback fake (issue 43 item 6).

    python bench/corpus_run.py [--corpus ../shared/corpus/weval-configs] [--workers 2]
        [--latency-ms 20] [--concurrency 64] [--keep]

Runs every blueprint of the corpus with ``--weval-models`` two fake models and ``--weval-judges``
one fake judge, under ``-n WORKERS``, writing ``--weval-out``, ``--weval-html`` and
``--junitxml``, with a fresh cache. Prints the items and their outcomes, wall and CPU (every
process of the run), each process's peak memory (its ``VmHWM``, read from ``/proc`` while it
runs), the reports' sizes, the requests the fake saw (and how many were distinct), and where the
wall time went: collection (a separate ``--collect-only`` run), start to the first request, the
request phase, and the last reply to exit (the reports are written there).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import default_corpus
from throughput import JUDGE, JUDGE_REPLY, MODELS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakeserver import FakeServerProcess  # noqa: E402


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found.append(child)
            todo.append(child)
    return found


def _peak_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_watched(cmd: list[str], cwd: Path, env: dict[str, str]) -> dict:
    """Runs ``cmd``; returns wall, CPU, start/end epochs and each process's peak memory (MB)."""
    peaks: dict[int, tuple[str, int]] = {}
    cpu_before = _children_cpu()
    started_epoch, started = time.time(), time.perf_counter()
    out = (cwd / "pytest-output.txt").open("w")
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    while proc.poll() is None:
        for pid in [proc.pid, *_descendants(proc.pid)]:
            kb = _peak_kb(pid)
            if kb is not None:
                name = peaks.get(pid, ("", 0))[0] or _cmdline(pid)
                peaks[pid] = (name, max(kb, peaks.get(pid, ("", 0))[1]))
        time.sleep(0.25)
    wall = time.perf_counter() - started
    out.close()
    return dict(
        wall=wall,
        cpu=_children_cpu() - cpu_before,
        start=started_epoch,
        end=time.time(),
        rc=proc.returncode,
        peaks={pid: (name, kb / 1024) for pid, (name, kb) in peaks.items()},
        output=(cwd / "pytest-output.txt").read_text(errors="replace"),
    )


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _role(cmdline: str, pid: int, root: int) -> str:
    if pid == root:
        return "controller" if " -n " in f" {cmdline} " else "pytest"
    if "execnet" in cmdline or "xdist" in cmdline or "-c" in cmdline.split():
        return "worker"
    return "other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=default_corpus())
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (reports, cache, output)")
    args = parser.parse_args()

    corpus = args.corpus.resolve()
    blueprints = corpus / "blueprints" if (corpus / "blueprints").is_dir() else corpus
    tmp = Path(tempfile.mkdtemp(prefix="weval-corpus-"))
    rules = tmp / "rules.json"
    rules.write_text(
        json.dumps(
            [{"model": JUDGE.split(":", 1)[1], "reply": JUDGE_REPLY}]
            + [{"model": m.split(":", 1)[1], "reply": "{model} says: {last}"} for m in MODELS]
        )
    )
    common = [
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        f"--weval-models={','.join(MODELS)}",
        f"--weval-judges={JUDGE}",
        f"--weval-concurrency={args.concurrency}",
        f"--weval-cache-dir={tmp / 'cache'}",
        f"--rootdir={tmp}",
        str(blueprints),
    ]
    with FakeServerProcess("--latency-ms", str(args.latency_ms), "--rules", str(rules)) as server:
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env.pop("PYTEST_ADDOPTS", None)
        env.update(server.env())
        python = [sys.executable, "-m", "pytest"]
        collect = run_watched([*python, *common, "--collect-only"], tmp, env)
        reset = __import__("httpx").post(server.url + "/__reset", timeout=30)
        reset.raise_for_status()
        outputs = [
            f"--weval-out={tmp / 'out'}",
            f"--weval-html={tmp / 'report.html'}",
            f"--junitxml={tmp / 'junit.xml'}",
        ]
        workers = ["-n", str(args.workers)] if args.workers > 0 else []
        run = run_watched([*python, *common, *workers, *outputs], tmp, env)
        log = server.log()

    outcome = re.compile(r"\d+ (?:passed|failed|error)\S*.* in [\d.]+s")
    summary = next((line for line in reversed(run["output"].splitlines()) if outcome.search(line)), "")
    print(f"corpus: {blueprints} ({len(list(blueprints.rglob('*.yml')) + list(blueprints.rglob('*.yaml')))} files)")
    print(
        f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; models {', '.join(MODELS)}; "
        f"judge {JUDGE}; latency {args.latency_ms:g} ms; --weval-concurrency={args.concurrency}; -n {args.workers}"
    )
    print(f"outcome: {summary.strip('= ')} (exit {run['rc']})")
    print(f"collection (--collect-only, one process): wall {collect['wall']:.1f} s, CPU {collect['cpu']:.1f} s")
    print(f"run: wall {run['wall']:.1f} s, CPU {run['cpu']:.1f} s (every process)")
    for pid, (name, mb) in sorted(run["peaks"].items(), key=lambda kv: -kv[1][1]):
        role = _role(name, pid, min(run["peaks"]))
        if mb >= 20:
            print(f"  peak memory {mb:7.0f} MB  {role:10} pid {pid}")
    requests = log["requests"]
    if requests:
        arrivals = sorted(r["at"] for r in requests)
        latency = args.latency_ms / 1000
        before = arrivals[0] - run["start"]
        span = arrivals[-1] - arrivals[0] + latency
        after = run["end"] - (arrivals[-1] + latency)
        ideal = log["count"] * latency / args.concurrency
        print(
            f"requests: {log['count']} ({log['distinct']} distinct), most in flight {log['max_in_flight']}; "
            f"ideal at this latency and concurrency {ideal:.1f} s"
        )
        print(
            f"where the wall time went: start to first request {before:.1f} s ({before / run['wall']:.0%}), "
            f"request phase {span:.1f} s ({span / run['wall']:.0%}), last reply to exit (reports) "
            f"{after:.1f} s ({after / run['wall']:.0%})"
        )
    print(
        "reports: "
        + ", ".join(
            f"{name} {_size(tmp / path) / 1e6:.1f} MB"
            for name, path in (("--weval-out", "out"), ("HTML", "report.html"), ("junit", "junit.xml"))
        )
    )
    if args.keep:
        print(f"kept: {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
