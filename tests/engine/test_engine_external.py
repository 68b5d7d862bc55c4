"""`$call` requests over real HTTP: the run's cache, and a cached reply marked as one."""

from __future__ import annotations

import asyncio

from pytest_weval.engine.transport.external import ExternalExecutor
from pytest_weval.scoring.external import ExternalRequest
from tests.scoring.scoring_helpers import run_loopback


def request(url: str, *, cache: bool = True) -> ExternalRequest:
    return ExternalRequest(
        url=url,
        method="POST",
        headers=(),
        json_body={"response": "abc"},
        timeout_s=5,
        max_retries=0,
        retry_backoff_s=0,
        cache=cache,
        cache_key="k-" + url,
        service="svc",
    )


def test_a_repeated_call_is_served_from_the_run_cache_and_says_so():
    async def run(url: str, cache: bool) -> list[tuple]:
        executor = ExternalExecutor()
        try:
            return [await executor.call(request(url, cache=cache)) for _ in range(2)]
        finally:
            await executor.aclose()

    for service in run_loopback():
        service.serve("/svc", 200, {"score": 1, "explain": "fine"})
        first, second = asyncio.run(run(service.base_url + "/svc", True))
        assert (first[2], second[2]) == (False, True) and first[:2] == second[:2]
        assert len(service.requests) == 1
        # a service that opts out (cache: false) is asked every time
        uncached = asyncio.run(run(service.base_url + "/svc", False))
        assert [r[2] for r in uncached] == [False, False] and len(service.requests) == 3
