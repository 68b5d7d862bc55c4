"""Diff-friendly files store: one small pretty JSON file per entry, for recordings committed
with the examples (docs/rulings.md, ruling 19). ``<dir>/<key[:2]>/<key>.json``, written atomically
(temp file in the same folder + ``os.replace``), so a reader or a SIGKILL never sees half a file.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as _dt
import json
import re
from pathlib import Path
from typing import Any

from pytest_weval.engine.store.common import NOT_NOW, NotNow
from pytest_weval.files import write_atomic

_KEY = re.compile(r"[0-9a-f]{64}\Z")


class FilesStore:
    def __init__(self, directory: Path | str):
        self.directory = Path(directory)
        self._executor = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="weval-files")

    def path_for(self, key: str) -> Path:
        if not _KEY.match(key):
            raise ValueError(f"not a cache key: {key!r}")
        return self.directory / key[:2] / f"{key}.json"

    def get_sync(self, key: str) -> dict[str, Any] | None:
        try:
            with open(self.path_for(key), encoding="utf-8") as handle:
                data = json.load(handle)
        except FileNotFoundError:
            return None
        reply = data.get("reply") or {}
        return {
            "key": data.get("key", key),
            "model": data.get("model"),
            "request": data.get("request"),
            "text": reply.get("text", ""),
            "input_tokens": (reply.get("usage") or {}).get("input_tokens", 0),
            "output_tokens": (reply.get("usage") or {}).get("output_tokens", 0),
            "created": data.get("created"),
        }

    def put_sync(self, entry: dict[str, Any]) -> None:
        path = self.path_for(entry["key"])
        path.parent.mkdir(parents=True, exist_ok=True)
        created = entry.get("created")
        document = {
            "key": entry["key"],
            "model": entry["model"],
            "created": _dt.datetime.fromtimestamp(created, _dt.timezone.utc).isoformat(timespec="microseconds")
            if isinstance(created, (int, float))
            else created,
            "request": entry["request"],
            "reply": {
                "text": entry["text"],
                "usage": {
                    "input_tokens": int(entry.get("input_tokens") or 0),
                    "output_tokens": int(entry.get("output_tokens") or 0),
                },
            },
        }
        text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        write_atomic(path, text.encode("utf-8"), durable=True)

    async def get(self, key: str) -> dict[str, Any] | None:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self.get_sync, key)

    get_reply = get  # a file is read whole: its request costs nothing more

    def get_reply_now(self, key: str) -> NotNow:
        return NOT_NOW  # files are read on the store's threads

    async def put(self, entry: dict[str, Any]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, self.put_sync, entry)

    def close(self) -> None:
        self._executor.shutdown(wait=True)
