"""What the pipeline costs an item, without the engine: CPU per item of ``Pipeline.evaluate``.

    python bench/pipeline_cost.py [--items 4000] [--runs 5]

One blueprint of ``--items`` prompts on one model, one ``$contains`` point each (the workload of
``bench/item_cost.py``), evaluated one item at a time through a client that answers at once in
this process: no HTTP, no engine thread, no pytest. What is left is the pipeline's own work per
item (its result record, the generation request, the point's scoring, the usage), which a whole
run cannot resolve on a shared machine. Prints each run's CPU per item, sorted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_weval.blueprint import parse_blueprint_text
from pytest_weval.engine.request import ModelReply, ModelRequest
from pytest_weval.run.pipeline import ItemWork, Pipeline, PipelineSettings


class Echo:
    """Answers every request at once with its last message, as the fake server does."""

    async def complete(self, request: ModelRequest) -> ModelReply:
        return ModelReply(text=f"echo: {request.messages[-1].content}", input_tokens=10, output_tokens=12)


def works(items: int) -> list[ItemWork]:
    lines = ["title: Pipeline cost", "models: [openai:bench-model]", "---"]
    for n in range(items):
        lines += [
            f"- id: q{n}",
            f"  prompt: Question {n}, explain topic {n}.",
            "  should:",
            f"    - $contains: topic {n}",
        ]
    blueprint = parse_blueprint_text("\n".join(lines) + "\n", fmt="yaml", rel_path="cost.yml")
    model = blueprint.models[0]
    return [
        ItemWork(f"cost.yml::{p.id}", blueprint, p, model, None, 0, priority=i) for i, p in enumerate(blueprint.prompts)
    ]


async def evaluate(pipeline: Pipeline, batch: list[ItemWork]) -> None:
    for work in batch:
        result = await pipeline.evaluate(work)
        assert result.outcome == "passed", result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=4000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    batch = works(args.items)
    pipeline = Pipeline(Echo(), PipelineSettings())
    asyncio.run(evaluate(pipeline, batch[:200]))  # first-use imports and caches, not counted
    per_item = []
    for _ in range(args.runs):
        cpu = time.process_time()
        asyncio.run(evaluate(pipeline, batch))
        per_item.append((time.process_time() - cpu) / len(batch) * 1e6)
    print("pipeline CPU per item (µs):", ", ".join(f"{v:.1f}" for v in sorted(per_item)))


if __name__ == "__main__":
    main()
