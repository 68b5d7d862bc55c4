"""The providers' batch APIs on the fake server: OpenAI's Batch API (files + batches),
Anthropic's Message Batches API, Gemini batch mode (inline requests, operations), xAI's Batch API
(named batches, added requests, paged results), and Together's and Mistral's (files + batch jobs),
as their docs describe them (see the package docstring).

A batch runs for ``server.batch_delay_s`` after it is created, then ends; its lines are
answered when it ends, exactly as the live endpoint would answer the same body then (rules,
flaky rules, faults, the echo default), so rules set after submission apply. A line expires
with probability ``server.batch_expire_rate`` (fixed when the batch is created), drawn from a
hash of (``batch_seed``, custom_id, how many times that custom_id was submitted before), so a
resubmitted line can succeed. Calls are logged in ``server.batch_calls`` and batches in
``server.batches``, apart from the live requests in ``server.requests``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import hashlib
import json
import re
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fakeserver.server import FakeServer

OPENAI = "/openai/v1"
ANTHROPIC = "/anthropic/v1/messages/batches"
GOOGLE = "/google/v1beta"
XAI = "/xai/v1/batches"
TOGETHER = "/together/v1"
MISTRAL = "/mistral/v1"
# Where Together's upload redirect points (its SDK's presigned PUT: see _together_upload_url).
TOGETHER_UPLOAD = "/together/__upload/"
# Live chat paths of the providers whose batch lines are chat completions bodies.
CHAT_PATHS = {"xai": "/xai/v1/chat/completions", "together": TOGETHER + "/chat/completions",
              "mistral": MISTRAL + "/chat/completions"}  # fmt: skip
# Gemini's batch states (GenerateContentBatch.state) and google.rpc codes of a line's error.
GOOGLE_ENDED = {"done": "BATCH_STATE_SUCCEEDED", "cancelled": "BATCH_STATE_CANCELLED"}
RPC_CANCELLED, RPC_INVALID, RPC_DEADLINE, RPC_EXHAUSTED, RPC_INTERNAL = 1, 3, 4, 8, 13
# The OpenAI batch endpoints the fake answers lines for (the live path is OPENAI + the rest).
OPENAI_ENDPOINTS = ("/v1/chat/completions", "/v1/completions")
ANTHROPIC_LIVE_PATH = "/anthropic/v1/messages"
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
WINDOW_S = 24 * 3600
SETTINGS = ("batch_delay_s", "batch_expire_rate", "batch_seed", "batch_create_hold_s", "batch_list_status")
# A provider without a batch list endpoint: what its listing answers (0: it has one).
NO_LIST = {404: "Not Found", 405: "Method Not Allowed"}
# Faults a batch cannot show as such (no connection to hang or drop): a server error line.
SERVER_FAULTS = ("500", "hang", "drop", "malformed")
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
# The OpenAI error-file line of a request that was not run: outcome -> (code, message).
NOT_RUN = {
    "expired": ("batch_expired", "This request could not be executed before the completion window expired."),
    "canceled": ("batch_cancelled", "This request was not executed because the batch was cancelled."),
}


# While a batch runs: (before it starts, running, cancel asked) in each provider's words.
RUNNING_STATUS = {
    "google": ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING", "BATCH_STATE_RUNNING"),
    "xai": ("in_progress", "in_progress", "cancelling"),
    "together": ("VALIDATING", "IN_PROGRESS", "IN_PROGRESS"),
    "mistral": ("QUEUED", "RUNNING", "CANCELLATION_REQUESTED"),
}


REDIRECT = "__redirect__"  # a reply's extra headers (a redirect), taken off its body before it is sent
PENDING_UPLOAD = "\x00pending:"  # a Together file whose content has not been PUT yet


def _file_id(owner: str) -> str:
    """A file id as each provider's /files spells it (Mistral's are UUIDs)."""
    return (
        str(uuid.uuid4()) if owner == "mistral" else f"file-{uuid.uuid4()}" if owner == "together" else f"file-{_hex()}"
    )


def _hex(size: int = 24) -> str:
    return uuid.uuid4().hex[:size]


def _rfc3339(at: float | None) -> str | None:
    if at is None:
        return None
    return _dt.datetime.fromtimestamp(at, tz=_dt.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _unix(at: float | None) -> int | None:
    return None if at is None else int(at)


def expire_draw(seed: int, custom_id: str, nth: int) -> float:
    """The line's draw in [0, 1): it expires when this is below the batch's expire rate."""
    digest = hashlib.sha256(json.dumps(["batch-expire", seed, custom_id, nth]).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def parse_multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]] | None:
    """multipart/form-data fields: name -> (filename, content); None when it is not multipart."""
    kind, _, params = content_type.partition(";")
    if kind.strip().lower() != "multipart/form-data":
        return None
    boundary = ""
    for param in params.split(";"):
        name, _, value = param.strip().partition("=")
        if name.lower() == "boundary":
            boundary = value.strip().strip('"')
    if not boundary:
        return None
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in raw.split(b"--" + boundary.encode("latin-1"))[1:]:
        if part.startswith(b"--"):
            break
        head, sep, content = part.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        if not sep:
            continue
        disposition: dict[str, str] = {}
        for line in head.decode("latin-1").split("\r\n"):
            key, _, value = line.partition(":")
            if key.strip().lower() == "content-disposition":
                for item in value.split(";")[1:]:
                    name, _, text = item.strip().partition("=")
                    disposition[name.lower()] = text.strip().strip('"')
        if "name" in disposition:
            fields[disposition["name"]] = (disposition.get("filename"), content.removesuffix(b"\r\n"))
    return fields


@dataclasses.dataclass
class StoredFile:
    """An OpenAI file: an uploaded batch input or a batch's output or error file."""

    id: str
    filename: str
    purpose: str
    content: bytes
    created: float
    owner: str = "openai"  # the provider whose /files holds it

    def as_object(self) -> dict[str, Any]:
        if self.owner == "mistral":
            return {"id": self.id, "object": "file", "bytes": len(self.content), "created_at": _unix(self.created),
                    "filename": self.filename, "purpose": self.purpose, "sample_type": "batch_request",
                    "source": "upload", "num_lines": self.content.count(b"\n"), "mimetype": "application/jsonl",
                    "signature": None}  # fmt: skip
        if self.owner == "together":
            return {"id": self.id, "object": "file", "bytes": len(self.content), "created_at": _unix(self.created),
                    "filename": self.filename, "purpose": self.purpose, "FileType": "jsonl",
                    "processing_status": "COMPLETED"}  # fmt: skip
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.content),
            "created_at": _unix(self.created),
            "expires_at": None,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "status_details": None,
        }


@dataclasses.dataclass
class BatchLine:
    custom_id: str
    body: dict[str, Any]
    nth: int  # how many times this custom_id was submitted before


