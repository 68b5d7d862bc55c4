"""Ctrl-C, serial and under xdist, whether the signal reaches the whole process group (a
terminal's Ctrl-C) or the main process alone (``kill -INT``): no request starts after it, every
process of the run ends though the server still holds its requests, and the next run sends only
what was missing. (How soon the run stops is ``bench/interrupt.py``'s figure.)"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from plugin_helpers import JUDGE, JUDGE_ID, MODEL_ID, Project, verdict

from tests.fakeserver import Rule

LATENCY_MS = 200
CONCURRENCY = 8  # --weval-concurrency: every request slot of the run, all workers together
ENDED_WITHIN_S = 60  # a stop that waited for its requests would wait --weval-timeout (600 s)


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
            f"--weval-concurrency={CONCURRENCY}",
            "--weval-timeout=600",
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


def _wait_until(condition, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _bodies(requests: list) -> set[str]:
    return {json.dumps(r.body, sort_keys=True) for r in requests}


@pytest.mark.parametrize(
    ("workers", "target"),
    [((), "group"), (("-n", "2"), "group"), (("-n", "2"), "main")],
    ids=["serial", "xdist-group", "xdist-main-only"],
)
def test_ctrl_c_starts_no_request_ends_the_run_and_the_next_run_sends_only_what_was_missing(
    project: Project, workers: tuple[str, ...], target: str
):
    _suite(project, 150)
    process = _start(project, *workers)
    try:
        _wait_until(lambda: project.server.count >= 40 or process.poll() is not None)  # well under way
        assert process.poll() is None, process.communicate()[0][-3000:]
        # From now on the server answers nothing. Once every request slot of the run holds a
        # request the server keeps, the run cannot start another one until a slot frees, and
        # only the interrupt frees them (by cancelling). So the signal meets a run with nothing
        # on its way to the server, however long each process takes to handle it: any request
        # the server sees after the signal is one the run started after Ctrl-C.
        project.rules(Rule(fault="hang"))
        _wait_until(lambda: len([r for r in project.requests() if r.outcome == "hang"]) >= CONCURRENCY)
        before = project.requests()
        signalled_at = time.time()
        if target == "group":
            os.killpg(process.pid, signal.SIGINT)
        else:
            os.kill(process.pid, signal.SIGINT)
        # Stopped means every process of the run is gone, xdist's workers included, though the
        # server still holds their requests.
        try:
            output, _ = process.communicate(timeout=ENDED_WITHIN_S)
        except subprocess.TimeoutExpired:
            # pytest's faulthandler writes every thread's stack on SIGABRT: where each process hung
            os.killpg(process.pid, signal.SIGABRT)
            pytest.fail(
                f"still running {ENDED_WITHIN_S} s after the signal:\n{process.communicate(timeout=60)[0][-12000:]}"
            )
        _wait_until(lambda: not _alive(process.pid), timeout=ENDED_WITHIN_S)
    finally:
        if _alive(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
    time.sleep(0.5)  # anything still on its way to the server arrives
    first = project.requests()
    assert "KeyboardInterrupt" in output or "Interrupted" in output, output[-2000:]
    late = first[len(before) :]
    assert late == [], f"{len(late)} requests started after the interrupt: {[r.last_user for r in late]}"
    held = [r for r in first if r.outcome == "hang"]
    assert len(held) == CONCURRENCY, len(held)  # the slots were full: nothing could start before the signal
    if workers:
        # The controller tells its workers through the claims store, for a signal that reached
        # it alone (how soon they hear it: tests/engine, test_a_stop_recorded_in_the_claims_store_...).
        with contextlib.closing(sqlite3.connect(project.path / ".weval_cache" / "weval-cache.sqlite")) as db:
            stops = db.execute("SELECT created FROM run_signals WHERE name LIKE 'stop%'").fetchall()
        assert [created >= signalled_at for (created,) in stops] == [True], stops
    # Every reply the run received is in the cache (a slot is given back once its reply is
    # read, and every slot went to a held request): the next run does not ask for any of
    # them again, and asks for everything else exactly once.
    answered = _bodies([r for r in first if r.outcome == "200"])
    project.server.reset()
    project.rules(Rule(model=JUDGE, reply=verdict("CLASS_EXACT")))
    second = project.run(f"--weval-judges={JUDGE_ID}", *workers, sub=True)
    second.assert_outcomes(passed=150)
    again = _bodies(project.requests())
    assert not (again & answered), f"{len(again & answered)} answered requests sent again"
    assert len(project.requests()) == len(again)  # nothing twice
    assert len(again | answered) == 300  # between them, every request: 150 answers, 150 verdicts
