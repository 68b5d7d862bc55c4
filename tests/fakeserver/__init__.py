"""A loopback fake LLM server for tests and benchmarks.

Speaks OpenAI-style chat completions (any path ending in ``/chat/completions``: openai,
mistral, together, xai, openrouter), completions (``/completions``), Anthropic messages
(``/messages``) and Google ``:generateContent``. Replies are scripted by a rule list (match on
model, a substring of the last user message and/or the path; first match wins); the default
reply is ``echo: <last user message>``. Faults — ``500``, ``429`` (+ Retry-After),
``malformed`` (a 200 whose body is not JSON), ``hang`` (never answers), ``drop`` (closes the
connection without a response), ``blank`` (an empty completion), or any ``status`` — come from
rules or from a seeded rate. A flaky model: a rule's ``flaky_term`` is left out of its reply
with probability ``flaky_rate`` (seeded by ``flaky_seed``, the same whatever the order of
the requests). Every model request is logged. ``GET <base>/models`` answers with
the ids in ``server.model_lists`` for that provider (404 when it has none), logged apart in
``server.listings``.

In-process::

    with FakeServer(rules=[Rule(contains="capital", reply="Paris")]) as server:
        env = server.env()          # *_BASE_URL for every provider + dummy keys
        ...
        server.count, server.distinct_bodies(), server.requests

As a subprocess (xdist tests, benchmarks): ``python -m tests.fakeserver --port 0
--latency-ms 100``; ``FakeServerProcess`` starts one and reads ``GET /__log``.
"""

from tests.fakeserver.server import FakeServer, FakeServerProcess, RateLimiter, RecordedRequest, Rule, provider_env

__all__ = ["FakeServer", "FakeServerProcess", "RateLimiter", "RecordedRequest", "Rule", "provider_env"]
