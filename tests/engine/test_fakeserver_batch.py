"""The fake server's batch APIs (tests/fakeserver/batch.py), driven with plain httpx: OpenAI's
Batch API (files + batches) and Anthropic's Message Batches API, against their documented shapes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.fakeserver import FakeServer, FakeServerProcess, Rule

OPENAI_HEADERS = {"Authorization": "Bearer test-openai-key"}
ANTHROPIC_HEADERS = {"x-api-key": "test-anthropic-key", "anthropic-version": "2023-06-01"}
OPENAI_DONE = ("completed", "expired", "cancelled", "failed")


def chat(model: str, text: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": text}]}


def message(model: str, text: str) -> dict[str, Any]:
    return {"model": model, "max_tokens": 32, "messages": [{"role": "user", "content": text}]}


def jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def poll(client: httpx.Client, url: str, headers: dict[str, str], done: Callable[[dict], bool]) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while True:
        response = client.get(url, headers=headers)
        assert response.status_code == 200, response.text
        if done(response.json()):
            return response.json()
        assert time.monotonic() < deadline, f"never done: {response.json()}"
        time.sleep(0.02)


class OpenAI:
    def __init__(self, client: httpx.Client, url: str):
        self.client, self.base = client, url + "/openai/v1"

    def upload(self, content: bytes, filename: str = "batch.jsonl", purpose: str | None = "batch") -> httpx.Response:
        data = {"purpose": purpose} if purpose is not None else {}
        files = {"file": (filename, content, "application/jsonl")}
        return self.client.post(self.base + "/files", headers=OPENAI_HEADERS, data=data, files=files)

    def create(self, file_id: str, **extra: Any) -> httpx.Response:
        body = {"input_file_id": file_id, "endpoint": "/v1/chat/completions", "completion_window": "24h", **extra}
        return self.client.post(self.base + "/batches", headers=OPENAI_HEADERS, json=body)

    def submit(self, lines: list[tuple[str, dict[str, Any]]], **extra: Any) -> dict[str, Any]:
        content = "".join(
            json.dumps({"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}) + "\n"
            for custom_id, body in lines
        )
        upload = self.upload(content.encode())
        assert upload.status_code == 200, upload.text
        file = upload.json()
        assert (file["object"], file["purpose"], file["bytes"]) == ("file", "batch", len(content.encode()))
        created = self.create(file["id"], **extra)
        assert created.status_code == 200, created.text
        return created.json()

    def wait(self, batch_id: str) -> dict[str, Any]:
        return poll(
            self.client, f"{self.base}/batches/{batch_id}", OPENAI_HEADERS, lambda b: b["status"] in OPENAI_DONE
        )

    def content(self, file_id: str | None) -> list[dict[str, Any]]:
        if file_id is None:
            return []
        response = self.client.get(f"{self.base}/files/{file_id}/content", headers=OPENAI_HEADERS)
        assert response.status_code == 200, response.text
        return jsonl(response.text)

    def live(self, body: dict[str, Any]) -> httpx.Response:
        return self.client.post(self.base + "/chat/completions", headers=OPENAI_HEADERS, json=body)


class Anthropic:
    def __init__(self, client: httpx.Client, url: str):
        self.client, self.url, self.base = client, url, url + "/anthropic/v1/messages/batches"

    def create(self, requests: list[dict[str, Any]]) -> httpx.Response:
        return self.client.post(self.base, headers=ANTHROPIC_HEADERS, json={"requests": requests})

    def submit(self, lines: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        response = self.create([{"custom_id": custom_id, "params": params} for custom_id, params in lines])
        assert response.status_code == 200, response.text
        return response.json()

    def wait(self, batch_id: str) -> dict[str, Any]:
        done = lambda b: b["processing_status"] == "ended"  # noqa: E731
        return poll(self.client, f"{self.base}/{batch_id}", ANTHROPIC_HEADERS, done)

    def results(self, batch: dict[str, Any]) -> list[dict[str, Any]]:
        response = self.client.get(batch["results_url"], headers=ANTHROPIC_HEADERS)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "application/x-jsonl"
        return jsonl(response.text)

    def live(self, body: dict[str, Any]) -> httpx.Response:
        return self.client.post(self.url + "/anthropic/v1/messages", headers=ANTHROPIC_HEADERS, json=body)


@pytest.fixture
def fake():
    with FakeServer(batch_delay_s=0.2) as server, httpx.Client(timeout=10) as client:
        yield server, OpenAI(client, server.url), Anthropic(client, server.url)


def test_openai_round_trip_answers_each_line_as_the_live_endpoint(fake):
    server, openai, _ = fake
    server.rules.append(Rule(contains="capital", reply="Paris, says {model}"))
    lines = [("q-1", chat("gpt-a", "the capital of France?")), ("q-2", chat("gpt-b", "hello there"))]
    created = openai.submit(lines, metadata={"run": "r1"})
    assert created["object"] == "batch" and created["id"].startswith("batch_")
    assert created["status"] == "validating"
    assert created["endpoint"] == "/v1/chat/completions" and created["completion_window"] == "24h"
    assert created["request_counts"] == {"total": 2, "completed": 0, "failed": 0}
    assert created["output_file_id"] is None and created["metadata"] == {"run": "r1"}
    assert created["expires_at"] - created["created_at"] == 24 * 3600
    seen = poll(openai.client, f"{openai.base}/batches/{created['id']}", OPENAI_HEADERS, lambda b: True)
    assert seen["status"] in ("validating", "in_progress")

    batch = openai.wait(created["id"])
    assert batch["status"] == "completed"
    assert batch["request_counts"] == {"total": 2, "completed": 2, "failed": 0}
    assert batch["error_file_id"] is None and batch["errors"] is None
    assert batch["completed_at"] is not None and batch["in_progress_at"] is not None
    output = openai.content(batch["output_file_id"])
    assert [line["custom_id"] for line in output] == ["q-1", "q-2"]
    assert all(line["error"] is None and line["response"]["status_code"] == 200 for line in output)
    assert all(line["id"].startswith("batch_req_") and line["response"]["request_id"] for line in output)
    assert output[0]["response"]["body"]["choices"][0]["message"]["content"] == "Paris, says gpt-a"

    # Batch calls are logged apart: no model request was made.
    assert server.count == 0
    assert server.batches[batch["id"]].custom_ids == ["q-1", "q-2"]
    assert server.batches[batch["id"]].status == "completed" and server.batches[batch["id"]].ended is not None
    paths = [(call["method"], call["path"]) for call in server.batch_calls]
    assert paths[:2] == [("POST", "/openai/v1/files"), ("POST", "/openai/v1/batches")]
    assert ("GET", f"/openai/v1/files/{batch['output_file_id']}/content") in paths

    for (_, body), line in zip(lines, output):
        live = openai.live(body)
        assert live.status_code == 200
        assert line["response"]["body"] == live.json()
    assert server.count == 2

    file = openai.client.get(f"{openai.base}/files/{batch['output_file_id']}", headers=OPENAI_HEADERS).json()
    assert (file["purpose"], file["object"]) == ("batch_output", "file")
    files = openai.client.get(openai.base + "/files?purpose=batch", headers=OPENAI_HEADERS).json()
    assert [f["id"] for f in files["data"]] == [batch["input_file_id"]]
    listed = openai.client.get(openai.base + "/batches", headers=OPENAI_HEADERS).json()
    assert listed["object"] == "list" and [b["id"] for b in listed["data"]] == [batch["id"]]
    assert listed["has_more"] is False


def test_anthropic_round_trip_and_rules_set_after_submission_apply(fake):
    server, _, anthropic = fake
    lines = [("a-1", message("claude-x", "the late question")), ("a_2", message("claude-y", "plain"))]
    created = anthropic.submit(lines)
    assert created["type"] == "message_batch" and created["id"].startswith("msgbatch_")
    assert created["processing_status"] == "in_progress"
    counts = {"processing": 2, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
    assert created["request_counts"] == counts
    assert created["results_url"] is None and created["ended_at"] is None and created["cancel_initiated_at"] is None
    early = anthropic.client.get(f"{anthropic.base}/{created['id']}/results", headers=ANTHROPIC_HEADERS)
    assert early.status_code == 404 and early.json()["type"] == "error"
    server.rules.append(Rule(contains="late", reply="set after submission"))  # the provider runs it later

    batch = anthropic.wait(created["id"])
    assert batch["request_counts"] == {"processing": 0, "succeeded": 2, "errored": 0, "canceled": 0, "expired": 0}
    assert batch["ended_at"] is not None and batch["created_at"].endswith("Z")
    assert batch["results_url"] == f"{server.url}/anthropic/v1/messages/batches/{batch['id']}/results"
    results = anthropic.results(batch)
    assert [r["custom_id"] for r in results] == ["a-1", "a_2"]
    assert all(r["result"]["type"] == "succeeded" for r in results)
    assert results[0]["result"]["message"]["content"] == [{"type": "text", "text": "set after submission"}]
    assert server.count == 0
    for (_, params), result in zip(lines, results):
        assert result["result"]["message"] == anthropic.live(params).json()

    listed = anthropic.client.get(anthropic.base, headers=ANTHROPIC_HEADERS).json()
    assert [b["id"] for b in listed["data"]] == [batch["id"]]
    assert listed["first_id"] == listed["last_id"] == batch["id"] and listed["has_more"] is False


def test_a_rule_status_or_fault_makes_an_error_line(fake):
    server, openai, anthropic = fake
    server.rules.extend([Rule(contains="bad", status=400), Rule(contains="boom", fault="500")])
    lines = [("ok", chat("m", "fine")), ("bad", chat("m", "a bad one")), ("boom", chat("m", "boom"))]
    batch = openai.wait(openai.submit(lines)["id"])
    assert batch["status"] == "completed"
    assert batch["request_counts"] == {"total": 3, "completed": 1, "failed": 2}
    assert [line["custom_id"] for line in openai.content(batch["output_file_id"])] == ["ok"]
    errors = {line["custom_id"]: line for line in openai.content(batch["error_file_id"])}
    assert errors["bad"]["response"]["status_code"] == 400 and errors["bad"]["error"] is None
    assert errors["boom"]["response"]["status_code"] == 500
    live = openai.live(chat("m", "a bad one"))
    assert live.status_code == 400 and errors["bad"]["response"]["body"] == live.json()
    assert server.batches[batch["id"]].outcomes == {"ok": "200", "bad": "400", "boom": "500"}

    params = [("ok", message("c", "fine")), ("bad", message("c", "bad")), ("boom", message("c", "boom"))]
    ended = anthropic.wait(anthropic.submit(params)["id"])
    assert ended["request_counts"] == {"processing": 0, "succeeded": 1, "errored": 2, "canceled": 0, "expired": 0}
    results = {r["custom_id"]: r["result"] for r in anthropic.results(ended)}
    assert results["bad"] == {
        "type": "errored",
        "error": {"type": "error", "error": {"type": "invalid_request_error", "message": "fake 400"}},
    }
    assert results["boom"]["type"] == "errored" and results["boom"]["error"]["error"]["type"] == "api_error"


def test_flaky_lines_draw_like_live_requests():
    def rule() -> Rule:
        return Rule(model="m", reply="a TERM b", flaky_term="TERM", flaky_rate=0.5, flaky_seed=11)

    # Twelve live requests on one server; eight batch lines then four live requests on another.
    with FakeServer([rule()]) as live_server, httpx.Client(timeout=10) as client:
        live = OpenAI(client, live_server.url)
        expected = [live.live(chat("m", "q")).json()["choices"][0]["message"]["content"] for _ in range(12)]
    assert {"a TERM b", "a  b"} == set(expected)
    with FakeServer([rule()], batch_delay_s=0.05) as server, httpx.Client(timeout=10) as client:
        openai = OpenAI(client, server.url)
        batch = openai.wait(openai.submit([(f"n{i}", chat("m", "q")) for i in range(8)])["id"])
        texts = [
            line["response"]["body"]["choices"][0]["message"]["content"]
            for line in openai.content(batch["output_file_id"])
        ]
        texts += [openai.live(chat("m", "q")).json()["choices"][0]["message"]["content"] for _ in range(4)]
    assert texts == expected


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_expired_lines_then_a_resubmission_succeeds(fake, provider):
    server, openai, anthropic = fake
    server.set_batch(batch_expire_rate=1.0)
    lines = [("e1", chat("m", "one")), ("e2", chat("m", "two"))]
    if provider == "openai":
        batch = openai.wait(openai.submit(lines)["id"])
        assert batch["status"] == "expired" and batch["expired_at"] is not None
        assert batch["output_file_id"] is None
        assert batch["request_counts"] == {"total": 2, "completed": 0, "failed": 0}
        errors = openai.content(batch["error_file_id"])
        assert [(e["custom_id"], e["response"], e["error"]["code"]) for e in errors] == [
            ("e1", None, "batch_expired"),
            ("e2", None, "batch_expired"),
        ]
        server.set_batch(batch_expire_rate=0.0)
        again = openai.wait(openai.submit(lines)["id"])
        assert again["status"] == "completed" and again["error_file_id"] is None
        assert [line["custom_id"] for line in openai.content(again["output_file_id"])] == ["e1", "e2"]
    else:
        batch = anthropic.wait(anthropic.submit(lines)["id"])
        assert batch["request_counts"] == {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 2}
        assert [r["result"] for r in anthropic.results(batch)] == [{"type": "expired"}, {"type": "expired"}]
        server.set_batch(batch_expire_rate=0.0)
        again = anthropic.wait(anthropic.submit(lines)["id"])
        assert again["request_counts"]["succeeded"] == 2
    assert server.count == 0
    assert server.log()["batch_lines"] == {"total": 4, "by_custom_id": {"e1": 2, "e2": 2}}


def test_partial_expiry_is_seeded_per_line():
    def expired_ids(seed: int) -> tuple[dict[str, Any], set[str], set[str]]:
        server = FakeServer(batch_delay_s=0.05, batch_expire_rate=0.5, batch_seed=seed)
        with server, httpx.Client(timeout=10) as client:
            openai = OpenAI(client, server.url)
            batch = openai.wait(openai.submit([(f"id{i}", chat("m", f"q{i}")) for i in range(40)])["id"])
            done = {line["custom_id"] for line in openai.content(batch["output_file_id"])}
            expired = {line["custom_id"] for line in openai.content(batch["error_file_id"])}
        return batch, done, expired

    batch, done, expired = expired_ids(5)
    assert batch["status"] == "expired"
    assert done and expired and done | expired == {f"id{i}" for i in range(40)} and not done & expired
    assert batch["request_counts"] == {"total": 40, "completed": len(done), "failed": 0}
    assert expired_ids(5)[2] == expired
    assert expired_ids(6)[2] != expired


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_cancel_cancels_the_lines_not_answered(provider):
    with FakeServer(batch_delay_s=2.0) as server, httpx.Client(timeout=10) as client:
        lines = [("c1", chat("m", "one")), ("c2", chat("m", "two"))]
        if provider == "openai":
            openai = OpenAI(client, server.url)
            batch_id = openai.submit(lines)["id"]
            cancel = client.post(f"{openai.base}/batches/{batch_id}/cancel", headers=OPENAI_HEADERS)
            assert cancel.status_code == 200
            assert cancel.json()["status"] == "cancelling" and cancel.json()["cancelling_at"] is not None
            batch = openai.wait(batch_id)
            assert batch["status"] == "cancelled" and batch["cancelled_at"] is not None
            assert batch["output_file_id"] is None
            assert batch["request_counts"] == {"total": 2, "completed": 0, "failed": 0}
            codes = [(e["custom_id"], e["error"]["code"]) for e in openai.content(batch["error_file_id"])]
            assert codes == [("c1", "batch_cancelled"), ("c2", "batch_cancelled")]
            again = client.post(f"{openai.base}/batches/{batch_id}/cancel", headers=OPENAI_HEADERS)
            assert again.status_code == 400 and again.json()["error"]["type"] == "invalid_request_error"
        else:
            anthropic = Anthropic(client, server.url)
            batch_id = anthropic.submit(lines)["id"]
            cancel = client.post(f"{anthropic.base}/{batch_id}/cancel", headers=ANTHROPIC_HEADERS)
            assert cancel.status_code == 200
            assert cancel.json()["processing_status"] == "canceling"
            assert cancel.json()["cancel_initiated_at"] is not None
            batch = anthropic.wait(batch_id)
            assert batch["request_counts"] == {
                "processing": 0,
                "succeeded": 0,
                "errored": 0,
                "canceled": 2,
                "expired": 0,
            }
            assert [r["result"] for r in anthropic.results(batch)] == [{"type": "canceled"}, {"type": "canceled"}]
            again = client.post(f"{anthropic.base}/{batch_id}/cancel", headers=ANTHROPIC_HEADERS)
            assert again.status_code == 400 and again.json()["error"]["type"] == "invalid_request_error"
        assert batch_id in server.batches and server.batches[batch_id].cancel_initiated is not None
        assert server.batches[batch_id].outcomes == {"c1": "canceled", "c2": "canceled"}
        assert server.count == 0


def test_unknown_ids_are_404_in_each_providers_shape(fake):
    server, openai, anthropic = fake
    client = openai.client
    for method, url in [
        ("GET", f"{openai.base}/batches/batch_nope"),
        ("POST", f"{openai.base}/batches/batch_nope/cancel"),
        ("GET", f"{openai.base}/files/file-nope/content"),
        ("GET", f"{openai.base}/files/file-nope"),
    ]:
        response = client.request(method, url, headers=OPENAI_HEADERS)
        assert response.status_code == 404, url
        assert response.json()["error"]["type"] == "invalid_request_error" and response.json()["error"]["message"]
    assert openai.create("file-nope").status_code == 404
    for method, url in [
        ("GET", f"{anthropic.base}/msgbatch_nope"),
        ("GET", f"{anthropic.base}/msgbatch_nope/results"),
        ("POST", f"{anthropic.base}/msgbatch_nope/cancel"),
    ]:
        response = client.request(method, url, headers=ANTHROPIC_HEADERS)
        assert response.status_code == 404, url
        assert response.json()["type"] == "error" and response.json()["error"]["type"] == "not_found_error"
    # An OpenAI batch id is unknown to Anthropic's API and the other way round.
    openai_id = openai.submit([("x", chat("m", "x"))])["id"]
    anthropic_id = anthropic.submit([("x", message("m", "x"))])["id"]
    assert client.get(f"{anthropic.base}/{openai_id}", headers=ANTHROPIC_HEADERS).status_code == 404
    assert client.get(f"{openai.base}/batches/{anthropic_id}", headers=OPENAI_HEADERS).status_code == 404
    assert server.count == 0


def test_authentication_like_the_live_apis(fake):
    server, openai, anthropic = fake
    client = openai.client
    response = client.get(openai.base + "/batches")
    assert response.status_code == 401 and response.json()["error"]["type"] == "invalid_request_error"
    assert client.get(openai.base + "/batches", headers={"Authorization": "Basic a2V5"}).status_code == 401
    response = client.get(anthropic.base, headers={"anthropic-version": "2023-06-01"})
    assert response.status_code == 401 and response.json()["error"]["type"] == "authentication_error"
    response = client.get(anthropic.base, headers={"x-api-key": "k"})
    assert response.status_code == 400 and response.json()["error"]["type"] == "invalid_request_error"
    bearer = {"Authorization": "Bearer k", "anthropic-version": "2023-06-01"}  # how newer SDKs send the key
    assert client.get(anthropic.base, headers=bearer).status_code == 200
    assert [call["status"] for call in server.batch_calls] == [401, 401, 401, 400, 200]
    assert server.count == 0


def test_openai_input_errors(fake):
    server, openai, _ = fake
    good = json.dumps({"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": chat("m", "x")})
    missing = openai.upload(good.encode(), purpose=None)
    assert missing.status_code == 400 and missing.json()["error"]["param"] == "purpose"
    assert openai.upload(good.encode(), purpose="fine-tune").status_code == 400
    wrong_name = openai.upload(good.encode(), filename="batch.txt")
    assert wrong_name.status_code == 400 and "jsonl" in wrong_name.json()["error"]["message"]
    file_id = openai.upload(good.encode()).json()["id"]
    assert openai.create(file_id, completion_window="1h").status_code == 400
    assert openai.create(file_id, endpoint="/v1/embeddings").status_code == 400

    # Content errors fail the batch in validation, as the Batch API does (errors.data by line).
    for content, code in [
        (good + "\n{not json\n", "invalid_json_line"),
        (good + "\n" + good + "\n", "duplicate_custom_id"),
        (good.replace("/v1/chat/completions", "/v1/completions") + "\n", "url_mismatch"),
        (b"\n".decode(), "empty_file"),
    ]:
        created = openai.create(openai.upload(content.encode()).json()["id"])
        assert created.status_code == 200 and created.json()["status"] == "validating"
        batch = openai.wait(created.json()["id"])
        assert batch["status"] == "failed" and batch["failed_at"] is not None
        assert [e["code"] for e in batch["errors"]["data"]] == [code]
        assert batch["request_counts"] == {"total": 0, "completed": 0, "failed": 0}
        assert batch["output_file_id"] is None and batch["error_file_id"] is None
    assert server.log()["batch_lines"] == {"total": 0, "by_custom_id": {}}
    assert server.count == 0


def test_anthropic_request_errors(fake):
    server, _, anthropic = fake
    params = message("c", "x")
    for requests in [
        [],
        [{"custom_id": "has space", "params": params}],
        [{"custom_id": "x" * 65, "params": params}],
        [{"custom_id": "ok"}],
        [{"custom_id": "dup", "params": params}, {"custom_id": "dup", "params": params}],
    ]:
        response = anthropic.create(requests)
        assert response.status_code == 400, requests
        assert response.json()["type"] == "error" and response.json()["error"]["type"] == "invalid_request_error"
    assert anthropic.create([{"custom_id": "A-z_09" + "x" * 58, "params": params}]).status_code == 200
    assert len(server.batches) == 1


def test_lists_page_newest_first_and_reset_clears_the_batch_logs(fake):
    server, openai, anthropic = fake
    ids = [openai.submit([("p", chat("m", "x"))])["id"] for _ in range(3)]
    page = openai.client.get(openai.base + "/batches?limit=2", headers=OPENAI_HEADERS).json()
    assert [b["id"] for b in page["data"]] == ids[::-1][:2] and page["has_more"] is True
    page = openai.client.get(f"{openai.base}/batches?limit=2&after={page['last_id']}", headers=OPENAI_HEADERS).json()
    assert [b["id"] for b in page["data"]] == [ids[0]] and page["has_more"] is False

    ids = [anthropic.submit([("p", message("m", "x"))])["id"] for _ in range(3)]
    page = anthropic.client.get(anthropic.base + "?limit=2", headers=ANTHROPIC_HEADERS).json()
    assert [b["id"] for b in page["data"]] == ids[::-1][:2] and page["has_more"] is True
    page = anthropic.client.get(f"{anthropic.base}?after_id={page['last_id']}", headers=ANTHROPIC_HEADERS).json()
    assert [b["id"] for b in page["data"]] == [ids[0]] and page["has_more"] is False
    page = anthropic.client.get(f"{anthropic.base}?before_id={ids[0]}", headers=ANTHROPIC_HEADERS).json()
    assert [b["id"] for b in page["data"]] == ids[:0:-1]

    log = server.log()
    assert len(log["batches"]) == 6 and log["batch_lines"] == {"total": 6, "by_custom_id": {"p": 6}}
    assert all(
        call["path"].startswith(("/openai/v1/", "/anthropic/v1/messages/batches")) for call in log["batch_calls"]
    )
    server.reset()
    log = server.log()
    assert (log["batch_calls"], log["batches"], log["batch_lines"]) == ([], {}, {"total": 0, "by_custom_id": {}})


@pytest.mark.parametrize("status", [404, 405])
def test_a_provider_without_a_batch_list(fake, status):
    """``batch_list_status``: both list endpoints answer it; a batch is still made and read."""
    server, openai, anthropic = fake
    made = openai.submit([("p", chat("m", "x"))])["id"], anthropic.submit([("p", message("m", "x"))])["id"]
    server.set_batch(batch_list_status=status)
    for api, headers, url in (
        (openai, OPENAI_HEADERS, openai.base + "/batches"),
        (anthropic, ANTHROPIC_HEADERS, anthropic.base),
    ):
        listing = api.client.get(url, headers=headers)
        assert listing.status_code == status and listing.json()["error"]["message"], listing.text
    assert openai.wait(made[0])["status"] == "completed" and anthropic.wait(made[1])["processing_status"] == "ended"
    server.set_batch(batch_list_status=0)
    assert openai.client.get(openai.base + "/batches", headers=OPENAI_HEADERS).status_code == 200


def test_batch_settings_in_a_subprocess(tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"contains": "capital", "reply": "Paris"}]))
    with FakeServerProcess("--rules", str(rules), "--batch-delay-s", "0.05", "--batch-expire-rate", "1") as fake:
        with httpx.Client(timeout=10) as client:
            assert client.get(fake.url + "/__batch").json() == {
                "batch_delay_s": 0.05,
                "batch_expire_rate": 1.0,
                "batch_seed": 0,
                "batch_create_hold_s": 0.0,
                "batch_list_status": 0,
            }
            anthropic, openai = Anthropic(client, fake.url), OpenAI(client, fake.url)
            lines = [("k1", message("c", "the capital?")), ("k2", message("c", "other"))]
            batch = anthropic.wait(anthropic.submit(lines)["id"])
            assert batch["request_counts"]["expired"] == 2
            settings = fake.set_batch(batch_expire_rate=0.0, batch_delay_s=0.1, batch_seed=3)
            assert settings == {
                "batch_delay_s": 0.1,
                "batch_expire_rate": 0.0,
                "batch_seed": 3,
                "batch_create_hold_s": 0.0,
                "batch_list_status": 0,
            }
            assert client.post(fake.url + "/__batch", json={"batch_nonsense": 1}).status_code == 400
            batch = anthropic.wait(anthropic.submit(lines)["id"])
            results = anthropic.results(batch)
            assert results[0]["result"]["message"]["content"][0]["text"] == "Paris"
            assert results[1]["result"]["message"]["content"][0]["text"] == "echo: other"
            done = openai.wait(openai.submit([("k1", chat("g", "the capital?"))])["id"])
            assert done["status"] == "completed"
            assert (
                openai.content(done["output_file_id"])[0]["response"]["body"]["choices"][0]["message"]["content"]
                == "Paris"
            )
        log = fake.log()
    assert log["count"] == 0 and log["requests"] == []
    assert log["batch_lines"] == {"total": 5, "by_custom_id": {"k1": 3, "k2": 2}}
    assert [b["status"] for b in log["batches"].values()] == ["ended", "ended", "completed"]
    assert [b["provider"] for b in log["batches"].values()] == ["anthropic", "anthropic", "openai"]
    first = next(iter(log["batches"].values()))
    assert first["outcomes"] == {"k1": "expired", "k2": "expired"}
    assert {call["path"] for call in log["batch_calls"]} >= {"/anthropic/v1/messages/batches", "/openai/v1/files"}
