"""The providers' batch APIs: OpenAI's Batch API, Anthropic's Message Batches, Gemini batch mode
and the batch APIs of xAI, Together and Mistral (docs/batch.md).

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
from urllib.parse import quote

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


def _file_line(key: str, line: dict[str, Any]) -> LineResult:
    """A line of an OpenAI-style output or error file (``custom_id``, ``response`` with
    ``status_code`` and ``body``, or ``error``): Together's and Mistral's as OpenAI's."""
    response = line.get("response")
    if isinstance(response, dict):
        # Together's docs say only that the output file holds the successful lines: a response
        # without a status there is one.
        status = response.get("status_code", 200)
        if status == 200:
            return LineResult(key, OK, body=response.get("body"))
        return _error_line(key, status if isinstance(status, int) else None, response.get("body"))
    error = line.get("error") or {}
    if isinstance(error, str):
        return LineResult(key, FAILED, message=error)
    return LineResult(key, FAILED, message=str(error.get("message") or error.get("code") or "the line failed"))


def _models_of(lines: list[tuple[str, str]]) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """The lines by the model their body names (``models/...``; a Gemini batch runs one model)."""
    by_model: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for key, body in lines:
        params = json.loads(body)
        by_model.setdefault(str(params.get("model", "")).removeprefix("models/"), []).append((key, params))
    return by_model


class GoogleBatches(BatchAPI):
    """Gemini batch mode (https://ai.google.dev/gemini-api/docs/batch-api): ``POST
    /v1beta/models/{model}:batchGenerateContent`` with inline requests (each with its key in
    ``metadata.key``), ``GET /v1beta/batches/{id}`` (an Operation whose ``metadata`` is the
    batch: ``state``, ``displayName``, ``output.inlinedResponses``), ``POST
    /v1beta/batches/{id}:cancel``, ``GET /v1beta/batches``. A batch runs one model: a round's
    lines go as one batch per model, recorded as one id (theirs joined by ``,``). Inline requests
    are taken up to 20 MB a batch, as the guide says; the key goes in x-goog-api-key (ruling 17)."""

    provider = "google"
    max_lines = 50_000
    max_bytes = 20_000_000
    _ENDED = ("BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED", "BATCH_STATE_EXPIRED")

    def headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self.key}

    @staticmethod
    def _ids(provider_id: str) -> list[str]:
        return [part for part in provider_id.split(",") if part]

    async def submit(self, lines: list[tuple[str, str]], batch_id: str) -> str:
        names = []
        for model, requests in _models_of(lines).items():
            body = {
                "batch": {
                    "displayName": batch_id,
                    "inputConfig": {
                        "requests": {
                            "requests": [{"request": params, "metadata": {"key": key}} for key, params in requests]
                        }
                    },
                }
            }
            path = f"/v1beta/models/{quote(model, safe='-._~')}:batchGenerateContent"
            names.append(str((await self.call("POST", path, json=body)).json()["name"]))
        return ",".join(names)

    async def _batches(self, provider_id: str) -> list[dict[str, Any]]:
        return [(await self.call("GET", f"/v1beta/{name}")).json() for name in self._ids(provider_id)]

    async def status(self, provider_id: str) -> BatchStatus:
        operations = await self._batches(provider_id)
        states = [str((op.get("metadata") or {}).get("state")) for op in operations]
        ended = all(state in self._ENDED for state in states)
        failed = None
        if states and all(state == "BATCH_STATE_FAILED" for state in states):
            why = [str((op.get("error") or {}).get("message") or "") for op in operations]
            failed = "; ".join(w for w in why if w) or "the batch failed"
        # Some of a round's per-model batches failed, not all: their lines, in no result, go again.
        return BatchStatus(",".join(sorted(set(states))), ended, failed)

    async def results(self, provider_id: str) -> list[LineResult]:
        found: list[LineResult] = []
        for op in await self._batches(provider_id):
            batch = op.get("metadata") or {}
            state = batch.get("state")
            output = (op.get("response") or {}).get("inlinedResponses") or (batch.get("output") or {}).get(
                "inlinedResponses"
            )
            for item in (output or {}).get("inlinedResponses") or []:
                key = str((item.get("metadata") or {}).get("key"))
                if isinstance(item.get("response"), dict):
                    found.append(LineResult(key, OK, body=item["response"]))
                else:
                    error = item.get("error") or {}
                    found.append(self._error(key, error))
            if state == "BATCH_STATE_CANCELLED" and not output:
                continue  # its lines come back as not in any result: dropped by the collector
        return found

    @staticmethod
    def _error(key: str, error: dict[str, Any]) -> LineResult:
        # google.rpc.Status: code is a gRPC code (3 invalid argument, 8 exhausted, 13/14 server faults).
        code = error.get("code")
        message = str(error.get("message") or "the line failed")
        if code in (4, 8, 13, 14):
            return LineResult(key, AGAIN, message=message)
        if code == 1:
            return LineResult(key, DROPPED, message="cancelled")
        return LineResult(key, FAILED, status=400, message=message)

    async def cancel(self, provider_id: str) -> None:
        for name in self._ids(provider_id):
            await self.call("POST", f"/v1beta/{name}:cancel")

    async def find(self, batch_id: str, created: float, lines: int, known: set[str]) -> str | None:
        # Each batch carries our id as its displayName: exact.
        listed = (await self.call("GET", "/v1beta/batches", params={"pageSize": 100})).json()
        names = [
            str(op["name"])
            for op in listed.get("operations") or []
            if isinstance(op, dict) and (op.get("metadata") or {}).get("displayName") == batch_id
        ]
        return ",".join(names) or None


