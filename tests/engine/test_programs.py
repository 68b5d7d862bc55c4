"""Programs named by eval files: code judges and ``cli`` targets, as real subprocesses (issue 20
points 5-6; rulings 22-23, 26-27; agent-formats.md §1.8, §1.10)."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import time
from pathlib import Path

import pytest

from pytest_weval.blueprint.model import Location
from pytest_weval.engine.programs import (
    ExecNotAllowed,
    ProgramFailed,
    ProgramOutputError,
    ProgramRunner,
    ProgramStartError,
    ProgramTimedOut,
    case_needs_exec,
    cli_command,
    code_judge_payload,
    parse_cli_output,
    parse_code_judge_stdout,
    provider_key_reason,
    shell_escape,
)
from pytest_weval.formats.model import (
    AgentCase,
    AgentMessage,
    AgentOutput,
    ContentBlock,
    Evaluator,
    TargetDef,
    ToolCall,
)

PY = sys.executable
HERE = Path(__file__).parent / "programs"
CLI_AGENT = HERE / "cli_agent.py"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups and sh -c are POSIX")


def runner(**kw) -> ProgramRunner:
    kw.setdefault("allow_exec", True)
    return ProgramRunner(**kw)


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


def wait_dead(pid: int, within: float = 3.0) -> bool:
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
    started = time.monotonic()
    result = await runner().run("sleep 30 & echo $! > child.pid; echo $$ > self.pid; wait", cwd=tmp_path, timeout_s=0.5)
    assert result.timed_out and time.monotonic() - started < 5
    assert result.returncode is not None and result.returncode < 0
    for name in ("self.pid", "child.pid"):
        assert wait_dead(int((tmp_path / name).read_text())), name


async def test_a_background_child_holding_stdout_does_not_keep_the_run_waiting(tmp_path):
    started = time.monotonic()
    result = await runner().run("sleep 30 & echo $! > child.pid; echo started", cwd=tmp_path, timeout_s=20)
    assert time.monotonic() - started < 5
    assert not result.timed_out and result.returncode == 0 and result.stdout_text == "started\n"
    assert wait_dead(int((tmp_path / "child.pid").read_text()))  # the group is killed when it ends


async def test_cancelling_the_run_kills_the_group(tmp_path):
    task = asyncio.ensure_future(runner().run("echo $$ > self.pid; sleep 30", cwd=tmp_path, timeout_s=60))
    pid_file = tmp_path / "self.pid"
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_dead(int(pid_file.read_text()))


async def test_runs_do_not_block_the_event_loop(tmp_path):
    ticks = 0

    async def tick():
        nonlocal ticks
        for _ in range(10):
            await asyncio.sleep(0.03)
            ticks += 1

    started = time.monotonic()
    r = runner()
    await asyncio.gather(
        r.run("sleep 0.6", cwd=tmp_path, timeout_s=10), r.run("sleep 0.6", cwd=tmp_path, timeout_s=10), tick()
    )
    assert ticks == 10
    assert time.monotonic() - started < 1.1  # the two sleeps overlapped


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
    evaluator = Evaluator(name="j", type="code_judge", command=("touch", str(made)))
    result = await ProgramRunner(allow_exec=False).run_code_judge(evaluator, make_case(), NO_OUTPUT, cwd=tmp_path)
    assert result.error and "--weval-allow-exec" in result.error and "code judge 'j'" in result.error
    target = TargetDef(name="agent", provider="cli", command=f"touch {made} {{OUTPUT_FILE}}")
    with pytest.raises(ExecNotAllowed, match="cli target 'agent'"):
        await ProgramRunner(allow_exec=False).run_cli_target(target, make_case(), cwd=tmp_path)
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


# --- code judges ---------------------------------------------------------------------------------

LOC = Location(path="evals/dataset.yaml", line=1)
NO_OUTPUT = AgentOutput()


def make_case(**kw) -> AgentCase:
    values = dict(
        id="echo case",
        criteria="Echoes the prompt",
        input=(
            AgentMessage(
                role="user",
                text="Say it's $(touch pwned) `x`",
                blocks=(
                    ContentBlock(type="text", value="Say it's $(touch pwned) `x`"),
                    ContentBlock(type="file", value="A", path=str(HERE / "cli_agent.py")),
                    ContentBlock(type="file", value="B", path="/tmp/with space.txt"),
                ),
            ),
        ),
        location=LOC,
    )
    values.update(kw)
    return AgentCase(**values)


JUDGE = (
    "import json, sys\n"
    "d = json.load(sys.stdin)\n"
    "ok = d['candidate_answer'] == d['candidateAnswer'] == 'forty-two'\n"
    "print(json.dumps({'score': 1.0 if ok else 0.0, 'hits': ['answer is ' + d['answer']] if ok else [],\n"
    "    'misses': [] if ok else ['wrong'], 'reasoning': d['config']['mode'], 'details': {'seen': sorted(d)[:2]}}))\n"
)


async def test_code_judge_round_trip(tmp_path):
    (tmp_path / "judge.py").write_text(JUDGE)
    evaluator = Evaluator(name="exact", type="code_judge", command=(PY, "judge.py"), weight=2.0, config={"mode": "m"})
    output = AgentOutput(messages=(AgentMessage(role="assistant", text="forty-two"),))
    result = await runner().run_code_judge(evaluator, make_case(), output, cwd=tmp_path, timeout_s=20)
    assert result.error is None
    assert (result.name, result.type, result.weight) == ("exact", "code_judge", 2.0)
    assert result.score == 1.0 and result.verdict == "pass"
    assert result.hits == ("answer is forty-two",) and result.reasoning == "m"
    assert result.details == {"seen": ["answer", "candidateAnswer"]}


async def test_code_judge_as_a_shell_string_in_its_cwd(tmp_path):
    sub = tmp_path / "judges"
    sub.mkdir()
    (sub / "j.py").write_text("print('{\"score\": 0.7, \"hits\": [\"h\", \"\", 3]}')")
    evaluator = Evaluator(name="s", type="code_judge", command=f"{shlex.quote(PY)} j.py")
    result = await runner().run_code_judge(evaluator, make_case(), NO_OUTPUT, cwd=sub, timeout_s=20)
    assert result.error is None and result.score == 0.7 and result.verdict == "borderline" and result.hits == ("h",)


@pytest.mark.parametrize(
    ("script", "error"),
    [
        ("import sys; sys.stderr.write('x' * 5000 + 'LAST WORDS'); sys.exit(3)", "exited with code 3: ...(truncated"),
        ("raise RuntimeError('judge bug')", "RuntimeError: judge bug"),
        ("print('score: 1')", "printed no JSON object on stdout: score: 1"),
        ("print('[1, 2]')", "printed no JSON object"),
        ("pass", "printed no JSON object on stdout: (nothing)"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "was killed by signal 9"),
    ],
)
async def test_broken_code_judges_are_errors_not_zeros(tmp_path, script, error):
    evaluator = Evaluator(name="broken", type="code_judge", command=(PY, "-c", script))
    result = await runner().run_code_judge(evaluator, make_case(), NO_OUTPUT, cwd=tmp_path, timeout_s=20)
    assert result.error is not None and error in result.error, result.error
    assert result.error.startswith("code judge 'broken'")
    if "LAST WORDS" in script:
        assert result.error.endswith("LAST WORDS")


async def test_code_judge_timeout_is_an_error(tmp_path):
    evaluator = Evaluator(name="slow", type="code_judge", command=(PY, "-c", "import time; time.sleep(30)"))
    started = time.monotonic()
    result = await runner().run_code_judge(evaluator, make_case(), NO_OUTPUT, cwd=tmp_path, timeout_s=0.3)
    assert time.monotonic() - started < 5
    assert result.error and "timed out after 0.3s" in result.error


async def test_code_judge_missing_program_or_command(tmp_path):
    gone = Evaluator(name="gone", type="code_judge", command=("no-such-judge-xyz",))
    result = await runner().run_code_judge(gone, make_case(), NO_OUTPUT, cwd=tmp_path)
    assert result.error and "could not start" in result.error
    none = Evaluator(name="none", type="code_judge")
    result = await runner().run_code_judge(none, make_case(), NO_OUTPUT, cwd=tmp_path)
    assert result.error == "code judge 'none' has no command"


def test_parse_code_judge_stdout():
    assert parse_code_judge_stdout('{"score": 0.5, "misses": ["m"]}') == {
        "score": 0.5,
        "hits": (),
        "misses": ("m",),
        "reasoning": None,
        "details": None,
    }
    assert parse_code_judge_stdout('log line\n{"score": 2}\n')["score"] == 1.0  # last JSON line; clamped
    assert parse_code_judge_stdout('{"score": -1}')["score"] == 0.0
    assert parse_code_judge_stdout('{"hits": ["h"]}')["score"] == 0.0  # AgentV: missing score is 0
    assert parse_code_judge_stdout('{"score": "0.9"}')["score"] == 0.0
    assert parse_code_judge_stdout('{"score": 1, "details": [1]}')["details"] is None
    with pytest.raises(ProgramOutputError):
        parse_code_judge_stdout("nothing here")


def test_case_needs_exec():
    plain = Evaluator(name="c", type="contains", value="x")
    judge = Evaluator(name="j", type="code_judge", command=("x",))
    composite = Evaluator(name="comp", type="composite", evaluators=(plain, judge))
    assert not case_needs_exec(make_case(evaluators=(plain,)))
    assert case_needs_exec(make_case(evaluators=(plain, judge)))
    assert case_needs_exec(make_case(evaluators=(composite,)))


# --- cli targets ---------------------------------------------------------------------------------


def test_cli_command_quotes_every_value():
    command = cli_command(
        "agent --prompt {PROMPT} {FILES} --id {EVAL_ID} --try {ATTEMPT} --out {OUTPUT_FILE} {GUIDELINES} {OTHER}",
        prompt="it's $(x)",
        eval_id="a b",
        attempt=2,
        files=["/p/one.txt", "/p/t w o.txt"],
        files_format="--file {path} --name {basename}",
        output_file="/tmp/o.json",
    )
    assert command == (
        "agent --prompt 'it'\"'\"'s $(x)' --file '/p/one.txt' --name 'one.txt' --file '/p/t w o.txt' "
        "--name 't w o.txt' --id 'a b' --try '2' --out '/tmp/o.json' '' {OTHER}"
    )
    assert shlex.split(command)[2] == "it's $(x)"
    argv = cli_command(
        ["agent", "--prompt={PROMPT}", "{FILES}", "{OUTPUT_FILE}"],
        prompt="it's",
        eval_id="e",
        attempt=0,
        files=["/p/a b.txt"],
        files_format="--file {path}",
        output_file="/o",
    )
    assert argv == ["agent", "--prompt=it's", "--file", "/p/a b.txt", "/o"]
    assert shell_escape("") == "''"


def cli_target(mode: str = "json", **kw) -> TargetDef:
    template = (
        f"{shlex.quote(PY)} cli_agent.py --prompt {{PROMPT}} {{FILES}} --output {{OUTPUT_FILE}} "
        f"--eval-id {{EVAL_ID}} --attempt {{ATTEMPT}} --mode {mode}"
    )
    values = dict(name="local_cli", provider="cli", command=template, files_format="--file {path}")
    values.update(kw)
    return TargetDef(**values)


async def test_cli_target_json_output(tmp_path):
    output = await runner().run_cli_target(cli_target(), make_case(), cwd=HERE, timeout_s=30, attempt=1)
    expected = "echo: Say it's $(touch pwned) `x` | files: cli_agent.py, with space.txt | id: echo case | attempt: 1"
    assert output.answer == expected
    assert [m.role for m in output.messages] == ["assistant", "tool", "assistant"]
    call = output.tool_calls[0]
    assert (call.name, call.args, call.duration_ms) == ("Read", {"path": "cli_agent.py"}, 5.0)
    assert (output.input_tokens, output.output_tokens, output.cost_usd, output.duration_ms) == (11, 5, 0.002, 1234.0)
    assert not (HERE / "pwned").exists() and not (tmp_path / "pwned").exists()


async def test_cli_target_text_and_plain_output(tmp_path):
    output = await runner().run_cli_target(cli_target("text"), make_case(), cwd=HERE, timeout_s=30)
    assert output.answer.startswith("echo: Say it's") and output.input_tokens == 7 and output.duration_ms == 42.0
    output = await runner().run_cli_target(cli_target("plain"), make_case(), cwd=HERE, timeout_s=30)
    assert output.answer.startswith("echo: Say it's") and output.input_tokens is None
    assert output.duration_ms is not None and output.duration_ms > 0  # measured


async def test_cli_target_argv_command(tmp_path):
    target = TargetDef(
        name="argv",
        provider="cli",
        command=(PY, "cli_agent.py", "--prompt", "{PROMPT}", "{FILES}", "--output", "{OUTPUT_FILE}", "--mode", "plain"),
        files_format="--file {path}",
    )
    output = await runner().run_cli_target(target, make_case(), cwd=HERE, timeout_s=30)
    assert output.answer.startswith("echo: Say it's $(touch pwned) `x` | files: cli_agent.py, with space.txt")


async def test_cli_target_failures(tmp_path):
    with pytest.raises(ProgramFailed, match=r"exited with code 4: agent crashed: no model") as info:
        await runner().run_cli_target(cli_target("fail"), make_case(), cwd=HERE, timeout_s=30)
    assert info.value.returncode == 4
    with pytest.raises(ProgramOutputError, match="wrote no output file"):
        await runner().run_cli_target(cli_target("none"), make_case(), cwd=HERE, timeout_s=30)
    slow = TargetDef(name="slow", provider="cli", command="sleep 30")
    with pytest.raises(ProgramTimedOut, match=r"timed out after 0\.3s"):
        await runner().run_cli_target(slow, make_case(), cwd=tmp_path, timeout_s=0.3)
    with pytest.raises(ProgramStartError, match="no command_template"):
        await runner().run_cli_target(TargetDef(name="x", provider="cli"), make_case(), cwd=tmp_path)


def test_parse_cli_output():
    assert parse_cli_output("just text\n").answer == "just text\n"
    assert parse_cli_output('{"other": 1}').answer == '{"other": 1}'  # JSON without the keys: plain text
    output = parse_cli_output(
        json.dumps(
            {
                "output_messages": [
                    {
                        "role": "assistant",
                        "content": {"status": "ok"},
                        "tool_calls": [{"id": "c1", "function": {"name": "search", "arguments": '{"q": "x"}'}}],
                    }
                ],
                "text": "final",
            }
        )
    )
    assert output.messages[0].structured == {"status": "ok"}
    assert output.messages[0].tool_calls[0].args == {"q": "x"} and output.messages[0].tool_calls[0].id == "c1"
    assert output.answer == json.dumps({"status": "ok"}, indent=2)  # an assistant message had text: no extra


# --- the code judge's payload --------------------------------------------------------------------


def payload_case() -> AgentCase:
    return AgentCase(
        id="case-1",
        criteria="  Explains the fix  ",
        input=(
            AgentMessage(role="system", text="Be brief."),
            AgentMessage(
                role="user",
                text="Why does parse() fail?\n\nfile body",
                blocks=(
                    ContentBlock(type="text", value="Why does parse() fail?"),
                    ContentBlock(type="file", value="file body", path="/abs/evals/parse.py"),
                ),
            ),
        ),
        expected=(AgentMessage(role="assistant", text="It reads past the end of the buffer."),),
        location=LOC,
    )


def payload_output() -> AgentOutput:
    return AgentOutput(
        messages=(
            AgentMessage(
                role="assistant",
                tool_calls=(ToolCall(name="read_file", args={"filePath": "parse.py"}, output="...", duration_ms=12.0),),
            ),
            AgentMessage(role="assistant", text="  Off by one in parse().  "),
        ),
        duration_ms=1500.0,
        input_tokens=100,
        output_tokens=20,
        cost_usd=0.001,
    )


def test_code_judge_payload_has_every_spelling():
    evaluator = Evaluator(name="syntax", type="code_judge", command=("python", "j.py"), config={"maxItems": 3})
    payload = code_judge_payload(payload_case(), evaluator, payload_output())
    json.dumps(payload)  # serialisable
    answer = "  Off by one in parse().  "
    # AgentV v2.6.1 snake_case
    assert payload["question"] == "Be brief. Why does parse() fail?"
    assert payload["expected_outcome"] == "  Explains the fix  "
    assert payload["reference_answer"] == "It reads past the end of the buffer."
    assert payload["candidate_answer"] == answer
    assert payload["expected_messages"] == [{"role": "assistant", "content": "It reads past the end of the buffer."}]
    assert payload["input_messages"][0] == {"role": "system", "content": "Be brief."}
    assert payload["output_messages"][0]["tool_calls"] == [
        {"tool": "read_file", "input": {"file_path": "parse.py"}, "output": "...", "duration_ms": 12.0}
    ]  # keys converted deeply, as AgentV does
    assert payload["input_files"] == ["/abs/evals/parse.py"] and payload["guideline_files"] == []
    assert payload["config"] == {"max_items": 3}
    trace = payload["trace_summary"]
    assert trace["event_count"] == 1 and trace["tool_names"] == ["read_file"]
    assert trace["tool_calls_by_name"] == {"read_file": 1}
    assert trace["token_usage"] == {"input": 100, "output": 20} and trace["cost_usd"] == 0.001
    assert trace["duration_ms"] == 1500.0
    # v2.10 names
    assert payload["criteria"] == payload["expected_outcome"] and payload["answer"] == answer
    assert payload["expected_output"] == payload["expected_messages"]
    assert payload["output"] == payload["output_messages"] and payload["input"] == payload["input_messages"]
    # AgentEvals spec camelCase
    assert payload["candidateAnswer"] == answer
    assert payload["expectedMessages"] == payload["expected_messages"]
    assert payload["referenceAnswer"] == payload["reference_answer"]
    assert payload["outputMessages"] == payload["output_messages"]
    assert payload["inputMessages"] == payload["input_messages"]
    assert payload["inputFiles"] == ["/abs/evals/parse.py"] and payload["guidelineFiles"] == []
    assert payload["traceSummary"]["toolCallCount"] == 1
    assert payload["traceSummary"]["totalTokens"] == 120


def test_code_judge_payload_without_output_or_config():
    evaluator = Evaluator(name="j", type="code_judge", command="true")
    case = payload_case().model_copy(update={"expected": ()})
    payload = code_judge_payload(case, evaluator, AgentOutput())
    assert payload["output_messages"] is None and payload["candidate_answer"] == ""
    assert payload["config"] is None and payload["expected_messages"] == [] and payload["reference_answer"] == ""
    assert payload["trace_summary"]["event_count"] == 0 and "token_usage" not in payload["trace_summary"]
    case = payload_case().model_copy(update={"expected": (), "expected_structured": {"ok": True}})
    assert code_judge_payload(case, evaluator, AgentOutput())["expected_messages"] == [
        {"role": "assistant", "content": {"ok": True}}
    ]
