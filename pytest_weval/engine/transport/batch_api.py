"""The providers' batch APIs: OpenAI's Batch API and Anthropic's Message Batches (docs/batch.md).

Each turns a list of (custom id, request body) into a batch at the provider, says where a batch
stands, reads its results back as one ``LineResult`` per line, and cancels. The custom id of a
line is its request's cache key (64 hex digits, within Anthropic's ``[a-zA-Z0-9_-]{1,64}``).
The bodies are the live requests' bodies, so a batched reply is the reply the live request
would have had, parsed by the same adapter. Only the wire is here; what to batch, when, and
what the store keeps is ``engine/batching/``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import httpx

from pytest_weval.engine.errors import ProviderError
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.transport.keys import api_key, base_url
from pytest_weval.engine.transport.providers.anthropic import ANTHROPIC_VERSION
from pytest_weval.engine.transport.providers.base import error_message
from pytest_weval.engine.transport.retry import RETRY_STATUSES

# Line results: the reply is in; the line goes into the next batch (it expired, or met a fault
# that passes); it was cancelled (nobody asked for it any more); it failed for good.
OK, AGAIN, DROPPED, FAILED = "ok", "again", "dropped", "failed"
_CALL_ATTEMPTS = 5  # each batch API call, on a fault or a refusal


@dataclasses.dataclass(frozen=True)
class BatchStatus:
    status: str  # as the provider says it
    ended: bool  # no line will change any more: the results can be read
    failed: str | None = None  # the whole batch was refused (OpenAI's ``failed``): why


@dataclasses.dataclass(frozen=True)
class LineResult:
    key: str
    outcome: str  # OK, AGAIN, DROPPED or FAILED
    body: Any = None  # OK: the reply's body, as the live endpoint returns it
    status: int | None = None
    message: str = ""


class BatchAPI:
    """One provider account's batch API (its base URL and key, read from the environment)."""

    provider = ""
    max_lines = 0
    max_bytes = 0

    def __init__(self, env: Mapping[str, str], redactor: Redactor, http: httpx.AsyncClient, backoff_s: float = 1.0):
        self.base = base_url(self.provider, env)
        self.key = api_key(self.provider, f"{self.provider} batches", env, redactor)
        self.redactor = redactor
        self.http = http
        self.backoff_s = backoff_s

    @property
    def account(self) -> str:
        """Which account's batches these are, never the key itself: batches of another key or
        endpoint are not this one's to collect."""
        return hashlib.sha256(f"{self.provider}\x00{self.base}\x00{self.key}".encode()).hexdigest()[:16]

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One batch API call; faults and refusals are tried again a few times, then a
        ``ProviderError`` with the provider's message."""
        url = self.base + path
        last = ""
        status: int | None = None
        for attempt in range(_CALL_ATTEMPTS):
            if attempt:
                await asyncio.sleep(min(30.0, self.backoff_s * 2 ** (attempt - 1)))
            try:
                response = await self.http.request(method, url, headers=self.headers(), **kwargs)
            except httpx.HTTPError as exc:
                status, last = None, f"connection failed ({type(exc).__name__})"
                continue
            if response.status_code < 400:
                return response
            status = response.status_code
            last = f"HTTP {status}: {error_message(response.text)}"
            if status not in RETRY_STATUSES and status not in (429, 529):
                break
        raise ProviderError(status, self.redactor.redact(f"{self.provider} batch API {method} {path}: {last}"))

    async def submit(self, lines: list[tuple[str, str]], batch_id: str) -> str:
        """Send the lines (custom id, body JSON) as one batch; the provider's batch id."""
        raise NotImplementedError

    async def status(self, provider_id: str) -> BatchStatus:
        raise NotImplementedError

    async def results(self, provider_id: str) -> list[LineResult]:
        raise NotImplementedError

    async def cancel(self, provider_id: str) -> None:
        raise NotImplementedError

    async def find(self, batch_id: str, created: float, lines: int, known: set[str]) -> str | None:
        """The provider's id of our batch ``batch_id`` when its submitter died between the
        provider's answer and recording it (so it is collected, not bought again)."""
        raise NotImplementedError


def _error_line(key: str, status: int | None, body: Any) -> LineResult:
    message = error_message(json.dumps(body) if not isinstance(body, str) else body)
    if status is not None and (status in RETRY_STATUSES or status in (429, 529)):
        return LineResult(key, AGAIN, status=status, message=message)
    return LineResult(key, FAILED, status=status, message=f"HTTP {status}: {message}")


def _jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


