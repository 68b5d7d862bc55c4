"""Several processes sharing one store: claims (no request sent twice), SIGKILL safety."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakeserver import FakeServer

WORKER = Path(__file__).with_name("engine_worker.py")


def spawn(tmp_path: Path, name: str, **config) -> tuple[subprocess.Popen, Path]:
    out = tmp_path / f"{name}.out.json"
    config["out"] = str(out)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(config))
    process = subprocess.Popen(
        [sys.executable, str(WORKER), str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    return process, out


def wait_for(process: subprocess.Popen, timeout: float = 60) -> None:
    _, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err


def wait_until(condition, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.parametrize("cache_mode,cache_store", [("rw", "sqlite"), ("off", "sqlite"), ("rw", "files")])
def test_two_workers_never_send_a_request_twice(tmp_path, cache_mode, cache_store):
    prompts_a = [f"prompt {i}" for i in range(40)]
    prompts_b = [f"prompt {i}" for i in range(10, 50)]  # 30 shared with worker A
    go = tmp_path / "go"
    with FakeServer(latency_ms=150) as server:
        common = dict(
            url=server.url,
            cache_dir=str(tmp_path / "cache"),
            run_id="run-xyz",
            worker_count=2,
            cache_mode=cache_mode,
            cache_store=cache_store,
            go=str(go),
            coordination_dir=str(tmp_path / "coord"),
            provider_concurrency={"openai": 8},
        )
        a, out_a = spawn(tmp_path, "a", prompts=prompts_a, worker_id="gw0", ready=str(tmp_path / "ra"), **common)
        b, out_b = spawn(tmp_path, "b", prompts=prompts_b, worker_id="gw1", ready=str(tmp_path / "rb"), **common)
        wait_until(lambda: (tmp_path / "ra").exists() and (tmp_path / "rb").exists())
        go.write_text("go")
        wait_for(a)
        wait_for(b)
        log = server.log()
    result_a = json.loads(out_a.read_text())
    result_b = json.loads(out_b.read_text())
    for prompts, result in ((prompts_a, result_a), (prompts_b, result_b)):
        assert {p: r.get("text") for p, r in result["results"].items()} == {p: f"echo: {p}" for p in prompts}
    assert log["count"] == log["distinct"] == 50  # every distinct request exactly once
    assert result_a["http_requests"] + result_b["http_requests"] == 50
    # Both sent some; each shared request went out once, from whichever worker claimed it first
    # (a claim is taken before a concurrency slot), and served the other one too.
    assert result_a["http_requests"] > 0 and result_b["http_requests"] > 0
    # Each worker took 1/2 of the whole-run cap: never more than 4 + 4 in flight.
    assert log["max_in_flight"] <= 8


def test_mode_off_results_are_not_served_across_runs(tmp_path):
    with FakeServer() as server:
        common = dict(
            url=server.url,
            cache_dir=str(tmp_path / "cache"),
            worker_count=2,
            cache_mode="off",
            prompts=["same question"],
        )
        first, _ = spawn(tmp_path, "one", run_id="run-1", **common)
        wait_for(first)
        second, out = spawn(tmp_path, "two", run_id="run-2", **common)
        wait_for(second)
        assert server.count == 2
    assert json.loads(out.read_text())["from_other_workers"] == 0


def test_sigkill_mid_run_loses_only_in_flight_requests(tmp_path):
    prompts = [f"question {i}" for i in range(40)]
    db_path = tmp_path / "cache" / "weval-cache.sqlite"
    with FakeServer(latency_ms=100) as server:
        common = dict(
            url=server.url,
            cache_dir=str(tmp_path / "cache"),
            prompts=prompts,
            provider_concurrency={"openai": 4},
            coordinate=True,
            claim_lease_s=60,
        )
        victim, _ = spawn(tmp_path, "victim", run_id="run-1", **common)
        wait_until(lambda: server.count >= 14)
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=10)
        sent_before = server.count

        db = sqlite3.connect(db_path)
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        recorded = db.execute("SELECT count(*) FROM responses").fetchone()[0]
        stale_claims = db.execute("SELECT count(*) FROM claims").fetchone()[0]
        db.close()
        assert 0 < recorded < 40 and recorded <= sent_before
        assert stale_claims > 0  # the dead process's claims are still there...

        started = time.monotonic()
        rerun, out = spawn(tmp_path, "rerun", run_id="run-2", **common)
        wait_for(rerun)
        # ...and are taken over at once (the holder's pid is dead), not after the 60 s lease.
        assert time.monotonic() - started < 30
        result = json.loads(out.read_text())
    assert {p: r.get("text") for p, r in result["results"].items()} == {p: f"echo: {p}" for p in prompts}
    assert result["cache_hits"] == recorded
    assert result["http_requests"] == 40 - recorded  # what was recorded is reused, never re-sent
    db = sqlite3.connect(db_path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("SELECT count(*) FROM responses").fetchone()[0] == 40


def test_a_claim_held_by_a_killed_unreaped_worker_is_taken_over_at_once(tmp_path):
    # A worker killed with SIGKILL stays a zombie until xdist reaps it; its claims must not
    # wait for their lease to run out.
    import asyncio
    import socket

    from pytest_weval.engine.claims import Coordinator
    from pytest_weval.engine.store.db import SqliteDB

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    stat = Path(f"/proc/{child.pid}/stat")
    if not stat.exists():
        child.wait()
        pytest.skip("no /proc here: the lease decides")
    wait_until(lambda: stat.read_bytes().rsplit(b")", 1)[1].split()[0] == b"Z")  # exited, not reaped
    db = SqliteDB(tmp_path / "claims.sqlite")

    async def scenario():
        await db.run(
            lambda conn: conn.execute(
                "INSERT INTO claims (key, owner, host, pid, expires) VALUES ('k', 'gone', ?, ?, ?)",
                (socket.gethostname(), child.pid, time.time() + 3600),
            )
        )
        coordinator = Coordinator(db, run_id="r", worker_id="gw1", lease_s=30, poll_s=0.05)
        return await coordinator.claim("k"), coordinator.takeovers

    try:
        assert asyncio.run(scenario()) == (True, 1)
    finally:
        db.close()
        child.wait()


def test_an_outcome_recorded_in_a_store_entry_that_cannot_be_read_is_asked_again(tmp_path):
    # Another worker recorded "in the store", but the entry is gone here (pruned, corrupt):
    # the request goes out once instead of the claim finding that outcome forever.
    from engine_helpers import complete_sync, request

    from pytest_weval.engine import Engine, EngineSettings

    with FakeServer() as server:
        engine = Engine(
            EngineSettings(
                cache_dir=str(tmp_path / "cache"), env=server.env(), worker_count=2, worker_id="gw0", run_id="run-gone"
            )
        ).start()
        try:
            asked = request("openai:gpt-4o-mini", "lost entry")
            key = engine.key_for(asked)
            engine.run_coroutine(engine.coordinator.finish(key, in_store=True)).result()
            reply = complete_sync(engine, asked, timeout=20)
        finally:
            engine.close()
        assert reply.text == "echo: lost entry"
        assert server.count == 1
