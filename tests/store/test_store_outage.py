"""A PostgreSQL store that goes away mid-run (issue 31, item 7; docs/engine.md, 'When the store is
unreachable'): real pytest processes on ``bench/throughput.py``'s workload, the loopback fake
provider, and a PostgreSQL server of the test's own that is restarted or stopped under them.

- Restarted: every item passes and no request is sent twice.
- Stopped for good: no request starts once it is down beyond those already on their way, the
  run ends on one line (no INTERNALERROR, no traceback per item), the replies received are in
  the spool, and the next run, the server back, stores them and sends none of them again.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from bench.throughput import JUDGE, JUDGE_REPLY, MODELS, write_suite
from pytest_weval.report.failure import explain_error
from pytest_weval.report.run_record import ITEMS as RECORD_ITEMS
from pytest_weval.report.run_record import RECORD_DIR
from pytest_weval.results import ItemResult
from tests.fakeserver import FakeServer, Rule
from tests.store.pg_server import PostgresServer, find_bin
from tests.store.test_store_machines import _env

ITEMS = 60
REQUESTS = 3 * ITEMS  # one generation and two judged points an item
CONCURRENCY = 8
RULES = [Rule(model=JUDGE.split(":", 1)[1], reply=JUDGE_REPLY)] + [
    Rule(model=m.split(":", 1)[1], reply="{model} says: {last}") for m in MODELS
]
GIVE_UP_LINE = "did not answer for 2 s (--weval-store-retry)"


@pytest.fixture
def server_of_its_own(postgres: PostgresServer):
    """A PostgreSQL server this test may stop and start (the session's is shared by other tests);
    ``postgres`` only for its skip when PostgreSQL is missing."""
    assert find_bin() is not None
    server = PostgresServer().start()
    yield server
    server.stop()


class Run:
    """One pytest process (and its xdist workers) in ``folder``."""

    def __init__(self, folder: Path, env: dict[str, str], *args: str):
        self.folder = folder
        self.out = open(folder / f"output-{time.monotonic_ns()}.txt", "w")  # noqa: SIM115 - closed in wait()
        self.path = Path(self.out.name)
        command = [
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
            f"--weval-judges={JUDGE}", f"--weval-concurrency={CONCURRENCY}", "--junitxml=junit.xml",
            "--weval-out=out", *args,
        ]  # fmt: skip
        self.process = subprocess.Popen(command, cwd=folder, env=env, stdout=self.out, stderr=subprocess.STDOUT)

    def wait(self, timeout: float = 240) -> int:
        try:
            return self.process.wait(timeout)
        finally:
            self.out.close()

    @property
    def output(self) -> str:
        return self.path.read_text(errors="replace")

    def summary(self) -> dict:
        return json.loads((self.folder / "out" / "summary.json").read_text())


def _when_busy(fake: FakeServer, run: Run, sent: int) -> None:
    """Until the run has sent ``sent`` requests (still running)."""
    deadline = time.monotonic() + 120
    while fake.count < sent and time.monotonic() < deadline and run.process.poll() is None:
        time.sleep(0.02)
    assert run.process.poll() is None, "the run finished before the store could be stopped:\n" + run.output[-2000:]


def _items(folder: Path) -> list[ItemResult]:
    """The run's item results, as ``--weval-out=out`` records them."""
    lines = (folder / "out" / RECORD_DIR / RECORD_ITEMS).read_text(encoding="utf-8").splitlines()
    return [ItemResult.model_validate_json(line) for line in lines]


def _suite(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    write_suite(folder, ITEMS)
    return folder


SHAPES = {
    "serial": (),
    "run-id": ("--weval-run-id=outage-run",),
    "xdist-run-id": ("-n", "2", "--weval-run-id=outage-run"),
}


@pytest.mark.parametrize("shape", ["serial", "xdist-run-id"])
def test_a_restart_mid_run_loses_nothing_and_sends_nothing_twice(
    tmp_path: Path, server_of_its_own: PostgresServer, shape: str
):
    pg = server_of_its_own
    folder = _suite(tmp_path)
    with FakeServer(RULES, latency_ms=150) as fake:
        run = Run(folder, _env(fake), f"--weval-cache-store={pg.url()}", *SHAPES[shape])
        _when_busy(fake, run, REQUESTS // 4)
        pg.halt()
        time.sleep(0.2)
        pg.resume()
        assert run.wait() == 0, run.output[-3000:]
        bodies = Counter(r.raw_body for r in list(fake.requests))
    assert len(bodies) == REQUESTS and max(bodies.values()) == 1  # every request sent, none twice
    assert f"{ITEMS} passed" in run.output
    assert "INTERNALERROR" not in run.output and "Traceback" not in run.output
    assert not (folder / ".weval_cache" / "weval-spool").exists()  # the store took everything


def test_each_outage_of_a_run_is_said(tmp_path: Path, server_of_its_own: PostgresServer):
    """Issue 41, item 9: the store going away a second time in one run is said again (one line
    per outage, not per request); the run still loses nothing."""
    pg = server_of_its_own
    folder = _suite(tmp_path)
    with FakeServer(RULES, latency_ms=150) as fake:
        run = Run(folder, _env(fake), f"--weval-cache-store={pg.url()}")
        for sent in (REQUESTS // 5, REQUESTS // 2):
            _when_busy(fake, run, sent)
            pg.halt()
            time.sleep(1.5)
            pg.resume()
        assert run.wait() == 0, run.output[-3000:]
    said = [line for line in run.output.splitlines() if "does not answer" in line]
    assert len(said) == 2, run.output[-3000:]
    assert f"{ITEMS} passed" in run.output


@pytest.mark.parametrize("shape", ["serial", "run-id", "xdist-run-id"])
def test_a_store_stopped_for_good_ends_on_one_line_and_its_replies_wait_in_the_spool(
    tmp_path: Path, server_of_its_own: PostgresServer, shape: str
):
    pg = server_of_its_own
    folder = _suite(tmp_path)
    store = (f"--weval-cache-store={pg.url()}", "--weval-store-retry=2")
    with FakeServer(RULES, latency_ms=150) as fake:
        run = Run(folder, _env(fake), *store, *SHAPES[shape])
        _when_busy(fake, run, REQUESTS // 4)
        stopping = time.time()
        pg.halt()
        stopped = time.time()
        assert run.wait() != 0
        requests = list(fake.requests)
    output = run.output
    # Only what was already on its way when the server went: each process's share of the cap.
    started_after = [r for r in requests if r.at > stopped]
    assert len(started_after) <= CONCURRENCY, (len(started_after), stopped - stopping)
    assert "INTERNALERROR" not in output and "Traceback" not in output, output[-5000:]
    ends = [line for line in output.splitlines() if GIVE_UP_LINE in line and "kept in" in line]
    assert len(ends) == 1, output[-5000:]
    spool = folder / ".weval_cache" / "weval-spool"
    spooled = {
        entry["key"]: entry for path in spool.glob("*.json") for entry in json.loads(path.read_text())["entries"]
    }
    assert spooled  # replies arrived while the store was down, and were kept
    assert f"the {len(spooled)} replies received since are kept in {spool}" in ends[0]
    # The items it stopped say it could not be reached: not that a disk is full.
    unsent = [r for r in _items(folder) if r.error_kind is not None]
    assert unsent and {r.error_kind for r in unsent} == {"store_unreachable"}, {r.error_kind for r in unsent}
    assert "could not be reached" in explain_error(unsent[0]) and "full" not in explain_error(unsent[0])
    secret = fake.env()["OPENAI_API_KEY"]
    assert all(secret not in path.read_text() for path in spool.glob("*.json"))

    # The server back: the next run stores the spool first and buys none of those replies again.
    pg.resume()
    with FakeServer(RULES, latency_ms=0) as fake:
        again = Run(folder, _env(fake), f"--weval-cache-store={pg.url()}")
        assert again.wait() == 0, again.output[-3000:]
        resent = {r.raw_body for r in list(fake.requests)}
    first = {r.raw_body for r in requests}
    assert not resent & first  # nothing the first run received was bought again
    assert len(first) + len(resent) == REQUESTS
    assert f"{ITEMS} passed" in again.output
    assert not spool.exists()


def test_a_store_turned_read_only_mid_run_says_read_only_not_full(tmp_path: Path, server_of_its_own: PostgresServer):
    """PostgreSQL refuses writes (SQLSTATE 25006) once the server is made read-only: sending
    stops, and each stopped item says the store is read-only and what to do about that."""
    pg = server_of_its_own
    folder = _suite(tmp_path)
    with FakeServer(RULES, latency_ms=150) as fake:
        run = Run(folder, _env(fake), f"--weval-cache-store={pg.url()}")
        _when_busy(fake, run, REQUESTS // 4)
        pg.sql("postgres", "ALTER SYSTEM SET default_transaction_read_only = on")
        pg.sql("postgres", "SELECT pg_reload_conf()")
        assert run.wait() != 0
        sent = fake.count
    output = run.output
    assert "INTERNALERROR" not in output and "Traceback" not in output, output[-5000:]
    assert sent < REQUESTS, "the run went on sending after the store refused writes"
    unsent = [r for r in _items(folder) if r.error_kind is not None]
    assert unsent and {r.error_kind for r in unsent} == {"store_read_only"}, {r.error_kind for r in unsent}
    text = explain_error(unsent[0])
    assert "read-only" in text.splitlines()[0] and "Make the cache writable" in text
    assert "full" not in text and "free space" not in output.lower(), output[-5000:]
    assert "cannot store replies (read-only)" in output and "make it writable" in output
