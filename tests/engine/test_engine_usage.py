"""The run's usage counts each distinct request once, however many items ask it and whatever
its key looks like (engine/stages/usage.py: the keys are kept as their digests' bytes)."""

from __future__ import annotations

import hashlib

from pytest_weval.engine.prices import PriceBook
from pytest_weval.engine.request import ModelReply
from pytest_weval.engine.stages.usage import RunUsage


def test_each_distinct_request_is_counted_once_whatever_its_key():
    usage = RunUsage(PriceBook())
    digest = hashlib.sha256(b"a request").hexdigest()
    reply = ModelReply(text="hi", input_tokens=3, output_tokens=5)
    for key in (digest, digest, "not-a-digest", "not-a-digest", digest):
        usage.cache_hit(key, "openai:m", reply)
    counted = usage.of("openai:m")
    # the digest is one request, the other key another
    assert (counted.responses, counted.input_tokens, counted.output_tokens) == (2, 6, 10)
    assert usage.counts["cache_hits"] == 5