@dataclasses.dataclass
class BatchJob:
    """One batch, either provider's. ``status`` is the provider's word (OpenAI: validating,
    failed, in_progress, finalizing, completed, expired, cancelling, cancelled; Anthropic:
    in_progress, canceling, ended); ``outcomes`` (once ended): custom_id -> "200", an error
    status ("400", "500", ...), "expired" or "canceled"."""

    id: str
    provider: str  # "openai" or "anthropic"
    status: str
    custom_ids: list[str]
    created: float
    ends_at: float  # when processing ends (earlier once canceled)
    ended: float | None = None
    cancel_initiated: float | None = None
    outcomes: dict[str, str] = dataclasses.field(default_factory=dict)
    lines: list[BatchLine] = dataclasses.field(default_factory=list, repr=False)
    headers: dict[str, str] = dataclasses.field(default_factory=dict, repr=False)
    expire_rate: float = 0.0
    seed: int = 0
    validate_s: float = 0.0
    # OpenAI
    endpoint: str | None = None
    input_file_id: str | None = None
    metadata: dict[str, Any] | None = None
    errors: list[dict[str, Any]] | None = None  # the input file failed validation
    output_file_id: str | None = None
    error_file_id: str | None = None
    # Anthropic (and Gemini's inlined responses, xAI's results)
    results: list[dict[str, Any]] = dataclasses.field(default_factory=list, repr=False)
    # Gemini (the batch's model), xAI (the batch's name)
    model: str | None = None
    name: str | None = None
    input_files: list[str] = dataclasses.field(default_factory=list)  # Mistral

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "provider": self.provider,
            "status": self.status,
            "custom_ids": list(self.custom_ids),
            "created": self.created,
            "ended": self.ended,
            "cancel_initiated": self.cancel_initiated,
            "outcomes": dict(self.outcomes),
        }

    def count(self, outcome: Callable[[str], bool]) -> int:
        return sum(1 for value in self.outcomes.values() if outcome(value))


