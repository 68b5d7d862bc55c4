"""Programs named by eval files: code judges and ``cli`` targets (issue 20 points 5-6; rulings 22-23,
26-27; agent-formats.md §1.8, §1.10, §2.8).

A code judge or a ``cli`` target runs a command that anyone who can edit an eval file wrote, in
CI, next to API keys. So :class:`ProgramRunner`:

* starts nothing unless the run allows it (``--weval-allow-exec`` / ini ``weval_allow_exec``):
  otherwise :class:`ExecNotAllowed`, whose message says how to allow it;
* gives the program a stripped environment: ``PATH``, ``HOME``, ``LANG`` (and ``LC_ALL`` when
  set) and the variables ``--weval-allow-env`` names, never a provider key (a ``*_API_KEY`` name
  is refused even when named: :attr:`ProgramRunner.refused_env` says which and why);
* runs it in its own process group, in ``cwd``, under a timeout that kills the whole group
  (children included), and caps what it prints;
* uses asyncio subprocesses: nothing blocks the event loop.

A list runs as argv; a string runs through ``sh -c`` (ruling 23).

Then the two protocols, as :class:`ProgramRunner` methods: the code judge
(:meth:`ProgramRunner.run_code_judge`: the case as JSON on stdin, :func:`code_judge_payload`;
``{score, hits, misses, reasoning}`` on stdout, :func:`parse_code_judge_stdout`) and the ``cli``
target (:meth:`ProgramRunner.run_cli_target`: ``command_template`` placeholders, the
``{OUTPUT_FILE}`` it writes, read into an :class:`AgentOutput`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import re
import shlex
import shutil
import signal
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_weval.engine.keys import KEY_VARS
from pytest_weval.formats.model import (
    AgentCase,
    AgentMessage,
    AgentOutput,
    Evaluator,
    EvaluatorResult,
    TargetDef,
    ToolCall,
    verdict_of,
)

__all__ = [
    "ALLOW_EXEC_HINT",
    "BASE_ENV",
    "DEFAULT_CLI_TIMEOUT_S",
    "DEFAULT_CODE_JUDGE_TIMEOUT_S",
    "MAX_OUTPUT_BYTES",
    "ExecNotAllowed",
    "ProgramError",
    "ProgramFailed",
    "ProgramOutputError",
    "ProgramResult",
    "ProgramRunner",
    "ProgramStartError",
    "ProgramTimedOut",
    "case_needs_exec",
    "cli_command",
    "code_judge_payload",
    "describe_command",
    "message_dicts",
    "parse_cli_output",
    "parse_code_judge_stdout",
    "provider_key_reason",
    "shell_escape",
    "to_snake_case_deep",
]

ALLOW_EXEC_HINT = "--weval-allow-exec (or ini weval_allow_exec = true)"
BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL")  # what every program gets, when set
MAX_OUTPUT_BYTES = 1_000_000
STDERR_TAIL = 2000  # characters of stderr kept in a failure message (AgentV's)
DEFAULT_CODE_JUDGE_TIMEOUT_S = 60.0
DEFAULT_CLI_TIMEOUT_S = 120.0
_DRAIN_S = 2.0  # after the program ends: how long to wait for its pipes to close


class ProgramError(Exception):
    """A program from an eval file that could not do its job. ``str()`` is the user-facing message."""

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:
        return self.message


class ExecNotAllowed(ProgramError):
    """The run does not allow programs from eval files; nothing was started."""


class ProgramStartError(ProgramError):
    """The program could not be started (no such program, no such folder)."""


class ProgramFailed(ProgramError):
    """The program exited non-zero (or was killed by a signal)."""

    def __init__(self, message: str, *, returncode: int | None, stderr_tail: str = ""):
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        super().__init__(message)


class ProgramTimedOut(ProgramError):
    """The program did not finish within its timeout; its process group was killed."""


class ProgramOutputError(ProgramError):
    """The program ran but its output is not what the protocol asks for."""


@dataclasses.dataclass(frozen=True)
class ProgramResult:
    """What a program did. ``returncode`` is negative when a signal ended it (``-9`` after a
    timeout); ``truncated`` when stdout or stderr went over the cap (stdout keeps its head,
    stderr its tail)."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    truncated: bool = False
    duration_s: float = 0.0

    @property
    def stdout_text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", errors="replace")

    def stderr_tail(self, limit: int = STDERR_TAIL) -> str:
        """The trimmed stderr, its last ``limit`` characters when longer (marked as cut)."""
        text = self.stderr_text.strip()
        if len(text) <= limit:
            return text
        return f"...(truncated, last {limit} chars)\n{text[-limit:]}"


