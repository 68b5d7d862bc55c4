"""The run's usage counts each distinct request once, however many items ask it and whatever
its key looks like (engine/stages/usage.py: the keys are kept as their digests' bytes)."""

from __future__ import annotations

import hashlib

from pytest_weval.engine.prices import PriceBook
from pytest_weval.engine.request import ModelReply
from pytest_weval.engine.stages.usage import CountedKeys, RunUsage


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


def test_every_distinct_key_is_kept_once_as_the_set_grows():
    """CountedKeys keeps digests as 64-bit fingerprints in a table that grows: 20,000 keys
    (its first table holds 512) are each new once, then known, in any order."""
    keys = [hashlib.sha256(str(n).encode()).hexdigest() for n in range(20_000)]
    counted = CountedKeys()
    assert all(counted.add(key) for key in keys)
    assert len(counted) == 20_000
    assert not any(counted.add(key) for key in reversed(keys))
    assert not counted.add(keys[0].upper())  # the same digest however its hex is cased
    # Keys that are not a digest are kept whole.
    for other in ("not-a-digest", "0" * 64, "g" * 64, keys[3][:63]):
        assert counted.add(other), other
        assert not counted.add(other), other
    # The documented limit: a digest sharing its first 64 bits with a kept one counts as kept.
    assert not counted.add(keys[1][:16] + keys[2][16:])