class OpenAIBatches(BatchAPI):
    """``POST /files`` (purpose ``batch``), ``POST /batches``, ``GET /batches/{id}``, ``GET
    /files/{id}/content``, ``POST /batches/{id}/cancel``; 50,000 lines and 200 MB a file."""

    provider = "openai"
    max_lines = 50_000
    max_bytes = 200_000_000
    _ENDED = ("completed", "failed", "expired", "cancelled")

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    async def submit(self, lines: list[tuple[str, str]], batch_id: str) -> str:
        data = "".join(
            f'{{"custom_id": {json.dumps(key)}, "method": "POST", "url": "/v1/chat/completions", "body": {body}}}\n'
            for key, body in lines
        ).encode()
        uploaded = await self.call(
            "POST",
            "/files",
            data={"purpose": "batch"},
            files={"file": (f"{batch_id}.jsonl", data, "application/jsonl")},
        )
        file_id = uploaded.json()["id"]
        created = await self.call(
            "POST",
            "/batches",
            json={
                "input_file_id": file_id,
                "endpoint": "/v1/chat/completions",
                "completion_window": "24h",
                "metadata": {"weval_batch": batch_id},
            },
        )
        return str(created.json()["id"])

    async def status(self, provider_id: str) -> BatchStatus:
        data = (await self.call("GET", f"/batches/{provider_id}")).json()
        status = str(data.get("status"))
        failed = None
        if status == "failed":
            errors = (data.get("errors") or {}).get("data") or []
            failed = "; ".join(str(e.get("message")) for e in errors if isinstance(e, dict)) or "the batch failed"
        return BatchStatus(status, status in self._ENDED, failed)

    async def results(self, provider_id: str) -> list[LineResult]:
        data = (await self.call("GET", f"/batches/{provider_id}")).json()
        found: list[LineResult] = []
        for file_id in (data.get("output_file_id"), data.get("error_file_id")):
            if not file_id:
                continue
            text = (await self.call("GET", f"/files/{file_id}/content")).text
            for line in _jsonl(text):
                found.append(self._line(line))
        return found

    def _line(self, line: dict[str, Any]) -> LineResult:
        key = str(line.get("custom_id"))
        response = line.get("response")
        if isinstance(response, dict):
            status = response.get("status_code")
            if status == 200:
                return LineResult(key, OK, body=response.get("body"))
            return _error_line(key, status, response.get("body"))
        error = line.get("error") or {}
        code = str(error.get("code") or "")
        if code == "batch_expired":
            return LineResult(key, AGAIN, message="expired")
        if code == "batch_cancelled":
            return LineResult(key, DROPPED, message="cancelled")
        return LineResult(key, FAILED, message=str(error.get("message") or code or "the line failed"))

    async def cancel(self, provider_id: str) -> None:
        await self.call("POST", f"/batches/{provider_id}/cancel")

    async def find(self, batch_id: str, created: float, lines: int, known: set[str]) -> str | None:
        # Each batch carries our id in its metadata: exact.
        for batch in (await self.call("GET", "/batches", params={"limit": 100})).json().get("data") or []:
            if isinstance(batch, dict) and (batch.get("metadata") or {}).get("weval_batch") == batch_id:
                return str(batch["id"])
        return None


class AnthropicBatches(BatchAPI):
    """``POST /v1/messages/batches``, ``GET .../{id}``, ``GET .../{id}/results``, ``POST
    .../{id}/cancel``; 100,000 requests and 256 MB a batch."""

    provider = "anthropic"
    max_lines = 100_000
    max_bytes = 256_000_000

    def headers(self) -> dict[str, str]:
        return {"x-api-key": self.key, "anthropic-version": ANTHROPIC_VERSION}

    async def submit(self, lines: list[tuple[str, str]], batch_id: str) -> str:
        requests = []
        for key, body in lines:
            params = json.loads(body)
            params.pop("stream", None)  # a batch is never streamed
            requests.append({"custom_id": key, "params": params})
        created = await self.call("POST", "/v1/messages/batches", json={"requests": requests})
        return str(created.json()["id"])

    async def status(self, provider_id: str) -> BatchStatus:
        data = (await self.call("GET", f"/v1/messages/batches/{provider_id}")).json()
        status = str(data.get("processing_status"))
        return BatchStatus(status, status == "ended")

    async def results(self, provider_id: str) -> list[LineResult]:
        text = (await self.call("GET", f"/v1/messages/batches/{provider_id}/results")).text
        found: list[LineResult] = []
        for line in _jsonl(text):
            key = str(line.get("custom_id"))
            result = line.get("result") or {}
            kind = result.get("type")
            if kind == "succeeded":
                found.append(LineResult(key, OK, body=result.get("message")))
            elif kind == "expired":
                found.append(LineResult(key, AGAIN, message="expired"))
            elif kind == "canceled":
                found.append(LineResult(key, DROPPED, message="cancelled"))
            else:
                error = (result.get("error") or {}).get("error") or result.get("error") or {}
                kind = str(error.get("type") or "")
                message = str(error.get("message") or kind or "the line failed")
                if kind == "invalid_request_error":
                    found.append(LineResult(key, FAILED, status=400, message=f"{kind}: {message}"))
                else:  # api_error, overloaded_error: a fault that passes
                    found.append(LineResult(key, AGAIN, message=f"{kind}: {message}"))
        return found

    async def cancel(self, provider_id: str) -> None:
        await self.call("POST", f"/v1/messages/batches/{provider_id}/cancel")

    async def find(self, batch_id: str, created: float, lines: int, known: set[str]) -> str | None:
        # Message batches carry no metadata: the one batch of this account created within a
        # minute of ours with as many requests, that no record names. Taking a wrong one costs
        # nothing: its results match none of our lines, which are then queued again.
        found = []
        for batch in (await self.call("GET", "/v1/messages/batches", params={"limit": 100})).json().get("data") or []:
            if not isinstance(batch, dict) or batch.get("id") in known:
                continue
            try:
                at = datetime.datetime.fromisoformat(str(batch.get("created_at")).replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
            counts = batch.get("request_counts") or {}
            total = sum(int(counts.get(name) or 0) for name in counts)
            if created - 5 <= at <= created + 60 and total == lines:
                found.append(str(batch["id"]))
        return found[0] if len(found) == 1 else None


BATCH_APIS: dict[str, type[BatchAPI]] = {"openai": OpenAIBatches, "anthropic": AnthropicBatches}
