"""The engine's HTTP client (engine/http.py) and the bound on a whole attempt."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import httpcore
import httpx
import pytest
import sniffio

from pytest_weval.engine import ProviderError
from pytest_weval.engine.transport.http import _Backend, _Stream, async_client
from tests.engine.engine_helpers import request

REPLY = b'{"choices":[{"message":{"role":"assistant","content":"hi"}}],"usage":{}}'
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def uses_fast_backend(client: httpx.AsyncClient) -> bool:
    """Whether every pool of ``client`` goes through the engine's backend."""
    transports = [t for t in (client._transport, *client._mounts.values()) if t is not None]
    return all(isinstance(getattr(getattr(t, "_pool", None), "_network_backend", None), _Backend) for t in transports)


async def read_request(reader: asyncio.StreamReader) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    await reader.readexactly(length)


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


@contextlib.asynccontextmanager
async def connected_pair() -> AsyncIterator[tuple[httpcore.AsyncNetworkStream, asyncio.StreamWriter]]:
    """(our stream, the server's writer for that connection) over loopback."""
    accepted: asyncio.Queue[asyncio.StreamWriter] = asyncio.Queue()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accepted.put(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        stream = await _Backend(httpcore.AnyIOBackend()).connect_tcp("127.0.0.1", port)
        writer = await accepted.get()
        try:
            yield stream, writer
        finally:
            await stream.aclose()
            writer.close()
    finally:
        server.close()


async def test_is_readable_answers_as_httpcore_does():
    async with connected_pair() as (stream, writer):
        inner = stream._inner  # type: ignore[attr-defined]
        assert stream.get_extra_info("is_readable") is False
        assert inner.get_extra_info("is_readable") is False
        writer.close()  # the server drops the idle connection
        for _ in range(100):
            if stream.get_extra_info("is_readable"):
                break
            await asyncio.sleep(0.01)
        assert stream.get_extra_info("is_readable") is True
        assert inner.get_extra_info("is_readable") is True
        # the other attributes are the default stream's
        for info in ("client_addr", "server_addr", "socket", "ssl_object"):
            assert stream.get_extra_info(info) == inner.get_extra_info(info)
    assert stream.get_extra_info("is_readable") is True  # a closed socket counts as readable


def test_a_stream_without_a_socket_answers_as_its_own_backend():
    stream = _Stream(httpcore.AsyncMockStream([]))
    assert stream.get_extra_info("is_readable") is None  # what AsyncMockStream says, not "readable"


async def test_the_stream_passes_bytes_both_ways():
    async with connected_pair() as (stream, writer):
        await stream.write(b"ping", timeout=5)
        writer.write(b"pong")
        await writer.drain()
        assert await stream.read(10, timeout=5) == b"pong"
        with pytest.raises(httpcore.ReadTimeout):
            await stream.read(10, timeout=0.05)


async def test_client_pools_use_the_backend_and_keep_env_proxies(monkeypatch):
    for name in ("ALL_PROXY", "all_proxy", "http_proxy", "https_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3129")
    monkeypatch.setenv("NO_PROXY", "localhost,internal.example")
    plain = httpx.AsyncClient(follow_redirects=False)
    ours = async_client(follow_redirects=False)
    try:
        assert uses_fast_backend(ours) and not uses_fast_backend(plain)

        # the same proxy routes as httpx's own client
        def routes(client: httpx.AsyncClient) -> dict[str, str | None]:
            return {
                str(p.pattern): None if t is None else repr(t._pool._proxy_url)  # type: ignore[attr-defined]
                for p, t in client._mounts.items()
            }

        assert routes(ours) == routes(plain)
        assert any(t is not None for t in ours._mounts.values())
        for url in ("https://api.openai.com/v1", "http://localhost:8000", "https://internal.example/x"):
            kind = type(ours._transport_for_url(httpx.URL(url)))
            assert kind is type(plain._transport_for_url(httpx.URL(url)))
            same = ours._transport_for_url(httpx.URL(url)) is ours._transport
            assert same is (plain._transport_for_url(httpx.URL(url)) is plain._transport)
    finally:
        await plain.aclose()
        await ours.aclose()


def test_engine_client_uses_the_backend(make_engine):
    engine = make_engine(cache_mode="off")
    assert engine._http is not None and uses_fast_backend(engine._http)

    async def library() -> str:
        return sniffio.current_async_library()

    # named once for the engine's thread (not sniffed per lock); other threads are untouched
    assert engine.run_coroutine(library()).result() == "asyncio"
    assert sniffio.thread_local.name is None


def test_a_connection_the_server_closed_while_idle_is_not_reused(make_engine):
    """The is_readable check at work: the second request opens a new connection instead of
    failing on the dead one and retrying."""
    connections = 0

    async def one_reply_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await read_request(reader)
        writer.write(response_head(len(REPLY)) + REPLY)  # says keep-alive, then closes
        await writer.drain()

    with tiny_server(one_reply_then_close) as url:
        engine = make_engine(env={"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-test"}, cache_mode="off")
        assert engine.complete_sync(request("openai:gpt-4o-mini", "one")).text == "hi"
        time.sleep(0.1)  # the FIN arrives
        assert engine.complete_sync(request("openai:gpt-4o-mini", "two")).text == "hi"
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
            engine.complete_sync(request("openai:gpt-4o-mini", "slow"))
