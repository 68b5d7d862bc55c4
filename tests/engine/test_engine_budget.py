"""--weval-budget in the engine: the reservations and spend of one process (``Budget``) and of
several sharing one SQLite file (``SpendLedger``): together they never reserve past the budget,
they reach it, and a process that died holds nothing (docs/engine.md, 'Prices, spend and the
budget')."""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from engine_helpers import request

from pytest_weval.engine import ModelCallError
from pytest_weval.engine.claims import SPEND_SCHEMA, Coordinator, SpendLedger
from pytest_weval.engine.errors import BudgetReached
from pytest_weval.engine.prices import Budget, Price, PriceBook
from pytest_weval.engine.store.db import SqliteDB

HERE = Path(__file__).resolve().parent
MODEL = "openai:ledger-model"
PRICES = {MODEL: Price(1000.0, 1000.0)}


class Books:
    """What the test saw: reservations outstanding and costs settled, checked at each admission."""

    def __init__(self, limit: float):
        self.limit = limit
        self.outstanding: list[float] = []
        self.costs: list[float] = []
        self.most_in_flight = 0

    def admitted(self, amount: float) -> None:
        spent = sum(self.costs)
        # Within the budget, or the one request in flight (it went alone, as nothing else was).
        assert spent < self.limit
        assert spent + sum(self.outstanding) + amount <= self.limit + 1e-9 or not self.outstanding
        self.outstanding.append(amount)
        self.most_in_flight = max(self.most_in_flight, len(self.outstanding))

    def settled(self, amount: float, cost: float) -> None:
        self.outstanding.remove(amount)
        self.costs.append(cost)


async def _spend_until_reached(budget: Budget, books: Books, tasks: int, seed: int) -> list[str]:
    rng = random.Random(seed)

    async def task(t: int) -> str:
        for n in range(10_000):
            try:
                amount = await budget.reserve(request(MODEL, f"question {t}-{n}"), 100)
            except BudgetReached as exc:
                return str(exc)
            books.admitted(amount)
            await asyncio.sleep(rng.uniform(0.001, 0.01))
            cost = amount * rng.uniform(0.2, 1.0)
            books.settled(amount, cost)  # before the await: the budget may admit another meanwhile
            await budget.settle(amount, cost)
        raise AssertionError("never reached the budget")

    return await asyncio.gather(*(task(t) for t in range(tasks)))


async def _ledger(path: Path, run_id: str, worker: str) -> tuple[SqliteDB, Coordinator, SpendLedger]:
    db = SqliteDB(path)
    coordinator = Coordinator(db, run_id=run_id, worker_id=worker, lease_s=30, poll_s=0.01)
    await coordinator.start()
    return db, coordinator, SpendLedger(coordinator)


@pytest.mark.parametrize("shared", [False, True], ids=["one process", "ledger"])
def test_concurrent_requests_of_one_process_never_reserve_past_the_budget(tmp_path: Path, shared: bool):
    limit = 2.0

    async def main() -> tuple[list[str], Books, float]:
        budget = Budget(limit, PriceBook(PRICES))
        books = Books(limit)
        closing = []
        if shared:
            db, coordinator, ledger = await _ledger(tmp_path / "ledger.sqlite", "run-1", "gw0")
            budget.use_ledger(ledger, poll_s=0.01)
            closing = [coordinator, db]
        ends = await _spend_until_reached(budget, books, tasks=12, seed=1)
        if shared:
            total = await ledger.total()
            assert total.spent == pytest.approx(sum(books.costs), abs=1e-9)
            assert (total.reserved, total.in_flight) == (0.0, 0)
            await closing[0].close()
            closing[1].close()
        return ends, books, budget.spent

    ends, books, spent = asyncio.run(main())
    assert spent == pytest.approx(sum(books.costs), abs=1e-9)
    assert limit <= spent and spent - max(books.costs) < limit
    assert books.most_in_flight >= 5  # the budget let several go at once
    assert all(end.startswith(f"budget reached (${spent:.4f} of $2)") for end in ends), ends