def provider_key_reason(name: str) -> str | None:
    """Why ``name`` may never reach a program (a provider's API key), else None."""
    known = {var for names in KEY_VARS.values() for var in names}
    if name in known:
        return f"{name} holds a model provider's API key"
    if name.upper().endswith("_API_KEY") or name.upper() == "API_KEY":
        return f"{name} looks like an API key (*_API_KEY)"
    return None


def describe_command(command: Sequence[str] | str, limit: int = 200) -> str:
    text = command if isinstance(command, str) else shlex.join(command)
    return text if len(text) <= limit else text[:limit] + "..."


def shell_escape(value: str) -> str:
    """One shell word for ``value``, as AgentV quotes placeholders: ``'...'`` with ``'`` as ``'"'"'``."""
    return "'" + value.replace("'", "'\"'\"'") + "'"


class _Capture:
    """Bytes read from a pipe, at most ``cap`` of them: the first ones, or the last ones."""

    def __init__(self, cap: int, *, keep_tail: bool):
        self.cap = max(0, cap)
        self.keep_tail = keep_tail
        self.data = bytearray()
        self.truncated = False

    def add(self, chunk: bytes) -> None:
        if self.keep_tail:
            self.data += chunk
            if len(self.data) > self.cap:
                del self.data[: len(self.data) - self.cap]
                self.truncated = True
            return
        room = self.cap - len(self.data)
        if len(chunk) > room:
            self.truncated = True
        if room > 0:
            self.data += chunk[:room]


async def _pump(stream: asyncio.StreamReader | None, sink: _Capture) -> None:
    if stream is None:
        return
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            return
        sink.add(chunk)  # keeps reading past the cap, so the program never blocks on a full pipe


async def _feed(stream: asyncio.StreamWriter | None, data: bytes) -> None:
    if stream is None:
        return
    try:
        if data:
            stream.write(data)
            await stream.drain()
        stream.close()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the program did not read all of its stdin: its business


