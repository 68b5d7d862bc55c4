"""Rate limits: refusals wait instead of failing, within a budget; each header form; the pace
learned from headers or from refusals; one refusal pauses the whole group. Real HTTP to the
loopback fake server, whose token bucket answers as OpenAI and Anthropic do."""

from __future__ import annotations

import datetime as dt
import email.utils
import time
from concurrent.futures import wait

import pytest
from engine_helpers import complete_sync, request

from pytest_weval.engine import ProviderError
from pytest_weval.engine.transport.ratelimit import RateInfo, parse_duration, parse_retry_after
from tests.fakeserver import RateLimiter, Rule

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1h2m3.5s", 3723.5), ("0.5", 0.5), ("", None), ("soon", None)],
)
def test_openai_reset_durations(text, seconds):
    assert parse_duration(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_every_form_of_being_told_to_wait():
    assert parse_retry_after({"retry-after": "2"}, NOW) == 2.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "2"}, NOW) == 1.5  # ms first
    date = email.utils.formatdate(NOW + 10, usegmt=True)
    assert parse_retry_after({"retry-after": date}, NOW) == pytest.approx(10, abs=1)
    # OpenAI with no Retry-After: the reset of the budget that ran out
    exhausted = {
        "x-ratelimit-limit-requests": "500",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "6m0s",
        "x-ratelimit-remaining-tokens": "1000",
        "x-ratelimit-reset-tokens": "1s",
    }
    assert parse_retry_after(exhausted, NOW) == 360.0
    tokens_out = dict(exhausted, **{"x-ratelimit-remaining-requests": "3", "x-ratelimit-remaining-tokens": "0"})
    assert parse_retry_after(tokens_out, NOW) == 1.0
    # Anthropic: RFC 3339 times
    reset = dt.datetime.fromtimestamp(NOW + 30, tz=dt.timezone.utc).isoformat().replace("+00:00", "Z")
    anthropic = {
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": reset,
    }
    assert parse_retry_after(anthropic, NOW) == pytest.approx(30)
    assert parse_retry_after({}, NOW) is None and parse_retry_after({"retry-after": "later"}, NOW) is None


def test_the_pace_is_what_was_used_over_the_time_it_takes_to_come_back():
    info = RateInfo.from_headers(
        {
            "x-ratelimit-limit-requests": "500",
            "x-ratelimit-remaining-requests": "499",
            "x-ratelimit-reset-requests": "120ms",
        },
        NOW,
    )
    assert info is not None and info.rate == pytest.approx(1 / 0.12)  # 500 a minute


@pytest.mark.parametrize(
    ("headers", "style"),
    [(h, s) for h in ("openai", "anthropic", None) for s in ("seconds", "ms", "date", None) if h or s],
)
def test_refused_requests_wait_and_all_are_answered(make_engine, server, style, headers):
    server.rate_limit = RateLimiter(rate=40, burst=5, headers=headers, retry_after=style)
    engine = make_engine(max_attempts=1, concurrency=10)
    futures = [engine.run_coroutine(engine.complete(request("openai:m", f"q{n}"))) for n in range(30)]
    done, _ = wait(futures, timeout=60)
    assert all(f.result().text.startswith("echo: q") for f in done) and len(done) == 30
    served = [r for r in server.requests if r.outcome == "200"]
    assert len(served) == 30
    usage = engine.stats["usage"]["openai:m"]
    assert usage["refused"] == server.rate_limit.refused


def test_with_rate_headers_the_pace_keeps_refusals_rare(make_engine, server):
    server.rate_limit = RateLimiter(rate=50, burst=10, headers="openai", retry_after="seconds")
    engine = make_engine(concurrency=30)
    started = time.monotonic()
    futures = [engine.run_coroutine(engine.complete(request("openai:m", f"q{n}"))) for n in range(200)]
    wait(futures, timeout=60)
    elapsed = time.monotonic() - started
    assert all(f.result() for f in futures)
    # The first wave goes out before any reply has said the pace; after it, hardly any.
    assert server.rate_limit.refused <= 20, server.rate_limit.refused  # at most 10% of 200 served
    pace = (200 - 10) / 50  # what the provider allows beyond its burst, in seconds
    assert elapsed >= pace * 0.9  # the provider's pace, not faster
    # ...nor held far below it; a busy machine only adds its own time (how close the run
    # comes to the pace is bench/ratelimit.py's figure)
    assert elapsed < 3 * pace + 10


def test_one_refusal_pauses_the_whole_group(make_engine, server):
    """Told to wait 3 s, no other request of the provider goes out meanwhile."""
    server.rules.append(Rule(fault="429", retry_after="3", times=1))
    server.latency_ms = 100
    engine = make_engine(concurrency=2)
    futures = [engine.run_coroutine(engine.complete(request("openai:m", f"q{n}"))) for n in range(40)]
    wait(futures, timeout=60)
    assert all(f.result() for f in futures)
    refused_at = next(r.at for r in server.requests if r.outcome == "429")  # the first request
    # Unpaused, the other 39 requests would go out 2 at a time, 0.1 s each: for 2 s and more,
    # however fast the machine, into the pause. The one on the wire when the 429 came back
    # may still arrive just after it: a loaded machine gets 1 s for that.
    during = [r for r in server.requests if refused_at + 1 < r.at < refused_at + 3]
    assert during == [], [(round(r.at - refused_at, 2), r.last_user) for r in during]
    after = [r for r in server.requests if r.at >= refused_at + 3]
    assert len(after) >= 20, len(after)  # most of them waited for the pause to end