def openai_error(
    message: str, param: str | None = None, code: str | None = None, kind: str = "invalid_request_error"
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


class BatchAPI:
    """The batch endpoints of one FakeServer (its ``batch_*`` settings, logs and lock)."""

    def __init__(self, server: FakeServer):
        self.server = server
        self.lock = threading.RLock()
        self.files: dict[str, StoredFile] = {}
        self.submitted: dict[str, int] = {}  # custom_id -> times submitted (the expiry draw; kept by reset)
        self.line_counts: dict[str, int] = {}  # the same, logged (cleared by reset)
        self.lines_total = 0

    @staticmethod
    def handles(path: str) -> bool:
        if path.startswith(GOOGLE + "/models/") and path.endswith(":batchGenerateContent"):
            return True
        roots = (OPENAI + "/files", OPENAI + "/batches", ANTHROPIC, GOOGLE + "/batches", XAI)
        roots += (TOGETHER + "/files", TOGETHER + "/batches", MISTRAL + "/files", MISTRAL + "/batch/jobs")
        if path.startswith(TOGETHER_UPLOAD):
            return True
        return path in roots or path.startswith(tuple(root + "/" for root in roots))

    # -- the log ----------------------------------------------------------------------------
    def reset(self) -> None:
        with self.lock:
            self.server.batch_calls.clear()
            self.server.batches.clear()
            self.files.clear()
            self.line_counts.clear()
            self.lines_total = 0

    def log(self) -> dict[str, Any]:
        with self.lock:
            self.advance_all()
            return {
                "batch_calls": [dict(call) for call in self.server.batch_calls],
                "batches": {job_id: job.as_dict() for job_id, job in self.server.batches.items()},
                "batch_lines": {"total": self.lines_total, "by_custom_id": dict(self.line_counts)},
            }

    # -- time -------------------------------------------------------------------------------
    def advance_all(self) -> None:
        with self.lock:
            for job in list(self.server.batches.values()):
                self.advance(job)

    def advance(self, job: BatchJob) -> None:
        """Bring ``job.status`` up to now, ending the batch once its time has come."""
        with self.lock:
            if job.ended is not None:
                return
            now = time.time()
            if now >= job.ends_at:
                self._finish(job, now)
            elif job.provider in RUNNING_STATUS:
                waiting, running, cancelling = RUNNING_STATUS[job.provider]
                validating = now < job.created + job.validate_s
                job.status = cancelling if job.cancel_initiated is not None else waiting if validating else running
            elif job.provider == "anthropic":
                job.status = "canceling" if job.cancel_initiated is not None else "in_progress"
            elif job.cancel_initiated is not None:
                job.status = "cancelling"
            else:
                job.status = "validating" if job.errors or now < job.created + job.validate_s else "in_progress"

    def _tick(self, job_id: str) -> None:
        with self.lock:
            job = self.server.batches.get(job_id)
            if job is not None:
                self.advance(job)

    def _schedule(self, job: BatchJob) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        now = time.time()
        if job.provider == "openai" and now < job.created + job.validate_s < job.ends_at:
            loop.call_later(job.created + job.validate_s - now + 0.001, self._tick, job.id)  # to in_progress
        loop.call_later(max(0.0, job.ends_at - now) + 0.001, self._tick, job.id)

    def _finish(self, job: BatchJob, now: float) -> None:
        job.ended = now
        if job.errors:
            job.status = "failed"
            return
        answers: list[tuple[BatchLine, str, Any]] = []  # (line, outcome, payload)
        for line in job.lines:
            if job.cancel_initiated is not None:
                answers.append((line, "canceled", None))
            elif expire_draw(job.seed, line.custom_id, line.nth) < job.expire_rate:
                answers.append((line, "expired", None))
            else:
                status, payload = answer_line(self.server, self._live_path(job), line.body, job.headers)
                answers.append((line, str(status), payload))
        job.outcomes = {line.custom_id: outcome for line, outcome, _ in answers}
        if job.provider in ("google", "xai"):
            job.results = [rpc_result(job.provider, line.custom_id, o, p) for line, o, p in answers]
            cancelled = job.cancel_initiated is not None
            job.status = (
                ("BATCH_STATE_CANCELLED" if cancelled else "BATCH_STATE_SUCCEEDED")
                if job.provider == "google"
                else "ended"
            )
            return
        if job.provider in ("together", "mistral"):
            self._finish_files(job, answers, now)
            return
        if job.provider == "anthropic":
            job.results = [anthropic_result(line.custom_id, outcome, payload) for line, outcome, payload in answers]
            job.status = "ended"
            return
        output: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for line, outcome, payload in answers:
            entry: dict[str, Any] = {"id": f"batch_req_{_hex()}", "custom_id": line.custom_id}
            if outcome in NOT_RUN:
                code, message = NOT_RUN[outcome]
                entry.update(response=None, error={"code": code, "message": message})
            else:
                response = {"status_code": int(outcome), "request_id": f"req_{_hex(32)}", "body": payload}
                entry.update(response=response, error=None)
            (output if outcome == "200" else errors).append(entry)
        if output:
            job.output_file_id = self._store_file(f"{job.id}_output.jsonl", output, now).id
        if errors:
            job.error_file_id = self._store_file(f"{job.id}_error.jsonl", errors, now).id
        if job.cancel_initiated is not None:
            job.status = "cancelled"
        elif "expired" in job.outcomes.values():
            job.status = "expired"
        else:
            job.status = "completed"

    def _live_path(self, job: BatchJob) -> str:
        if job.provider == "anthropic":
            return ANTHROPIC_LIVE_PATH
        if job.provider == "google":
            return f"{GOOGLE}/models/{job.model}:generateContent"
        if job.provider in CHAT_PATHS:
            return CHAT_PATHS[job.provider]
        return OPENAI + (job.endpoint or "")[3:]

    def _finish_files(self, job: BatchJob, answers: list[tuple[BatchLine, str, Any]], now: float) -> None:
        """Together's and Mistral's output and error files: a line per request that ran (the
        ones that expired or were cancelled are in neither, as their docs say of output lines)."""
        output: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for line, outcome, payload in answers:
            if outcome in NOT_RUN:
                continue
            entry = {"id": f"batch-{_hex()}", "custom_id": line.custom_id,
                     "response": {"status_code": int(outcome), "body": payload}, "error": None}  # fmt: skip
            (output if outcome == "200" else errors).append(entry)
        purpose = "batch-output" if job.provider == "together" else "batch"
        if output:
            job.output_file_id = self._store_file(f"{job.id}_output.jsonl", output, now, purpose, job.provider).id
        if errors:
            job.error_file_id = self._store_file(f"{job.id}_error.jsonl", errors, now, purpose, job.provider).id
        ended = {
            "together": ("COMPLETED", "CANCELLED", "EXPIRED"),
            "mistral": ("SUCCESS", "CANCELLED", "TIMEOUT_EXCEEDED"),
        }
        done, cancelled, expired = ended[job.provider]
        if job.cancel_initiated is not None:
            job.status = cancelled
        elif "expired" in job.outcomes.values():
            job.status = expired
        else:
            job.status = done

    def _store_file(
        self,
        filename: str,
        lines: list[dict[str, Any]],
        now: float,
        purpose: str = "batch_output",
        owner: str = "openai",
    ) -> StoredFile:
        content = "".join(json.dumps(line) + "\n" for line in lines).encode()
        stored = StoredFile(_file_id(owner), filename, purpose, content, now, owner)
        self.files[stored.id] = stored
        return stored

    def _submit(self, job: BatchJob, lines: list[tuple[str, dict[str, Any]]]) -> None:
        for custom_id, body in lines:
            nth = self.submitted.get(custom_id, 0)
            self.submitted[custom_id] = nth + 1
            self.line_counts[custom_id] = self.line_counts.get(custom_id, 0) + 1
            self.lines_total += 1
            job.lines.append(BatchLine(custom_id, body, nth))

    def _new_job(
        self, job_id: str, provider: str, status: str, custom_ids: list[str], headers: dict[str, str]
    ) -> BatchJob:
        now = time.time()
        delay = max(0.0, float(self.server.batch_delay_s))
        return BatchJob(
            id=job_id,
            provider=provider,
            status=status,
            custom_ids=custom_ids,
            created=now,
            ends_at=now + delay,
            headers=dict(headers),
            expire_rate=float(self.server.batch_expire_rate),
            seed=int(self.server.batch_seed),
            validate_s=delay / 4,
        )

    def _cancel(self, job: BatchJob) -> None:
        now = time.time()
        job.cancel_initiated = now
        job.ends_at = min(job.ends_at, now + max(0.0, float(self.server.batch_delay_s)) / 4)
        self._schedule(job)
        self.advance(job)

    # -- HTTP -------------------------------------------------------------------------------
    async def respond(
        self, method: str, path: str, target: str, headers: dict[str, str], raw: bytes, writer: asyncio.StreamWriter
    ) -> None:
        query = dict(urllib.parse.parse_qsl(target.partition("?")[2]))
        with self.lock:
            if path.startswith(ANTHROPIC):
                status, body, content_type = self._anthropic(method, path, query, headers, raw)
            elif path.startswith(GOOGLE):
                status, body = self._google(method, path, query, headers, raw)
                content_type = "application/json"
            elif path.startswith(XAI):
                status, body = self._xai(method, path, query, headers, raw)
                content_type = "application/json"
            elif path.startswith(TOGETHER_UPLOAD) and method == "PUT":
                status, body, content_type = self._together_put(path[len(TOGETHER_UPLOAD) :], raw)
            elif path.startswith((TOGETHER, MISTRAL)):
                status, body, content_type = self._files_provider(method, path, query, headers, raw)
            else:
                status, body, content_type = self._openai(method, path, query, headers, raw)
            self.server.batch_calls.append({"method": method, "path": path, "status": status, "at": time.time()})
        extra: dict[str, str] = {}
        if isinstance(body, dict) and isinstance(body.get(REDIRECT), dict):
            extra = body.pop(REDIRECT)
        text = body if isinstance(body, str) else json.dumps(body)
        creates = (OPENAI + "/batches", ANTHROPIC, TOGETHER + "/batches", MISTRAL + "/batch/jobs")
        adds = path.startswith(XAI + "/") and path.endswith("/requests")  # an xAI batch's lines go in here
        if (
            method == "POST"
            and (path in creates or path.endswith(":batchGenerateContent") or adds)
            and status in (200, 201)
        ):
            # The batch exists; its creator hears of it only later (a window to kill it in).
            await asyncio.sleep(float(self.server.batch_create_hold_s))
        await self.server._send(writer, status, text, headers=extra or None, content_type=content_type)

    # -- OpenAI -----------------------------------------------------------------------------
    def _openai(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], raw: bytes
    ) -> tuple[int, Any, str]:
        json_type = "application/json"
        auth = headers.get("authorization", "")
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            message = "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
            return 401, openai_error(message), json_type
        parts = path[len(OPENAI) + 1 :].split("/")
        if parts == ["files"] and method == "POST":
            return (*self._openai_upload(headers, raw), json_type)
        if parts == ["files"] and method == "GET":
            stored_files = [f for f in reversed(self.files.values()) if query.get("purpose") in (None, f.purpose)]
            data = [f.as_object() for f in stored_files]
            first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
            return (
                200,
                {"object": "list", "data": data, "first_id": first, "last_id": last, "has_more": False},
                json_type,
            )
        if parts[0] == "files" and len(parts) in (2, 3):
            stored = self.files.get(parts[1])
            if stored is None:
                return 404, openai_error(f"No such File object: {parts[1]}", param="id"), json_type
            if len(parts) == 3 and parts[2] == "content" and method == "GET":
                return 200, stored.content.decode("utf-8", errors="replace"), "application/octet-stream"
            if len(parts) == 2 and method == "GET":
                return 200, stored.as_object(), json_type
            if len(parts) == 2 and method == "DELETE":
                del self.files[stored.id]
                return 200, {"id": stored.id, "object": "file", "deleted": True}, json_type
        if parts == ["batches"] and method == "POST":
            return (*self._openai_create(headers, raw), json_type)
        if parts == ["batches"] and method == "GET":
            if self.server.batch_list_status:
                return (*self._no_list("openai", method, path), json_type)
            return 200, self._openai_list(query), json_type
        if parts[0] == "batches" and len(parts) in (2, 3):
            job = self.server.batches.get(parts[1])
            if job is None or job.provider != "openai":
                return 404, openai_error(f"No batch found with id '{parts[1]}'."), json_type
            self.advance(job)
            if len(parts) == 2 and method == "GET":
                return 200, openai_batch(job), json_type
            if len(parts) == 3 and parts[2] == "cancel" and method == "POST":
                if job.ended is not None:
                    return 400, openai_error(f"Cannot cancel a batch with status '{job.status}'."), json_type
                self._cancel(job)
                return 200, openai_batch(job), json_type
        return 404, openai_error(f"Invalid URL ({method} {path[len(OPENAI) - 3 :]})"), json_type

    def _no_list(self, provider: str, method: str, path: str) -> tuple[int, Any]:
        """``batch_list_status``: the listing is not there (404) or not allowed (405)."""
        status = int(self.server.batch_list_status)
        message = f"{NO_LIST.get(status, 'Error')}: {method} {path}"
        if provider == "openai":
            return status, openai_error(message)
        return status, anthropic_error(ANTHROPIC_ERROR_TYPES.get(status, "invalid_request_error"), message)

    def _openai_upload(self, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        fields = parse_multipart(headers.get("content-type", ""), raw)
        if fields is None:
            return 400, openai_error("Invalid Content-Type header: the request body must be multipart/form-data.")
        purpose = fields.get("purpose", (None, b""))[1].decode("utf-8", errors="replace").strip()
        if not purpose:
            return 400, openai_error("Missing required parameter: 'purpose'.", "purpose", "missing_required_parameter")
        if purpose != "batch":
            message = f"The fake server takes files for purpose 'batch' only, not {purpose!r}."
            return 400, openai_error(message, "purpose")
        if "file" not in fields:
            return 400, openai_error("Missing required parameter: 'file'.", "file", "missing_required_parameter")
        filename, content = fields["file"]
        if not (filename or "").endswith(".jsonl"):
            return 400, openai_error("Invalid file format for Batch API. Must be .jsonl", "file")
        stored = StoredFile(f"file-{_hex()}", filename or "", "batch", content, time.time())
        self.files[stored.id] = stored
        return 200, stored.as_object()

    def _openai_create(self, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return 400, openai_error("We could not parse the JSON body of your request.")
        for name in ("input_file_id", "endpoint", "completion_window"):
            if not isinstance(body.get(name), str):
                return 400, openai_error(f"Missing required parameter: '{name}'.", name, "missing_required_parameter")
        endpoint = body["endpoint"]
        if endpoint not in OPENAI_ENDPOINTS:
            message = f"Invalid value: '{endpoint}'. The fake server batches {' and '.join(OPENAI_ENDPOINTS)}."
            return 400, openai_error(message, "endpoint", "invalid_value")
        if body["completion_window"] != "24h":
            message = f"Invalid value: '{body['completion_window']}'. Supported values are: '24h'."
            return 400, openai_error(message, "completion_window", "invalid_value")
        metadata = body.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            return 400, openai_error("Invalid type for 'metadata': expected an object.", "metadata", "invalid_type")
        stored = self.files.get(body["input_file_id"])
        if stored is None:
            return 404, openai_error(f"No such File object: {body['input_file_id']}", "input_file_id")
        if stored.purpose != "batch":
            return 400, openai_error("The input file must be uploaded with purpose 'batch'.", "input_file_id")
        lines, errors = validate_openai_lines(stored.content, endpoint)
        job = self._new_job(f"batch_{_hex(32)}", "openai", "validating", [c for c, _ in lines], headers)
        job.endpoint, job.input_file_id, job.metadata = endpoint, stored.id, metadata
        if errors:
            job.errors = errors
            job.custom_ids = []
            job.ends_at = job.created + job.validate_s
        else:
            self._submit(job, lines)
        self.server.batches[job.id] = job
        self._schedule(job)
        self.advance(job)
        return 200, openai_batch(job)

    def _openai_list(self, query: dict[str, str]) -> dict[str, Any]:
        jobs = [job for job in reversed(self.server.batches.values()) if job.provider == "openai"]
        ids = [job.id for job in jobs]
        after = query.get("after")
        start = ids.index(after) + 1 if after in ids else 0
        limit = _limit(query.get("limit"), 20, 100)
        page = jobs[start : start + limit]
        for job in page:
            self.advance(job)
        return {
            "object": "list",
            "data": [openai_batch(job) for job in page],
            "first_id": page[0].id if page else None,
            "last_id": page[-1].id if page else None,
            "has_more": start + limit < len(jobs),
        }

    # -- Gemini batch mode --------------------------------------------------------------------
    def _google(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], raw: bytes
    ) -> tuple[int, Any]:
        if "key" in query:  # the key belongs in a header (docs/rulings.md, ruling 17): caught here
            return 400, google_error(400, "The fake server takes the key in x-goog-api-key only.", "INVALID_ARGUMENT")
        if not headers.get("x-goog-api-key"):
            message = "Method doesn't allow unregistered callers. Please use API Key or other form of API consumer identity to call this API."
            return 403, google_error(403, message, "PERMISSION_DENIED")
        rest = path[len(GOOGLE) + 1 :]
        if method == "POST" and rest.startswith("models/") and rest.endswith(":batchGenerateContent"):
            return self._google_create(rest[len("models/") : -len(":batchGenerateContent")], headers, raw)
        if rest == "batches" and method == "GET":
            if self.server.batch_list_status:
                status = int(self.server.batch_list_status)
                return status, google_error(status, f"{NO_LIST.get(status, 'Error')}: {method} {path}", "NOT_FOUND")
            jobs = [job for job in reversed(self.server.batches.values()) if job.provider == "google"]
            limit = _limit(query.get("pageSize"), 50, 1000)
            start = int(query.get("pageToken") or 0)
            page = jobs[start : start + limit]
            for job in page:
                self.advance(job)
            listed: dict[str, Any] = {"operations": [self._google_operation(job) for job in page]}
            if start + limit < len(jobs):
                listed["nextPageToken"] = str(start + limit)
            return 200, listed
        name, _, verb = rest.partition(":")
        parts = name.split("/")
        if len(parts) == 2 and parts[0] == "batches":
            job = self.server.batches.get(name)
            if job is None or job.provider != "google":
                return 404, google_error(404, f"Batch {name} not found.", "NOT_FOUND")
            self.advance(job)
            if method == "GET" and not verb:
                return 200, self._google_operation(job)
            if method == "POST" and verb == "cancel":
                if job.ended is None:
                    self._cancel(job)
                return 200, {}
        return 404, google_error(404, f"Not found: {method} {path[len('/google') :]}", "NOT_FOUND")

    def _google_create(self, model: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        batch = body.get("batch") if isinstance(body, dict) else None
        if not isinstance(batch, dict) or not isinstance(batch.get("displayName"), str):
            return 400, google_error(400, "batch.display_name is required.", "INVALID_ARGUMENT")
        requests = ((batch.get("inputConfig") or {}).get("requests") or {}).get("requests")
        if not isinstance(requests, list) or not requests:
            message = "batch.input_config: inline requests (requests.requests) are required by the fake server."
            return 400, google_error(400, message, "INVALID_ARGUMENT")
        lines: list[tuple[str, dict[str, Any]]] = []
        for index, item in enumerate(requests):
            request = item.get("request") if isinstance(item, dict) else None
            key = ((item.get("metadata") or {}).get("key")) if isinstance(item, dict) else None
            if not isinstance(request, dict) or not isinstance(request.get("contents"), list):
                message = f"batch.input_config.requests.requests[{index}].request.contents is required."
                return 400, google_error(400, message, "INVALID_ARGUMENT")
            named = str(request.get("model") or f"models/{model}").removeprefix("models/")
            if named != model:
                message = f"requests[{index}].request.model '{named}' is not the batch's model '{model}'."
                return 400, google_error(400, message, "INVALID_ARGUMENT")
            # The fake answers a line by its key (ours), as the line's place in the batch would do.
            lines.append((str(key if key is not None else index), request))
        job = self._new_job(f"batches/{_hex(32)}", "google", "BATCH_STATE_PENDING", [k for k, _ in lines], headers)
        job.model, job.name = model, batch["displayName"]
        self._submit(job, lines)
        self.server.batches[job.id] = job
        self._schedule(job)
        self.advance(job)
        return 200, self._google_operation(job)

    def _google_operation(self, job: BatchJob) -> dict[str, Any]:
        """The Operation the batch is (``metadata``: GenerateContentBatch; ``response`` once done)."""
        ended = job.ended is not None
        counts = {
            "requestCount": str(len(job.lines)),
            "successfulRequestCount": str(job.count(lambda o: o == "200")),
            "failedRequestCount": str(job.count(lambda o: o != "200")),
            "pendingRequestCount": "0" if ended else str(len(job.lines)),
        }
        batch: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch",
            "model": f"models/{job.model}",
            "displayName": job.name,
            "createTime": _rfc3339(job.created),
            "updateTime": _rfc3339(job.ended or job.created),
            "batchStats": counts,
            "state": job.status,
            "name": job.id,
        }
        operation: dict[str, Any] = {"name": job.id, "metadata": batch}
        if ended:
            batch["endTime"] = _rfc3339(job.ended)
            output = {"inlinedResponses": {"inlinedResponses": job.results}}
            batch["output"] = output
            operation["done"] = True
            operation["response"] = {
                "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatchOutput",
                **output,
            }
        return operation

    # -- xAI --------------------------------------------------------------------------------
    def _xai(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], raw: bytes
    ) -> tuple[int, Any]:
        auth = headers.get("authorization", "")
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            return 401, {"code": "Unauthenticated", "error": "No API key provided."}
        rest = path[len(XAI) :].lstrip("/")
        if not rest and method == "POST":
            body = _json(raw)
            if not isinstance(body, dict) or not isinstance(body.get("name"), str):
                return 400, {"code": "Client specified an invalid argument", "error": "name: a batch name is required"}
            job = self._new_job(f"batch_{uuid.uuid4()}", "xai", "in_progress", [], headers)
            job.name = body["name"]
            job.ends_at = float("inf")  # it runs once it has requests
            self.server.batches[job.id] = job
            return 200, self._xai_batch(job)
        if not rest and method == "GET":
            if self.server.batch_list_status:
                status = int(self.server.batch_list_status)
                return status, {"code": NO_LIST.get(status, "Error"), "error": f"{method} {path}"}
            jobs = [job for job in reversed(self.server.batches.values()) if job.provider == "xai"]
            limit = _limit(query.get("limit"), 100, 100)
            start = int(query.get("pagination_token") or 0)
            page = jobs[start : start + limit]
            for job in page:
                self.advance(job)
            token = str(start + limit) if start + limit < len(jobs) else None
            return 200, {"batches": [self._xai_batch(job) for job in page], "pagination_token": token}
        batch_id, _, verb = rest.partition(":")
        batch_id, _, sub = batch_id.partition("/")
        job = self.server.batches.get(batch_id)
        if job is None or job.provider != "xai":
            return 404, {"code": "Some requested entity was not found", "error": f"Batch {batch_id} not found"}
        self.advance(job)
        if method == "GET" and not sub and not verb:
            return 200, self._xai_batch(job)
        if method == "POST" and sub == "requests":
            return self._xai_add(job, raw)
        if method == "GET" and sub == "results":
            results = job.results if job.ended is not None else []
            limit = _limit(query.get("limit"), 100, 100)
            start = int(query.get("pagination_token") or 0)
            token = str(start + limit) if start + limit < len(results) else None
            return 200, {"results": results[start : start + limit], "pagination_token": token}
        if method == "POST" and verb == "cancel" and not sub:
            if job.ended is None:
                self._cancel(job)
            return 200, self._xai_batch(job)
        return 404, {"code": "Not found", "error": f"{method} {path}"}

    def _xai_add(self, job: BatchJob, raw: bytes) -> tuple[int, Any]:
        body = _json(raw)
        requests = body.get("batch_requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return 400, {"code": "Client specified an invalid argument", "error": "batch_requests is required"}
        if job.ended is not None or job.cancel_initiated is not None:
            return 400, {"code": "Client specified an invalid argument", "error": "the batch takes no more requests"}
        lines: list[tuple[str, dict[str, Any]]] = []
        seen = set(job.custom_ids)
        for index, item in enumerate(requests):
            request_id = item.get("batch_request_id") if isinstance(item, dict) else None
            chat = ((item.get("batch_request") or {}).get("chat_get_completion")) if isinstance(item, dict) else None
            if not isinstance(request_id, str) or not request_id or request_id in seen:
                message = f"batch_requests[{index}].batch_request_id must be unique within the batch"
                return 400, {"code": "Client specified an invalid argument", "error": message}
            if not isinstance(chat, dict) or not isinstance(chat.get("messages"), list):
                message = f"batch_requests[{index}].batch_request.chat_get_completion.messages is required"
                return 400, {"code": "Client specified an invalid argument", "error": message}
            seen.add(request_id)
            lines.append((request_id, chat))
        self._submit(job, lines)
        job.custom_ids += [request_id for request_id, _ in lines]
        job.ends_at = time.time() + max(0.0, float(self.server.batch_delay_s))
        self._schedule(job)
        return 200, {}

    def _xai_batch(self, job: BatchJob) -> dict[str, Any]:
        ended = job.ended is not None
        state = {
            "num_requests": len(job.lines),
            "num_pending": 0 if ended else len(job.lines),
            "num_success": job.count(lambda o: o == "200"),
            "num_error": job.count(lambda o: o not in ("200", "canceled")),
            "num_cancelled": job.count(lambda o: o == "canceled"),
        }
        batch: dict[str, Any] = {
            "batch_id": job.id,
            "name": job.name,
            "create_time": _rfc3339(job.created),
            "expire_time": _rfc3339(job.created + WINDOW_S),
            "create_api_key_id": "fake-key-id",
            "state": state,
        }
        if job.cancel_initiated is not None:
            batch["cancel_time"] = _rfc3339(job.cancel_initiated)
        return batch

    # -- Together and Mistral ---------------------------------------------------------------
    def _files_provider(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], raw: bytes
    ) -> tuple[int, Any, str]:
        provider, root = ("together", TOGETHER) if path.startswith(TOGETHER) else ("mistral", MISTRAL)
        json_type = "application/json"
        auth = headers.get("authorization", "")
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            return 401, {"message": "Unauthorized", "request_id": _hex(32)}, json_type
        parts = path[len(root) + 1 :].split("/")
        if parts == ["files"] and method == "POST":
            return (*self._upload(provider, headers, raw), json_type)
        if provider == "together" and len(parts) == 3 and parts[0] == "files" and parts[2] == "preprocess":
            stored = self.files.get(parts[1])
            if stored is None or stored.owner != provider or stored.filename.startswith(PENDING_UPLOAD):
                return 404, {"message": f"File {parts[1]} not found or not uploaded"}, json_type
            return 200, stored.as_object(), json_type
        if parts == ["files"] and method == "GET":
            data = [f.as_object() for f in reversed(self.files.values()) if f.owner == provider]
            listed: dict[str, Any] = {"object": "list", "data": data}
            if provider == "mistral":
                listed["total"] = len(data)
            return 200, listed, json_type
        if parts[0] == "files" and len(parts) in (2, 3) and method == "GET":
            stored = self.files.get(parts[1])
            if stored is None or stored.owner != provider:
                return 404, {"message": f"File {parts[1]} not found"}, json_type
            if len(parts) == 2:  # Mistral's file retrieval says whether it was deleted
                return 200, stored.as_object() | ({"deleted": False} if provider == "mistral" else {}), json_type
            if parts[2] == "content":
                return 200, stored.content.decode("utf-8", errors="replace"), "application/octet-stream"
        jobs = ["batches"] if provider == "together" else ["batch", "jobs"]
        if parts == jobs and method == "POST":
            return (*self._create_from_file(provider, headers, raw), json_type)
        if parts == jobs and method == "GET":
            if self.server.batch_list_status:
                status = int(self.server.batch_list_status)
                return status, {"message": f"{NO_LIST.get(status, 'Error')}: {method} {path}"}, json_type
            found = [job for job in reversed(self.server.batches.values()) if job.provider == provider]
            for job in found:
                self.advance(job)
            if provider == "together":
                return 200, [together_job(job) for job in found], json_type
            return 200, {"object": "list", "data": [mistral_job(job) for job in found], "total": len(found)}, json_type
        if parts[: len(jobs)] == jobs and len(parts) in (len(jobs) + 1, len(jobs) + 2):
            job = self.server.batches.get(parts[len(jobs)])
            if job is None or job.provider != provider:
                return 404, {"message": f"Batch job {parts[len(jobs)]} not found"}, json_type
            self.advance(job)
            render = together_job if provider == "together" else mistral_job
            if len(parts) == len(jobs) + 1 and method == "GET":
                return 200, render(job), json_type
            if parts[-1] == "cancel" and method == "POST":
                if job.ended is None:
                    self._cancel(job)
                return 200, render(job), json_type
        return 404, {"message": f"Not found: {method} {path}"}, json_type

    def _upload(self, provider: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        fields = parse_multipart(headers.get("content-type", ""), raw)
        if provider == "together" and fields is not None and "file" not in fields and "file_name" in fields:
            return self._together_upload_url(fields)
        if fields is None or "file" not in fields:
            return 400, {"message": "a multipart/form-data body with a file is required"}
        purpose = fields.get("purpose", (None, b""))[1].decode("utf-8", errors="replace").strip()
        wanted = "batch-api" if provider == "together" else "batch"
        if purpose != wanted:
            return 400, {
                "message": f"The fake server takes {provider} files for purpose {wanted!r} only, not {purpose!r}."
            }
        filename, content = fields["file"]
        stored = StoredFile(_file_id(provider), filename or "", purpose, content, time.time(), provider)
        self.files[stored.id] = stored
        return 200, stored.as_object()

    def _together_upload_url(self, fields: dict[str, tuple[str | None, bytes]]) -> tuple[int, Any]:
        """Together's SDK uploads in three steps: the form without the file is answered with a
        redirect to where the file is PUT (and the file's id), then ``/files/{id}/preprocess``."""
        purpose = fields.get("purpose", (None, b""))[1].decode("utf-8", errors="replace").strip()
        if purpose != "batch-api":
            return 400, {
                "message": f"The fake server takes together files for purpose 'batch-api' only, not {purpose!r}."
            }
        name = fields["file_name"][1].decode("utf-8", errors="replace")
        stored = StoredFile(_file_id("together"), PENDING_UPLOAD + name, purpose, b"", time.time(), "together")
        self.files[stored.id] = stored
        location = f"{self.server.url}{TOGETHER_UPLOAD}{stored.id}"
        return 302, {REDIRECT: {"Location": location, "X-Together-File-Id": stored.id}}

    def _together_put(self, file_id: str, raw: bytes) -> tuple[int, Any, str]:
        stored = self.files.get(file_id)
        if stored is None or not stored.filename.startswith(PENDING_UPLOAD):
            return 404, "<Error><Code>NoSuchUpload</Code></Error>", "application/xml"
        stored.filename, stored.content = stored.filename[len(PENDING_UPLOAD) :], raw
        return 200, "", "application/xml"

    def _create_from_file(self, provider: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        body = _json(raw)
        if not isinstance(body, dict) or body.get("endpoint") != "/v1/chat/completions":
            return 400, {"message": "endpoint: the fake server batches /v1/chat/completions only"}
        file_ids = [body.get("input_file_id")] if provider == "together" else body.get("input_files")
        if not isinstance(file_ids, list) or not file_ids:
            return 400, {"message": "an input file is required"}
        lines: list[tuple[str, dict[str, Any]]] = []
        for file_id in file_ids:
            stored = self.files.get(str(file_id))
            if stored is None or stored.owner != provider:
                return 404, {"message": f"File {file_id} not found"}
            for number, text in enumerate(stored.content.split(b"\n"), start=1):
                if not text.strip():
                    continue
                line = _json(text)
                custom_id = line.get("custom_id") if isinstance(line, dict) else None
                request = line.get("body") if isinstance(line, dict) else None
                if not isinstance(custom_id, str) or not isinstance(request, dict):
                    return 400, {"message": f"line {number}: custom_id and body are required"}
                if provider == "mistral" and body.get("model"):
                    request = {**request, "model": body["model"]}
                lines.append((custom_id, request))
        job_id = str(uuid.uuid4())
        job = self._new_job(job_id, provider, RUNNING_STATUS[provider][0], [c for c, _ in lines], headers)
        job.input_file_id, job.metadata, job.endpoint = str(file_ids[0]), body.get("metadata"), body["endpoint"]
        job.model = body.get("model") or body.get("model_id")
        job.input_files = [str(f) for f in file_ids]
        self._submit(job, lines)
        self.server.batches[job.id] = job
        self._schedule(job)
        self.advance(job)
        if provider == "together":  # "201: Job created (potentially with warnings)"
            return 201, {"job": together_job(job), "warning": None}
        return 200, mistral_job(job)

    # -- Anthropic --------------------------------------------------------------------------
    def _anthropic(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], raw: bytes
    ) -> tuple[int, Any, str]:
        json_type = "application/json"
        bearer = headers.get("authorization", "").startswith("Bearer ") and headers["authorization"][7:].strip()
        if not headers.get("x-api-key") and not bearer:  # the newer SDKs send the key as a bearer token
            return 401, anthropic_error("authentication_error", "x-api-key header is required"), json_type
        if not headers.get("anthropic-version"):
            return 400, anthropic_error("invalid_request_error", "anthropic-version: header is required"), json_type
        parts = [p for p in path[len(ANTHROPIC) :].split("/") if p]
        if not parts and method == "POST":
            return (*self._anthropic_create(headers, raw), json_type)
        if not parts and method == "GET":
            if self.server.batch_list_status:
                return (*self._no_list("anthropic", method, path), json_type)
            return 200, self._anthropic_list(query), json_type
        if parts and len(parts) <= 2:
            job = self.server.batches.get(parts[0])
            if job is None or job.provider != "anthropic":
                message = f"No message batch found with id '{parts[0]}'."
                return 404, anthropic_error("not_found_error", message), json_type
            self.advance(job)
            if len(parts) == 1 and method == "GET":
                return 200, self._anthropic_batch(job), json_type
            if len(parts) == 1 and method == "DELETE":
                if job.ended is None:
                    message = f"Message batch {job.id} is still processing; cancel it before deleting it."
                    return 400, anthropic_error("invalid_request_error", message), json_type
                del self.server.batches[job.id]
                return 200, {"id": job.id, "type": "message_batch_deleted"}, json_type
            if parts[1:] == ["results"] and method == "GET":
                if job.ended is None:
                    message = f"Message batch {job.id} has no available results: it is still processing."
                    return 404, anthropic_error("not_found_error", message), json_type
                return 200, "".join(json.dumps(r) + "\n" for r in job.results), "application/x-jsonl"
            if parts[1:] == ["cancel"] and method == "POST":
                if job.ended is not None:
                    message = f"Message batch {job.id} has ended and cannot be canceled."
                    return 400, anthropic_error("invalid_request_error", message), json_type
                self._cancel(job)
                return 200, self._anthropic_batch(job), json_type
        return 404, anthropic_error("not_found_error", f"Not found: {method} {path[len('/anthropic') :]}"), json_type

    def _anthropic_create(self, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return 400, anthropic_error("invalid_request_error", "The request body is not valid JSON.")
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            return 400, anthropic_error("invalid_request_error", "requests: a list of at least 1 request is required")
        lines: list[tuple[str, dict[str, Any]]] = []
        seen: set[str] = set()
        for index, request in enumerate(requests):
            custom_id = request.get("custom_id") if isinstance(request, dict) else None
            params = request.get("params") if isinstance(request, dict) else None
            if not isinstance(custom_id, str) or not CUSTOM_ID.match(custom_id):
                message = f"requests.{index}.custom_id: String should match pattern '{CUSTOM_ID.pattern}'"
                return 400, anthropic_error("invalid_request_error", message)
            if not isinstance(params, dict):
                return 400, anthropic_error("invalid_request_error", f"requests.{index}.params: Field required")
            if custom_id in seen:
                message = f"requests.{index}.custom_id: '{custom_id}' is used by another request; custom_id must be unique within a Message Batch"
                return 400, anthropic_error("invalid_request_error", message)
            seen.add(custom_id)
            lines.append((custom_id, params))
        job = self._new_job(f"msgbatch_{_hex(24)}", "anthropic", "in_progress", [c for c, _ in lines], headers)
        self._submit(job, lines)
        self.server.batches[job.id] = job
        self._schedule(job)
        self.advance(job)
        return 200, self._anthropic_batch(job)

    def _anthropic_list(self, query: dict[str, str]) -> dict[str, Any]:
        jobs = [job for job in reversed(self.server.batches.values()) if job.provider == "anthropic"]
        ids = [job.id for job in jobs]
        limit = _limit(query.get("limit"), 20, 1000)
        if query.get("before_id") in ids:
            end = ids.index(query["before_id"])
            start = max(0, end - limit)
            page, more = jobs[start:end], start > 0
        else:
            after = query.get("after_id")
            start = ids.index(after) + 1 if after in ids else 0
            page, more = jobs[start : start + limit], start + limit < len(jobs)
        for job in page:
            self.advance(job)
        return {
            "data": [self._anthropic_batch(job) for job in page],
            "has_more": more,
            "first_id": page[0].id if page else None,
            "last_id": page[-1].id if page else None,
        }

    def _anthropic_batch(self, job: BatchJob) -> dict[str, Any]:
        ended = job.ended is not None
        counts = {
            "processing": 0 if ended else len(job.lines),
            "succeeded": job.count(lambda o: o == "200"),
            "errored": job.count(lambda o: o.isdigit() and o != "200"),
            "canceled": job.count(lambda o: o == "canceled"),
            "expired": job.count(lambda o: o == "expired"),
        }
        return {
            "id": job.id,
            "type": "message_batch",
            "processing_status": job.status,
            "request_counts": counts,
            "ended_at": _rfc3339(job.ended),
            "created_at": _rfc3339(job.created),
            "expires_at": _rfc3339(job.created + WINDOW_S),
            "archived_at": None,
            "cancel_initiated_at": _rfc3339(job.cancel_initiated),
            "results_url": f"{self.server.url}{ANTHROPIC}/{job.id}/results" if ended else None,
        }


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw or b"null")
    except ValueError:
        return None


def together_job(job: BatchJob) -> dict[str, Any]:
    done = job.count(lambda o: o in ("200",) or o.isdigit())
    return {
        "id": job.id,
        "user_id": "user-fake",
        "input_file_id": job.input_file_id,
        "file_size_bytes": sum(len(json.dumps(line.body)) for line in job.lines),
        "status": job.status,
        "job_deadline": _rfc3339(job.created + WINDOW_S),
        "created_at": _rfc3339(job.created),
        "endpoint": job.endpoint,
        "progress": 100.0 if job.ended is not None else (100.0 * done / len(job.lines) if job.lines else 0.0),
        "model_id": job.model,
        "output_file_id": job.output_file_id,
        "error_file_id": job.error_file_id,
        "error": None,
        "completed_at": _rfc3339(job.ended),
    }


def mistral_job(job: BatchJob) -> dict[str, Any]:
    ran = job.count(lambda o: o.isdigit())
    return {
        "id": job.id,
        "object": "batch",
        "input_files": list(job.input_files),
        "metadata": job.metadata,
        "endpoint": job.endpoint,
        "model": job.model,
        "agent_id": None,
        "output_file": job.output_file_id,
        "error_file": job.error_file_id,
        "errors": [],
        "outputs": None,
        "status": job.status,
        "created_at": _unix(job.created),
        "total_requests": len(job.lines),
        "completed_requests": ran,
        "succeeded_requests": job.count(lambda o: o == "200"),
        "failed_requests": ran - job.count(lambda o: o == "200"),
        "started_at": _unix(job.created + job.validate_s) if job.status != "QUEUED" else None,
        "completed_at": _unix(job.ended),
    }


def google_error(status: int, message: str, code: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "status": code}}


