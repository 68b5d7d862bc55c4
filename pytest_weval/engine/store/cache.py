"""The response cache: one interface, pluggable stores (docs/rulings.md, ruling 19).

Key = sha256 of a canonical JSON of everything that changes the answer: the adapter's identity
(provider, endpoint kind, model name, or a custom model's definition without header values),
the messages (system included, as a leading system message), temperature and max_tokens.
Never a key or header value. Modes: rw (read + write), ro (replay: read only, a miss is an
error and nothing is sent), refresh (write only), off (neither). ``no_cache`` requests bypass
the store both ways.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from typing import Any, Protocol

from pytest_weval.engine.request import ModelReply, ModelRequest

log = logging.getLogger("pytest_weval.engine")
KEY_VERSION = 1


def _number(value: float | int | None) -> float | int | None:
    if isinstance(value, float) and value.is_integer():
        return int(value)  # 0 and 0.0 give the same key
    return value


def canonical_json(payload: Any) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cache_key(identity: dict[str, Any], request: ModelRequest) -> tuple[str, dict[str, Any]]:
    """(key, payload). The payload is also the human-readable request summary in the store."""
    payload = {
        "v": KEY_VERSION,
        **identity,
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "temperature": _number(request.temperature),
        "max_tokens": _number(request.max_tokens),
    }
    if request.sample:  # sample 0 keeps the key it always had, so existing recordings still replay
        payload["sample"] = request.sample
    digest = hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()
    return digest, payload


class Store(Protocol):
    """Where entries live. Entries are dicts: key, model, request (the key payload, for
    humans), text, input_tokens, output_tokens, created (epoch seconds). Stores do their own
    disk work off the event loop."""

    async def get(self, key: str) -> dict[str, Any] | None: ...

    async def put(self, entry: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


def make_entry(key: str, model_id: str, summary: dict[str, Any], reply: ModelReply) -> dict[str, Any]:
    return {
        "key": key,
        "model": model_id,
        "request": summary,
        "text": reply.text,
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens,
        "created": time.time(),
    }


def reply_from_entry(entry: dict[str, Any], cached: bool = True) -> ModelReply:
    return ModelReply(
        text=entry["text"],
        input_tokens=int(entry.get("input_tokens") or 0),
        output_tokens=int(entry.get("output_tokens") or 0),
        cached=cached,
    )


class ResponseCache:
    def __init__(self, store: Store | None, mode: str):
        self.store = store
        self.mode = mode

    def readable(self, request: ModelRequest) -> bool:
        return self.store is not None and self.mode in ("rw", "ro") and not request.no_cache

    def writable(self, request: ModelRequest) -> bool:
        return self.store is not None and self.mode in ("rw", "refresh") and not request.no_cache

    async def get(self, key: str) -> dict[str, Any] | None:
        if self.store is None:
            return None
        try:
            return await self.store.get(key)
        except Exception as exc:  # noqa: BLE001 - an unreadable entry is a miss, not a crash
            log.warning("weval cache: cannot read entry %s: %s", key, exc)
            return None

    async def put(self, entry: dict[str, Any]) -> bool:
        if self.store is None:
            return False
        try:
            await self.store.put(entry)
            return True
        except Exception as exc:  # noqa: BLE001 - a failed write costs a re-request later
            log.warning("weval cache: cannot write entry %s: %s", entry.get("key"), exc)
            return False
