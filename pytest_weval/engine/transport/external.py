"""Runs `$call` / `$external` requests built by the scoring layer (docs/functions.md, '$call and $external').

Scoring stays pure: it builds an ``ExternalRequest`` and reads the reply; the HTTP happens here.
Results are cached for the run by the request's cache key (the reference caches for 24 h in a
temp folder; a test run is the natural lifetime here, and a service can opt out with cache:false).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

_RETRY_STATUSES = range(500, 600)


class ExternalExecutor:
    def __init__(self) -> None:
        self._client: httpx.AsyncClient | None = None
        self._cache: dict[str, tuple[int, str]] = {}

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(follow_redirects=False)
        return self._client

    async def call(self, request: Any) -> tuple[int, str, bool]:
        """Send ``request`` (a scoring ExternalRequest); return (status, body text, whether
        it came from this run's cache: the explanation then says so, as the reference's)."""
        if request.cache and request.cache_key in self._cache:
            return (*self._cache[request.cache_key], True)
        attempts = max(1, int(request.max_retries) + 1)
        last_error: Exception | None = None
        for attempt in range(1, attempts + 1):
            try:
                response = await self._http().request(
                    request.method,
                    request.url,
                    headers=dict(request.headers),
                    json=request.json_body if request.method != "GET" else None,
                    timeout=request.timeout_s,
                )
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                last_error = exc
            else:
                if response.status_code in _RETRY_STATUSES and attempt < attempts:
                    last_error = None
                else:
                    outcome = (response.status_code, response.text)
                    if request.cache and 200 <= response.status_code < 300:
                        self._cache[request.cache_key] = outcome
                    return (*outcome, False)
            if attempt < attempts:
                await asyncio.sleep(request.retry_backoff_s * attempt)
        # Only the transport failure's class goes out: its text can carry the URL's query.
        raise ConnectionError(f"external service unreachable ({type(last_error).__name__})")

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