def rpc_result(provider: str, custom_id: str, outcome: str, payload: Any) -> dict[str, Any]:
    """A line's result: Gemini's InlinedResponse (``response`` or a google.rpc ``error``, with our
    ``metadata``), or xAI's BatchResult (``batch_result.response.chat_get_completion`` or
    ``batch_result.error``)."""
    error: dict[str, Any] | None = None
    if outcome == "canceled":
        error = {"code": RPC_CANCELLED, "message": "The request was cancelled."}
    elif outcome == "expired":
        error = {"code": RPC_DEADLINE, "message": "The request was not processed before the batch expired."}
    elif outcome != "200":
        status = int(outcome)
        inner = payload.get("error") if isinstance(payload, dict) else None
        message = str((inner or {}).get("message") if isinstance(inner, dict) else payload) or f"fake {status}"
        code = RPC_EXHAUSTED if status == 429 else RPC_INTERNAL if status >= 500 else RPC_INVALID
        error = {"code": code, "message": message}
    if provider == "google":
        item: dict[str, Any] = {"metadata": {"key": custom_id}}
        item.update({"error": error} if error else {"response": payload})
        return item
    result = {"error": error} if error else {"response": {"chat_get_completion": payload}}
    return {"batch_request_id": custom_id, "batch_result": result}


