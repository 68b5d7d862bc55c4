"""The engine's HTTP client: httpx's API over aiohttp's connection pool.

httpcore's pool scans every pooled connection for every request it starts and every response it
closes (is it idle, expired, readable?); at the concurrency of an evaluation run that scan was
most of the engine thread's CPU (docs/engine.md, 'HTTP'). aiohttp's connector keeps idle
connections per host and hands one out in constant time. ``httpx_aiohttp.AiohttpTransport`` puts
it behind httpx's transport seam, so requests, responses, timeouts and errors stay httpx's
(the OpenAI Python SDK offers the same pairing for high-concurrency users).

The pool has no cap of its own: the engine's limits (``limits.py``) already hold each provider to
its concurrency, so a connection is opened only for a request those limits let through, and kept
alive for the next one.
"""

from __future__ import annotations

import asyncio
import urllib.request
from typing import Any

import httpx

KEEPALIVE_S = 30.0  # how long an idle connection is kept for the next request to its host
MAX_REPLY_MB = 8.0  # the default cap on one reply's body (--weval-max-reply-mb)


class ReplyTooLarge(Exception):
    """A reply's body is (or says it is) larger than the cap; ``announced`` is its
    Content-Length when the server gave one."""

    def __init__(self, limit: int, announced: int | None = None):
        self.limit = limit
        self.announced = announced
        super().__init__(f"the reply is larger than {limit} bytes")


async def read_capped(response: httpx.Response, limit: int) -> bytearray:
    """The body of a response opened with ``stream=True``, refused as soon as it is known to pass
    ``limit`` bytes: a Content-Length over it is refused before the body is read, and a body
    without one is counted as it arrives, so no more than about ``limit`` bytes are ever held
    (a 50 MB answer once took 2.1 GB on its way through JSON, the store and the reports).
    The limit applies to the decoded body, so a compressed reply cannot expand past it."""
    announced = response.headers.get("content-length")
    if announced is not None and announced.strip().isdigit() and int(announced) > limit:
        raise ReplyTooLarge(limit, int(announced))
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            raise ReplyTooLarge(limit)
    return body


def _httpx_error(exc: BaseException) -> httpx.TransportError | None:
    """The httpx error an aiohttp failure is (httpx_aiohttp's own table maps every connection
    failure, a refused connection included, to ``ConnectTimeout``)."""
    import aiohttp  # loaded with the client (async_client)

    if isinstance(exc, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
        return httpx.TimeoutException(str(exc) or "timed out")
    if isinstance(exc, aiohttp.ClientConnectorError):
        return httpx.ConnectError(str(exc))
    if isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError)):
        return httpx.RemoteProtocolError(str(exc) or type(exc).__name__)
    if isinstance(exc, aiohttp.ClientError):
        return httpx.NetworkError(str(exc) or type(exc).__name__)
    return None


def async_client(*, timeout: httpx.Timeout, follow_redirects: bool = False) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` on aiohttp. Proxies come from the environment (``HTTPS_PROXY``,
    ``NO_PROXY``, ...) as httpx's own client reads them: ``trust_env`` on aiohttp's session."""
    # aiohttp (~0.15 s to import, its default SSL contexts built at import) only once a run
    # sends a request: a cached replay or a plan never does.
    import aiohttp
    from httpx_aiohttp import AiohttpTransport

    class _Transport(AiohttpTransport):
        def __init__(self, client: Any) -> None:
            # AiohttpTransport's own __init__ builds an SSL context (~30 ms: the CA bundle read)
            # for a connector it makes only without a client; ours brings its connector.
            self.client = client
            self.proxy = None

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            try:
                return await super().handle_async_request(request)
            except httpx.TransportError as exc:
                mapped = _httpx_error(exc.__cause__) if exc.__cause__ is not None else None
                if mapped is None:
                    raise
                raise mapped from exc.__cause__
            except aiohttp.ClientError as exc:
                mapped = _httpx_error(exc)
                assert mapped is not None
                raise mapped from exc

    # With trust_env, aiohttp looks up the proxy and ~/.netrc in a worker thread for every
    # request (two thread hops, ~0.1 ms of CPU each); with no proxy in the environment there
    # is nothing for it to find. (Basic auth from ~/.netrc was never wanted: a provider's key
    # is the request's own header.)
    trust_env = bool(urllib.request.getproxies())

    def session() -> aiohttp.ClientSession:
        # Made on first use, inside the engine's running loop, as aiohttp requires.
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, keepalive_timeout=KEEPALIVE_S)
        return aiohttp.ClientSession(connector=connector, trust_env=trust_env)

    return httpx.AsyncClient(transport=_Transport(session), timeout=timeout, follow_redirects=follow_redirects)
