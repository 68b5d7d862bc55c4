"""Code judges as real subprocesses: the payload on stdin, the reply on stdout, and a judge that
cannot score as an error, not a 0 (agent-formats.md §1.8, §2.8; rulings 26-27)."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys

import pytest
from programs_helpers import LOC, NO_OUTPUT, PY, make_case, runner

from pytest_weval.formats.model import AgentCase, AgentMessage, AgentOutput, ContentBlock, Evaluator, ToolCall
from pytest_weval.run.programs.code_judge import (
    case_needs_exec,
    code_judge_payload,
    parse_code_judge_stdout,
    run_code_judge,
)
from pytest_weval.run.programs.runner import ProgramOutputError, ProgramRunner

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups and sh -c are POSIX")


async def test_not_allowed_starts_nothing(tmp_path):
    made = tmp_path / "made"
    evaluator = Evaluator(name="j", type="code_judge", command=("touch", str(made)))
    result = await run_code_judge(ProgramRunner(allow_exec=False), evaluator, make_case(), NO_OUTPUT, cwd=tmp_path)
    assert result.error and "--weval-allow-exec" in result.error and "code judge 'j'" in result.error
    await asyncio.sleep(0.1)
    assert not made.exists()


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
    result = await run_code_judge(runner(), evaluator, make_case(), output, cwd=tmp_path, timeout_s=20)
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
    result = await run_code_judge(runner(), evaluator, make_case(), NO_OUTPUT, cwd=sub, timeout_s=20)
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
    result = await run_code_judge(runner(), evaluator, make_case(), NO_OUTPUT, cwd=tmp_path, timeout_s=20)
    assert result.error is not None and error in result.error, result.error
    assert result.error.startswith("code judge 'broken'")
    if "LAST WORDS" in script:
        assert result.error.endswith("LAST WORDS")


async def test_code_judge_timeout_is_an_error(tmp_path):
    evaluator = Evaluator(name="slow", type="code_judge", command=(PY, "-c", "import time; time.sleep(600)"))
    # the wait_for only turns a timeout that does not stop the judge into a failure, not a hang
    judged = run_code_judge(runner(), evaluator, make_case(), NO_OUTPUT, cwd=tmp_path, timeout_s=0.3)
    result = await asyncio.wait_for(judged, 60)
    assert result.error and "timed out after 0.3s" in result.error


async def test_code_judge_missing_program_or_command(tmp_path):
    gone = Evaluator(name="gone", type="code_judge", command=("no-such-judge-xyz",))
    result = await run_code_judge(runner(), gone, make_case(), NO_OUTPUT, cwd=tmp_path)
    assert result.error and "could not start" in result.error
    none = Evaluator(name="none", type="code_judge")
    result = await run_code_judge(runner(), none, make_case(), NO_OUTPUT, cwd=tmp_path)
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