async def _until_exit(proc: asyncio.subprocess.Process) -> None:
    """Until the program itself has exited. Not ``proc.wait()`` alone: before Python 3.12 it
    also waits for every pipe to close, which a child left running in the background can hold
    open for as long as it likes."""
    waiter = asyncio.ensure_future(proc.wait())
    try:
        delay = 0.005
        while proc.returncode is None and not waiter.done():
            await asyncio.wait({waiter}, timeout=delay)
            delay = min(0.05, delay * 2)
    finally:
        waiter.cancel()


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class ProgramRunner:
    """Runs programs named by eval files, only when ``allow_exec``.

    ``env`` is the environment the allowed variables are read from (the process's, normally);
    ``allowed_env`` the names ``--weval-allow-env`` gave. A provider key among them is never
    passed: :attr:`refused_env` lists ``(name, reason)`` for the caller to report once.
    """

    def __init__(
        self, allow_exec: bool, allowed_env: frozenset[str] = frozenset(), env: Mapping[str, str] | None = None
    ):
        self.allow_exec = allow_exec
        self.env: Mapping[str, str] = dict(os.environ if env is None else env)
        refused = []
        passed = []
        for name in sorted(allowed_env):
            reason = provider_key_reason(name)
            if reason is None:
                passed.append(name)
            else:
                refused.append((name, f"{reason}: provider keys are never passed to programs from eval files"))
        self.allowed_env: tuple[str, ...] = tuple(passed)
        self.refused_env: tuple[tuple[str, str], ...] = tuple(refused)

    def __repr__(self) -> str:  # never the environment's values
        return f"ProgramRunner(allow_exec={self.allow_exec}, allowed_env={self.allowed_env!r})"

    def check_allowed(self, what: str) -> None:
        """Raise :class:`ExecNotAllowed` (saying how to allow it) unless programs may run."""
        if not self.allow_exec:
            raise ExecNotAllowed(
                f"{what} was not started: programs named by eval files run only when allowed; "
                f"allow them with {ALLOW_EXEC_HINT}"
            )

    def child_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The program's whole environment: the base variables and the allowed ones that are set,
        then ``extra`` (the caller's own, e.g. a proxy address); never a provider key."""
        out = {name: self.env[name] for name in BASE_ENV + self.allowed_env if name in self.env}
        for name, value in (extra or {}).items():
            if provider_key_reason(name) is None:
                out[name] = value
        if "PATH" not in out:
            out["PATH"] = os.defpath
        return out

    @staticmethod
    def argv(command: Sequence[str] | str) -> list[str]:
        """A list as argv; a string as ``sh -c <string>`` (ruling 23)."""
        if isinstance(command, str):
            return ["/bin/sh" if os.path.exists("/bin/sh") else "sh", "-c", command]
        argv = [str(part) for part in command]
        if not argv:
            raise ProgramStartError("the command is empty")
        return argv

    async def run(
        self,
        command: Sequence[str] | str,
        *,
        cwd: Path | str,
        stdin: bytes = b"",
        timeout_s: float,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
        extra_env: Mapping[str, str] | None = None,
        what: str | None = None,
    ) -> ProgramResult:
        """Run ``command`` in ``cwd`` with ``stdin``; wait at most ``timeout_s`` seconds.

        Raises :class:`ExecNotAllowed` (nothing started) or :class:`ProgramStartError`; a
        non-zero exit or a timeout is in the result, for the caller's protocol to judge. When the
        program ends, times out or the caller is cancelled, its process group is killed, so
        nothing it started outlives it.
        """
        described = what or f"the program '{describe_command(command)}'"
        self.check_allowed(described)
        argv = self.argv(command)
        env = self.child_env(extra_env)
        started = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=str(cwd),
                env=env,
                start_new_session=True,  # its own process group: a timeout kills its children too
            )
        except OSError as exc:
            detail = exc.strerror or str(exc)
            where = f" (in {cwd})" if not Path(cwd).is_dir() else ""
            raise ProgramStartError(f"{described} could not start{where}: {detail}") from exc
        out = _Capture(max_output_bytes, keep_tail=False)
        err = _Capture(max_output_bytes, keep_tail=True)
        tasks = [
            asyncio.ensure_future(_pump(proc.stdout, out)),
            asyncio.ensure_future(_pump(proc.stderr, err)),
            asyncio.ensure_future(_feed(proc.stdin, stdin)),
        ]
        timed_out = False
        try:
            try:
                await asyncio.wait_for(_until_exit(proc), timeout=max(0.0, timeout_s))
            except asyncio.TimeoutError:
                timed_out = True
        finally:
            _kill_group(proc.pid)
            if proc.returncode is None:
                try:
                    await asyncio.wait_for(_until_exit(proc), timeout=_DRAIN_S)
                except asyncio.TimeoutError:
                    pass
            # A process that left the group may still hold a pipe: stop waiting for it.
            _, pending = await asyncio.wait(tasks, timeout=_DRAIN_S)
            for task in pending:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return ProgramResult(
            returncode=proc.returncode,
            stdout=bytes(out.data),
            stderr=bytes(err.data),
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
            duration_s=time.monotonic() - started,
        )

    async def run_code_judge(
        self,
        evaluator: Evaluator,
        case: AgentCase,
        output: AgentOutput,
        *,
        cwd: Path | str,
        timeout_s: float = DEFAULT_CODE_JUDGE_TIMEOUT_S,
    ) -> EvaluatorResult:
        """Run a ``code_judge`` (§1.8) in ``cwd`` under ``timeout_s`` (the caller's choice: the
        evaluator's own, else the eval file's folder and the default), with
        :func:`code_judge_payload` as pretty JSON on stdin, and read its stdout
        (:func:`parse_code_judge_stdout`).

        The result is stamped with the evaluator's name, type, weight and ``required``; ``negate``
        is the scoring layer's (``scoring.agent.finalize_result``). A judge that is not allowed,
        cannot start, crashes, exits non-zero, times out or prints no JSON object gives a result
        with ``error`` set: the case is an error, not a 0 (ruling 26).
        """
        base: dict[str, Any] = dict(
            name=evaluator.name, type=evaluator.type, weight=evaluator.weight, required=evaluator.required
        )
        command = evaluator.command
        if command is None or (not isinstance(command, str) and not command):
            return EvaluatorResult(**base, error=f"code judge '{evaluator.name}' has no command")
        described = f"code judge '{evaluator.name}' ({describe_command(command)})"
        stdin = json.dumps(code_judge_payload(case, evaluator, output), indent=2, ensure_ascii=False).encode("utf-8")
        try:
            result = await self.run(command, cwd=cwd, stdin=stdin, timeout_s=timeout_s, what=described)
        except ProgramError as exc:
            return EvaluatorResult(**base, error=str(exc))
        failure = _failure(result, described, timeout_s)
        if failure is not None:
            return EvaluatorResult(**base, error=str(failure))
        try:
            parsed = parse_code_judge_stdout(result.stdout_text)
        except ProgramOutputError as exc:
            cut = " (its stdout was cut at the output cap)" if result.truncated else ""
            return EvaluatorResult(**base, error=f"{described} {exc}{cut}")
        return EvaluatorResult(
            **base,
            score=parsed["score"],
            verdict=verdict_of(parsed["score"]),
            hits=parsed["hits"],
            misses=parsed["misses"],
            reasoning=parsed["reasoning"],
            details=parsed["details"],
        )

    async def run_cli_target(
        self,
        target: TargetDef,
        case: AgentCase,
        *,
        cwd: Path | str,
        timeout_s: float = DEFAULT_CLI_TIMEOUT_S,
        attempt: int = 0,
        guidelines: str = "",
    ) -> AgentOutput:
        """Ask a ``cli`` target (§1.10): fill its command's placeholders (:func:`cli_command`;
        ``{PROMPT}`` is the case's question, ``{OUTPUT_FILE}`` a fresh path in a private temporary
        folder, removed afterwards), run it in ``cwd`` under ``timeout_s``, and read the output file
        (:func:`parse_cli_output`).

        Raises :class:`ExecNotAllowed` (nothing started), :class:`ProgramStartError`,
        :class:`ProgramTimedOut`, :class:`ProgramFailed` (its stderr, else its stdout, in the
        message) or :class:`ProgramOutputError` (no output file): the item errors.
        """
        template = target.command
        if template is None or (not isinstance(template, str) and not template):
            raise ProgramStartError(f"cli target '{target.name}' has no command_template")
        described = f"cli target '{target.name}' ({describe_command(template)})"
        self.check_allowed(described)  # before the temporary folder exists
        folder = tempfile.mkdtemp(prefix="weval-cli-")
        try:
            safe_id = re.sub(r"[^A-Za-z0-9_.-]+", "_", case.id)[:80] or "case"
            output_file = os.path.join(folder, f"{safe_id}.json")
            command = cli_command(
                template,
                prompt=case.question,
                eval_id=case.id,
                attempt=attempt,
                files=_case_files(case),
                files_format=target.files_format,
                output_file=output_file,
                guidelines=guidelines,
            )
            result = await self.run(command, cwd=cwd, timeout_s=timeout_s, what=described)
            failure = _failure(result, described, timeout_s)
            if isinstance(failure, ProgramFailed) and not failure.stderr_tail and result.stdout_text.strip():
                tail = result.stdout_text.strip()[-STDERR_TAIL:]
                failure = ProgramFailed(f"{failure}: {tail}", returncode=failure.returncode)
            if failure is not None:
                raise failure
            try:
                with open(output_file, encoding="utf-8", errors="replace") as handle:
                    text = handle.read(MAX_OUTPUT_BYTES * 10)
            except OSError as exc:
                raise ProgramOutputError(
                    f"{described} wrote no output file ({{OUTPUT_FILE}} = {output_file}): {exc.strerror or exc}"
                ) from exc
            return parse_cli_output(text, duration_ms=result.duration_s * 1000.0)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def _failure(result: ProgramResult, described: str, timeout_s: float) -> ProgramError | None:
    """The error for a program that timed out or did not exit 0, else None."""
    if result.timed_out:
        return ProgramTimedOut(f"{described} timed out after {timeout_s:g}s and was killed")
    code = result.returncode
    if code == 0:
        return None
    tail = result.stderr_tail()
    how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
    return ProgramFailed(f"{described} {how}" + (f": {tail}" if tail else ""), returncode=code, stderr_tail=tail)


