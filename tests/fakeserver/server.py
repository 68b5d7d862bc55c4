"""The fake server's implementation (see the package docstring)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import email.utils
import hashlib
import json
import math
import os
import random
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

from tests.fakeserver.batch import SETTINGS as BATCH_SETTINGS
from tests.fakeserver.batch import BatchAPI, BatchJob
from tests.fakeserver.caching import FLEX_UNAVAILABLE, PromptCache, ServiceTiers

FAULTS = ("500", "429", "malformed", "hang", "drop", "blank")

# Where each provider's base URL points on the fake server (so tests can assert the path).
PROVIDER_PATHS = {
    "OPENAI_BASE_URL": "/openai/v1",
    "ANTHROPIC_BASE_URL": "/anthropic",
    "GEMINI_BASE_URL": "/google",
    "MISTRAL_BASE_URL": "/mistral/v1",
    "TOGETHER_BASE_URL": "/together/v1",
    "XAI_BASE_URL": "/xai/v1",
    "OPENROUTER_BASE_URL": "/openrouter/api/v1",
}
DUMMY_KEYS = {
    "OPENAI_API_KEY": "test-openai-key",
    "ANTHROPIC_API_KEY": "test-anthropic-key",
    "GEMINI_API_KEY": "test-gemini-key",
    "MISTRAL_API_KEY": "test-mistral-key",
    "TOGETHER_API_KEY": "test-together-key",
    "XAI_API_KEY": "test-xai-key",
    "OPENROUTER_API_KEY": "test-openrouter-key",
}


def provider_env(url: str, keys: bool = True) -> dict[str, str]:
    env = {name: url + path for name, path in PROVIDER_PATHS.items()}
    if keys:
        env.update(DUMMY_KEYS)
    return env


@dataclasses.dataclass
class Rule:
    reply: str | None = None  # "{last}" and "{model}" are filled in
    model: str | None = None  # exact model name in the request
    contains: str | None = None  # substring of the last user message
    path: str | None = None  # substring of the request path
    fault: str | None = None  # one of FAULTS
    status: int | None = None  # an error status with a JSON error body
    retry_after: str | None = None  # Retry-After header value (with 429/status)
    times: int | None = None  # only the first N matching requests
    latency_ms: float | None = None
    echo_header: str | None = None  # the error body quotes this request header's value
    body: str | None = None  # raw error body
    # A flaky model: the reply leaves out the text ``flaky_term`` with probability ``flaky_rate``,
    # decided per request by a hash of (flaky_seed, model, last user message, how many times this
    # model was asked it before), so a run sees the same flakiness whatever order its requests
    # arrive in, and another seed is another run of the same model.
    flaky_term: str | None = None
    flaky_rate: float | None = None
    flaky_seed: int | None = None

    def matches(self, model: str | None, last_user: str, path: str) -> bool:
        if self.times is not None and self.times <= 0:
            return False
        if self.model is not None and self.model != model:
            return False
        if self.contains is not None and self.contains not in last_user:
            return False
        return not (self.path is not None and self.path not in path)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rule:
        return cls(**{f.name: data.get(f.name) for f in dataclasses.fields(cls)})


@dataclasses.dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw_body: str
    model: str | None
    last_user: str
    outcome: str  # "200", "500", "hang", ...
    at: float

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _last_user(path: str, body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    if isinstance(body.get("prompt"), str):
        return body["prompt"]
    if path.endswith("/embeddings") and isinstance(body.get("input"), str):
        return body["input"]
    if isinstance(body.get("messages"), list):
        for message in reversed(body["messages"]):
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, list):  # content blocks (a prompt-cache mark splits the text)
                    return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
                return str(content or "")
    if isinstance(body.get("contents"), list):
        for content in reversed(body["contents"]):
            if isinstance(content, dict) and content.get("role") == "user":
                return "".join(str(p.get("text", "")) for p in content.get("parts") or [])
    return ""


def _model(path: str, body: Any) -> str | None:
    if isinstance(body, dict) and isinstance(body.get("model"), str):
        return body["model"]
    if ":generateContent" in path and "/models/" in path:
        return path.split("/models/", 1)[1].split(":generateContent", 1)[0]
    return None


def _words(text: str) -> int:
    return len(text.split())


def default_vector(text: str, size: int = 8) -> list[float]:
    """The embedding of a text no test configured: ``size`` numbers drawn from its hash."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [(digest[i % len(digest)] - 127.5) / 127.5 for i in range(size)]


