"""Several machines, one run: pytest processes in separate folders (each its own "machine",
each with ``-n 2``) joined by ``--weval-run-id`` and a PostgreSQL store share the items out
and each reports every item (docs/engine.md, 'Claims across machines').

The workload is ``bench/throughput.py``'s: 300 items (two models), each one generation and two
judged points, so 900 distinct requests.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from bench.throughput import JUDGE, JUDGE_REPLY, MODELS, write_suite
from tests.fakeserver import FakeServer, Rule

ITEMS = 300
REQUESTS = 3 * ITEMS
RULES = [Rule(model=JUDGE.split(":", 1)[1], reply=JUDGE_REPLY)] + [
    Rule(model=m.split(":", 1)[1], reply="{model} says: {last}") for m in MODELS
]


class Machine:
    """One pytest process (and its xdist workers) in a folder of its own."""

    def __init__(self, tmp_path: Path, name: str, env: dict[str, str], *args: str):
        self.folder = tmp_path / name
        self.folder.mkdir()
        write_suite(self.folder, ITEMS)
        self.out = open(self.folder / "output.txt", "w")  # noqa: SIM115 - closed in wait()
        command = [
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
            f"--weval-judges={JUDGE}", "--weval-concurrency=20", "--junitxml=junit.xml", "--weval-out=out", *args,
        ]  # fmt: skip
        # A session of its own, so a SIGKILL takes the controller and its workers at once.
        self.process = subprocess.Popen(
            command, cwd=self.folder, env=env, stdout=self.out, stderr=subprocess.STDOUT, start_new_session=True
        )

    def wait(self, timeout: float = 240) -> int:
        try:
            return self.process.wait(timeout)
        finally:
            self.out.close()

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.wait()

    @property
    def output(self) -> str:
        return (self.folder / "output.txt").read_text(errors="replace")

    def scores(self) -> dict[str, tuple[str, str]]:
        """junit: test id -> (outcome, weval_score)."""
        found = {}
        for case in ET.parse(self.folder / "junit.xml").iter("testcase"):
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            outcome = next((tag for tag in ("failure", "error", "skipped") if case.find(tag) is not None), "passed")
            found[f"{case.get('classname')}::{case.get('name')}"] = (outcome, props.get("weval_score", ""))
        return found

    def summary(self) -> dict:
        import json

        return json.loads((self.folder / "out" / "summary.json").read_text())


def _env(server: FakeServer | None, url_env: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_BASE_URL"))
        and k not in ("PYTEST_ADDOPTS", "PYTEST_XDIST_AUTO_NUM_WORKERS", "WEVAL_RUN_ID")
        and not k.startswith("PYTEST_XDIST")
    }
    if server is not None:
        env.update(server.env())
    else:  # the server is gone: keys only (a replay needs none, the pre-flight checks them anyway)
        env.update({k: v for k, v in FakeServer().env().items() if k.endswith("_API_KEY")})
    env.update(url_env or {})
    return env


def test_two_machines_share_one_run_and_a_third_replays_it_offline(tmp_path: Path, pg_url: str):
    with FakeServer(RULES, latency_ms=50) as server:
        env = _env(server, {"WEVAL_RUN_ID": "ci-run-1"})  # the run id through the environment
        a = Machine(tmp_path, "a", env, "-n", "2", f"--weval-cache-store={pg_url}")
        b = Machine(tmp_path, "b", env, "-n", "2", f"--weval-cache-store={pg_url}")
        assert a.wait() == 0, a.output[-3000:]
        assert b.wait() == 0, b.output[-3000:]
        log = server.log()
    assert log["count"] == log["distinct"] == REQUESTS  # each distinct request sent once, by one machine
    scores = a.scores()
    assert len(scores) == ITEMS and {outcome for outcome, _ in scores.values()} == {"passed"}
    assert b.scores() == scores  # every item, with identical scores, on both machines
    sent = [m.summary()["usageTotal"]["requests"] for m in (a, b)]
    assert all(n > 0 for n in sent) and sum(sent) == REQUESTS, sent  # both machines did part of the work
    assert a.summary()["items"] == b.summary()["items"]
    assert f"{ITEMS} passed" in a.output and f"{ITEMS} passed" in b.output

    # A third machine, no run id: replays everything from the shared cache, the server stopped.
    c = Machine(tmp_path, "c", _env(None), "-n", "2", f"--weval-cache-store={pg_url}", "--weval-cache=ro")
    assert c.wait() == 0, c.output[-3000:]
    assert c.scores() == scores
    assert c.summary()["usageTotal"]["cacheHits"] == REQUESTS


def sent_by_a(server: FakeServer) -> int:
    return sum(1 for r in list(server.requests) if r.headers.get("authorization") == "Bearer key-of-machine-a")


def test_a_machine_killed_mid_run_leaves_its_items_to_the_other(tmp_path: Path, pg_url: str):
    with FakeServer(RULES, latency_ms=100) as server:
        env = _env(server)
        common = ("-n", "2", f"--weval-cache-store={pg_url}", "--weval-run-id=ci-run-kill")
        # Each machine its own key, so the server's log says which one sent what.
        a = Machine(tmp_path, "a", dict(env, OPENAI_API_KEY="key-of-machine-a"), *common)
        b = Machine(tmp_path, "b", dict(env, OPENAI_API_KEY="key-of-machine-b"), *common)
        deadline = time.monotonic() + 120
        while sent_by_a(server) < REQUESTS // 6 and time.monotonic() < deadline and a.process.poll() is None:
            time.sleep(0.05)
        assert a.process.poll() is None, "machine A finished before it could be killed"
        killing = time.time()
        a.kill()
        assert b.wait() == 0, b.output[-3000:]
        requests = list(server.requests)
    scores = b.scores()
    assert len(scores) == ITEMS and {outcome for outcome, _ in scores.values()} == {"passed"}
    senders: dict[str, list[tuple[str, float]]] = {}  # request -> (machine, when), in order
    for request in requests:
        machine = request.headers["authorization"].removeprefix("Bearer key-of-machine-")
        senders.setdefault(request.raw_body, []).append((machine, request.at))
    assert len(senders) == REQUESTS
    # Asked twice: only what A had sent and not yet recorded when it died (its replies in
    # flight), once by A, then once by B after the kill; nothing B sent was ever sent again.
    # How many depends on how far behind A's writes were when it died (the machine's speed);
    # that B reused what A had recorded does not.
    who = Counter("".join(machine for machine, _ in sent) for sent in senders.values())
    assert set(who) <= {"a", "b", "ab"}, who
    assert all(sent[1][1] > killing for sent in senders.values() if len(sent) == 2)
    assert who["a"] > 0, who  # of the 150 or more A sent, some were recorded and served B


def test_two_runs_without_a_run_id_on_one_postgresql_store_buy_each_reply_once(tmp_path: Path, pg_url: str):
    # Two CI jobs sharing a database, each its own run (no --weval-run-id), serial and -n 2:
    # every request is claimed in the store before it is sent (issue 31, item 2).
    with FakeServer(RULES, latency_ms=100) as server:
        env = _env(server)
        a = Machine(tmp_path, "a", env, f"--weval-cache-store={pg_url}")
        b = Machine(tmp_path, "b", env, "-n", "2", f"--weval-cache-store={pg_url}")
        assert a.wait() == 0, a.output[-3000:]
        assert b.wait() == 0, b.output[-3000:]
        sent = Counter(r.raw_body for r in list(server.requests))
    assert [body for body, count in sent.items() if count > 1] == []
    assert len(sent) == REQUESTS
    assert f"{ITEMS} passed" in a.output and f"{ITEMS} passed" in b.output