# --- code judges: the payload and the reply ------------------------------------------------------------------------


def _call_dict(call: ToolCall) -> dict[str, Any]:
    # AgentV's trace shape {tool, input, output, id, duration_ms}; absent parts left out.
    out: dict[str, Any] = {"tool": call.name}
    if call.args is not None:
        out["input"] = call.args
    if call.output is not None:
        out["output"] = call.output
    if call.id is not None:
        out["id"] = call.id
    if call.duration_ms is not None:
        out["duration_ms"] = call.duration_ms
    return out


def message_dicts(messages: Sequence[AgentMessage]) -> list[dict[str, Any]]:
    """Messages as AgentV gives them to code judges: ``{role, content, tool_calls?}``, the
    content the message text (or its structured object). (``judges.agent`` shows judges the same
    shape; the two layers may not import each other.)"""
    out: list[dict[str, Any]] = []
    for message in messages:
        entry: dict[str, Any] = {"role": message.role}
        entry["content"] = message.structured if message.structured is not None else message.text
        if message.tool_calls:
            entry["tool_calls"] = [_call_dict(call) for call in message.tool_calls]
        if message.name is not None:
            entry["name"] = message.name
        if message.tool_call_id is not None:
            entry["tool_call_id"] = message.tool_call_id
        out.append(entry)
    return out


