"""Shared helpers for the scoring tests: vector loading, contexts, and a loopback HTTP service
with an executor (stdlib only) for the ``$call`` vectors. (A uniquely named module: test
directories are not packages.)"""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pytest_weval.scoring import ExternalRequest, PointContext

SPEC = Path("/work/shared/spec")
VECTORS = SPEC / "vectors"


def load_vectors(name: str, kind: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """(test id, case) pairs; ids carry the index and the reference source line."""
    cases = json.loads((VECTORS / name).read_text(encoding="utf-8"))
    out = []
    for index, case in enumerate(cases):
        if kind is not None and case.get("kind") != kind:
            continue
        source = case.get("source", "")
        label = source.rsplit("/", 1)[-1] if source else case.get("fn", "")
        out.append((f"{index:03d}-{label}", case))
    return out


def make_context(case: dict[str, Any], **overrides: Any) -> PointContext:
    ctx = case.get("context") or {}
    values: dict[str, Any] = dict(
        messages=ctx.get("messages", []),
        model_id=ctx.get("modelId", "test-model"),
        prompt_id=ctx.get("promptId", "test-prompt"),
        config=ctx.get("config", {}),
        tool_calls=case.get("toolCalls"),
    )
    values.update(overrides)
    return PointContext(**values)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class LoopbackService:
    """Serves canned replies by path and records every request it gets."""

    base_url: str
    routes: dict[str, tuple[int, Any]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)

    def reset(self) -> None:
        self.routes.clear()
        self.requests.clear()

    def serve(self, path: str, status: int, body: Any) -> None:
        self.routes[path] = (status, body)

    def json_bodies(self) -> list[Any]:
        return [json.loads(r.body) if r.body else None for r in self.requests]


def _handler(service: LoopbackService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _reply(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            service.requests.append(Recorded(self.command, self.path, dict(self.headers.items()), body))
            status, payload = service.routes.get(self.path, (404, "no such route"))
            data = payload if isinstance(payload, str) else json.dumps(payload)
            raw = data.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = do_PUT = _reply

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

    return Handler


def run_loopback() -> Iterator[LoopbackService]:
    service = LoopbackService(base_url="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(service))
    service.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield service
    finally:
        server.shutdown()
        server.server_close()


def _send(request: ExternalRequest) -> tuple[int, str]:
    data = None
    if request.json_body is not None:
        data = json.dumps(request.json_body).encode("utf-8")
    req = urllib.request.Request(request.url, data=data, headers=dict(request.headers), method=request.method)
    try:
        with urllib.request.urlopen(req, timeout=request.timeout_s) as reply:
            return reply.status, reply.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8")


async def stdlib_executor(request: ExternalRequest) -> tuple[int, str]:
    """A minimal HTTP executor: the request in a worker thread, no retries, no cache."""
    return await asyncio.to_thread(_send, request)


def replace_mock(value: Any, base_url: str) -> Any:
    """Point the vectors' ``http://MOCK/...`` URLs at the loopback service."""
    if isinstance(value, str):
        return value.replace("http://MOCK", base_url)
    if isinstance(value, list):
        return [replace_mock(v, base_url) for v in value]
    if isinstance(value, dict):
        return {k: replace_mock(v, base_url) for k, v in value.items()}
    return value
