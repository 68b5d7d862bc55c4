"""Priority slots, the AIMD limiter (it really shrinks and grows back), caps and worker shares."""

from __future__ import annotations

import asyncio

from engine_helpers import complete_sync, request

from pytest_weval.engine.transport.limits import AdaptiveLimiter, Limits, PrioritySlots
from tests.fakeserver import Rule


def test_priority_slots_serve_lowest_priority_first():
    async def scenario():
        slots = PrioritySlots(1)
        order = []
        await slots.acquire(0)

        async def worker(priority):
            await slots.acquire(priority)
            order.append(priority)
            await asyncio.sleep(0)
            slots.release()

        tasks = [asyncio.create_task(worker(p)) for p in (5, 3, 9, 1, 3)]
        await asyncio.sleep(0.01)
        slots.release()
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(scenario()) == [1, 3, 3, 5, 9]


def test_cancelled_waiter_gives_its_turn_away():
    async def scenario():
        slots = PrioritySlots(1)
        await slots.acquire()
        waiter = asyncio.create_task(slots.acquire(0))
        other = asyncio.create_task(slots.acquire(1))
        await asyncio.sleep(0.01)
        waiter.cancel()
        await asyncio.sleep(0.01)
        slots.release()
        await asyncio.wait_for(other, 30)
        return slots.in_use, slots.waiting

    assert asyncio.run(scenario()) == (1, 0)


def test_aimd_shrinks_on_rate_limit_and_grows_back():
    limiter = AdaptiveLimiter("openai", 20, 30, 10)
    limiter.on_rate_limit()
    assert limiter.limit == 10
    limiter.on_rate_limit()  # within the 5 s cooldown: ignored
    assert limiter.limit == 10
    for _ in range(9):
        limiter.on_success()
    assert limiter.limit == 10
    limiter.on_success()
    assert limiter.limit == 11
    for _ in range(400):
        limiter.on_success()
    assert limiter.limit == 30  # up to the max, no further


def test_aimd_floor_and_non_adaptive():
    limiter = AdaptiveLimiter("x", 4, 4, 3)
    limiter.decrease_cooldown_s = 0
    limiter.on_rate_limit()
    limiter.on_rate_limit()
    assert limiter.limit == 3
    fixed = AdaptiveLimiter("y", 8, 8, 1, adaptive=False)
    fixed.on_rate_limit()
    assert fixed.limit == 8


def test_shrunk_limit_really_bounds_requests_in_flight():
    async def scenario():
        limiter = AdaptiveLimiter("x", 4, 4, 1)
        peak = 0

        async def job():
            nonlocal peak
            await limiter.acquire()
            peak = max(peak, limiter.in_use)
            await asyncio.sleep(0.01)
            limiter.release()

        limiter.on_rate_limit()  # 4 -> 2
        await asyncio.gather(*(job() for _ in range(20)))
        return peak

    assert asyncio.run(scenario()) == 2


def test_caps_profiles_overrides_and_worker_shares():
    limits = Limits(concurrency=None, overrides={}, workers=1)
    assert (limits.group("openai").limit, limits.group("openai").maximum) == (20, 30)
    assert limits.group("xai").limit == 10
    assert limits.group("local").limit == 10  # default profile (custom model ids)
    shared = Limits(concurrency=30, overrides={"anthropic": 8}, workers=4)
    assert shared.group("openai").limit == 5  # 20 / 4
    assert shared.group("anthropic").limit == 2 and shared.group("anthropic").maximum == 2
    assert shared.global_slots.limit == 7  # 30 / 4


def test_engine_limiter_shrinks_on_429_and_grows_back(make_engine, server):
    server.rules.append(Rule(fault="429", retry_after="0", times=1))
    engine = make_engine(provider_concurrency={"openai": 8})
    complete_sync(engine, request("openai:m", "first"))
    limits = engine.stats["limits"]["openai"]
    assert limits["limit"] == 4 and limits["decreases"] == 1
    for index in range(40):
        complete_sync(engine, request("openai:m", f"q{index}"))
    limits = engine.stats["limits"]["openai"]
    assert limits["limit"] == 8 and limits["increases"] == 4