def _expected_dicts(case: AgentCase) -> list[dict[str, Any]]:
    if case.expected:
        return message_dicts(case.expected)
    if case.expected_structured is not None:
        return [{"role": "assistant", "content": case.expected_structured}]
    return []


def _snake(key: str) -> str:
    # AgentV's toSnakeCase: a key starting with a capital (a tool name) is kept as is.
    if key[:1].isupper():
        return key
    return re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), key)


def to_snake_case_deep(value: Any) -> Any:
    """Every object key camelCase -> snake_case, deeply (AgentV converts the whole payload,
    ``config`` and tool inputs included)."""
    if isinstance(value, Mapping):
        return {_snake(str(k)): to_snake_case_deep(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_snake_case_deep(v) for v in value]
    return value


def _trace_summary(output: AgentOutput) -> dict[str, Any]:
    calls = output.tool_calls
    by_name: dict[str, int] = {}
    durations: dict[str, list[float]] = {}
    for call in calls:
        by_name[call.name] = by_name.get(call.name, 0) + 1
        if call.duration_ms is not None:
            durations.setdefault(call.name, []).append(call.duration_ms)
    summary: dict[str, Any] = {
        "event_count": len(calls),
        "tool_names": sorted(by_name),
        "tool_calls_by_name": by_name,
        "error_count": 0,
    }
    if output.input_tokens is not None or output.output_tokens is not None:
        summary["token_usage"] = {"input": output.input_tokens or 0, "output": output.output_tokens or 0}
    if output.cost_usd is not None:
        summary["cost_usd"] = output.cost_usd
    if output.duration_ms is not None:
        summary["duration_ms"] = output.duration_ms
    if durations:
        summary["tool_durations"] = durations
    return summary


def _trace_summary_camel(output: AgentOutput) -> dict[str, Any]:
    # The AgentEvals spec's traceSummary (§2.8).
    names = sorted({call.name for call in output.tool_calls})
    inputs, outputs = output.input_tokens, output.output_tokens
    total = None if inputs is None and outputs is None else (inputs or 0) + (outputs or 0)
    return {
        "eventCount": len(output.tool_calls),
        "toolNames": names,
        "toolCallCount": len(output.tool_calls),
        "llmCallCount": sum(1 for m in output.messages if m.role == "assistant"),
        "inputTokens": inputs,
        "outputTokens": outputs,
        "totalTokens": total,
        "costUsd": output.cost_usd,
        "durationMs": output.duration_ms,
    }


def code_judge_payload(case: AgentCase, evaluator: Evaluator, output: AgentOutput) -> dict[str, Any]:
    """The code judge's stdin object (agent-formats.md §1.8, §2.8, §7.6): AgentV v2.6.1's
    snake_case keys (converted deeply, as AgentV does), the v2.10 names (``criteria``,
    ``expected_output``, ``answer``, ``output``, ``input``) and the AgentEvals spec's camelCase
    keys, so a judge written for any of them finds what it reads. It goes to the judge as
    ``json.dumps(payload, indent=2)``.

    ``guideline_files`` is empty: the model does not tell guideline files from input files, so
    every ``file`` block is in ``input_files``."""
    inputs = message_dicts(case.input)
    expected = _expected_dicts(case)
    outputs = message_dicts(output.messages) if output.messages else None
    files = _case_files(case)
    config = dict(evaluator.config) if evaluator.config else None
    snake: dict[str, Any] = {
        "question": case.question,
        "expected_outcome": case.criteria,
        "expected_messages": expected,
        "reference_answer": case.reference_answer,
        "candidate_answer": output.answer,
        "output_messages": outputs,
        "guideline_files": [],
        "input_files": files,
        "input_messages": inputs,
        "trace_summary": _trace_summary(output),
        "config": config,
        # v2.10 renames
        "criteria": case.criteria,
        "expected_output": expected,
        "answer": output.answer,
        "output": outputs,
        "input": inputs,
        "token_usage": (
            {"input": output.input_tokens or 0, "output": output.output_tokens or 0}
            if output.input_tokens is not None or output.output_tokens is not None
            else None
        ),
        "cost_usd": output.cost_usd,
        "duration_ms": output.duration_ms,
    }
    payload: dict[str, Any] = to_snake_case_deep(snake)
    payload.update(
        {
            "candidateAnswer": payload["candidate_answer"],
            "expectedOutcome": payload["expected_outcome"],
            "expectedMessages": payload["expected_messages"],
            "referenceAnswer": payload["reference_answer"],
            "outputMessages": payload["output_messages"],
            "inputMessages": payload["input_messages"],
            "inputFiles": payload["input_files"],
            "guidelineFiles": payload["guideline_files"],
            "traceSummary": _trace_summary_camel(output),
        }
    )
    return payload


def case_needs_exec(case: AgentCase) -> bool:
    """Whether scoring ``case`` runs a program (a ``code_judge``, composites included), so an item
    can error before its target is asked when programs are not allowed."""

    def walk(evaluators: Sequence[Evaluator]) -> bool:
        return any(e.type == "code_judge" or walk(e.evaluators) for e in evaluators)

    return walk(case.evaluators)


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def parse_code_judge_stdout(text: str) -> dict[str, Any]:
    """``{score, hits, misses, reasoning, details}`` from a code judge's stdout (§1.8): one JSON
    object (the whole trimmed output, else its last line that is one, for judges that log first).
    As AgentV: a missing or non-numeric ``score`` is 0, the score is clamped to [0, 1], blank and
    non-string hits/misses are dropped, ``details`` kept when it is an object. No JSON object:
    :class:`ProgramOutputError`."""
    trimmed = text.strip()
    data = _json_object(trimmed) if trimmed else None
    if data is None:
        for line in reversed(trimmed.splitlines()):
            if line.strip().startswith("{"):
                data = _json_object(line.strip())
                if data is not None:
                    break
    if data is None:
        shown = " ".join(trimmed.split())[:200] or "(nothing)"
        raise ProgramOutputError(f"printed no JSON object on stdout: {shown}")
    number = _number(data.get("score"))
    score = min(1.0, max(0.0, number)) if number is not None else 0.0

    def strings(key: str) -> tuple[str, ...]:
        value = data.get(key)
        if not isinstance(value, list):
            return ()
        return tuple(v for v in value if isinstance(v, str) and v.strip())

    reasoning = data.get("reasoning")
    details = data.get("details")
    return {
        "score": score,
        "hits": strings("hits"),
        "misses": strings("misses"),
        "reasoning": reasoning if isinstance(reasoning, str) else None,
        "details": details if isinstance(details, dict) else None,
    }


# --- cli targets -------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{([A-Z_]+)\}")


def _format_files(files: Sequence[str], files_format: str | None) -> list[str]:
    """Each file through ``files_format`` (``{path}``, ``{basename}``; default ``{path}``), as
    shell text (paths quoted)."""
    template = files_format or "{path}"
    return [
        template.replace("{path}", shell_escape(f)).replace("{basename}", shell_escape(os.path.basename(f)))
        for f in files
    ]


def _format_files_argv(files: Sequence[str], files_format: str | None) -> list[str]:
    # For an argv command: "--file {path}" -> ["--file", "<path>"] per file, nothing quoted.
    words = shlex.split(files_format or "{path}")
    return [w.replace("{path}", f).replace("{basename}", os.path.basename(f)) for f in files for w in words]


def cli_command(
    command: Sequence[str] | str,
    *,
    prompt: str,
    eval_id: str,
    attempt: int,
    files: Sequence[str],
    files_format: str | None,
    output_file: str,
    guidelines: str = "",
) -> list[str] | str:
    """The command with its placeholders filled (§1.10): a ``command_template`` string gets
    shell-escaped values (``{FILES}`` as the formatted files joined by spaces) and runs through
    ``sh -c``; an argv list gets the values as they are, a ``{FILES}`` item expanding to the
    formatted files' words. Unknown ``{NAMES}`` are left as written."""
    raw = {
        "PROMPT": prompt,
        "GUIDELINES": guidelines,
        "EVAL_ID": eval_id,
        "ATTEMPT": str(attempt),
        "OUTPUT_FILE": output_file,
    }
    if isinstance(command, str):
        values = {k: shell_escape(v) for k, v in raw.items()}
        values["FILES"] = " ".join(_format_files(files, files_format))
        return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), command)
    plain = {**raw, "FILES": " ".join(files)}
    argv: list[str] = []
    for part in command:
        if part == "{FILES}":
            argv += _format_files_argv(files, files_format)
        else:
            argv.append(_PLACEHOLDER.sub(lambda m: plain.get(m.group(1), m.group(0)), part))
    return argv


