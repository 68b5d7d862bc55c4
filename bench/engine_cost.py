"""What the engine's thread spends an item, without the wire: the scheduler, the pipeline and the
request's stages, around an HTTP exchange that answers at once.

    python bench/engine_cost.py [--items 1000] [--runs 5]

The workload of ``bench/item_cost.py`` (one prompt, one ``$contains`` point an item, cache off,
``--weval-concurrency 20``) goes through an ``ItemScheduler``, a ``Pipeline`` and an ``Engine`` as a
run does, pytest's thread asking for each result in turn; only the engine's wire is replaced by
one that answers each request after 5 ms with the fake server's echo, in this process. No sockets,
no server, no aiohttp, no pytest: what is left is the engine thread's own CPU an item
(``time.thread_time`` in the thread), which a whole run cannot resolve on a shared machine.
Prints each run's figure, sorted; compare runs of two checkouts alternating, in one sitting.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_weval.blueprint import parse_blueprint_text
from pytest_weval.engine import Engine, EngineSettings
from pytest_weval.engine.transport.http import Exchange
from pytest_weval.run.pipeline import ItemWork, Pipeline, PipelineSettings
from pytest_weval.run.schedule import ItemScheduler


class EchoWire:
    """The engine's wire (``transport/http.py``, ``Wire``), answering as the fake server does."""

    async def post(self, url: str, headers: Mapping[str, str], body: bytes, timeout: float, limit: int) -> Exchange:
        data = json.loads(body)
        await asyncio.sleep(0.005)
        text = "echo: " + data["messages"][-1]["content"]
        reply = {
            "id": "bench",
            "object": "chat.completion",
            "model": data["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 12, "total_tokens": 22},
        }
        return Exchange(200, {"content-type": "application/json"}, bytearray(json.dumps(reply).encode()), "utf-8")

    async def aclose(self) -> None:
        return None


def works(tag: str, items: int) -> list[ItemWork]:
    lines = [f"title: Engine cost {tag}", "models: [openai:bench-model]", "---"]
    for n in range(items):
        lines += [
            f"- id: q{n}",
            f"  prompt: Question {tag} {n}, explain topic {n}.",
            "  should:",
            f"    - $contains: topic {n}",
        ]
    blueprint = parse_blueprint_text("\n".join(lines) + "\n", fmt="yaml", rel_path=f"{tag}.yml")
    model = blueprint.models[0]
    return [ItemWork(f"{tag}.yml::{p.id}", blueprint, p, model, None, 0) for p in blueprint.prompts]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    settings = EngineSettings(
        env={"OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
        cache_mode="off",
        concurrency=20,
    )
    with Engine(settings) as engine:
        engine.sender.wire = EchoWire()  # type: ignore[assignment]
        pipeline = Pipeline(engine, PipelineSettings())

        async def thread_cpu() -> float:
            return time.thread_time()

        def one_run(tag: str, items: int) -> float:
            batch = works(tag, items)  # distinct requests each run: cache off still answers a repeat from memory
            before = engine.run_coroutine(thread_cpu()).result()
            scheduler = ItemScheduler(engine, pipeline, batch, window=256)
            for work in batch:
                scheduler.hurry(work.nodeid)
                result = scheduler.result(work.nodeid)
                assert result.outcome == "passed", (result.outcome, result.error)
            scheduler.close(drain=True)
            return (engine.run_coroutine(thread_cpu()).result() - before) / items

        one_run("warm-up", 300)  # first-use imports and price tables, not counted
        per_item = [one_run(f"run{n}", args.items) * 1e6 for n in range(args.runs)]
    print("engine thread CPU per item (µs):", ", ".join(f"{v:.1f}" for v in sorted(per_item)))


if __name__ == "__main__":
    main()
