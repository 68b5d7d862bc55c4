"""``cli`` targets as real subprocesses: the command's placeholders, the output file, and failures
as item errors (agent-formats.md §1.10; rulings 22-23, 27)."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys

import pytest
from programs_helpers import HERE, PY, make_case, runner

from pytest_weval.formats.model import TargetDef
from pytest_weval.run.programs.cli_target import cli_command, parse_cli_output, run_cli_target, shell_escape
from pytest_weval.run.programs.runner import (
    ExecNotAllowed,
    ProgramFailed,
    ProgramOutputError,
    ProgramRunner,
    ProgramStartError,
    ProgramTimedOut,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups and sh -c are POSIX")


async def test_not_allowed_starts_nothing(tmp_path):
    made = tmp_path / "made"
    target = TargetDef(name="agent", provider="cli", command=f"touch {made} {{OUTPUT_FILE}}")
    with pytest.raises(ExecNotAllowed, match="cli target 'agent'"):
        await run_cli_target(ProgramRunner(allow_exec=False), target, make_case(), cwd=tmp_path)
    await asyncio.sleep(0.1)
    assert not made.exists()


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
    output = await run_cli_target(runner(), cli_target(), make_case(), cwd=HERE, timeout_s=30, attempt=1)
    expected = "echo: Say it's $(touch pwned) `x` | files: cli_agent.py, with space.txt | id: echo case | attempt: 1"
    assert output.answer == expected
    assert [m.role for m in output.messages] == ["assistant", "tool", "assistant"]
    call = output.tool_calls[0]
    assert (call.name, call.args, call.duration_ms) == ("Read", {"path": "cli_agent.py"}, 5.0)
    assert (output.input_tokens, output.output_tokens, output.cost_usd, output.duration_ms) == (11, 5, 0.002, 1234.0)
    assert not (HERE / "pwned").exists() and not (tmp_path / "pwned").exists()


async def test_cli_target_text_and_plain_output(tmp_path):
    output = await run_cli_target(runner(), cli_target("text"), make_case(), cwd=HERE, timeout_s=30)
    assert output.answer.startswith("echo: Say it's") and output.input_tokens == 7 and output.duration_ms == 42.0
    output = await run_cli_target(runner(), cli_target("plain"), make_case(), cwd=HERE, timeout_s=30)
    assert output.answer.startswith("echo: Say it's") and output.input_tokens is None
    assert output.duration_ms is not None and output.duration_ms > 0  # measured


async def test_cli_target_argv_command(tmp_path):
    target = TargetDef(
        name="argv",
        provider="cli",
        command=(PY, "cli_agent.py", "--prompt", "{PROMPT}", "{FILES}", "--output", "{OUTPUT_FILE}", "--mode", "plain"),
        files_format="--file {path}",
    )
    output = await run_cli_target(runner(), target, make_case(), cwd=HERE, timeout_s=30)
    assert output.answer.startswith("echo: Say it's $(touch pwned) `x` | files: cli_agent.py, with space.txt")


async def test_cli_target_failures(tmp_path):
    with pytest.raises(ProgramFailed, match=r"exited with code 4: agent crashed: no model") as info:
        await run_cli_target(runner(), cli_target("fail"), make_case(), cwd=HERE, timeout_s=30)
    assert info.value.returncode == 4
    with pytest.raises(ProgramOutputError, match="wrote no output file"):
        await run_cli_target(runner(), cli_target("none"), make_case(), cwd=HERE, timeout_s=30)
    slow = TargetDef(name="slow", provider="cli", command="sleep 30")
    with pytest.raises(ProgramTimedOut, match=r"timed out after 0\.3s"):
        await run_cli_target(runner(), slow, make_case(), cwd=tmp_path, timeout_s=0.3)
    with pytest.raises(ProgramStartError, match="no command_template"):
        await run_cli_target(runner(), TargetDef(name="x", provider="cli"), make_case(), cwd=tmp_path)


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