def render_embedding(model: str | None, vector: list[float], text: str) -> dict[str, Any]:
    tokens = max(1, _words(text))
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": 0, "embedding": vector}],
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def render_reply(path: str, model: str | None, text: str, prompt_text: str) -> dict[str, Any]:
    usage_in, usage_out = max(1, _words(prompt_text)), _words(text)
    if path.endswith("/chat/completions"):
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out, "total_tokens": usage_in + usage_out},
        }
    if path.endswith("/completions"):
        return {
            "id": "cmpl-fake",
            "object": "text_completion",
            "model": model,
            "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out},
        }
    if path.endswith("/messages"):
        return {
            "id": "msg-fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": usage_in, "output_tokens": usage_out},
        }
    if ":generateContent" in path:
        return {
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": usage_in, "candidatesTokenCount": usage_out},
        }
    # Anything else (custom endpoints): OpenAI chat shape.
    return render_reply("/chat/completions", model, text, prompt_text)


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    429: "Too Many Requests",
    529: "Overloaded",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class RateLimiter:
    """A token bucket of ``rate`` requests per second holding up to ``burst``, answering as a
    provider does: rate headers on every reply, 429 with a wait once the bucket is empty.

    ``headers``: "openai" (``x-ratelimit-*``, reset as ``1s``/``20ms``), "anthropic"
    (``anthropic-ratelimit-requests-*``, reset as an RFC 3339 time) or None. ``retry_after``:
    how a 429 says how long to wait: "seconds" (``Retry-After: 1``), "ms" (``retry-after-ms``),
    "date" (``Retry-After`` as an HTTP date) or None (only the reset headers say it).
    """

    def __init__(
        self,
        rate: float,
        burst: int | None = None,
        headers: str | None = "openai",
        retry_after: str | None = "seconds",
        status: int = 429,
    ):
        self.rate = rate
        self.burst = burst if burst is not None else max(1, int(rate))
        self.headers = headers
        self.retry_after = retry_after
        self.status = status
        self.tokens = float(self.burst)
        self.stamp = time.monotonic()
        self.refused = 0
        self.served = 0

    def take(self) -> tuple[bool, dict[str, str]]:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        allowed = self.tokens >= 1
        if allowed:
            self.tokens -= 1
            self.served += 1
        else:
            self.refused += 1
        headers = self._rate_headers()
        if not allowed:
            wait = (1 - self.tokens) / self.rate
            if self.retry_after == "seconds":
                headers["Retry-After"] = str(max(1, math.ceil(wait)))
            elif self.retry_after == "ms":
                headers["retry-after-ms"] = f"{wait * 1000:.0f}"
            elif self.retry_after == "date":
                headers["Retry-After"] = email.utils.formatdate(time.time() + max(1.0, wait), usegmt=True)
        return allowed, headers

    def _rate_headers(self) -> dict[str, str]:
        to_full = (self.burst - self.tokens) / self.rate
        remaining = str(int(self.tokens))
        if self.headers == "openai":
            return {
                "x-ratelimit-limit-requests": str(self.burst),
                "x-ratelimit-remaining-requests": remaining,
                "x-ratelimit-reset-requests": f"{to_full * 1000:.0f}ms" if to_full < 1 else f"{to_full:.3f}s",
                "x-ratelimit-limit-tokens": "1000000",
                "x-ratelimit-remaining-tokens": "999000",
                "x-ratelimit-reset-tokens": "0s",
            }
        if self.headers == "anthropic":
            when = _dt.datetime.fromtimestamp(time.time() + to_full, tz=_dt.timezone.utc)
            return {
                "anthropic-ratelimit-requests-limit": str(self.burst),
                "anthropic-ratelimit-requests-remaining": remaining,
                "anthropic-ratelimit-requests-reset": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            }
        return {}