def test_anthropic_overloaded_529_is_waited_out_like_a_429(make_engine, server):
    server.rules.append(
        Rule(
            status=529,
            retry_after="0",
            times=3,
            body='{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
        )
    )
    engine = make_engine(max_attempts=1)
    reply = complete_sync(engine, request("anthropic:claude", "hi"))
    assert reply.text == "echo: hi" and reply.refused == 3


def test_the_wait_budget_runs_out_with_an_error_saying_how_long_it_waited(make_engine, server):
    server.rules.append(Rule(fault="429", retry_after="1"))
    engine = make_engine(rate_limit_wait_s=2.5)
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        complete_sync(engine, request("openai:m"))
    elapsed = time.monotonic() - started
    assert 1.5 <= elapsed < 30  # waited, then gave up at the budget rather than the default 600 s
    message = str(info.value)
    assert info.value.rate_limited and "rate limited" in message and "--weval-rate-limit-wait" in message
    assert "waited 2." in message or "waited 1." in message, message
    assert "refused the request" in message and server.count in (2, 3)


def test_without_headers_the_pace_is_learned_from_refusals(make_engine, server):
    server.rate_limit = RateLimiter(rate=40, burst=40, headers=None, retry_after="ms")
    engine = make_engine(concurrency=20)
    futures = [engine.run_coroutine(engine.complete(request("openai:m", f"q{n}"))) for n in range(200)]
    wait(futures, timeout=60)
    assert all(f.result() for f in futures)
    # Unpaced, a client refused at once goes again after each wait: about one refusal per
    # request beyond the burst. Learning the pace keeps them to a fraction.
    assert server.rate_limit.refused < 60, server.rate_limit.refused


def test_interrupt_cancels_what_is_in_flight_and_sends_nothing_more(make_engine, server):
    from pytest_weval.engine.errors import RunInterrupted

    server.rules.append(Rule(contains="slow", fault="hang"))
    engine = make_engine(timeout_s=600, stop_grace_s=0.5)  # the hang ends only if the interrupt cancels it
    assert complete_sync(engine, request("openai:m", "quick")).text == "echo: quick"
    slow = engine.run_coroutine(engine.complete(request("openai:m", "slow")))
    while server.count < 2:
        time.sleep(0.01)
    engine.interrupt()
    with pytest.raises(RunInterrupted):
        slow.result(timeout=60)
    with pytest.raises(RunInterrupted):
        complete_sync(engine, request("openai:m", "after"))
    assert server.count == 2
    engine.close()
    next_run = make_engine()  # the reply received before the interrupt is in the cache
    assert complete_sync(next_run, request("openai:m", "quick")).cached and server.count == 2


def test_after_an_interrupt_a_reply_already_on_the_wire_is_received_and_stored(make_engine, server):
    from pytest_weval.engine.errors import RunInterrupted

    server.rules.append(Rule(contains="slow", latency_ms=1500))
    engine = make_engine(timeout_s=600, stop_grace_s=60)
    slow = engine.run_coroutine(engine.complete(request("openai:m", "slow")))
    while server.count < 1:
        time.sleep(0.01)
    engine.interrupt()
    with pytest.raises(RunInterrupted):
        complete_sync(engine, request("openai:m", "after"))
    engine.close()  # waits for the reply on the wire (within the grace) and stores it
    assert slow.result(timeout=60).text == "echo: slow"
    assert server.count == 1
    next_run = make_engine()  # what arrived during the grace is in the cache
    assert complete_sync(next_run, request("openai:m", "slow")).cached and server.count == 1


def test_after_an_interrupt_a_slot_freed_by_a_reply_starts_no_request(make_engine, server):
    from pytest_weval.engine.errors import RunInterrupted

    server.rules.append(Rule(contains="slow", latency_ms=1500))
    engine = make_engine(timeout_s=600, stop_grace_s=60, concurrency=1)  # one slot for the whole run
    slow = engine.run_coroutine(engine.complete(request("openai:m", "slow")))
    while server.count < 1:
        time.sleep(0.01)
    queued = engine.run_coroutine(engine.complete(request("openai:m", "queued")))  # waits for the slot
    time.sleep(0.3)
    engine.interrupt()
    assert slow.result(timeout=60).text == "echo: slow"  # the grace lets it in, freeing the slot
    with pytest.raises(RunInterrupted):
        queued.result(timeout=60)
    engine.close()
    assert server.count == 1


def test_a_stop_recorded_in_the_claims_store_reaches_every_worker_of_the_run(make_engine, server):
    from pytest_weval.engine.claims import request_stop
    from pytest_weval.engine.errors import RunInterrupted
    from pytest_weval.engine.store.backends import claims_path

    workers = [make_engine(worker_count=2, worker_id=f"gw{n}", run_id="run-1") for n in range(2)]
    request_stop(claims_path(workers[0].settings), "run-1")
    deadline = time.monotonic() + 30
    while not all(w.interrupted for w in workers) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert all(w.interrupted for w in workers)
    with pytest.raises(RunInterrupted):
        complete_sync(workers[1], request("openai:m", "x"))
    assert server.count == 0
    other_run = make_engine(worker_count=2, worker_id="gw0", run_id="run-2")
    time.sleep(0.3)
    assert not other_run.interrupted