def test_processes_sharing_a_ledger_never_reserve_past_the_budget_and_reach_it(tmp_path: Path):
    """Three processes of twelve concurrent requesters each, one SQLite file; the test samples
    the ledger as they go. Every reply costs at most what was reserved for it, so the spend
    passes the budget only by the one request that went alone."""
    path, run_id, limit = tmp_path / "ledger.sqlite", "run-7", 3.0

    async def schema() -> None:
        db = SqliteDB(path)
        await db.run(lambda conn: conn.execute(SPEND_SCHEMA))
        db.close()

    asyncio.run(schema())
    go = tmp_path / "go"
    workers = []
    for w in range(3):
        config = {
            "path": str(path),
            "run_id": run_id,
            "worker_id": f"gw{w}",
            "limit": limit,
            "tasks": 12,
            "seed": w,
            "go": str(go),
            "ready": str(tmp_path / f"ready{w}"),
            "out": str(tmp_path / f"out{w}.json"),
        }
        (tmp_path / f"config{w}.json").write_text(json.dumps(config))
        workers.append(
            subprocess.Popen([sys.executable, str(HERE / "budget_worker.py"), str(tmp_path / f"config{w}.json")])
        )
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"ready{w}").exists() for w in range(3)) and time.monotonic() < deadline:
        time.sleep(0.01)  # the workers import and open the file
    go.write_text("go")
    samples = []
    with sqlite3.connect(str(path), timeout=30) as conn:
        deadline = time.monotonic() + 120
        while any(worker.poll() is None for worker in workers) and time.monotonic() < deadline:
            samples.append(
                conn.execute(
                    "SELECT coalesce(sum(spent), 0), coalesce(sum(reserved), 0), coalesce(sum(in_flight), 0), "
                    "coalesce(sum(in_flight > 0), 0) FROM run_spend WHERE run_id = ?",
                    (run_id,),
                ).fetchone()
            )
            time.sleep(0.001)
        final = conn.execute(
            "SELECT sum(spent), sum(reserved), sum(in_flight), count(*) FROM run_spend WHERE run_id = ?", (run_id,)
        ).fetchone()
    assert [worker.wait(timeout=30) for worker in workers] == [0, 0, 0]
    results = [json.loads((tmp_path / f"out{w}.json").read_text()) for w in range(3)]
    costs = [cost for result in results for cost in result["costs"]]

    # Every sample: the spend and every reservation within the budget, or one request alone.
    assert len(samples) > 50
    for spent, reserved, in_flight, _processes in samples:
        assert spent + reserved <= limit + 1e-9 or in_flight <= 1, (spent, reserved, in_flight)
    assert max(s[3] for s in samples) >= 2  # two processes had requests in flight at once
    assert max(s[2] for s in samples) >= 10  # and the budget let many go at once
    # The ledger's spend is exactly what the processes were charged, nothing held at the end.
    spent, reserved, in_flight, rows = final
    assert rows == 3 and (reserved, in_flight) == (0.0, 0)
    assert spent == pytest.approx(sum(costs), abs=1e-9)
    assert all(result["costs"] for result in results)  # each process spent some of it
    # Reached, and passed only by the request that went alone.
    assert limit <= spent and spent - max(costs) < limit
    ends = [end for result in results for end in result["ends"]]
    assert len(ends) == 36 and all(end.startswith("budget reached ($") and "of $3)" in end for end in ends), ends


