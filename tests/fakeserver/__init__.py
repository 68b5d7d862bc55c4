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
``server.listings``. ``POST <base>/embeddings`` (OpenAI's and Together's shape) answers the
vector ``server.embeddings`` holds for the input text (``set_embeddings`` / ``POST
/__embeddings`` in a subprocess), else one drawn from the text's hash; logged as a model request,
and rules (faults, statuses) match it by model and input text.

Batch APIs (``batch.py``), authenticated as the live ones: OpenAI's (``<base>/files``
multipart upload with ``purpose=batch``, ``/files/{id}[/content]``, ``/batches[/{id}[/cancel]]``)
and Anthropic's (``<base>/v1/messages/batches[/{id}[/results|/cancel]]``); Gemini batch mode
(``/v1beta/models/{model}:batchGenerateContent`` with inline requests, ``/v1beta/batches[/{id}[:cancel]]``
answering operations whose ``metadata`` is the batch and whose ``response`` holds the
``inlinedResponses``; the key in ``x-goog-api-key`` only); xAI's (``/v1/batches`` by name, then
``/{id}/requests``, ``/{id}/results`` paged by ``pagination_token``, ``/{id}:cancel``); Together's
(``/files`` with ``purpose=batch-api``, by form or by its SDK's redirect and PUT, ``/batches``) and
Mistral's (``/files`` with ``purpose=batch``, ``/batch/jobs``), whose output and error files hold
a line per request that ran. A batch ends
``batch_delay_s`` after creation (OpenAI validating, in_progress, then completed, expired,
cancelled or failed; Anthropic in_progress, canceling, then ended; each other provider in its
own words, tests/fakeserver/batch.py ``RUNNING_STATUS``); its lines are answered
when it ends, each as the live endpoint would answer that body then (rules, faults, flaky
draws; ``status`` or a fault is an error line, 500 for ``hang``/``drop``/``malformed``). A
line expires with probability ``batch_expire_rate`` (as set at creation; seeded by ``batch_seed``,
custom_id and how often it was submitted before, so a resubmission can succeed); cancel cancels the lines
not answered. An OpenAI input file that fails validation (bad JSON, duplicate custom_id,
wrong url) fails the batch with ``errors``; an Anthropic batch with a bad or duplicate
custom_id is a 400. ``batch_list_status`` 404 or 405 makes every list endpoint answer that
(a provider without a batch listing). Set with the constructor, ``--batch-*`` flags, ``server.set_batch()`` or
``POST /__batch``; logged apart from the model requests in ``server.batch_calls`` and
``server.batches`` (and ``/__log``'s ``batch_lines``: submissions per custom_id).

In-process::

    with FakeServer(rules=[Rule(contains="capital", reply="Paris")]) as server:
        env = server.env()          # *_BASE_URL for every provider + dummy keys
        ...
        server.count, server.distinct_bodies(), server.requests

As a subprocess (xdist tests, benchmarks): ``python -m tests.fakeserver --port 0
--latency-ms 100``; ``FakeServerProcess`` starts one, reads ``GET /__log`` and sets rules,
model lists and batch settings (``set_batch``).
"""

from tests.fakeserver.batch import BatchJob
from tests.fakeserver.server import FakeServer, FakeServerProcess, RateLimiter, RecordedRequest, Rule, provider_env

__all__ = ["BatchJob", "FakeServer", "FakeServerProcess", "RateLimiter", "RecordedRequest", "Rule", "provider_env"]
