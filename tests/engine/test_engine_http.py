"""The engine's HTTP client (engine/http.py) and the bound on a whole attempt."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from pytest_weval.engine import ProviderError
from tests.engine.engine_helpers import complete_sync, request

REPLY = b'{"choices":[{"message":{"role":"assistant","content":"hi"}}],"usage":{}}'
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_body(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    return await reader.readexactly(length)


async def read_request(reader: asyncio.StreamReader) -> None:
    await read_body(reader)


def response_head(length: int) -> bytes:
    return (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n"
        f"Connection: keep-alive\r\n\r\n"
    ).encode()


@contextlib.contextmanager
def tiny_server(handler: Handler) -> Iterator[str]:
    """A loopback server on its own loop and thread running ``handler`` per connection; yields its URL."""
    loop = asyncio.new_event_loop()
    handlers: set[asyncio.Task] = set()

    async def tracked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            await handler(reader, writer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            handlers.discard(task)

    async def stop() -> None:
        server.close()
        for task in list(handlers):
            task.cancel()
        await asyncio.sleep(0.05)

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = asyncio.run_coroutine_threadsafe(asyncio.start_server(tracked, "127.0.0.1", 0), loop).result()
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        asyncio.run_coroutine_threadsafe(stop(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


def test_a_small_pool_serves_many_requests_each_sent_once(make_engine):
    """At a cap of 4 requests in flight, 200 requests go over at most 4 kept-alive connections:
    none sent twice, none lost."""
    connections = 0
    bodies: list[bytes] = []

    async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while True:
            try:
                bodies.append(await read_body(reader))
            except asyncio.IncompleteReadError:
                return
            await asyncio.sleep(0.005)
            writer.write(response_head(len(REPLY)) + REPLY)
            await writer.drain()

    with tiny_server(keep_alive) as url:
        engine = make_engine(
            env={"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-test"}, cache_mode="off", concurrency=4
        )
        futures = [engine.run_coroutine(engine.complete(request("openai:gpt-4o-mini", f"q{n}"))) for n in range(200)]
        assert [f.result(timeout=120).text for f in futures] == ["hi"] * 200
    assert len(bodies) == len(set(bodies)) == 200
    assert engine.stats["http_requests"] == 200
    assert 1 <= connections <= 4


def test_a_proxy_from_the_environment_is_used(make_engine, monkeypatch):
    """HTTP(S)_PROXY route requests as with httpx's own client (trust_env)."""
    seen: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        seen.append(head.split(b"\r\n", 1)[0])
        length = next(
            (
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            0,
        )
        await reader.readexactly(length)
        writer.write(response_head(len(REPLY)) + REPLY)
        await writer.drain()

    for name in ("ALL_PROXY", "all_proxy", "http_proxy", "https_proxy", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with tiny_server(proxy) as url:
        monkeypatch.setenv("HTTP_PROXY", url)
        engine = make_engine(
            env={"OPENAI_BASE_URL": "http://api.example.invalid/v1", "OPENAI_API_KEY": "sk-test"}, cache_mode="off"
        )
        assert complete_sync(engine, request("openai:gpt-4o-mini", "via proxy")).text == "hi"
    assert seen == [b"POST http://api.example.invalid/v1/chat/completions HTTP/1.1"]


def test_a_refused_connection_is_a_connection_failure_not_a_timeout(make_engine):
    engine = make_engine(env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-test"}, max_attempts=1)
    with pytest.raises(ProviderError, match="connection failed"):
        complete_sync(engine, request("openai:gpt-4o-mini", "nobody there"))


def test_a_connection_the_server_closed_while_idle_is_not_reused(make_engine):
    """The second request opens a new connection instead of failing on the dead one."""
    connections = 0

    async def one_reply_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await read_request(reader)
        writer.write(response_head(len(REPLY)) + REPLY)  # says keep-alive, then closes
        await writer.drain()

    with tiny_server(one_reply_then_close) as url:
        engine = make_engine(env={"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-test"}, cache_mode="off")
        assert complete_sync(engine, request("openai:gpt-4o-mini", "one")).text == "hi"
        time.sleep(0.1)  # the FIN arrives
        assert complete_sync(engine, request("openai:gpt-4o-mini", "two")).text == "hi"
    assert engine.stats["http_requests"] == 2
    assert connections == 2


def test_the_whole_attempt_is_bounded_not_just_each_read(make_engine):
    """A reply that trickles in never trips httpx's per-read timeout; the attempt's bound does."""

    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(response_head(len(REPLY)))
        for byte in REPLY:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0.05)

    with tiny_server(trickle) as url:
        engine = make_engine(
            env={"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-test"},
            cache_mode="off",
            timeout_s=0.3,
            max_attempts=1,
        )
        with pytest.raises(ProviderError, match=r"no reply within 0.3 s \(timeout\)"):
            complete_sync(engine, request("openai:gpt-4o-mini", "slow"))


# Run in a fresh interpreter (this one may have loaded genai-prices already): sends one request
# to a server that answers after 3 s and says whether genai-prices was loaded while the request
# was still in flight.
_PRICES_WHILE_IN_FLIGHT = """\
import json, sys, time
from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.engine import ChatMessage, Engine, EngineSettings, ModelRequest
from tests.fakeserver import FakeServer

with FakeServer(latency_ms=3000) as server:
    engine = Engine(EngineSettings(cache_mode="off", cache_dir=sys.argv[1], env=server.env())).start()
    request = ModelRequest(model=ModelSpec(id="openai:gpt-4o-mini"), messages=(ChatMessage("user", "hi"),))
    reply = engine.run_coroutine(engine.complete(request))
    deadline = time.monotonic() + 2.5
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    while "genai_prices" not in sys.modules and time.monotonic() < deadline:
        time.sleep(0.01)
    print(json.dumps({"sent": len(server.requests), "loaded": "genai_prices" in sys.modules, "replied": reply.done()}))
    reply.result(timeout=30)
    engine.close()
"""


def test_the_price_tables_load_while_the_first_request_is_in_flight(tmp_path):
    """Pricing the first reply needs genai-prices' tables (~75 ms of CPU to load): loaded beside
    the loop once the first request is out, not by the loop when that reply arrives, while the
    other replies wait."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-c", _PRICES_WHILE_IN_FLIGHT, str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"sent": 1, "loaded": True, "replied": False}
