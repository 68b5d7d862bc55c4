"""The item scheduler: items evaluated ahead of pytest, and under xdist shared out between
worker processes so each item is evaluated once (engine/schedule.py)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from pytest_weval.blueprint import parse_blueprint_text
from pytest_weval.engine import Engine, EngineSettings
from pytest_weval.run.pipeline import Pipeline, PipelineSettings
from pytest_weval.run.schedule import ItemScheduler
from tests.engine.test_engine_processes import wait_until
from tests.fakeserver import FakeServer
from tests.run.schedule_worker import blueprint_text, works_of

WORKER = Path(__file__).with_name("schedule_worker.py")


def spawn(tmp_path: Path, name: str, **config) -> tuple[subprocess.Popen, Path]:
    out = tmp_path / f"{name}.out.json"
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(dict(config, out=str(out))))
    process = subprocess.Popen(
        [sys.executable, str(WORKER), str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    return process, out


def finish(process: subprocess.Popen, out: Path) -> dict:
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return json.loads(out.read_text())


def run_pair(tmp_path: Path, server: FakeServer, items: int, a: dict, b: dict) -> tuple[dict, dict]:
    common = dict(
        url=server.url,
        cache_dir=str(tmp_path / "cache"),
        run_id="run-sched",
        worker_count=2,
        items=items,
        go=str(tmp_path / "go"),
    )
    pa, out_a = spawn(tmp_path, "a", worker_id="gw0", ready=str(tmp_path / "ra"), **common, **a)
    pb, out_b = spawn(tmp_path, "b", worker_id="gw1", ready=str(tmp_path / "rb"), **common, **b)
    wait_until(lambda: (tmp_path / "ra").exists() and (tmp_path / "rb").exists())
    (tmp_path / "go").write_text("go")
    return finish(pa, out_a), finish(pb, out_b)


def test_two_workers_evaluate_each_item_once_and_both_report_them(tmp_path):
    items = 60
    with FakeServer(latency_ms=40) as server:
        # like xdist: each worker reports a different share of the items
        a, b = run_pair(tmp_path, server, items, dict(ask=list(range(0, items, 2))), dict(ask=list(range(1, items, 2))))
        log = server.log()
    assert a["evaluated_here"] + b["evaluated_here"] == items
    assert a["evaluated_here"] > 0 and b["evaluated_here"] > 0
    assert a["received"] + b["received"] > 0  # some reported items were evaluated by the other
    results = {**a["results"], **b["results"]}
    assert len(results) == items
    assert all(r["outcome"] == "passed" and r["score"] == 1.0 for r in results.values())
    assert results["sched.yml::p7"]["response"] == "echo: question 7"
    assert log["count"] == log["distinct"] == items


def test_a_worker_that_stops_early_gives_its_items_back(tmp_path):
    items = 40
    with FakeServer(latency_ms=200) as server:
        # A claims a window of items, reports one and stops without finishing the others (an
        # interrupted run); B reports every item, taking A's unfinished ones over.
        a, b = run_pair(tmp_path, server, items, dict(ask=[0], drain=False, window=8), dict(ask=list(range(items))))
        log = server.log()
    assert list(a["results"]) == ["sched.yml::p0"] and a["http_requests"] >= 1
    assert len(b["results"]) == items
    assert all(r["outcome"] == "passed" for r in b["results"].values())
    assert a["evaluated_here"] + b["evaluated_here"] <= items
    assert log["count"] == log["distinct"] == items  # requests A had sent were not sent again


def test_serial_scheduler_answers_items_in_any_order(tmp_path):
    blueprint = parse_blueprint_text(blueprint_text(12), fmt="yaml", rel_path="sched.yml")
    works = works_of(blueprint, "n{id}")
    with FakeServer(latency_ms=20) as server:
        engine = Engine(EngineSettings(cache_dir=str(tmp_path / "cache"), env=server.env())).start()
        try:
            scheduler = ItemScheduler(engine, Pipeline(engine, PipelineSettings()), works, window=4)
            last = scheduler.result("np11")  # beyond the window: started at once when asked for
            firsts = [scheduler.result(f"np{i}") for i in range(11)]
            scheduler.close(drain=True)
        finally:
            engine.close()
        assert server.count == 12
    assert last.response == "echo: question 11"
    assert [r.outcome for r in firsts] == ["passed"] * 11
    assert scheduler.evaluated_here == 12 and scheduler.received == 0


def test_serial_scheduler_runs_no_further_ahead_of_pytest_than_twice_its_window(tmp_path):
    # Results wait in memory until pytest takes them: a cached run, far faster than pytest
    # reports, would otherwise hold every item's answers at once.
    blueprint = parse_blueprint_text(blueprint_text(40), fmt="yaml", rel_path="sched.yml")
    works = works_of(blueprint, "n{i}")
    with FakeServer() as server:
        engine = Engine(EngineSettings(cache_dir=str(tmp_path / "cache"), env=server.env())).start()
        try:
            scheduler = ItemScheduler(engine, Pipeline(engine, PipelineSettings()), works, window=4)
            wait_until(lambda: server.count >= 8)
            first = scheduler.result("n0")  # pytest reached item 0: item 8 may start, no further
            wait_until(lambda: server.count >= 9)
            scheduler.result("n1")
            engine.run_coroutine(asyncio.sleep(0.3)).result()  # room for a wrong start to show
            started = server.count
            rest = [scheduler.result(f"n{i}") for i in range(2, 40)]
            scheduler.close(drain=True)
        finally:
            engine.close()
    assert started == 10
    assert first.outcome == "passed" and [r.outcome for r in rest] == ["passed"] * 38
    assert server.count == 40


def test_items_of_a_peer_that_dies_go_back_to_the_feeder_not_to_pytest(tmp_path):
    # A peer (another machine's or worker's process) holds claims on some items when the feeder
    # passes them, then dies. Its items must be evaluated ahead, at the run's concurrency, as
    # the others were: not one at a time when pytest reaches each (no result is asked here).
    import socket
    import sqlite3
    import time

    from pytest_weval.engine.store.backends import claims_path

    items, held = 30, range(0, 30, 3)
    blueprint = parse_blueprint_text(blueprint_text(items), fmt="yaml", rel_path="sched.yml")
    works = works_of(blueprint)
    peer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with FakeServer(latency_ms=20) as server:
        settings = EngineSettings(
            cache_dir=str(tmp_path / "cache"), env=server.env(), run_id="run-peer", worker_id="gw0", worker_count=2
        )
        engine = Engine(settings).start()
        try:
            with sqlite3.connect(claims_path(settings)) as db:
                db.executemany(
                    "INSERT INTO claims (key, owner, host, pid, expires) VALUES (?, 'peer', ?, ?, ?)",
                    [
                        (f"item:run-peer:sched.yml::p{n}", socket.gethostname(), peer.pid, time.time() + 3600)
                        for n in held
                    ],
                )
            scheduler = ItemScheduler(engine, Pipeline(engine, PipelineSettings()), works, window=8, exchange=True)
            wait_until(lambda: server.count == items - len(held))  # the feeder passed the peer's items
            peer.kill()
            peer.wait()
            wait_until(lambda: server.count == items)  # no result asked for: the feeder's work
            results = [scheduler.result(work.nodeid) for work in works]
            scheduler.close(drain=True)
        finally:
            engine.close()
            if peer.poll() is None:
                peer.kill()
        assert server.count == server.log()["distinct"] == items
    assert [r.outcome for r in results] == ["passed"] * items
    assert scheduler.evaluated_here == items


def test_a_waiting_feeder_starts_items_in_runs_not_one_a_result(tmp_path):
    # pytest takes a replay's results faster than one a loop turn: waking the feeder for each
    # result it took handed the GIL over and back once an item. With a lead of 128 items
    # (window 64), the feeder waits until pytest made room for a run of 4, then starts 4.
    items = 140
    blueprint = parse_blueprint_text(blueprint_text(items), fmt="yaml", rel_path="sched.yml")
    works = works_of(blueprint, "n{i}")
    with FakeServer() as server:
        engine = Engine(EngineSettings(cache_dir=str(tmp_path / "cache"), env=server.env())).start()
        try:
            scheduler = ItemScheduler(engine, Pipeline(engine, PipelineSettings()), works, window=64)
            wait_until(lambda: server.count >= 128)
            firsts = [scheduler.result(f"n{i}") for i in range(3)]  # room for 3 more: not a run yet
            engine.run_coroutine(asyncio.sleep(0.3)).result()  # room for a wrong start to show
            before_run = server.count
            firsts.append(scheduler.result("n3"))  # room for 4: the run starts
            wait_until(lambda: server.count >= 132)
            engine.run_coroutine(asyncio.sleep(0.3)).result()
            after_run = server.count
            rest = [scheduler.result(f"n{i}") for i in range(4, items)]
            scheduler.close(drain=True)
        finally:
            engine.close()
    assert (before_run, after_run) == (128, 132)
    assert [r.outcome for r in firsts + rest] == ["passed"] * items
    assert server.count == items
