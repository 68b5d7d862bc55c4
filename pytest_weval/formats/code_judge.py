"""The keys of a ``code_judge`` evaluator: its program (``command`` or ``script``), ``cwd`` and
timeout (docs/agent-formats.md §1.8, §2.8). Running it is ``run.programs.code_judge``'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_weval.formats.context import Context, describe, finite_number, join_field, text_value

CODE_JUDGE_KEYS = frozenset(("command", "script", "cwd", "timeout_seconds", "timeout_ms"))
_SCRIPT_SUFFIXES = (".py", ".ts", ".mts", ".cts", ".js", ".mjs", ".cjs", ".sh", ".bash", ".rb", ".pl", ".php", ".lua")


def code_judge_fields(ctx: Context, raw: dict[str, Any], field: str) -> dict[str, Any]:
    """``command``, ``cwd`` (the eval file's folder when not given) and ``timeout_s``."""
    key = "command" if raw.get("command") is not None else "script" if raw.get("script") is not None else None
    if key is None:
        raise ctx.problem_at(
            raw,
            field,
            "the code_judge has no `command` (or `script`)",
            hint='write the program as a list, e.g. `command: ["python", "judges/check.py"]`',
        )
    written = raw[key]
    command: tuple[str, ...] | str
    if isinstance(written, str):
        if not written.strip():
            raise ctx.problem_key(raw, key, join_field(field, key), f"`{key}` is empty")
        command = written.strip()
    elif isinstance(written, list) and written and all(isinstance(a, str) and a.strip() for a in written):
        command = tuple(written)
    else:
        raise ctx.problem_key(
            raw,
            key,
            join_field(field, key),
            f"`{key}` must be a list of non-empty arguments (argv) or a shell command line, not {describe(written)}",
            hint='e.g. `command: ["python", "judges/check.py"]`',
        )
    cwd = ctx.file_dir
    if raw.get("cwd") is not None:
        written_cwd = text_value(raw["cwd"])
        found, why = ctx.find_dir(written_cwd) if written_cwd else (None, f"it is {describe(raw['cwd'])}")
        if found is None:
            raise ctx.problem_key(
                raw,
                "cwd",
                join_field(field, "cwd"),
                f"cwd {raw['cwd']!r} cannot be used: {why}",
                hint="name a folder relative to the eval file",
            )
        cwd = found
    if isinstance(command, tuple):
        _check_script(ctx, raw, key, join_field(field, key), command, cwd)
    return {"command": command, "cwd": str(cwd), "timeout_s": _timeout(ctx, raw, field)}


def _check_script(ctx: Context, raw: dict[str, Any], key: str, field: str, argv: tuple[str, ...], cwd: Path) -> None:
    """A script file the argv names (``check.py``, ``../scripts/x.ts``, ``./judge.sh``) must
    exist below ``cwd``: a missing one is the case's problem now, not a failed run later."""
    for position, arg in enumerate(argv):
        looks_like_script = not arg.startswith("-") and " " not in arg and arg.lower().endswith(_SCRIPT_SUFFIXES)
        if position == 0:
            looks_like_script = looks_like_script or arg.startswith(("./", "../"))
        if not looks_like_script:
            continue
        if position > 0 and argv[position - 1] in ("-c", "-e", "--eval"):
            continue
        path = (cwd / arg).resolve() if not Path(arg).is_absolute() else Path(arg)
        if not path.is_file():
            raise ctx.problem_key(
                raw,
                key,
                field,
                f"the code judge's script {arg!r} does not exist (looked for {ctx.display(path)})",
                hint="add the script, or fix its path (relative to the judge's cwd, by default the eval file's folder)",
            )


def _timeout(ctx: Context, raw: dict[str, Any], field: str) -> float | None:
    for key, scale in (("timeout_seconds", 1.0), ("timeout_ms", 0.001)):
        if raw.get(key) is not None:
            value = raw[key]
            if not finite_number(value) or value <= 0:
                raise ctx.problem_key(
                    raw, key, join_field(field, key), f"`{key}` must be a number > 0, not {describe(value)}"
                )
            return float(value) * scale
    return None
