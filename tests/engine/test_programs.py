"""Running programs named by eval files, as real subprocesses: argv and ``sh -c``, timeouts that
kill the process group, output caps, the stripped environment, and nothing started unless
allowed (issue 20 points 5-6; rulings 23, 27)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

import pytest
from programs_helpers import PY, runner

from pytest_weval.run.programs.runner import ExecNotAllowed, ProgramRunner, ProgramStartError, provider_key_reason

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups and sh -c are POSIX")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def wait_dead(pid: int, within: float = 30.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return not alive(pid)


# --- running -------------------------------------------------------------------------------------


async def test_argv_runs_without_a_shell(tmp_path):
    result = await runner().run(
        [PY, "-c", "import os, sys; print(sys.argv[1], os.getcwd())", "$HOME;*"], cwd=tmp_path, timeout_s=10
    )
    assert result.returncode == 0 and not result.timed_out and not result.truncated
    assert result.stdout_text == f"$HOME;* {tmp_path}\n"  # no expansion: argv as given


async def test_string_runs_through_sh_c(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    result = await runner().run("echo one | tr o 0; ls *.txt; pwd", cwd=tmp_path, timeout_s=10)
    assert result.returncode == 0
    assert result.stdout_text.splitlines() == ["0ne", "a.txt", str(tmp_path)]


async def test_stdin_json_round_trip(tmp_path):
    script = "import json, sys; d = json.load(sys.stdin); print(json.dumps({'got': d, 'n': len(d['items'])}))"
    payload = {"items": list(range(50_000)), "text": "é ✓"}  # bigger than a pipe buffer
    result = await runner().run(
        [PY, "-c", script], cwd=tmp_path, stdin=json.dumps(payload).encode(), timeout_s=20, max_output_bytes=10**7
    )
    assert result.returncode == 0, result.stderr_text
    assert json.loads(result.stdout_text) == {"got": payload, "n": 50_000}


async def test_a_program_that_ignores_stdin_is_fine(tmp_path):
    result = await runner().run([PY, "-c", "print('ok')"], cwd=tmp_path, stdin=b"x" * 2_000_000, timeout_s=10)
    assert result.returncode == 0 and result.stdout_text == "ok\n"


async def test_timeout_kills_the_program_and_its_children(tmp_path):
    # The program would run 10 minutes; the wait_for only turns a timeout that does not work
    # into a failure instead of a hang.
    script = "sleep 600 & echo $! > child.pid; echo $$ > self.pid; wait"
    result = await asyncio.wait_for(runner().run(script, cwd=tmp_path, timeout_s=0.5), 60)
    assert result.timed_out
    assert result.returncode is not None and result.returncode < 0
    for name in ("self.pid", "child.pid"):
        assert wait_dead(int((tmp_path / name).read_text())), name


async def test_a_background_child_holding_stdout_does_not_keep_the_run_waiting(tmp_path):
    # Waiting for the child's end of stdout would run into the 30 s timeout (timed_out).
    script = "sleep 600 & echo $! > child.pid; echo started"
    result = await asyncio.wait_for(runner().run(script, cwd=tmp_path, timeout_s=30), 60)
    assert not result.timed_out and result.returncode == 0 and result.stdout_text == "started\n"
    assert wait_dead(int((tmp_path / "child.pid").read_text()))  # the group is killed when it ends


async def test_cancelling_the_run_kills_the_group(tmp_path):
    task = asyncio.ensure_future(runner().run("echo $$ > self.pid; sleep 30", cwd=tmp_path, timeout_s=60))
    pid_file = tmp_path / "self.pid"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_dead(int(pid_file.read_text()))


async def test_runs_do_not_block_the_event_loop(tmp_path):
    ticked = []

    async def tick():
        for _ in range(5):
            await asyncio.sleep(0.01)
        ticked.append(time.time())

    # Each program says when it started and when it ended, by the same clock as the ticks.
    script = "import time; start = time.time(); time.sleep(2); print(start, time.time())"
    r = runner()
    first, second, _ = await asyncio.gather(
        r.run([PY, "-c", script], cwd=tmp_path, timeout_s=60),
        r.run([PY, "-c", script], cwd=tmp_path, timeout_s=60),
        tick(),
    )
    (start_1, end_1), (start_2, end_2) = (map(float, run.stdout_text.split()) for run in (first, second))
    assert max(start_1, start_2) < min(end_1, end_2)  # the two programs ran at the same time
    assert ticked[0] < min(end_1, end_2)  # and the loop went on meanwhile


async def test_output_is_capped_stdout_head_stderr_tail(tmp_path):
    script = "import sys; sys.stdout.write('a' * 100000 + 'END'); sys.stderr.write('START' + 'b' * 100000 + 'TAIL')"
    result = await runner().run([PY, "-c", script], cwd=tmp_path, timeout_s=10, max_output_bytes=1000)
    assert result.truncated and result.returncode == 0
    assert result.stdout == b"a" * 1000
    assert len(result.stderr) == 1000 and result.stderr.endswith(b"TAIL")


async def test_non_zero_exit_is_in_the_result(tmp_path):
    result = await runner().run(
        [PY, "-c", "import sys; sys.stderr.write('bad'); sys.exit(3)"], cwd=tmp_path, timeout_s=10
    )
    assert result.returncode == 3 and result.stderr_tail() == "bad"


async def test_start_errors(tmp_path):
    with pytest.raises(ProgramStartError, match="could not start"):
        await runner().run(["definitely-not-a-program-xyz"], cwd=tmp_path, timeout_s=5)
    with pytest.raises(ProgramStartError, match="could not start"):
        await runner().run([PY, "-c", "pass"], cwd=tmp_path / "missing", timeout_s=5)
    with pytest.raises(ProgramStartError, match="empty"):
        await runner().run([], cwd=tmp_path, timeout_s=5)
    # through the shell a missing program is sh's exit 127
    result = await runner().run("definitely-not-a-program-xyz", cwd=tmp_path, timeout_s=5)
    assert result.returncode == 127


# --- allowed or not ------------------------------------------------------------------------------


async def test_not_allowed_starts_nothing(tmp_path):
    made = tmp_path / "made"
    with pytest.raises(ExecNotAllowed) as info:
        await ProgramRunner(allow_exec=False).run(["touch", str(made)], cwd=tmp_path, timeout_s=5)
    assert "--weval-allow-exec" in str(info.value) and "weval_allow_exec" in str(info.value)
    with pytest.raises(ExecNotAllowed):
        await ProgramRunner(allow_exec=False).run(f"touch {made}", cwd=tmp_path, timeout_s=5)
    await asyncio.sleep(0.1)
    assert not made.exists()


ENV_DUMP = "import json, os; print(json.dumps(dict(os.environ)))"


async def test_environment_is_stripped(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
    monkeypatch.setenv("WEVAL_TEST_ALLOWED", "yes")
    monkeypatch.setenv("WEVAL_TEST_OTHER", "no")
    monkeypatch.setenv("LANG", "C.UTF-8")
    r = ProgramRunner(allow_exec=True, allowed_env=frozenset({"WEVAL_TEST_ALLOWED", "OPENAI_API_KEY", "MY_API_KEY"}))
    result = await r.run([PY, "-c", ENV_DUMP], cwd=tmp_path, timeout_s=10)
    env = json.loads(result.stdout_text)
    assert "OPENAI_API_KEY" not in env and "sk-parent-secret" not in result.stdout_text
    assert env["WEVAL_TEST_ALLOWED"] == "yes" and "WEVAL_TEST_OTHER" not in env
    assert env["PATH"] == os.environ["PATH"] and env["LANG"] == "C.UTF-8"
    assert set(env) <= {"PATH", "HOME", "LANG", "LC_ALL", "WEVAL_TEST_ALLOWED", "LC_CTYPE", "PWD", "SHLVL", "_"}
    refused = dict(r.refused_env)
    assert set(refused) == {"OPENAI_API_KEY", "MY_API_KEY"}
    assert "never passed" in refused["OPENAI_API_KEY"] and "API key" in refused["MY_API_KEY"]
    assert "sk-parent-secret" not in repr(r)


async def test_environment_from_a_given_mapping_and_extra(tmp_path):
    r = ProgramRunner(
        allow_exec=True,
        allowed_env=frozenset({"A"}),
        env={"PATH": os.environ["PATH"], "HOME": "/nowhere", "A": "1", "B": "2", "ANTHROPIC_API_KEY": "k"},
    )
    env = r.child_env({"PROXY_URL": "http://127.0.0.1:1", "XAI_API_KEY": "leak"})
    assert env == {"PATH": os.environ["PATH"], "HOME": "/nowhere", "A": "1", "PROXY_URL": "http://127.0.0.1:1"}
    assert ProgramRunner(allow_exec=True, env={}).child_env()["PATH"]  # a default PATH


def test_provider_key_names():
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "openrouter_api_key", "AZURE_OPENAI_API_KEY", "API_KEY"):
        assert provider_key_reason(name), name
    for name in ("HOME", "MY_VAR", "API_KEYS_DIR", "OPENAI_BASE_URL"):
        assert provider_key_reason(name) is None, name