def _limit(value: str | None, default: int, most: int) -> int:
    try:
        return min(most, max(1, int(value))) if value else default
    except ValueError:
        return default


def validate_openai_lines(
    content: bytes, endpoint: str
) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
    """The input file's lines as (custom_id, body), and the errors that fail the batch (the
    Batch object's ``errors.data``: code, message, param, line)."""
    lines: list[tuple[str, dict[str, Any]]] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()

    def fail(number: int, code: str, message: str, param: str | None = None) -> None:
        errors.append({"code": code, "message": message, "param": param, "line": number})

    for number, text in enumerate(content.split(b"\n"), start=1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except ValueError:
            line = None
        if not isinstance(line, dict):
            fail(number, "invalid_json_line", "This line is not parseable as valid JSON.")
            continue
        custom_id = line.get("custom_id")
        if not isinstance(custom_id, str) or not custom_id:
            fail(number, "invalid_request", "Missing required parameter: 'custom_id'.", "custom_id")
        elif custom_id in seen:
            message = "The custom_id for this request is a duplicate of another request. The custom_id parameter must be unique for each request in a batch."
            fail(number, "duplicate_custom_id", message, "custom_id")
        elif line.get("method") != "POST":
            fail(number, "invalid_request", "The method for this request must be 'POST'.", "method")
        elif line.get("url") != endpoint:
            message = f"The URL provided for this request does not match the batch endpoint: expected '{endpoint}'."
            fail(number, "url_mismatch", message, "url")
        elif not isinstance(line.get("body"), dict):
            fail(number, "invalid_request", "Missing required parameter: 'body'.", "body")
        else:
            seen.add(custom_id)
            lines.append((custom_id, line["body"]))
    if not lines and not errors:
        fail(0, "empty_file", "The input file is empty.")
    return lines, errors


def openai_batch(job: BatchJob) -> dict[str, Any]:
    ended = job.ended
    failed = job.status == "failed"
    return {
        "id": job.id,
        "object": "batch",
        "endpoint": job.endpoint,
        "errors": {"object": "list", "data": job.errors} if job.errors else None,
        "input_file_id": job.input_file_id,
        "completion_window": "24h",
        "status": job.status,
        "output_file_id": job.output_file_id,
        "error_file_id": job.error_file_id,
        "created_at": _unix(job.created),
        "in_progress_at": None if job.errors or job.status == "validating" else _unix(job.created + job.validate_s),
        "expires_at": _unix(job.created + WINDOW_S),
        "finalizing_at": _unix(ended) if ended is not None and not failed and job.cancel_initiated is None else None,
        "completed_at": _unix(ended) if job.status == "completed" else None,
        "failed_at": _unix(ended) if failed else None,
        "expired_at": _unix(ended) if job.status == "expired" else None,
        "cancelling_at": _unix(job.cancel_initiated),
        "cancelled_at": _unix(ended) if job.status == "cancelled" else None,
        "request_counts": {
            "total": len(job.lines),
            "completed": job.count(lambda o: o == "200"),
            "failed": job.count(lambda o: o.isdigit() and o != "200"),
        },
        "metadata": job.metadata,
    }


def anthropic_result(custom_id: str, outcome: str, payload: Any) -> dict[str, Any]:
    if outcome == "200":
        result: dict[str, Any] = {"type": "succeeded", "message": payload}
    elif outcome in ("expired", "canceled"):
        result = {"type": outcome}
    else:
        status = int(outcome)
        if isinstance(payload, dict) and payload.get("type") == "error" and isinstance(payload.get("error"), dict):
            error = payload  # a rule's raw body, already Anthropic's shape
        else:
            inner = payload.get("error") if isinstance(payload, dict) else None
            message = inner.get("message") if isinstance(inner, dict) else None
            kind = ANTHROPIC_ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
            error = anthropic_error(kind, str(message or payload or f"fake {status}"))
        result = {"type": "errored", "error": error}
    return {"custom_id": custom_id, "result": result}


def answer_line(server: FakeServer, live_path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
    """(status, JSON body) the live endpoint at ``live_path`` would answer ``body`` with now:
    the same rule pick, fault draw, flaky draw and reply; a fault that needs a connection
    (hang, drop, malformed) is a 500."""
    from tests.fakeserver.server import _last_user, _model, render_reply

    model = _model(live_path, body)
    last_user = _last_user(live_path, body)
    rule, fault = server.rule_and_fault(model, last_user, live_path)
    status = 500 if fault in SERVER_FAULTS else 429 if fault == "429" else (rule.status if rule is not None else None)
    if status:
        if rule is not None and rule.body:
            try:
                return status, json.loads(rule.body)
            except ValueError:
                return status, rule.body
        message = f"fake {status}"
        if rule is not None and rule.echo_header:
            message += f": you sent {rule.echo_header}={headers.get(rule.echo_header.lower(), '')}"
        return status, {"error": {"message": message, "type": "fake_error", "code": status}}
    return 200, server.prompt_cache.apply(
        render_reply(live_path, model, server.reply_text(rule, fault, model, last_user), last_user), body
    )
