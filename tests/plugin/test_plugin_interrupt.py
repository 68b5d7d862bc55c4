"""Ctrl-C: the run stops within 2 s, serial and under xdist, whether the signal reaches the whole
process group (a terminal's Ctrl-C) or the main process alone (``kill -INT``); no request starts
after it, and the next run sends only what was missing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from plugin_helpers import JUDGE, JUDGE_ID, MODEL_ID, Project, verdict

from tests.fakeserver import Rule

LATENCY_MS = 200


def _suite(project: Project, prompts: int) -> None:
    lines = [f"models: [{MODEL_ID}]", "---"]
    for n in range(prompts):
        lines += [f"- id: p{n}", f"  prompt: Question {n}, please answer.", "  should:", f"    - answers question {n}"]
    project.write("blueprints/long.yml", "\n".join(lines) + "\n")
    project.rules(Rule(model=JUDGE, reply=verdict("CLASS_EXACT")))
    project.server.latency_ms = LATENCY_MS


def _start(project: Project, *args: str) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            f"--weval-judges={JUDGE_ID}",
            "--weval-concurrency=8",
            *args,
        ],
        cwd=project.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal gives a command
    )


def _alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def _bodies(requests: list) -> set[str]:
    return {json.dumps(r.body, sort_keys=True) for r in requests}


@pytest.mark.parametrize(
    ("workers", "target"),
    [((), "group"), (("-n", "2"), "group"), (("-n", "2"), "main")],
    ids=["serial", "xdist-group", "xdist-main-only"],
)
def test_ctrl_c_stops_within_2_s_and_the_next_run_sends_only_what_was_missing(
    project: Project, workers: tuple[str, ...], target: str
):
    _suite(project, 150)
    process = _start(project, *workers)
    deadline = time.monotonic() + 60
    while project.server.count < 40 and time.monotonic() < deadline:  # well under way
        time.sleep(0.02)
    interrupted_at = time.time()
    if target == "group":
        os.killpg(process.pid, signal.SIGINT)
    else:
        os.kill(process.pid, signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    # Stopped means every process of the run is gone, xdist's workers included.
    while _alive(process.pid) and time.time() - interrupted_at < 30:
        time.sleep(0.02)
    stopped_in = time.time() - interrupted_at
    time.sleep(0.5)  # anything still on its way to the server arrives
    first = list(project.requests())
    assert stopped_in < 2.0, (stopped_in, output[-2000:])
    assert "KeyboardInterrupt" in output or "Interrupted" in output, output[-2000:]
    # A Ctrl-C that reached the main process alone reaches the workers through the claims
    # store, which they read every 2 x poll interval (0.1 s); on a loaded machine that read can
    # itself wait a few hundred ms, so they get longer before a request counts as late.
    grace = 0.1 if target == "group" else 0.6
    late = [r for r in first if r.at > interrupted_at + grace]
    assert late == [], f"{len(late)} requests started after the interrupt"
    # Replies the run certainly had before the interrupt are in the cache: the next run does
    # not ask for them again, and asks for everything else exactly once.
    answered_before = _bodies([r for r in first if r.at < interrupted_at - (LATENCY_MS / 1000) - 0.3])
    project.server.reset()
    second = project.run(f"--weval-judges={JUDGE_ID}", *workers, sub=True)
    second.assert_outcomes(passed=150)
    again = _bodies(project.requests())
    assert not (again & answered_before), f"{len(again & answered_before)} answered requests sent again"
    assert len(project.requests()) == len(again)  # nothing twice
    assert len(again | _bodies(first)) == 300  # between them, every request: 150 answers, 150 verdicts
