"""AgentV's ``cli`` target: an agent run as a program from an eval file (agent-formats.md
§1.10; rulings 22-23, 27).

:func:`run_cli_target` fills the target's ``command_template`` placeholders
(:func:`cli_command`), runs it through a :class:`~pytest_weval.run.programs.runner.ProgramRunner`
(which decides whether it may run at all, and how), and reads the ``{OUTPUT_FILE}`` it writes
into an :class:`AgentOutput` (:func:`parse_cli_output`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_weval.formats.messages import ROLES
from pytest_weval.formats.model import AgentCase, AgentMessage, AgentOutput, TargetDef, ToolCall
from pytest_weval.run.programs.runner import (
    MAX_OUTPUT_BYTES,
    STDERR_TAIL,
    ProgramFailed,
    ProgramOutputError,
    ProgramRunner,
    ProgramStartError,
    describe_command,
    finite_float,
    json_object,
)

__all__ = [
    "DEFAULT_CLI_TIMEOUT_S",
    "cli_command",
    "parse_cli_output",
    "run_cli_target",
    "shell_escape",
]

DEFAULT_CLI_TIMEOUT_S = 120.0


async def run_cli_target(
    runner: ProgramRunner,
    target: TargetDef,
    case: AgentCase,
    *,
    cwd: Path | str,
    timeout_s: float = DEFAULT_CLI_TIMEOUT_S,
    attempt: int = 0,
    guidelines: str = "",
) -> AgentOutput:
    """Ask a ``cli`` target (§1.10) with ``runner``: fill its command's placeholders
    (:func:`cli_command`; ``{PROMPT}`` is the case's question, ``{OUTPUT_FILE}`` a fresh path in a
    private temporary folder, removed afterwards), run it in ``cwd`` under ``timeout_s``, and
    read the output file (:func:`parse_cli_output`).

    Raises :class:`ExecNotAllowed` (nothing started), :class:`ProgramStartError`,
    :class:`ProgramTimedOut`, :class:`ProgramFailed` (its stderr, else its stdout, in the
    message) or :class:`ProgramOutputError` (no output file): the item errors.
    """
    template = target.command
    if template is None or (not isinstance(template, str) and not template):
        raise ProgramStartError(f"cli target '{target.name}' has no command_template")
    described = f"cli target '{target.name}' ({describe_command(template)})"
    runner.check_allowed(described)  # before the temporary folder exists
    folder = tempfile.mkdtemp(prefix="weval-cli-")
    try:
        safe_id = re.sub(r"[^A-Za-z0-9_.-]+", "_", case.id)[:80] or "case"
        output_file = os.path.join(folder, f"{safe_id}.json")
        command = cli_command(
            template,
            prompt=case.question,
            eval_id=case.id,
            attempt=attempt,
            files=case.input_files,
            files_format=target.files_format,
            output_file=output_file,
            guidelines=guidelines,
        )
        result = await runner.run(command, cwd=cwd, timeout_s=timeout_s, what=described)
        failure = result.failure(described, timeout_s)
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


# --- the command ---------------------------------------------------------------------------------


def shell_escape(value: str) -> str:
    """One shell word for ``value``, as AgentV quotes placeholders: ``'...'`` with ``'`` as ``'"'"'``."""
    return "'" + value.replace("'", "'\"'\"'") + "'"


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


# --- the output file -----------------------------------------------------------------------------


def parse_cli_output(text: str, *, duration_ms: float | None = None) -> AgentOutput:
    """A ``cli`` target's output file (§1.10): JSON with ``output_messages`` (a list of messages)
    or ``text``, plus optional ``token_usage {input, output, cached}``, ``cost_usd`` and
    ``duration_ms``; anything else is the whole file as the assistant's text."""
    data = json_object(text.strip()) if text.strip().startswith("{") else None
    if data is None or not (isinstance(data.get("output_messages"), list) or isinstance(data.get("text"), str)):
        return AgentOutput(messages=(AgentMessage(role="assistant", text=text),), duration_ms=duration_ms)
    messages = [m for m in (_message(r) for r in data.get("output_messages") or ()) if m is not None]
    answer = data.get("text")
    if isinstance(answer, str) and not any(m.role == "assistant" and m.text for m in messages):
        messages.append(AgentMessage(role="assistant", text=answer))
    usage: dict[str, Any] = data["token_usage"] if isinstance(data.get("token_usage"), dict) else {}
    tokens_in, tokens_out = finite_float(usage.get("input")), finite_float(usage.get("output"))
    reported = finite_float(data.get("duration_ms"))
    return AgentOutput(
        messages=tuple(messages),
        duration_ms=reported if reported is not None else duration_ms,
        input_tokens=int(tokens_in) if tokens_in is not None else None,
        output_tokens=int(tokens_out) if tokens_out is not None else None,
        cost_usd=finite_float(data.get("cost_usd")),
    )


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


def _message(raw: Any) -> AgentMessage | None:
    if isinstance(raw, str):
        return AgentMessage(role="assistant", text=raw)
    if not isinstance(raw, dict):
        return None
    role = raw.get("role")
    text, structured = _text_of(raw.get("content"))
    calls = tuple(c for c in (_tool_call(t) for t in raw.get("tool_calls") or ()) if c is not None)
    return AgentMessage(
        role=role if role in ROLES else "assistant",
        text=text,
        structured=structured,
        tool_calls=calls,
        name=raw.get("name") if isinstance(raw.get("name"), str) else None,
        tool_call_id=raw.get("tool_call_id") if isinstance(raw.get("tool_call_id"), str) else None,
    )
