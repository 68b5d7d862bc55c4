"""A batch submitted by one pytest process is collected by another, in each kind of store
(docs/batch.md): the lines and batches recorded by ``--weval-batch=submit`` are read back by a
later ``--weval-batch=wait`` with nothing submitted twice and nothing sent live."""

from __future__ import annotations

import collections
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakeserver import FakeServer, Rule

ITEMS = 12
VERDICT = "<reflection>Meets it.</reflection><classification>CLASS_EXACT</classification>"


# The candidate model of each provider with a batch API; its key's variables (docs/batch.md).
CANDIDATES = {
    "openai": ("openai:gpt-4o-mini", ("OPENAI_API_KEY",)),
    "google": ("google:gemini-2.5-flash", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
    "xai": ("xai:grok-4", ("XAI_API_KEY",)),
    "together": ("together:meta-llama/Llama-3.3-70B-Instruct-Turbo", ("TOGETHER_API_KEY",)),
    "mistral": ("mistral:mistral-small-latest", ("MISTRAL_API_KEY",)),
}
# Each store with OpenAI's batches; each other provider's batches in the SQLite store.
STORES_AND_PROVIDERS = [
    *[pytest.param(store, "openai", id=f"{store}-openai") for store in ("sqlite", "files", "postgresql")],
    *[
        pytest.param("sqlite", provider, id=f"sqlite-{provider}")
        for provider in ("google", "xai", "together", "mistral")
    ],
]


def _project(folder: Path, provider: str = "openai") -> None:
    lines = [f"models: [{CANDIDATES[provider][0]}]", "---"]
    for n in range(ITEMS):
        lines += [f"- id: p{n}", f"  prompt: Question {n}, please answer.", "  should:", f"    - answers question {n}"]
    (folder / "suite.yml").write_text("\n".join(lines) + "\n")
    (folder / "pytest.ini").write_text("[pytest]\n")


def _env(server: FakeServer) -> dict[str, str]:
    """A pytest subprocess's environment: the fake's keys and addresses, this interpreter's path."""
    env = dict(os.environ)
    env.update(server.env())
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _pytest(folder: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:randomly",
        "suite.yml", "--weval-judges=anthropic:claude-judge", "--weval-batch-poll=0.2", "--weval-check-models=off",
        *args,
    ]  # fmt: skip
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(("store", "provider"), STORES_AND_PROVIDERS)
def test_a_batch_submitted_by_one_process_is_collected_by_another(
    tmp_path: Path, store: str, provider: str, request: pytest.FixtureRequest
):
    cache_store = request.getfixturevalue("pg_url") if store == "postgresql" else store
    _project(tmp_path, provider)
    # Batches take ten minutes (a provider's hours), so the submitting run sees them open
    # however slow the machine; they are ended by hand before the second run.
    with FakeServer(rules=[Rule(model="claude-judge", reply=VERDICT)], batch_delay_s=600.0) as server:
        env = _env(server)
        args = (f"--weval-cache-store={cache_store}",)
        submitted = _pytest(tmp_path, env, "--weval-batch=submit", *args)
        said = submitted.stdout[-3000:] + submitted.stderr[-2000:]
        assert submitted.returncode == 0, said
        assert f"{ITEMS} skipped" in submitted.stdout, said
        assert "collect with --weval-batch=wait" in submitted.stdout, said
        assert len(server.batches) == 1, said  # the answers' round; the judges' waits for them
        (job,) = server.batches.values()
        assert job.provider == provider, said
        listed = _batch_list(tmp_path, env, cache_store)
        row = next((line for line in listed.splitlines() if job.id in line), "")
        assert provider in row and str(ITEMS) in row, listed
        server.set_batch(batch_delay_s=0.2)
        for batch in server.batches.values():
            batch.ends_at = time.time()

        collected = _pytest(tmp_path, env, "--weval-batch=wait", *args)
        said += "\n--- the collecting run ---\n" + collected.stdout[-3000:] + collected.stderr[-2000:]
        assert collected.returncode == 0, said
        assert f"{ITEMS} passed" in collected.stdout, said
        per_line = collections.Counter(server.log()["batch_lines"]["by_custom_id"])
        assert sum(per_line.values()) == 2 * ITEMS, said  # each answer and each verdict, once
        assert max(per_line.values()) == 1, said
        assert server.requests == [], said  # nothing live
        assert {job.provider for job in server.batches.values()} == {provider, "anthropic"}, said


def _batch_list(folder: Path, env: dict[str, str], cache_store: str) -> str:
    """``python -m pytest_weval batch list``'s table for the project's store."""
    listed = subprocess.run(
        [sys.executable, "-m", "pytest_weval", "batch", "list", "--cache-store", cache_store,
         "--cache-dir", ".weval_cache"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    return listed.stdout


@pytest.mark.parametrize(("store", "provider"), STORES_AND_PROVIDERS)
def test_a_batch_a_run_cannot_see_keeps_its_lines_until_one_that_can_collects_it(
    tmp_path: Path, store: str, provider: str, request: pytest.FixtureRequest
):
    """Issue 41 item 1: a submit killed after the provider made the batch, before its id was
    recorded; a run without the provider's key cannot look for it and must not queue its lines
    again, so the next run with the key finds and collects it, buying no line twice."""
    cache_store = request.getfixturevalue("pg_url") if store == "postgresql" else store
    _project(tmp_path, provider)
    with FakeServer(rules=[Rule(model="claude-judge", reply=VERDICT)], batch_delay_s=600.0) as server:
        env = _env(server)
        args = (f"--weval-cache-store={cache_store}",)
        _kill_a_submit_once_its_batch_exists(tmp_path, env, server, *args)
        server.set_batch(batch_create_hold_s=0.0, batch_delay_s=0.2)

        # An Anthropic item of its own makes the blind run batch (and so look at open batches).
        (tmp_path / "other.yml").write_text(
            "models: [anthropic:claude-judge]\n---\n- id: other\n  prompt: Another question.\n  should: [answers]\n"
        )
        blind = {name: value for name, value in env.items() if name not in CANDIDATES[provider][1]}
        cannot = _pytest(tmp_path, blind, "other.yml", "--weval-missing-keys=error", "--weval-batch=submit", *args)
        said = cannot.stdout[-3000:] + cannot.stderr[-2000:]
        assert f"cannot collect {provider} batch" in cannot.stdout + cannot.stderr, said

        for batch in server.batches.values():
            batch.ends_at = time.time()
        collected = _pytest(tmp_path, env, "--weval-batch=wait", *args)
        said += "\n--- the collecting run ---\n" + collected.stdout[-3000:] + collected.stderr[-2000:]
        assert collected.returncode == 0, said
        assert f"{ITEMS} passed" in collected.stdout, said
        per_line = collections.Counter(server.log()["batch_lines"]["by_custom_id"])
        assert max(per_line.values()) == 1, said  # each line bought once
        assert sum(per_line.values()) == 2 * ITEMS + 1, said  # each answer and verdict, and other.yml's
        assert server.requests == [], said  # nothing live


@pytest.mark.parametrize("store", ["sqlite", "files", "postgresql"])
def test_a_wait_that_cannot_collect_an_open_batch_ends_and_says_why(
    tmp_path: Path, store: str, request: pytest.FixtureRequest
):
    """Issue 41 item 2: a ``wait`` run whose key cannot reach the open batch's account, or whose
    batch the provider answers 404 for, ends, saying in one line which batch and why."""
    cache_store = request.getfixturevalue("pg_url") if store == "postgresql" else store
    _project(tmp_path)
    with FakeServer(rules=[Rule(model="claude-judge", reply=VERDICT)], batch_delay_s=600.0) as server:
        env = _env(server)
        args = (f"--weval-cache-store={cache_store}",)
        submitted = _pytest(tmp_path, env, "--weval-batch=submit", *args)
        assert submitted.returncode == 0, submitted.stdout[-3000:]
        (openai_batch,) = server.batches

        other_key = env | {"OPENAI_API_KEY": "sk-another-account"}
        other = _pytest(tmp_path, other_key, "--weval-batch=wait", *args)
        said = other.stdout[-3000:] + other.stderr[-2000:]
        assert f"{ITEMS} error" in other.stdout, said
        assert f"cannot collect openai batch {openai_batch} here" in other.stdout + other.stderr, said
        assert "another key" in other.stdout, said

        del server.batches[openai_batch]  # the provider no longer knows it
        gone = _pytest(tmp_path, env, "--weval-batch=wait", *args)
        said = gone.stdout[-3000:] + gone.stderr[-2000:]
        assert f"{ITEMS} error" in gone.stdout, said
        assert f"cannot collect openai batch {openai_batch} here" in gone.stdout + gone.stderr, said
        assert "404" in gone.stdout, said
        assert len(server.batches) == 0, said  # nothing bought again meanwhile


def test_batch_list_shows_a_row_whose_created_is_damaged(tmp_path: Path):
    """Issue 41 item 3: a batch row whose ``created`` is not a time is listed, said to be
    damaged, with no traceback. (PostgreSQL's column type cannot hold such a value; the files
    store keeps its batches in a SQLite file like this one.)"""
    _project(tmp_path)
    with FakeServer(rules=[Rule(model="claude-judge", reply=VERDICT)], batch_delay_s=600.0) as server:
        env = _env(server)
        submitted = _pytest(tmp_path, env, "--weval-batch=submit", "--weval-cache-dir=cache")
        assert submitted.returncode == 0, submitted.stdout[-3000:]
        (openai_batch,) = server.batches
    with sqlite3.connect(tmp_path / "cache" / "weval-cache.sqlite") as db:
        db.execute("UPDATE weval_batches SET created = 'yesterday'")
    listed = subprocess.run(
        [sys.executable, "-m", "pytest_weval", "batch", "list", "--cache-dir", "cache"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if openai_batch in line)
    assert "damaged" in row, listed.stdout


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("status = 'paused'", "unknown status 'paused'"),
        ("provider_id = NULL", "no provider id"),
    ],
)
def test_a_wait_on_a_damaged_batch_row_ends_and_says_why(tmp_path: Path, damage: str, said: str):
    """Issue 41 item 2: a batch row with an unknown status or no provider id does not leave a
    ``wait`` run waiting for ever: its items error with one line naming the batch."""
    _project(tmp_path)
    with FakeServer(rules=[Rule(model="claude-judge", reply=VERDICT)], batch_delay_s=600.0) as server:
        env = _env(server)
        submitted = _pytest(tmp_path, env, "--weval-batch=submit", "--weval-cache-dir=cache")
        assert submitted.returncode == 0, submitted.stdout[-3000:]
        with sqlite3.connect(tmp_path / "cache" / "weval-cache.sqlite") as db:
            db.execute(f"UPDATE weval_batches SET {damage}")
        waited = _pytest(tmp_path, env, "--weval-batch=wait", "--weval-cache-dir=cache")
        out = waited.stdout[-3000:] + waited.stderr[-2000:]
        assert f"{ITEMS} error" in waited.stdout, out
        everything = waited.stdout + waited.stderr
        assert "cannot collect openai batch" in everything and said in everything, out
        assert len(server.batches) == 1, out  # its lines were not bought again


@pytest.mark.parametrize("no_list", [404, 405])
def test_a_recovery_against_a_provider_without_a_batch_list_ends_and_spaces_its_calls(tmp_path: Path, no_list: int):
    """Issue 41 item 2: a submit killed after the provider made the batch leaves a record to
    recover, which is looked for in the provider's batch list; a provider without one (404, 405)
    was asked 348 times in 90 s by a run that never ended. The run ends, says in one line which
    batch it cannot collect and why, and asks the list once per poll interval at most."""
    _project(tmp_path)
    with FakeServer(rules=[Rule(model="claude-judge", reply=VERDICT)], batch_delay_s=600.0) as server:
        env = _env(server)
        _kill_a_submit_once_its_batch_exists(tmp_path, env, server)
        server.set_batch(batch_create_hold_s=0.0, batch_list_status=no_list)
        for batch in server.batches.values():
            batch.ends_at = time.time()
        server.batch_calls.clear()

        waited = _pytest(tmp_path, env, "--weval-batch=wait", "--weval-batch-poll=2")
        said = waited.stdout[-3000:] + waited.stderr[-2000:]
        assert f"{ITEMS} error" in waited.stdout, said
        cannot = [
            line for line in (waited.stdout + waited.stderr).splitlines() if "cannot collect openai batch" in line
        ]
        assert len(cannot) == 1, said
        assert "could not be looked for at the provider" in cannot[0] and str(no_list) in cannot[0], said
        listings = [
            call for call in server.batch_calls if call["method"] == "GET" and call["path"].endswith("/batches")
        ]
        assert 1 <= len(listings) <= 3, (len(listings), said)
        assert all(call["status"] == no_list for call in listings)
        assert len(server.batches) == 1, said  # nothing submitted again meanwhile


def _kill_a_submit_once_its_batch_exists(tmp_path: Path, env: dict[str, str], server: FakeServer, *args: str) -> None:
    """A ``--weval-batch=submit`` run SIGKILLed after the provider made its batch, before the
    submitter was told the batch's id (the provider holds its answer)."""
    server.set_batch(batch_create_hold_s=120.0)
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "suite.yml",
        "--weval-judges=anthropic:claude-judge", "--weval-check-models=off", "--weval-batch=submit", *args,
    ]  # fmt: skip
    run = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        # xAI's batch is made empty, then filled: waited for until it holds the lines.
        while not any(job.lines for job in list(server.batches.values())) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.batches, "no batch was created"
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