class XAIBatches(BatchAPI):
    """xAI's Batch API (https://docs.x.ai/docs/guides/batch-api): ``POST /v1/batches`` (a named,
    empty batch), ``POST /v1/batches/{id}/requests`` (``batch_requests``: ``batch_request_id`` and
    ``batch_request.chat_get_completion``, the chat completions body), ``GET /v1/batches/{id}``
    (``state``: counts; it has ended once none is pending), ``GET /v1/batches/{id}/results``
    (paged by ``pagination_token``), ``POST /v1/batches/{id}:cancel``, ``GET /v1/batches``."""

    provider = "xai"
    # No limit documented: ours (docs/batch.md, 'Rounds').
    max_lines = 50_000
    max_bytes = 200_000_000

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    async def submit(self, lines: list[tuple[str, str]], batch_id: str) -> str:
        created = (await self.call("POST", "/batches", json={"name": batch_id})).json()
        provider_id = str(created["batch_id"])
        requests = [
            {"batch_request_id": key, "batch_request": {"chat_get_completion": json.loads(body)}} for key, body in lines
        ]
        await self.call("POST", f"/batches/{provider_id}/requests", json={"batch_requests": requests})
        return provider_id

    async def status(self, provider_id: str) -> BatchStatus:
        data = (await self.call("GET", f"/batches/{provider_id}")).json()
        state = data.get("state") or {}
        pending = int(state.get("num_pending") or 0)
        total = int(state.get("num_requests") or 0)
        ended = pending == 0 and (total > 0 or bool(data.get("cancel_time")))
        if data.get("cancel_time"):
            word = "cancelled" if ended else "cancelling"
        else:
            word = "ended" if ended else "in_progress"
        return BatchStatus(word, ended)

    async def results(self, provider_id: str) -> list[LineResult]:
        found: list[LineResult] = []
        token: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 100}
            if token:
                params["pagination_token"] = token
            page = (await self.call("GET", f"/batches/{provider_id}/results", params=params)).json()
            for item in page.get("results") or []:
                key = str(item.get("batch_request_id"))
                result = item.get("batch_result") or {}
                completion = (result.get("response") or {}).get("chat_get_completion")
                if isinstance(completion, dict):
                    found.append(LineResult(key, OK, body=completion))
                    continue
                error = result.get("error") or item.get("error") or {}
                message = str(error.get("message") or item.get("error_message") or "the line failed")
                found.append(GoogleBatches._error(key, error) if error else LineResult(key, FAILED, message=message))
            token = page.get("pagination_token")
            if not token or not page.get("results"):
                return found

    async def cancel(self, provider_id: str) -> None:
        await self.call("POST", f"/batches/{provider_id}:cancel")

    async def find(self, batch_id: str, created: float, lines: int, known: set[str]) -> str | None:
        # Each batch carries our id as its name. One created but not filled (the submitter died
        # between the two calls) holds no request: it is not ours to collect, its lines go again.
        for batch in (await self.call("GET", "/batches", params={"limit": 100})).json().get("batches") or []:
            if isinstance(batch, dict) and batch.get("name") == batch_id:
                total = int((batch.get("state") or {}).get("num_requests") or 0)
                return str(batch["batch_id"]) if total else None
        return None