def test_engine_provider_cap_bounds_concurrency(make_engine, server):
    server.latency_ms = 50
    engine = make_engine(provider_concurrency={"openai": 3})
    futures = [engine.run_coroutine(engine.complete(request("openai:m", f"q{i}"))) for i in range(12)]
    for future in futures:
        future.result()
    assert server.max_in_flight == 3


def test_engine_global_cap(make_engine, server):
    server.latency_ms = 50
    engine = make_engine(concurrency=2)
    futures = [
        engine.run_coroutine(engine.complete(request(model, f"q{i}")))
        for i in range(6)
        for model in ("openai:m", "anthropic:c")
    ]
    for future in futures:
        future.result()
    assert server.max_in_flight == 2


def test_engine_sends_in_priority_order(make_engine, server):
    import time

    server.latency_ms = 20
    # The blocker holds the only slot long enough for the others to queue behind it, on any machine.
    server.rules.append(Rule(contains="blocker", latency_ms=500))
    engine = make_engine(provider_concurrency={"openai": 1}, cache_mode="off")
    blocker = engine.run_coroutine(engine.complete(request("openai:m", "blocker", priority=0)))
    while server.count < 1:
        time.sleep(0.002)
    futures = [engine.run_coroutine(engine.complete(request("openai:m", f"p{p}", priority=p))) for p in (7, 2, 9, 1, 5)]
    blocker.result()
    for future in futures:
        future.result()
    assert [r.last_user for r in server.requests] == ["blocker", "p1", "p2", "p5", "p7", "p9"]


def test_joining_an_identical_request_makes_it_as_urgent_as_the_joiner(make_engine, server):
    import time

    server.latency_ms = 30
    server.rules.append(Rule(contains="blocker", latency_ms=500))  # the others queue meanwhile
    engine = make_engine(provider_concurrency={"openai": 1}, cache_mode="off")
    blocker = engine.run_coroutine(engine.complete(request("openai:m", "blocker", priority=0)))
    while server.count < 1:
        time.sleep(0.002)
    late = [engine.run_coroutine(engine.complete(request("openai:m", f"p{p}", priority=p))) for p in (3, 4, 9)]
    time.sleep(0.005)
    # An urgent item (-1) asks for the same request as the one queued at priority 9.
    urgent = engine.run_coroutine(engine.complete(request("openai:m", "p9", priority=-1)))
    for future in [blocker, *late, urgent]:
        future.result()
    assert [r.last_user for r in server.requests] == ["blocker", "p9", "p3", "p4"]
    assert engine.stats["coalesced"] == 1


def test_priority_box_unit():
    from pytest_weval.engine.transport.limits import Priority

    async def scenario():
        slots = PrioritySlots(1)
        await slots.acquire(0)
        order = []
        box = Priority(10)

        async def worker(priority, name):
            await slots.acquire(priority)
            order.append(name)
            slots.release()

        tasks = [asyncio.create_task(worker(5, "five")), asyncio.create_task(worker(box, "box"))]
        await asyncio.sleep(0.01)
        box.lower(1)
        slots.release()
        await asyncio.gather(*tasks)
        return order, slots.waiting, slots.in_use

    assert asyncio.run(scenario()) == (["box", "five"], 0, 0)


def test_most_in_flight_is_the_global_cap_or_what_the_providers_allow_together():
    """What ``StoreHealth.behind`` lets wait for its write: a whole wave of replies, so that a
    store keeping up never holds the sending back (at 8, it did after each wave of 32)."""
    capped = Limits(concurrency=32, overrides={"openai": 32})
    capped.group("openai")
    assert capped.most_in_flight() == 32
    by_providers = Limits(concurrency=None, overrides={})
    by_providers.group("openai")
    by_providers.group("anthropic")
    assert by_providers.most_in_flight() == 40  # each profile's initial 20
    small = Limits(concurrency=2, overrides={})
    small.group("openai")
    assert small.most_in_flight() == 2
    halved = Limits(concurrency=32, overrides={}, workers=2)  # an xdist worker's share
    assert halved.most_in_flight() == 16
