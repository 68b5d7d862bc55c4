"""The fake server's Gemini, xAI, Together and Mistral batch APIs (tests/fakeserver/batch.py) as
the providers' official Python SDKs see them: each SDK, pointed at the fake over loopback,
creates, reads, lists and cancels batches and parses every object into its own model classes.
xAI's SDK speaks gRPC only; its protobuf messages parse the fake's REST objects instead."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakeserver import FakeServer


def _until(read: Callable[[], Any], done: Callable[[Any], bool]) -> Any:
    deadline = time.monotonic() + 10
    while True:
        value = read()
        if done(value):
            return value
        assert time.monotonic() < deadline, f"never done: {value}"
        time.sleep(0.05)


def _chat(text: str, model: str = "fake-model") -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}]}


def _jsonl(lines: list[tuple[str, dict[str, Any]]]) -> bytes:
    return "".join(json.dumps({"custom_id": key, "body": body}) + "\n" for key, body in lines).encode()


@pytest.fixture
def server():
    with FakeServer(batch_delay_s=0.3) as fake:
        yield fake


def test_the_gemini_sdk_creates_reads_lists_and_cancels_a_batch(server: FakeServer):
    genai = pytest.importorskip("google.genai")
    types = pytest.importorskip("google.genai.types")
    client = genai.Client(
        api_key="test-gemini-key", http_options=types.HttpOptions(base_url=server.url + "/google", api_version="v1beta")
    )
    requests = [
        {"contents": [{"role": "user", "parts": [{"text": f"Question {n}"}]}], "metadata": {"key": f"k{n}"}}
        for n in range(3)
    ]
    created = client.batches.create(model="gemini-2.5-flash", src=requests, config={"display_name": "wb-gemini"})
    assert isinstance(created, types.BatchJob)
    assert created.display_name == "wb-gemini"
    assert created.state in (types.JobState.JOB_STATE_PENDING, types.JobState.JOB_STATE_RUNNING)

    job = _until(lambda: client.batches.get(name=created.name), lambda j: j.done)
    assert job.state == types.JobState.JOB_STATE_SUCCEEDED
    answers = {r.metadata["key"]: r.response.text for r in job.dest.inlined_responses}
    assert answers == {f"k{n}": f"echo: Question {n}" for n in range(3)}
    assert [j.name for j in client.batches.list()] == [created.name]

    server.set_batch(batch_delay_s=4.0)  # the cancel ends it in a quarter of that
    other = client.batches.create(model="gemini-2.5-flash", src=requests[:1], config={"display_name": "wb-2"})
    client.batches.cancel(name=other.name)
    cancelled = _until(lambda: client.batches.get(name=other.name), lambda j: j.done)
    assert cancelled.state == types.JobState.JOB_STATE_CANCELLED
    assert server.batches[other.name].outcomes == {"k0": "canceled"}


def test_the_mistral_sdk_uploads_creates_reads_lists_and_cancels_a_batch(server: FakeServer):
    pytest.importorskip("mistralai")
    from mistralai.client import Mistral, models

    client = Mistral(api_key="test-mistral-key", server_url=server.url + "/mistral")
    content = _jsonl([(f"k{n}", _chat(f"Question {n}", "mistral-small-latest")) for n in range(3)])
    uploaded = client.files.upload(file={"file_name": "wb.jsonl", "content": content}, purpose="batch")
    assert isinstance(uploaded, models.CreateFileResponse) and uploaded.purpose == "batch"
    assert isinstance(client.files.retrieve(file_id=uploaded.id), models.GetFileResponse)

    created = client.batch.jobs.create(
        input_files=[uploaded.id], endpoint="/v1/chat/completions", metadata={"weval_batch": "wb-mistral"}
    )
    assert isinstance(created, models.BatchJob) and created.status in ("QUEUED", "RUNNING")
    job = _until(lambda: client.batch.jobs.get(job_id=created.id), lambda j: j.status == "SUCCESS")
    assert (job.total_requests, job.succeeded_requests, job.metadata) == (3, 3, {"weval_batch": "wb-mistral"})
    output = client.files.download(file_id=job.output_file).read().decode()
    lines = {line["custom_id"]: line["response"] for line in map(json.loads, output.splitlines())}
    assert {key: r["body"]["choices"][0]["message"]["content"] for key, r in lines.items()} == {
        f"k{n}": f"echo: Question {n}" for n in range(3)
    }
    listed = client.batch.jobs.list()
    assert isinstance(listed, models.ListBatchJobsResponse) and [j.id for j in listed.data or []] == [created.id]

    server.set_batch(batch_delay_s=4.0)  # the cancel ends it in a quarter of that
    other = client.batch.jobs.create(input_files=[uploaded.id], endpoint="/v1/chat/completions")
    assert client.batch.jobs.cancel(job_id=other.id).status == "CANCELLATION_REQUESTED"
    assert _until(lambda: client.batch.jobs.get(job_id=other.id), lambda j: j.status == "CANCELLED")


def test_the_together_sdk_uploads_creates_reads_lists_and_cancels_a_batch(server: FakeServer, tmp_path: Path):
    together = pytest.importorskip("together")
    from together.types import BatchJob, FileResponse

    client = together.Together(api_key="test-together-key", base_url=server.url + "/together")
    content = _jsonl([(f"k{n}", _chat(f"Question {n}")) for n in range(3)])
    # The upload as Together's batch guide shows it with curl (-F purpose=batch-api -F file=@...),
    # which is how the engine uploads, and as its SDK does it (a redirect, a PUT, a preprocess).
    uploaded = httpx.post(
        server.url + "/together/v1/files",
        headers={"Authorization": "Bearer test-together-key"},
        data={"purpose": "batch-api"},
        files={"file": ("wb.jsonl", content)},
    )
    assert uploaded.status_code == 200, uploaded.text
    file = client.files.retrieve(uploaded.json()["id"])
    assert isinstance(file, FileResponse) and (file.purpose, file.bytes) == ("batch-api", len(content))
    (tmp_path / "sdk.jsonl").write_bytes(content)
    by_sdk = client.files.upload(file=tmp_path / "sdk.jsonl", purpose="batch-api", check=False)
    assert isinstance(by_sdk, FileResponse) and (by_sdk.filename, by_sdk.bytes) == ("sdk.jsonl", len(content))

    created = client.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions")
    assert isinstance(created.job, BatchJob) and created.job.status == "VALIDATING"
    job = _until(lambda: client.batches.retrieve(created.job.id), lambda j: j.status == "COMPLETED")
    assert job.input_file_id == file.id and job.output_file_id and job.error_file_id is None
    output = client.files.content(job.output_file_id).text()
    lines = {line["custom_id"]: line["response"] for line in map(json.loads, output.splitlines())}
    assert {key: r["status_code"] for key, r in lines.items()} == {f"k{n}": 200 for n in range(3)}
    assert [j.id for j in client.batches.list()] == [created.job.id]

    server.set_batch(batch_delay_s=4.0)  # the cancel ends it in a quarter of that
    other = client.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions")
    client.batches.cancel(other.job.id)
    assert _until(lambda: client.batches.retrieve(other.job.id), lambda j: j.status == "CANCELLED")


def test_the_xai_batch_objects_parse_as_the_sdks_protobuf_messages(server: FakeServer):
    """xai-sdk has no HTTP client (gRPC only): the REST objects are parsed, unknown fields
    refused, by its batch protobuf messages, as the REST API transcodes them."""
    pytest.importorskip("xai_sdk")
    from google.protobuf import json_format
    from xai_sdk.proto.v6 import batch_pb2

    headers = {"Authorization": "Bearer test-xai-key"}
    base = server.url + "/xai/v1/batches"
    with httpx.Client(timeout=10, headers=headers) as http:
        created = json_format.ParseDict(http.post(base, json={"name": "wb-xai"}).json(), batch_pb2.Batch())
        assert created.name == "wb-xai" and created.state.num_requests == 0
        requests = [
            {"batch_request_id": f"k{n}", "batch_request": {"chat_get_completion": _chat(f"Question {n}")}}
            for n in range(3)
        ]
        added = http.post(f"{base}/{created.batch_id}/requests", json={"batch_requests": requests})
        assert added.status_code == 200, added.text

        def read() -> Any:
            return json_format.ParseDict(http.get(f"{base}/{created.batch_id}").json(), batch_pb2.Batch())

        batch = _until(read, lambda b: b.state.num_pending == 0)
        assert (batch.state.num_requests, batch.state.num_success) == (3, 3)
        listed = json_format.ParseDict(http.get(base).json(), batch_pb2.ListBatchesResponse())
        assert [b.batch_id for b in listed.batches] == [created.batch_id]
        results = http.get(f"{base}/{created.batch_id}/results", params={"limit": 2}).json()
        page = [r["batch_request_id"] for r in results["results"]]
        rest = http.get(f"{base}/{created.batch_id}/results", params={"pagination_token": results["pagination_token"]})
        page += [r["batch_request_id"] for r in rest.json()["results"]]
        assert sorted(page) == ["k0", "k1", "k2"]
        answer = results["results"][0]["batch_result"]["response"]["chat_get_completion"]
        assert answer["choices"][0]["message"]["content"].startswith("echo: Question")

        server.set_batch(batch_delay_s=4.0)  # the cancel ends it in a quarter of that
        other = http.post(base, json={"name": "wb-2"}).json()
        http.post(f"{base}/{other['batch_id']}/requests", json={"batch_requests": requests[:1]})
        cancelled = json_format.ParseDict(http.post(f"{base}/{other['batch_id']}:cancel").json(), batch_pb2.Batch())
        assert cancelled.HasField("cancel_time")