class _FileBatches(BatchAPI):
    """A JSONL file of ``{"custom_id", "body"}`` lines uploaded to ``/files``, a batch made from
    it, its output and error files read back (Together, Mistral)."""

    purpose = ""
    jobs = ""  # the batches' path
    _ENDED: tuple[str, ...] = ()
    _FAILED: tuple[str, ...] = ()

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    async def upload(self, lines: list[tuple[str, str]], batch_id: str) -> str:
        data = "".join(f'{{"custom_id": {json.dumps(key)}, "body": {body}}}\n' for key, body in lines).encode()
        uploaded = await self.call(
            "POST", "/files", data={"purpose": self.purpose}, files={"file": (f"{batch_id}.jsonl", data)}
        )
        return str(uploaded.json()["id"])

    async def _job(self, provider_id: str) -> dict[str, Any]:
        data = (await self.call("GET", f"{self.jobs}/{provider_id}")).json()
        return data.get("job") if isinstance(data.get("job"), dict) else data

    async def status(self, provider_id: str) -> BatchStatus:
        job = await self._job(provider_id)
        status = str(job.get("status"))
        failed = None
        if status in self._FAILED:
            failed = self._why(job) or "the batch failed"
        return BatchStatus(status, status in self._ENDED, failed)

    def _why(self, job: dict[str, Any]) -> str:
        return str(job.get("error") or "")

    def _files(self, job: dict[str, Any]) -> list[str]:
        return [str(job[name]) for name in ("output_file_id", "error_file_id") if job.get(name)]

    async def results(self, provider_id: str) -> list[LineResult]:
        job = await self._job(provider_id)
        found: list[LineResult] = []
        for file_id in self._files(job):
            text = (await self.call("GET", f"/files/{file_id}/content")).text
            found.extend(_file_line(str(line.get("custom_id")), line) for line in _jsonl(text))
        return found

    async def cancel(self, provider_id: str) -> None:
        await self.call("POST", f"{self.jobs}/{provider_id}/cancel")


class TogetherBatches(_FileBatches):
    """Together's Batch API (https://docs.together.ai/docs/batch-inference): ``POST /files``
    (purpose ``batch-api``), ``POST /batches`` (``{"job": ...}``), ``GET /batches/{id}``, ``GET
    /files/{id}/content``, ``POST /batches/{id}/cancel``; 50,000 requests and 100 MB a file."""

    provider = "together"
    max_lines = 50_000
    max_bytes = 100_000_000
    purpose = "batch-api"
    jobs = "/batches"
    _ENDED = ("COMPLETED", "FAILED", "EXPIRED", "CANCELLED")
    _FAILED = ("FAILED",)

    async def submit(self, lines: list[tuple[str, str]], batch_id: str) -> str:
        file_id = await self.upload(lines, batch_id)
        created = (
            await self.call("POST", "/batches", json={"input_file_id": file_id, "endpoint": "/v1/chat/completions"})
        ).json()
        return str(created["job"]["id"])

    async def find(self, batch_id: str, created: float, lines: int, known: set[str]) -> str | None:
        # A Together batch has no metadata; its input file is named after our id: exact.
        files = (await self.call("GET", "/files")).json().get("data") or []
        ours = {f.get("id") for f in files if isinstance(f, dict) and f.get("filename") == f"{batch_id}.jsonl"}
        listed = (await self.call("GET", "/batches")).json()
        for job in listed if isinstance(listed, list) else []:
            if isinstance(job, dict) and job.get("input_file_id") in ours:
                return str(job["id"])
        return None


class MistralBatches(_FileBatches):
    """Mistral's Batch API (https://docs.mistral.ai/studio-api/batch-processing): ``POST /files``
    (purpose ``batch``), ``POST /batch/jobs`` (``input_files``, ``endpoint``, ``metadata``), ``GET
    /batch/jobs/{id}``, ``GET /files/{id}/content`` (``output_file``, ``error_file``), ``POST
    /batch/jobs/{id}/cancel``. The model is each body's (none is set on the job)."""

    provider = "mistral"
    # No limit documented: ours (docs/batch.md, 'Rounds').
    max_lines = 1_000_000
    max_bytes = 200_000_000
    purpose = "batch"
    jobs = "/batch/jobs"
    _ENDED = ("SUCCESS", "FAILED", "TIMEOUT_EXCEEDED", "CANCELLED")
    _FAILED = ("FAILED",)

    def _why(self, job: dict[str, Any]) -> str:
        return "; ".join(str(e.get("message")) for e in job.get("errors") or [] if isinstance(e, dict))

    def _files(self, job: dict[str, Any]) -> list[str]:
        return [str(job[name]) for name in ("output_file", "error_file") if job.get(name)]

    async def submit(self, lines: list[tuple[str, str]], batch_id: str) -> str:
        file_id = await self.upload(lines, batch_id)
        body = {"input_files": [file_id], "endpoint": "/v1/chat/completions", "metadata": {"weval_batch": batch_id}}
        return str((await self.call("POST", "/batch/jobs", json=body)).json()["id"])

    async def find(self, batch_id: str, created: float, lines: int, known: set[str]) -> str | None:
        # Each job carries our id in its metadata: exact.
        for job in (await self.call("GET", "/batch/jobs", params={"page_size": 100})).json().get("data") or []:
            if isinstance(job, dict) and (job.get("metadata") or {}).get("weval_batch") == batch_id:
                return str(job["id"])
        return None


BATCH_APIS: dict[str, type[BatchAPI]] = {
    "openai": OpenAIBatches,
    "anthropic": AnthropicBatches,
    "google": GoogleBatches,
    "xai": XAIBatches,
    "together": TogetherBatches,
    "mistral": MistralBatches,
}