def _text_of(content: Any) -> tuple[str, Any]:
    """``(text, structured)`` of a message's content: a string as is, a list of blocks joined by
    blank lines, an object as pretty JSON (kept as the structured content)."""
    if content is None:
        return "", None
    if isinstance(content, str):
        return content, None
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(text := block.get("text", block.get("value")), str):
                parts.append(text)
            else:
                parts.append(json.dumps(block, indent=2, ensure_ascii=False))
        return "\n\n".join(parts), None
    return json.dumps(content, indent=2, ensure_ascii=False), content


def _tool_call(raw: Any) -> ToolCall | None:
    """AgentV ``{tool, input, output, id, duration_ms}`` or OpenAI ``{id, function: {name, arguments}}``."""
    if not isinstance(raw, dict):
        return None
    function = raw.get("function")
    if isinstance(function, dict):
        name, args = function.get("name"), function.get("arguments")
    else:
        name = raw.get("tool", raw.get("name"))
        args = raw.get("input", raw.get("args", raw.get("arguments")))
    if not isinstance(name, str) or not name:
        return None
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            pass
    duration = raw.get("duration_ms")
    return ToolCall(
        name=name,
        args=args,
        output=raw.get("output"),
        id=raw.get("id") if isinstance(raw.get("id"), str) else None,
        duration_ms=float(duration) if isinstance(duration, (int, float)) and not isinstance(duration, bool) else None,
    )


