"""The engine's HTTP client: httpx, with a cheaper idle-connection check.

httpcore's pool, on every request start and every response close, asks each idle pooled
connection whether its socket is readable (a server-side close). With the default anyio
backend each ask rebuilds anyio's dict of socket attributes (a ``getpeername()`` syscall and a
dozen lambdas) just to fetch the raw socket; at 20 connections that was the largest single cost
of a request (bench/requests.py). ``_Stream`` keeps the raw socket from the start and answers
with one poll, the same test httpcore makes. Everything else goes to the default backend.
"""

from __future__ import annotations

import select
import socket
import ssl
import sys
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx


def _readable(sock: socket.socket) -> bool:
    """httpcore's ``is_socket_readable``: a closed socket counts as readable."""
    fd = sock.fileno()
    if fd < 0:
        return True
    if sys.platform == "win32" or getattr(select, "poll", None) is None:
        ready, _, _ = select.select([fd], [], [], 0)
        return bool(ready)
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    return bool(poll.poll(0))


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream):
        self._inner = inner
        self._socket: socket.socket | None = inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable" and self._socket is not None:
            return _readable(self._socket)
        return self._inner.get_extra_info(info)


class _Backend(httpcore.AsyncNetworkBackend):
    def __init__(self, inner: httpcore.AsyncNetworkBackend):
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return _Stream(
            await self._inner.connect_tcp(
                host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
            )
        )

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def async_client(**kwargs: Any) -> httpx.AsyncClient:
    """``httpx.AsyncClient(**kwargs)`` whose connection pools use ``_Backend``.

    The client is built as usual, so proxies from the environment, TLS verification and limits
    are httpx's own; only each pool's network backend is wrapped afterwards. httpx has no public
    way to pass one (a transport of our own would have to copy its proxy and exception mapping
    code), so this reaches into ``_transport``/``_mounts``/``_pool``; if a later httpx or httpcore
    lays them out differently the pools are left as they are: slower, not different.
    """
    client = httpx.AsyncClient(**kwargs)
    for transport in (client._transport, *client._mounts.values()):
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if isinstance(backend, httpcore.AsyncNetworkBackend) and not isinstance(backend, _Backend):
            pool._network_backend = _Backend(backend)  # type: ignore[union-attr]
    return client
