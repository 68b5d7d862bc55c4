"""Running programs named by eval files (issue 20 points 5-6; rulings 23, 27; agent-formats.md
§1.8, §1.10).

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

The two protocols run through a runner: the code judge in ``run.programs.code_judge`` (the case as JSON
on stdin, ``{score, hits, misses, reasoning}`` on stdout) and the ``cli`` target in
``run.programs.cli_target`` (``command_template`` placeholders, the ``{OUTPUT_FILE}`` it writes).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import shlex
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_weval.engine.transport.keys import KEY_VARS
from pytest_weval.errors import WevalError

__all__ = [
    "ALLOW_EXEC_HINT",
    "BASE_ENV",
    "MAX_OUTPUT_BYTES",
    "STDERR_TAIL",
    "ExecNotAllowed",
    "ProgramError",
    "ProgramFailed",
    "ProgramOutputError",
    "ProgramResult",
    "ProgramRunner",
    "ProgramStartError",
    "ProgramTimedOut",
    "describe_command",
    "finite_float",
    "json_object",
    "provider_key_reason",
]

ALLOW_EXEC_HINT = "--weval-allow-exec (or ini weval_allow_exec = true)"
BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL")  # what every program gets, when set
MAX_OUTPUT_BYTES = 1_000_000
STDERR_TAIL = 2000  # characters of stderr kept in a failure message (AgentV's)
_DRAIN_S = 2.0  # after the program ends: how long to wait for its pipes to close


class ProgramError(WevalError):
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

    def failure(self, described: str, timeout_s: float) -> ProgramError | None:
        """The error for a program that timed out or did not exit 0, else None."""
        if self.timed_out:
            return ProgramTimedOut(f"{described} timed out after {timeout_s:g}s and was killed")
        code = self.returncode
        if code == 0:
            return None
        tail = self.stderr_tail()
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        return ProgramFailed(f"{described} {how}" + (f": {tail}" if tail else ""), returncode=code, stderr_tail=tail)


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


# --- reading what a program printed --------------------------------------------------------------


def json_object(text: str) -> dict[str, Any] | None:
    """``text`` as one JSON object, else None."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def finite_float(value: Any) -> float | None:
    """A JSON number (not a boolean, not NaN or infinite) as a float, else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


# --- running -------------------------------------------------------------------------------------


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
