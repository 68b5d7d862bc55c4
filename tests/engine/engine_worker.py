"""A process running engine calls, for the multi-process tests (not collected: no test_ prefix).

``python engine_worker.py CONFIG.json``; CONFIG: url (fake server), cache_dir, prompts, model,
out (result file), and optional run_id, worker_id, worker_count, cache_mode, cache_store,
coordinate, coordination_dir, claim_lease_s, provider_concurrency, ready/go (barrier files).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.engine import ChatMessage, Engine, EngineSettings, ModelCallError, ModelRequest
from tests.fakeserver import provider_env


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    settings = EngineSettings(
        cache_dir=config["cache_dir"],
        cache_mode=config.get("cache_mode", "rw"),
        cache_store=config.get("cache_store", "sqlite"),
        env=provider_env(config["url"]),
        run_id=config.get("run_id"),
        worker_id=config.get("worker_id", "gw0"),
        worker_count=config.get("worker_count", 1),
        coordinate=config.get("coordinate"),
        coordination_dir=config.get("coordination_dir"),
        claim_lease_s=config.get("claim_lease_s", 30.0),
        provider_concurrency=config.get("provider_concurrency", {}),
        backoff_base_s=0.01,
    )
    engine = Engine(settings).start()
    if config.get("ready"):
        Path(config["ready"]).write_text("ready")
    if config.get("go"):
        while not os.path.exists(config["go"]):
            time.sleep(0.01)
    model = ModelSpec(id=config.get("model", "openai:gpt-4o-mini"))

    async def one(prompt: str):
        request = ModelRequest(model=model, messages=(ChatMessage("user", prompt),), temperature=0)
        try:
            reply = await engine.complete(request)
        except ModelCallError as exc:
            return {"error": str(exc)}
        return {"text": reply.text, "cached": reply.cached}

    async def run_all():
        return await asyncio.gather(*(one(p) for p in config["prompts"]))

    results = engine.run_coroutine(run_all()).result()
    stats = engine.stats
    engine.close()
    Path(config["out"]).write_text(
        json.dumps(
            {
                "results": dict(zip(config["prompts"], results)),
                "http_requests": stats["http_requests"],
                "from_other_workers": stats["from_other_workers"],
                "cache_hits": stats["cache_hits"],
            }
        )
    )


if __name__ == "__main__":
    main()
