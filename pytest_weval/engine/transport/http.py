"""The engine's HTTP: model requests straight on aiohttp (``Wire``), everything else through
httpx's API over aiohttp's connection pool (``async_client``).

httpcore's pool scans every pooled connection for every request it starts and every response it
closes (is it idle, expired, readable?); at the concurrency of an evaluation run that scan was
most of the engine thread's CPU (docs/engine.md, 'HTTP'). aiohttp's connector keeps idle
connections per host and hands one out in constant time. ``httpx_aiohttp.AiohttpTransport`` puts
it behind httpx's transport seam, so requests, responses, timeouts and errors stay httpx's
(the OpenAI Python SDK offers the same pairing for high-concurrency users).

A model request is the engine's hot path: httpx's request and response objects around aiohttp's
cost about 0.5 ms of CPU a request, more than aiohttp's own exchange (``bench/requests.py``;
docs/engine.md, 'HTTP'), so ``Wire`` sends those on aiohttp directly and reports its failures as
the httpx errors the engine handles. The few other calls (model lists, batch APIs) keep httpx.

The pool has no cap of its own: the engine's limits (``limits.py``) already hold each provider to
its concurrency, so a connection is opened only for a request those limits let through, and kept
alive for the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import urllib.request
from collections.abc import Mapping
from typing import Any

import httpx

from pytest_weval.errors import WevalError

KEEPALIVE_S = 30.0  # how long an idle connection is kept for the next request to its host
MAX_REPLY_MB = 8.0  # the default cap on one reply's body (--weval-max-reply-mb)


class ReplyTooLarge(WevalError):
    """A reply's body is (or says it is) larger than the cap; ``announced`` is its
    Content-Length when the server gave one."""

    def __init__(self, limit: int, announced: int | None = None):
        self.limit = limit
        self.announced = announced
        super().__init__(f"the reply is larger than {limit} bytes")


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


@dataclasses.dataclass(frozen=True, slots=True)
class Exchange:
    """One HTTP exchange's outcome: the status, the headers (case-insensitive lookups) and the
    body as received (capped)."""

    status: int
    headers: Mapping[str, str]
    body: bytearray
    charset: str | None


def _load_price_tables() -> None:
    with contextlib.suppress(ImportError):  # then pricing says so, where it is asked
        import genai_prices  # noqa: F401


class Wire:
    """POST requests on one aiohttp session (made inside the engine's loop on first use), each
    read whole up to a cap, bounded by one timeout. Failures are httpx's exception types:
    ``httpx.TimeoutException``, ``httpx.ConnectError``, ``httpx.RemoteProtocolError``,
    ``httpx.NetworkError``; a body over the cap is ``ReplyTooLarge`` and its connection is
    closed, not kept for the next request. The cap: a Content-Length over it is refused before
    the body is read, and a body without one is counted as it arrives (after decompression, so a
    compressed reply cannot expand past it): no more than about ``limit`` bytes are ever held (a
    50 MB answer once took 2.1 GB on its way through JSON, the store and the reports)."""

    def __init__(self) -> None:
        self._session: Any = None

    def _open(self) -> Any:
        import aiohttp  # loaded when a run sends its first request (~0.15 s)

        # genai-prices' tables (~75 ms of CPU), which pricing the first reply needs, are loaded
        # in a worker thread while the first requests are in flight: loaded by the loop at the
        # first reply, they held up every other reply and request meanwhile.
        asyncio.get_running_loop().run_in_executor(None, _load_price_tables)
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, keepalive_timeout=KEEPALIVE_S)
        self._session = aiohttp.ClientSession(
            connector=connector, trust_env=bool(urllib.request.getproxies()), auto_decompress=True
        )
        return self._session

    async def post(self, url: str, headers: Mapping[str, str], body: bytes, timeout: float, limit: int) -> Exchange:
        import aiohttp

        session = self._session or self._open()
        try:
            async with session.post(
                url,
                data=body,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout),
                allow_redirects=False,
            ) as response:
                announced = response.content_length
                if announced is not None and announced > limit:
                    response.close()
                    raise ReplyTooLarge(limit, announced)
                received = bytearray()
                async for chunk in response.content.iter_any():
                    received += chunk
                    if len(received) > limit:
                        response.close()
                        raise ReplyTooLarge(limit)
                return Exchange(response.status, response.headers, received, response.charset)
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            mapped = _httpx_error(exc)
            if mapped is None:
                raise
            raise mapped from exc

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


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


class LazyClient:
    """The ``async_client`` for the few calls that are not model requests (the batch APIs), made
    when first asked for: a run that sends nothing (a cached replay, built-in models) never
    loads aiohttp (~0.2 s of a one-item run)."""

    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self._client: httpx.AsyncClient | None = None

    def __call__(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = async_client(timeout=httpx.Timeout(self.timeout_s), follow_redirects=False)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