_ROLES = ("system", "user", "assistant", "tool")


def _message(raw: Any) -> AgentMessage | None:
    if isinstance(raw, str):
        return AgentMessage(role="assistant", text=raw)
    if not isinstance(raw, dict):
        return None
    role = raw.get("role")
    text, structured = _text_of(raw.get("content"))
    calls = tuple(c for c in (_tool_call(t) for t in raw.get("tool_calls") or ()) if c is not None)
    return AgentMessage(
        role=role if role in _ROLES else "assistant",
        text=text,
        structured=structured,
        tool_calls=calls,
        name=raw.get("name") if isinstance(raw.get("name"), str) else None,
        tool_call_id=raw.get("tool_call_id") if isinstance(raw.get("tool_call_id"), str) else None,
    )


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def parse_cli_output(text: str, *, duration_ms: float | None = None) -> AgentOutput:
    """A ``cli`` target's output file (§1.10): JSON with ``output_messages`` (a list of messages)
    or ``text``, plus optional ``token_usage {input, output, cached}``, ``cost_usd`` and
    ``duration_ms``; anything else is the whole file as the assistant's text."""
    data = _json_object(text.strip()) if text.strip().startswith("{") else None
    if data is None or not (isinstance(data.get("output_messages"), list) or isinstance(data.get("text"), str)):
        return AgentOutput(messages=(AgentMessage(role="assistant", text=text),), duration_ms=duration_ms)
    messages = [m for m in (_message(r) for r in data.get("output_messages") or ()) if m is not None]
    answer = data.get("text")
    if isinstance(answer, str) and not any(m.role == "assistant" and m.text for m in messages):
        messages.append(AgentMessage(role="assistant", text=answer))
    usage: dict[str, Any] = data["token_usage"] if isinstance(data.get("token_usage"), dict) else {}
    tokens_in, tokens_out = _number(usage.get("input")), _number(usage.get("output"))
    reported = _number(data.get("duration_ms"))
    return AgentOutput(
        messages=tuple(messages),
        duration_ms=reported if reported is not None else duration_ms,
        input_tokens=int(tokens_in) if tokens_in is not None else None,
        output_tokens=int(tokens_out) if tokens_out is not None else None,
        cost_usd=_number(data.get("cost_usd")),
    )


def _case_files(case: AgentCase) -> list[str]:
    files: list[str] = []
    for message in case.input:
        for block in message.blocks:
            if block.type == "file" and block.path and block.path not in files:
                files.append(block.path)
    return files
