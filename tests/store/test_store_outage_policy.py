"""The one retry policy of a store server that does not answer, and the spool (store/outage.py;
docs/engine.md, 'When the store is unreachable'), without a server: the PostgreSQL runs are in
test_store_outage.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from pytest_weval.engine.store.common import StoreDown
from pytest_weval.engine.store.outage import Outage, Spool, flush, spool_folder
from pytest_weval.engine.store.sqlite_health import is_unwritable

URL = "postgresql://weval:s3cret-pw@db.example:5432/weval"


class Refused(Exception):
    pass


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, Refused)


def _flaky(failures: int):
    calls = []

    async def attempt() -> str:
        calls.append(1)
        if len(calls) <= failures:
            raise Refused("connection refused")
        return "answer"

    return attempt, calls


def test_a_short_outage_is_waited_out_and_ends_when_the_store_answers():
    async def scenario():
        outage = Outage("db", retry_s=30)
        attempt, calls = _flaky(3)
        waiter_saw: list[bool] = []

        async def waiter():
            await asyncio.sleep(0.01)  # the outage has begun
            waiter_saw.append(outage.down)
            await outage.wait_up()  # returns once the store answers
            waiter_saw.append(outage.down)

        answer, _ = await asyncio.gather(outage.call(attempt, _transient), waiter())
        return outage, answer, calls, waiter_saw

    outage, answer, calls, waiter_saw = asyncio.run(scenario())
    assert answer == "answer" and len(calls) == 4
    assert waiter_saw == [True, False]
    assert outage.outages == 1 and not outage.down and outage.gave_up is None


def test_a_store_down_past_the_retry_time_is_given_up_and_later_calls_fail_at_once():
    async def scenario():
        outage = Outage("db", retry_s=0.2)
        attempt, calls = _flaky(10**6)
        with pytest.raises(StoreDown) as first:
            await outage.call(attempt, _transient)
        tried = len(calls)
        with pytest.raises(StoreDown):
            await outage.call(attempt, _transient)
        with pytest.raises(StoreDown):
            await outage.wait_up()
        return outage, first.value, tried, calls

    outage, error, tried, calls = asyncio.run(scenario())
    assert tried > 1 and len(calls) == tried  # retried, then nothing more was asked of the store
    assert str(error) == outage.gave_up and "did not answer for 0.2 s (--weval-store-retry)" in str(error)
    assert outage.last_error == "connection refused"
    assert is_unwritable(error)  # stops the sending as a full store does


def test_an_error_the_server_gave_is_not_an_outage():
    async def scenario():
        outage = Outage("db", retry_s=30)

        async def refused_statement() -> None:
            raise ValueError("syntax error")

        with pytest.raises(ValueError):
            await outage.call(refused_statement, _transient)
        return outage

    assert not asyncio.run(scenario()).down


def _entry(key: str) -> dict:
    return {"key": key, "model": "openai:m", "request": {"messages": []}, "text": f"reply {key}", "created": 1.0}


def test_the_spool_is_flushed_into_its_own_store_once_and_removed(tmp_path: Path):
    for key in ("a", "b"):
        spool = Spool(tmp_path, URL)
        spool.add(_entry(key))
        assert spool.get(key) is not None
        written = spool.write()
        assert written is not None and written.parent == spool_folder(tmp_path)
        assert "s3cret-pw" not in written.name and "s3cret-pw" not in written.read_text()
    assert Spool(tmp_path, URL).write() is None  # nothing held, no file

    stored: list[dict] = []

    async def put(entry: dict) -> None:
        stored.append(entry)

    assert asyncio.run(flush(tmp_path, "postgresql://other@db.example/weval", put)) == 0  # another store's
    assert asyncio.run(flush(tmp_path, URL.replace("s3cret-pw", "new-pw"), put)) == 2  # the password aside
    assert sorted(e["key"] for e in stored) == ["a", "b"]
    assert not spool_folder(tmp_path).exists()
    assert asyncio.run(flush(tmp_path, URL, put)) == 0


def test_a_spool_the_store_cannot_take_now_waits_for_the_next_run(tmp_path: Path):
    spool = Spool(tmp_path, URL)
    spool.add(_entry("a"))
    path = spool.write()
    assert path is not None

    async def put(entry: dict) -> None:
        raise StoreDown("down")

    with pytest.raises(StoreDown):
        asyncio.run(flush(tmp_path, URL, put))
    assert json.loads(path.read_text())["entries"][0]["key"] == "a"  # put back as it was