def test_a_dead_process_keeps_its_spend_and_holds_no_reservation(tmp_path: Path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()

    async def main() -> None:
        db, coordinator, ledger = await _ledger(tmp_path / "ledger.sqlite", "run-3", "gw1")

        def row(conn: sqlite3.Connection, owner: str, pid: int, spent: float, reserved: float, in_flight: int) -> None:
            conn.execute(
                "INSERT INTO run_spend (run_id, owner, host, pid, spent, reserved, in_flight, updated) "
                "VALUES ('run-3', ?, ?, ?, ?, ?, ?, ?)",
                (owner, coordinator.host, pid, spent, reserved, in_flight, time.time()),
            )

        # A killed worker spent $1 and died with $5 reserved for 3 requests.
        await db.run(lambda conn: row(conn, "killed", dead.pid, 1.0, 5.0, 3))
        first = await ledger.reserve(0.5, 2.0)
        assert first.admitted and first.spent == 1.0 and (first.reserved, first.in_flight) == (0.0, 0)
        # A live one (this pid, another engine) holds $0.8: $1 + $0.5 + $0.8 + $0.5 is past $2.
        await db.run(lambda conn: row(conn, "live", coordinator.pid, 0.0, 0.8, 1))
        second = await ledger.reserve(0.5, 2.0)
        assert not second.admitted and second.reserved == pytest.approx(1.3) and second.in_flight == 2
        await ledger.settle(0.5, 0.25)
        total = await ledger.total()
        assert (total.spent, total.reserved, total.in_flight) == (pytest.approx(1.25), pytest.approx(0.8), 1)
        killed = await db.run(
            lambda conn: conn.execute(
                "SELECT spent, reserved, in_flight FROM run_spend WHERE owner = 'killed'"
            ).fetchone()
        )
        assert killed == (1.0, 0.0, 0)  # its spend counts, its reservations were let go
        # Closing gives back what this process still held, and keeps what it spent.
        assert (await ledger.reserve(0.1, 5.0)).admitted
        await coordinator.close()
        mine = await db.run(
            lambda conn: conn.execute(
                "SELECT spent, reserved, in_flight FROM run_spend WHERE owner = ?", (coordinator.owner,)
            ).fetchone()
        )
        assert mine == (0.25, 0.0, 0)  # the $0.1 reserved last is let go
        db.close()

    asyncio.run(main())


def test_two_engines_of_one_run_send_within_the_budget(make_engine, server):
    """Two coordinated engines of one run over the fake server: what it answered costs at most the
    budget, plus the one request that went alone when nothing else was in flight."""
    server.latency_ms = 40
    limit, per_mtok = 1.0, 1000.0
    engines = [
        make_engine(
            run_id="run-engines",
            worker_id=f"gw{w}",
            worker_count=2,
            coordinate=True,
            budget_usd=limit,
            prices={MODEL: Price(per_mtok, per_mtok)},
        )
        for w in range(2)
    ]
    filler = " ".join(["word"] * 20)

    async def ask(engine, w: int) -> list[str]:
        async def one(n: int) -> str:
            try:
                await engine.complete(request(MODEL, f"question {w}-{n} {filler}", max_tokens=50))
            except ModelCallError as exc:
                return str(exc)
            return "ok"

        return await asyncio.gather(*(one(n) for n in range(40)))

    futures = [engine.run_coroutine(ask(engine, w)) for w, engine in enumerate(engines)]
    outcomes = [f.result(timeout=120) for f in futures]
    costs = [
        (max(1, len(r.last_user.split())) + len(f"echo: {r.last_user}".split())) * per_mtok / 1e6
        for r in server.requests
        if r.outcome == "200"
    ]
    assert limit <= sum(costs) and sum(costs) - max(costs) < limit
    assert sum(costs) == pytest.approx(sum(engine.budget.spent_here for engine in engines), abs=1e-9)
    assert all(o.count("ok") for o in outcomes)  # both engines sent some
    refused = [o for out in outcomes for o in out if o != "ok"]
    assert refused and all(o.startswith("budget reached ($") for o in refused), refused
    assert len(refused) + len(costs) == 80
    assert server.max_in_flight >= 4


@pytest.mark.parametrize("shared", [False, True], ids=["one process", "ledger"])
def test_an_item_holds_its_most_samples_draws_them_and_gives_back_the_rest(tmp_path: Path, shared: bool):
    """``Budget.holding`` (docs/sampling.md, 'The plan and the budget'): an item's generations
    draw from the room it holds and never wait or are refused; what they leave is released;
    an item whose hold does not fit while nothing else is in flight is refused before anything."""
    one = request(MODEL, "sample", purpose="generate")

    async def main() -> None:
        budget = Budget(1.0, PriceBook(PRICES))
        closing = []
        if shared:
            db, coordinator, ledger = await _ledger(tmp_path / "ledger.sqlite", "run-1", "gw0")
            budget.use_ledger(ledger, poll_s=0.01)
            closing = [coordinator, db]
        each = budget.estimate(one, 100)  # $0.1 and a little: input and 100 output tokens
        async with budget.holding(one, 100, 5):
            assert await budget.room() == pytest.approx(1.0 - 5 * each)
            for n in range(3):  # three samples, each drawn from the hold
                reserved = await budget.reserve(one, 100)
                assert reserved == pytest.approx(each)
                # nothing reserved anew; each settled sample's reservation became its cost
                assert await budget.room() == pytest.approx(1.0 - 5 * each + n * (each - 0.05))
                await budget.settle(reserved, 0.05)
        assert await budget.room() == pytest.approx(1.0 - 0.15)  # the two samples not taken are free again
        with pytest.raises(
            BudgetReached,
            match=r"^budget: an item.s most samples may cost \$0\.89.*than the \$0\.8500 left of \$1; not started",
        ):
            async with budget.holding(one, 100, 8):
                raise AssertionError("not started")
        assert await budget.room() == pytest.approx(1.0 - 0.15)
        if shared:
            total = await ledger.total()
            assert (total.spent, total.reserved, total.in_flight) == (pytest.approx(0.15), 0.0, 0)
            await closing[0].close()
            closing[1].close()

    asyncio.run(main())