class FakeServer:
    def __init__(
        self,
        rules: list[Rule] | None = None,
        *,
        latency_ms: float = 0.0,
        fault_rate: float = 0.0,
        fault_kinds: tuple[str, ...] = ("500",),
        seed: int = 0,
        port: int = 0,
        host: str = "127.0.0.1",
        hang_s: float = 3600.0,
        rate_limit: RateLimiter | None = None,
        batch_delay_s: float = 0.2,
        batch_expire_rate: float = 0.0,
        batch_seed: int = 0,
    ):
        self.rules = list(rules or [])
        self.latency_ms = latency_ms
        self.fault_rate = fault_rate
        self.fault_kinds = tuple(fault_kinds)
        self.rng = random.Random(seed)
        self.host = host
        self.port = port
        self.hang_s = hang_s
        self.rate_limit = rate_limit
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._handlers: set[asyncio.Task] = set()
        self.in_flight = 0
        self.max_in_flight = 0  # most model requests being answered at once
        # GET .../models (the providers' model lists): provider -> the ids it lists. A provider
        # not here answers 404, as a server that lists nothing does. Logged apart from the
        # model requests (``listings``), so counts of those stay as they were.
        self.model_lists: dict[str, list[str]] = {}
        self.list_status: int | None = None  # every listing answers this error status instead
        self.list_page_size = 2  # Anthropic's and Gemini's lists come in pages this long
        self.unlisted_models: list[str] = []  # known when asked about alone, left out of the list (aliases)
        self.listings: list[dict[str, Any]] = []
        # POST <base>/embeddings: the input text -> its vector; any other text gets
        # ``default_vector(text)``. Requests are logged as any model request (path .../embeddings).
        self.embeddings: dict[str, list[float]] = {}
        self._asked: dict[tuple[Any, ...], int] = {}  # (flaky seed, model, last user) -> times asked
        # The batch APIs (batch.py): a batch ends batch_delay_s after it is created; a line
        # expires with probability batch_expire_rate (seeded by batch_seed). Logged apart from
        # the model requests: batch_calls (every call to a batch endpoint) and batches (id -> BatchJob).
        self.batch_delay_s = batch_delay_s
        self.batch_expire_rate = batch_expire_rate
        self.batch_seed = batch_seed
        self.batch_create_hold_s = 0.0  # how long the reply to a batch create is held back
        self.batch_list_status = 0  # 404 or 405: the provider has no batch list endpoint
        self.batch_calls: list[dict[str, Any]] = []
        self.batches: dict[str, BatchJob] = {}
        self._batch = BatchAPI(self)
        self.prompt_cache = PromptCache()  # caching.py: cached tokens in the replies' usage
        self.service_tiers = ServiceTiers()  # caching.py: the tier a reply reports; flex refusals

    # -- lifecycle ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def env(self, keys: bool = True) -> dict[str, str]:
        return provider_env(self.url, keys)

    def start(self) -> FakeServer:
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._listen())
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=run, name="fakeserver", daemon=True)
        self._thread.start()
        ready.wait()
        if errors:
            raise errors[0]
        return self

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return

        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._handlers):
                task.cancel()
            if self._handlers:
                await asyncio.wait(list(self._handlers), timeout=5)

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._loop = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    async def serve_forever(self) -> None:
        """Subprocess mode: listen on the current loop until cancelled."""
        await self._listen()
        print(f"FAKESERVER {self.url}", flush=True)
        assert self._server is not None
        async with self._server:
            await self._server.serve_forever()

    # -- the log ----------------------------------------------------------------------------
    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def bodies(self) -> list[str]:
        with self._lock:
            return [
                json.dumps(r.body, sort_keys=True) if not isinstance(r.body, str) else r.body for r in self.requests
            ]

    def distinct_bodies(self) -> int:
        return len(set(self.bodies()))

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.listings.clear()
            self.max_in_flight = 0
        self._batch.reset()

    def log(self) -> dict[str, Any]:
        with self._lock:
            requests = [r.as_dict() for r in self.requests]
        bodies = self.bodies()
        with self._lock:
            listings = list(self.listings)
        return {
            "count": len(requests),
            "distinct": len(set(bodies)),
            "max_in_flight": self.max_in_flight,
            "requests": requests,
            "listings": listings,
            **self._batch.log(),
        }

    # -- batches ----------------------------------------------------------------------------
    def batch_settings(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in BATCH_SETTINGS}

    def set_batch(self, **settings: Any) -> dict[str, Any]:
        """Change batch_delay_s, batch_expire_rate, batch_seed (for batches created after),
        batch_create_hold_s (how long the reply to a batch create is held after the batch exists)
        and/or batch_list_status (404 or 405: the batch list endpoints answer that; 0: they list)."""
        unknown = set(settings) - set(BATCH_SETTINGS)
        if unknown:
            raise ValueError(f"unknown batch settings: {sorted(unknown)} (known: {', '.join(BATCH_SETTINGS)})")
        with self._batch.lock:
            for name, value in settings.items():
                setattr(self, name, int(value) if name in ("batch_seed", "batch_list_status") else float(value))
        return self.batch_settings()

    # -- HTTP -------------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = (lines[0].split(" ", 2) + ["", ""])[:3]
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length") or 0)
                raw = await reader.readexactly(length) if length else b""
                keep_open = await self._respond(method, target, headers, raw, writer)
                if not keep_open or headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.CancelledError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._handlers.discard(task)
            try:
                writer.close()
            except Exception:  # noqa: BLE001
                pass

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        body: str,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        data = body.encode("utf-8")
        head = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(data)}",
            "Connection: keep-alive",
        ]
        for name, value in (headers or {}).items():
            head.append(f"{name}: {value}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
        await writer.drain()

    def _pick(self, model: str | None, last_user: str, path: str) -> Rule | None:
        with self._lock:
            for rule in self.rules:
                if rule.matches(model, last_user, path):
                    if rule.times is not None:
                        rule.times -= 1
                    return rule
        return None

    async def _respond(
        self, method: str, target: str, headers: dict[str, str], raw: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        path = target.split("?", 1)[0]
        if path == "/__log":
            await self._send(writer, 200, json.dumps(self.log()))
            return True
        if path == "/__reset":
            self.reset()
            await self._send(writer, 200, "{}")
            return True
        if path == "/__embeddings" and method == "POST":
            with self._lock:
                self.embeddings = json.loads(raw or b"{}")
            await self._send(writer, 200, "{}")
            return True
        if path == "/__lists" and method == "POST":
            with self._lock:
                self.model_lists = json.loads(raw or b"{}")
            await self._send(writer, 200, "{}")
            return True
        if path == "/__batch":
            try:
                settings = self.set_batch(**json.loads(raw or b"{}")) if method == "POST" else self.batch_settings()
            except (TypeError, ValueError) as exc:
                await self._send(writer, 400, json.dumps({"error": str(exc)}))
                return True
            await self._send(writer, 200, json.dumps(settings))
            return True
        if BatchAPI.handles(path):
            await self._batch.respond(method, path, target, headers, raw, writer)
            return True
        if method == "GET" and "/models" in path:
            await self._list_models(path, target, headers, writer)
            return True
        if path == "/__rules" and method == "POST":
            rules = [Rule.from_dict(r) for r in json.loads(raw or b"[]")]
            with self._lock:
                self.rules = rules
            await self._send(writer, 200, "{}")
            return True
        text_body = raw.decode("utf-8", errors="replace")
        try:
            body: Any = json.loads(text_body) if text_body else None
        except ValueError:
            body = text_body
        model = _model(path, body)
        last_user = _last_user(path, body)
        limited: dict[str, str] | None = None
        if self.rate_limit is not None:
            with self._lock:
                allowed, rate_headers = self.rate_limit.take()
            if not allowed:
                return await self._refuse(
                    method, path, headers, body, text_body, model, last_user, rate_headers, writer
                )
            limited = rate_headers
        if self.service_tiers.refuses(body):
            with self._lock:
                self.requests.append(
                    RecordedRequest(method, path, headers, body, text_body, model, last_user, "429-flex", time.time())
                )
            await self._send(writer, 429, json.dumps(FLEX_UNAVAILABLE), {"Retry-After": "0"})
            return True
        rule, fault = self.rule_and_fault(model, last_user, path)
        outcome = fault or (str(rule.status) if rule is not None and rule.status else "200")
        record = RecordedRequest(
            method=method,
            path=path,
            headers=headers,
            body=body,
            raw_body=text_body,
            model=model,
            last_user=last_user,
            outcome=outcome,
            at=time.time(),
        )
        with self._lock:
            self.requests.append(record)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(rule, fault, path, model, last_user, headers, writer, limited or {}, body)
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _list_models(self, path: str, target: str, headers: dict[str, str], writer: asyncio.StreamWriter) -> None:
        """A provider's model list (``GET <base>/models``, paged for Anthropic and Gemini) or
        one model (``GET <base>/models/<id>``), in that provider's shape."""
        provider = path.split("/")[1]
        query = dict(urllib.parse.parse_qsl(target.partition("?")[2]))
        with self._lock:
            self.listings.append({"path": path, "query": query, "headers": headers, "at": time.time()})
            ids = self.model_lists.get(provider)
            status = self.list_status
        if status is not None or ids is None:
            status = status or 404
            error = {"error": {"message": f"fake {status}", "type": "fake_error", "code": status}}
            await self._send(writer, status, json.dumps(error))
            return
        one = path.partition("/models/")[2]
        if one:
            name = urllib.parse.unquote(one)
            if name.removeprefix("models/") in ids or name in self.unlisted_models:
                await self._send(writer, 200, json.dumps({"id": name, "name": f"models/{name}"}))
            else:
                error = {"error": {"message": f"model: {name} not found", "type": "not_found_error", "code": 404}}
                await self._send(writer, 404, json.dumps(error))
            return
        size = self.list_page_size
        if provider == "anthropic":
            after = query.get("after_id")
            start = ids.index(after) + 1 if after in ids else 0
            page = ids[start : start + size]
            more = start + size < len(ids)
            body: dict[str, Any] = {
                "data": [{"id": i, "type": "model", "display_name": i} for i in page],
                "has_more": more,
                "first_id": page[0] if page else None,
                "last_id": page[-1] if page else None,
            }
        elif provider == "google":
            start = int(query.get("pageToken") or 0)
            page = ids[start : start + size]
            body = {"models": [{"name": f"models/{i}", "displayName": i} for i in page]}
            if start + size < len(ids):
                body["nextPageToken"] = str(start + size)
        else:
            body = {"object": "list", "data": [{"id": i, "object": "model", "owned_by": "fake"} for i in ids]}
        await self._send(writer, 200, json.dumps(body))

    async def _refuse(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: Any,
        text_body: str,
        model: str | None,
        last_user: str,
        rate_headers: dict[str, str],
        writer: asyncio.StreamWriter,
    ) -> bool:
        """The rate limiter said no: a 429 (or 529) with the provider's headers."""
        assert self.rate_limit is not None
        with self._lock:
            self.requests.append(
                RecordedRequest(
                    method,
                    path,
                    headers,
                    body,
                    text_body,
                    model,
                    last_user,
                    f"{self.rate_limit.status}-rate",
                    time.time(),
                )
            )
        status = self.rate_limit.status
        kind = "overloaded_error" if status == 529 else "rate_limit_exceeded"
        await self._send(
            writer, status, json.dumps({"error": {"message": "Rate limit reached", "type": kind}}), rate_headers
        )
        return True

    def _leaves_out(self, rule: Rule, model: str | None, last_user: str) -> bool:
        key = (rule.flaky_seed or 0, model, last_user)
        with self._lock:
            nth = self._asked.get(key, 0)
            self._asked[key] = nth + 1
        return _flaky_draw(rule.flaky_seed or 0, model, last_user, nth) < (rule.flaky_rate or 0.0)

    async def _answer(
        self,
        rule: Rule | None,
        fault: str | None,
        path: str,
        model: str | None,
        last_user: str,
        headers: dict[str, str],
        writer: asyncio.StreamWriter,
        rate_headers: dict[str, str],
        body: Any = None,
    ) -> bool:
        latency = self.latency_ms + ((rule.latency_ms or 0) if rule is not None else 0)
        if latency:
            await asyncio.sleep(latency / 1000)
        if fault == "hang":
            await asyncio.sleep(self.hang_s)
            return False
        if fault == "drop":
            writer.transport.abort()
            return False
        if fault == "malformed":
            await self._send(writer, 200, '{"choices": [ {"message": truncated', content_type="application/json")
            return True
        status = 500 if fault == "500" else 429 if fault == "429" else (rule.status if rule is not None else None)
        if status:
            message = f"fake {status}"
            if rule is not None and rule.echo_header:
                message += f": you sent {rule.echo_header}={headers.get(rule.echo_header.lower(), '')}"
            error_body = (
                rule.body
                if rule is not None and rule.body
                else json.dumps({"error": {"message": message, "type": "fake_error", "code": status}})
            )
            extra = {}
            retry_after = rule.retry_after if rule is not None else None
            if retry_after is not None:
                extra["Retry-After"] = retry_after
            elif status == 429 and fault == "429":
                extra["Retry-After"] = "0"
            await self._send(writer, status, error_body, extra)
            return True
        if path.endswith("/embeddings"):
            with self._lock:
                vector = self.embeddings.get(last_user)
            vector = vector if vector is not None else default_vector(last_user)
            await self._send(writer, 200, json.dumps(render_embedding(model, vector, last_user)), rate_headers)
            return True
        text = self.reply_text(rule, fault, model, last_user)
        reply = self.prompt_cache.apply(self.service_tiers.echo(body, render_reply(path, model, text, last_user)), body)
        await self._send(writer, 200, json.dumps(reply), rate_headers)
        return True

    def rule_and_fault(self, model: str | None, last_user: str, path: str) -> tuple[Rule | None, str | None]:
        """The rule a request matches and its fault: the rule's, else one drawn at the seeded
        ``fault_rate`` (not for a rule that sets a status); live and batched requests alike."""
        rule = self._pick(model, last_user, path)
        fault = rule.fault if rule is not None else None
        if fault is None and (rule is None or rule.status is None) and self.fault_rate > 0:
            with self._lock:
                if self.rng.random() < self.fault_rate:
                    fault = self.rng.choice(self.fault_kinds)
        return rule, fault

    def reply_text(self, rule: Rule | None, fault: str | None, model: str | None, last_user: str) -> str:
        """A successful reply's text: blank, the rule's (a flaky rule may leave its term out),
        or the echo; live and batched requests alike."""
        if fault == "blank":
            return ""
        if rule is not None and rule.reply is not None:
            text = rule.reply.replace("{last}", last_user).replace("{model}", model or "")
            if rule.flaky_term and self._leaves_out(rule, model, last_user):
                text = text.replace(rule.flaky_term, "")
            return text
        return f"echo: {last_user}"


def _flaky_draw(seed: int, model: str | None, last_user: str, nth: int) -> float:
    digest = hashlib.sha256(json.dumps([seed, model, last_user, nth]).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class FakeServerProcess:
    """A fake server in a subprocess (``python -m tests.fakeserver``), for multi-process tests."""

    def __init__(self, *args: str, cwd: str | os.PathLike | None = None):
        root = Path(__file__).resolve().parents[2]
        env = dict(os.environ)
        env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.fakeserver", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd or root,
            env=env,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("FAKESERVER "):
            self.process.kill()
            raise RuntimeError(
                f"fake server did not start: {line!r} {self.process.stderr.read() if self.process.stderr else ''}"
            )
        self.url = line.split(" ", 1)[1].strip()

    def env(self, keys: bool = True) -> dict[str, str]:
        return provider_env(self.url, keys)

    def log(self) -> dict[str, Any]:
        import httpx

        return httpx.get(self.url + "/__log", timeout=10).json()

    def set_rules(self, rules: list[Rule]) -> None:
        import httpx

        httpx.post(self.url + "/__rules", json=[dataclasses.asdict(r) for r in rules], timeout=10)

    def set_embeddings(self, vectors: dict[str, list[float]]) -> None:
        """The vector each input text's embedding is (POST /__embeddings)."""
        import httpx

        httpx.post(self.url + "/__embeddings", json=vectors, timeout=10)

    def set_model_lists(self, lists: dict[str, list[str]]) -> None:
        import httpx

        httpx.post(self.url + "/__lists", json=lists, timeout=10)

    def set_batch(self, **settings: Any) -> dict[str, Any]:
        """batch_delay_s, batch_expire_rate, batch_seed, batch_create_hold_s, batch_list_status
        (POST /__batch); the settings now."""
        import httpx

        response = httpx.post(self.url + "/__batch", json=settings, timeout=10)
        response.raise_for_status()
        return response.json()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> FakeServerProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
