"""A process evaluating a run's items through the item scheduler, for the multi-process tests
(not collected: no test_ prefix).

``python schedule_worker.py CONFIG.json``; CONFIG: url (fake server), cache_dir, run_id,
worker_id, worker_count, items (how many prompts), ask (the item indices whose results this
process asks for, in order), drain (close draining, default true), out, and optional ready/go
barrier files.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pytest_weval.blueprint import Blueprint, parse_blueprint_text
from pytest_weval.engine import Engine, EngineSettings
from pytest_weval.run.pipeline import ItemWork, Pipeline, PipelineSettings
from pytest_weval.run.schedule import ItemScheduler
from tests.fakeserver import provider_env


def blueprint_text(items: int) -> str:
    lines = ["models: [openai:sched-model]", "---"]
    for n in range(items):
        lines += [f"- id: p{n}", f"  prompt: question {n}", "  should:", f"    - $contains: question {n}"]
    return "\n".join(lines) + "\n"


def works_of(blueprint: Blueprint, nodeid: str = "sched.yml::{id}") -> list[ItemWork]:
    """An item per prompt of ``blueprint``, for its first model; ``nodeid`` is formatted with
    ``id`` (the prompt's) and ``i`` (its place)."""
    return [
        ItemWork(
            nodeid=nodeid.format(id=prompt.id, i=i),
            blueprint=blueprint,
            prompt=prompt,
            model=blueprint.models[0],
            temperature=None,
            system_index=0,
        )
        for i, prompt in enumerate(blueprint.prompts)
    ]


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    blueprint = parse_blueprint_text(blueprint_text(config["items"]), fmt="yaml", rel_path="sched.yml")
    works = works_of(blueprint)
    engine = Engine(
        EngineSettings(
            cache_dir=config["cache_dir"],
            env=provider_env(config["url"]),
            run_id=config["run_id"],
            worker_id=config["worker_id"],
            worker_count=config["worker_count"],
            provider_concurrency={"openai": 8},
            backoff_base_s=0.01,
        )
    ).start()
    if config.get("ready"):
        Path(config["ready"]).write_text("ready")
    if config.get("go"):
        while not os.path.exists(config["go"]):
            time.sleep(0.01)
    pipeline = Pipeline(engine, PipelineSettings())
    scheduler = ItemScheduler(
        engine, pipeline, works, window=config.get("window", 8), exchange=config["worker_count"] > 1
    )
    results = {}
    for index in config["ask"]:
        result = scheduler.result(works[index].nodeid)
        results[result.nodeid] = {"outcome": result.outcome, "score": result.score, "response": result.response}
    scheduler.close(drain=config.get("drain", True))
    stats = engine.stats
    engine.close()
    Path(config["out"]).write_text(
        json.dumps(
            {
                "results": results,
                "evaluated_here": scheduler.evaluated_here,
                "received": scheduler.received,
                "http_requests": stats["http_requests"],
            }
        )
    )


if __name__ == "__main__":
    main()
