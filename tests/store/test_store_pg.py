"""The PostgreSQL store on a real server: the cache, claims as leases, the schema's version,
the spend ledger, and the password kept out of every text (engine/store_pg.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_weval.engine import Engine, EngineSettings
from pytest_weval.engine.claims import Coordinator, SpendLedger
from pytest_weval.engine.store.backends import StoreError, check_store, redact_url, store_stats
from pytest_weval.engine.store.postgres import SCHEMA_VERSION, PgClaims, PgDB
from tests.engine.engine_helpers import complete_sync, request
from tests.fakeserver import FakeServer
from tests.store.pg_server import PASSWORD, PostgresServer, free_port


def _engine(url: str, tmp_path: Path, server: FakeServer, **kw) -> Engine:
    return Engine(EngineSettings(cache_store=url, cache_dir=tmp_path / "cache", env=server.env(), **kw)).start()


def test_replies_are_cached_in_postgres_and_read_by_another_engine(pg_url: str, tmp_path: Path, postgres):
    with FakeServer() as server:
        first = _engine(pg_url, tmp_path, server)
        try:
            reply = complete_sync(first, request("openai:m", "hello postgres"))
        finally:
            first.close()
        second = _engine(pg_url, tmp_path / "elsewhere", server)
        try:
            again = complete_sync(second, request("openai:m", "hello postgres"))
        finally:
            second.close()
        assert server.count == 1
    assert reply.text == again.text == "echo: hello postgres"
    assert not reply.cached and again.cached
    assert not (tmp_path / "cache").exists()  # nothing on the local disk
    database = pg_url.rsplit("/", 1)[1]
    assert postgres.sql(database, "SELECT value FROM weval_meta WHERE name = 'schema_version'").strip() == str(
        SCHEMA_VERSION
    )
    stats = store_stats(pg_url, tmp_path)
    assert stats.entries == 1 and stats.by_model == [("openai:m", 1)] and stats.size_bytes > 0


def test_another_schema_version_is_a_clear_error_before_anything_is_sent(pg_url: str, tmp_path: Path, postgres):
    check_store(EngineSettings(cache_store=pg_url))  # creates the tables
    postgres.sql(pg_url.rsplit("/", 1)[1], "UPDATE weval_meta SET value = '99' WHERE name = 'schema_version'")
    with FakeServer() as server:
        with pytest.raises(StoreError) as caught:
            _engine(pg_url, tmp_path, server)
        assert server.count == 0
    message = str(caught.value)
    assert "\n" not in message
    assert f"schema version 99, this pytest-weval uses version {SCHEMA_VERSION}" in message
    assert redact_url(pg_url) in message


def test_replay_from_an_empty_database_creates_nothing_and_says_so_in_one_line(pg_url: str, tmp_path: Path, postgres):
    # --weval-cache=ro never writes: a database with nothing recorded gets no tables from it
    settings = EngineSettings(cache_store=pg_url, cache_mode="ro", cache_dir=tmp_path / "cache")
    with pytest.raises(StoreError) as caught:
        check_store(settings)
    message = str(caught.value)
    assert "\n" not in message and "--weval-cache=ro has nothing to replay" in message
    with FakeServer() as server:
        with pytest.raises(StoreError):
            Engine(dataclasses.replace(settings, env=server.env(), worker_count=2, worker_id="gw0")).start()
        assert server.count == 0
    tables = postgres.sql(pg_url.rsplit("/", 1)[1], "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
    assert tables.strip() == "0"


def test_an_unreachable_server_is_one_line():
    url = f"postgresql://weval@127.0.0.1:{free_port()}/weval"
    with pytest.raises(StoreError) as caught:
        check_store(EngineSettings(cache_store=url))
    message = str(caught.value)
    assert message.startswith(f"cache store {url}: cannot connect: ") and "\n" not in message
    assert "refused" in message.lower()


def _claims(url: str, run_id: str, worker: str, lease_s: float = 30.0, host: str | None = None):
    """A coordinator on its own connections; ``host`` pretends to be another machine."""

    async def make() -> tuple[PgDB, Coordinator]:
        db = PgDB(url)
        await db.open()
        coordinator = Coordinator(PgClaims(db), run_id=run_id, worker_id=worker, lease_s=lease_s, poll_s=0.05)
        if host is not None:
            coordinator.host = host
            coordinator.owner = f"{host}:{coordinator.pid}:{worker}"
            coordinator.me = type(coordinator.me)(coordinator.owner, host, coordinator.pid)
        return db, coordinator

    return make()


def test_a_lease_that_runs_out_releases_the_claim_to_another_machine(pg_url: str):
    async def scenario() -> None:
        # Machine A takes a claim with a short lease and stops renewing it (it died, on another host).
        db_a, a = await _claims(pg_url, "run-lease", "gw0", lease_s=0.4, host="machine-a")
        db_b, b = await _claims(pg_url, "run-lease", "gw0", lease_s=30, host="machine-b")
        await b.start()
        try:
            claimed = time.monotonic()
            assert await a.claim("k1") is True
            assert await b.claim("k1") is False  # live lease: B waits
            assert await asyncio.wait_for(b.wait("k1"), 30) is None  # lapsed, no outcome
            assert time.monotonic() - claimed >= 0.35  # not before A's 0.4 s lease ran out
            assert await b.claim("k1") is True
            # An outcome recorded by a holder reaches a waiter, whatever machine it is on.
            assert await a.claim("k2") is True
            waiting = asyncio.ensure_future(b.wait("k2"))
            await asyncio.sleep(0.1)
            await a.finish("k2", text="done by a", input_tokens=3)
            landed = await asyncio.wait_for(waiting, 30)
            assert landed is not None and landed.text == "done by a" and landed.input_tokens == 3
            outcome = await b.claim("k2")
            assert not isinstance(outcome, bool) and outcome.text == "done by a"
            # Outcomes are per run: another run claims the same key afresh.
            _, other = await _claims(pg_url, "run-other", "gw0", host="machine-c")
            assert await other.claim("k2") is True
        finally:
            await b.close()
            await db_a.aclose()
            await db_b.aclose()

    asyncio.run(scenario())


def test_a_dead_holder_on_this_host_is_taken_over_at_once(pg_url: str):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: its pid is free

    async def scenario() -> tuple[bool, int]:
        db, coordinator = await _claims(pg_url, "run-dead", "gw1")
        try:
            await db.run(
                lambda conn: conn.execute(
                    "INSERT INTO weval_claims (key, owner, host, pid, expires) VALUES ('k', 'gone', %s, %s, %s)",
                    (socket.gethostname(), child.pid, time.time() + 3600),
                )
            )
            outcome = await coordinator.claim("k")
            return outcome is True, coordinator.takeovers
        finally:
            await db.aclose()

    assert asyncio.run(scenario()) == (True, 1)


def test_many_claimers_racing_on_the_same_keys_send_each_once(pg_url: str):
    """Eight coordinators (one per 'process') claim the same 40 keys in different orders;
    each holder records at once. Every key is held by exactly one of them, and every other
    one sees its outcome."""
    keys = [f"key-{n}" for n in range(40)]

    async def worker(n: int, sent: list[str]) -> None:
        db, coordinator = await _claims(pg_url, "run-race", f"gw{n}", host=f"machine-{n}")
        await coordinator.start()
        try:
            order = keys[n % 7 :] + keys[: n % 7]
            for start in range(0, len(order), 5):
                outcomes = await coordinator.claim_many(order[start : start + 5])
                for key, outcome in outcomes.items():
                    if outcome is True:
                        sent.append(key)
                        await coordinator.finish(key, text=f"answer {key}")
                    elif outcome is False:
                        landed = await asyncio.wait_for(coordinator.wait(key), 30)
                        if landed is None:  # lapsed in between: claim again
                            again = await coordinator.claim(key)
                            if again is True:
                                sent.append(key)
                                await coordinator.finish(key, text=f"answer {key}")
                        else:
                            assert landed.text == f"answer {key}"
                    else:
                        assert outcome.text == f"answer {key}"
        finally:
            await coordinator.close()
            await db.aclose()

    async def main() -> list[str]:
        sent: list[str] = []
        await asyncio.gather(*(worker(n, sent) for n in range(8)))
        return sent

    sent = asyncio.run(main())
    assert sorted(sent) == sorted(keys)


def test_the_spend_ledger_in_postgres_never_reserves_past_the_budget(pg_url: str):
    limit = 1.0

    async def spender(n: int, admitted: list[float]) -> None:
        db, coordinator = await _claims(pg_url, "run-spend", f"gw{n}", host=f"machine-{n}")
        ledger = SpendLedger(coordinator)
        try:
            for _ in range(30):
                verdict = await ledger.reserve(0.1, limit)
                if verdict.admitted:
                    admitted.append(verdict.spent + verdict.reserved)
                    await asyncio.sleep(0.005)
                    await ledger.settle(0.1, 0.1)
                else:
                    await asyncio.sleep(0.01)
            total = await ledger.total()
            assert total.spent <= limit + 0.1 + 1e-9
        finally:
            await db.aclose()

    async def main() -> list[float]:
        admitted: list[float] = []
        await asyncio.gather(*(spender(n, admitted) for n in range(4)))
        return admitted

    admitted = asyncio.run(main())
    assert len(admitted) == 10  # $1 of $0.10 replies, and not one more
    assert all(seen + 0.1 <= limit + 1e-9 for seen in admitted)


# -- the password ------------------------------------------------------------------------------
def test_the_password_comes_from_pgpassword_and_a_wrong_one_is_a_redacted_line(
    postgres: PostgresServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    url = postgres.url(user="weval")  # no password in the URL: libpq reads PGPASSWORD
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    check_store(EngineSettings(cache_store=url))
    monkeypatch.delenv("PGPASSWORD")
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
    wrong = f"postgresql://weval:{PASSWORD}-not@127.0.0.1:{postgres.port}/weval"
    with pytest.raises(StoreError) as caught:
        check_store(EngineSettings(cache_store=wrong))
    message = str(caught.value)
    assert PASSWORD not in message and "***" in message and "\n" not in message
    assert "password authentication failed" in message
    assert redact_url(wrong) == f"postgresql://weval:***@127.0.0.1:{postgres.port}/weval"
    assert redact_url(f"postgresql://h/db?user=u&password={PASSWORD}") == "postgresql://h/db?user=u&password=***"


def test_a_password_in_the_url_never_reaches_any_output(
    postgres: PostgresServer, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """A run whose store URL holds the password (it works, but should come from PGPASSWORD):
    the terminal, junit, --weval-out and the HTML report never show it, nor does a failing run."""
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_BASE_URL")) or name in ("PYTEST_ADDOPTS", "PGPASSWORD"):
            monkeypatch.delenv(name)
    url = f"postgresql://weval:{PASSWORD}@127.0.0.1:{postgres.port}/weval"
    pytester.makefile(".ini", pytest="[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    (pytester.path / "blueprints").mkdir()
    (pytester.path / "blueprints" / "one.yml").write_text(
        "models: [openai:m]\n---\n- id: p\n  prompt: say hi\n  should:\n    - $contains: say hi\n"
    )
    with FakeServer() as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", f"--weval-cache-store={url}", "--weval-out=out", "--weval-html=report.html",
            "--junitxml=junit.xml", "-v", "-rA",
        )  # fmt: skip
        assert result.ret == 0, result.stdout.str()
        assert server.count == 1
        # The same URL with a wrong password: one line, masked, nothing sent.
        failed = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", f"--weval-cache-store={url.replace(PASSWORD, PASSWORD + 'x')}"
        )
        assert server.count == 1
    assert failed.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in failed.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and "password authentication failed" in errors[0] and "weval:***@" in errors[0]
    texts = [result.stdout.str(), result.stderr.str(), failed.stdout.str(), failed.stderr.str()]
    for path in pytester.path.rglob("*"):
        if path.is_file():
            texts.append(path.read_bytes().decode("utf-8", errors="replace"))
    assert not [text for text in texts if PASSWORD in text]
    assert "weval:***@" in (pytester.path / "report.html").read_text()  # the option, shown masked
