"""A process spending from a shared budget, for the ledger tests (not collected: no test_ prefix).

``python budget_worker.py CONFIG.json``; CONFIG: path (the SQLite file), run_id, worker_id, limit,
tasks (concurrent requesters), seed, out (result file), ready (a file written once the ledger is
open), go (a file to wait for, so the processes start together). Each task reserves through ``Budget`` (a ledger shared with the other processes),
holds the reservation a few milliseconds as a request in flight would, then settles it at a cost
between 20% and 100% of what was reserved, until ``BudgetReached``. The result file lists every
cost settled here and how each task ended.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.engine import ChatMessage, ModelRequest
from pytest_weval.engine.claims import Coordinator, SpendLedger
from pytest_weval.engine.errors import BudgetReached
from pytest_weval.engine.prices import Budget, Price, PriceBook
from pytest_weval.engine.store.db import SqliteDB

MODEL = "openai:ledger-model"
PRICES = {MODEL: Price(1000.0, 1000.0)}  # USD per million tokens: a reservation is about $0.11
MAX_OUTPUT_TOKENS = 100


def request(n: int) -> ModelRequest:
    return ModelRequest(model=ModelSpec(id=MODEL), messages=(ChatMessage("user", f"question {n}"),))


async def spend(config: dict) -> dict:
    db = SqliteDB(config["path"])
    coordinator = Coordinator(db, run_id=config["run_id"], worker_id=config["worker_id"], lease_s=30, poll_s=0.02)
    await coordinator.start()
    budget = Budget(config["limit"], PriceBook(PRICES))
    budget.use_ledger(SpendLedger(coordinator), poll_s=0.02)
    rng = random.Random(config["seed"])
    costs: list[float] = []
    reserved_amounts: list[float] = []

    async def task(t: int) -> str:
        n = 0
        while True:
            n += 1
            try:
                reserved = await budget.reserve(request(t * 1000 + n), MAX_OUTPUT_TOKENS)
            except BudgetReached as exc:
                return str(exc)
            reserved_amounts.append(reserved)
            await asyncio.sleep(rng.uniform(0.005, 0.05))  # the request in flight
            cost = reserved * rng.uniform(0.2, 1.0)
            await budget.settle(reserved, cost)
            costs.append(cost)

    await budget.settle(await budget.reserve(request(0), 0), 0.0)  # the file is open, the row exists
    Path(config["ready"]).write_text("ready")
    while not os.path.exists(config["go"]):
        await asyncio.sleep(0.005)
    ends = await asyncio.gather(*(task(t) for t in range(config["tasks"])))
    await coordinator.close()
    db.close()
    return {"costs": costs, "reserved": reserved_amounts, "ends": ends, "spent_here": budget.spent_here}


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    started = time.monotonic()
    result = asyncio.run(spend(config))
    result["seconds"] = time.monotonic() - started
    Path(config["out"]).write_text(json.dumps(result))


if __name__ == "__main__":
    main()
