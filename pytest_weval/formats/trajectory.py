"""The keys of a ``tool_trajectory`` evaluator: its mode, ``minimums``, the ``expected`` tool calls
and how their arguments match (docs/agent-formats.md §1.5, §2.4, §5.4). Scoring a trajectory is
``scoring.agent``'s.
"""

from __future__ import annotations

from typing import Any

from pytest_weval.formats.context import (
    Context,
    Problem,
    describe,
    finite_number,
    is_number,
    join_field,
    snake_spelling,
    text_value,
)
from pytest_weval.formats.model import ExpectedToolCall

TRAJECTORY_MODES = ("any_order", "in_order", "exact", "subset", "superset")
ARGS_MATCH_MODES = ("exact", "superset", "subset", "ignore")
TRAJECTORY_KEYS = frozenset(("mode", "minimums", "expected", "args_match", "argsMatch"))


def default_args_match(ctx: Context) -> str:
    """``exact`` for AgentV v2.7-style files, ``superset`` (partial) for classic and AgentEvals
    files (docs/agent-formats.md §5.4)."""
    return "exact" if ctx.dialect == "agentv" else "superset"


def trajectory_fields(ctx: Context, raw: dict[str, Any], field: str) -> dict[str, Any]:
    """``mode``, ``minimums``, ``expected`` and ``args_match``, with each dialect's defaults."""
    if raw.get("mode") is None:
        if ctx.dialect != "agentevals":
            raise ctx.problem_at(
                raw,
                field,
                "the tool_trajectory evaluator has no `mode`",
                hint=f"add `mode:` ({', '.join(TRAJECTORY_MODES)})",
            )
        mode = "any_order"  # the AgentEvals spec's default
    else:
        written = raw["mode"]
        mode = snake_spelling(written) if isinstance(written, str) else ""
        if mode not in TRAJECTORY_MODES:
            raise ctx.problem_key(
                raw,
                "mode",
                join_field(field, "mode"),
                f"unknown tool_trajectory mode {written!r}",
                hint=f"a mode is one of {', '.join(TRAJECTORY_MODES)}",
            )
    minimums: dict[str, int] | None = None
    if raw.get("minimums") is not None:
        written_minimums = raw["minimums"]
        if not isinstance(written_minimums, dict):
            raise ctx.problem_key(
                raw,
                "minimums",
                join_field(field, "minimums"),
                f"`minimums` must map tool names to counts, not {describe(written_minimums)}",
            )
        minimums = {}
        for tool, count in written_minimums.items():
            if not (is_number(count) and float(count).is_integer() and count >= 0):
                raise Problem(
                    f"the minimum for tool {tool!r} must be a whole number >= 0, not {describe(count)}",
                    ctx.where.key(written_minimums, tool, join_field(join_field(field, "minimums"), str(tool))),
                )
            minimums[str(tool)] = int(count)
    expected: tuple[ExpectedToolCall, ...] | None = None
    if raw.get("expected") is not None:
        written_expected = raw["expected"]
        if not isinstance(written_expected, list):
            raise ctx.problem_key(
                raw,
                "expected",
                join_field(field, "expected"),
                f"`expected` must be a list of tool calls, not {describe(written_expected)}",
            )
        expected = tuple(
            _expected_call(ctx, written_expected, index, join_field(join_field(field, "expected"), index))
            for index in range(len(written_expected))
        )
    args_key = "args_match" if "args_match" in raw else "argsMatch"
    args_match = (
        _args_match(ctx, raw, args_key, join_field(field, args_key))
        if raw.get(args_key) is not None
        else default_args_match(ctx)
    )
    if mode == "any_order" and minimums is None:
        if expected and ctx.dialect == "agentevals":
            # The spec's any_order: every expected tool called (as often as it is listed).
            minimums = {}
            for call in expected:
                minimums[call.tool] = minimums.get(call.tool, 0) + 1
        else:
            raise ctx.problem_at(
                raw,
                field,
                "tool_trajectory mode any_order needs `minimums`",
                hint="e.g. `minimums: {search: 2}` (each tool and how often it must be called at least)",
            )
    if mode != "any_order" and expected is None:
        raise ctx.problem_at(
            raw,
            field,
            f"tool_trajectory mode {mode} needs `expected`",
            hint="list the calls: `expected: [{tool: search}, {tool: summarize}]`",
        )
    return {"mode": mode, "minimums": minimums or {}, "expected": expected or (), "args_match": args_match}


def _expected_call(ctx: Context, seq: list[Any], index: int, field: str) -> ExpectedToolCall:
    raw = seq[index]
    if isinstance(raw, str) and raw.strip():
        return ExpectedToolCall(tool=raw)
    if not isinstance(raw, dict):
        raise ctx.problem_item(
            seq, index, field, f"an expected tool call must be a mapping with `tool`, not {describe(raw)}"
        )
    tool = text_value(raw.get("tool", raw.get("name")))
    if not tool:
        raise ctx.problem_at(raw, field, "an expected tool call has no `tool`", hint="write `- tool: <name>`")
    args = raw.get("args")
    if args is not None and not isinstance(args, dict) and args != "any":
        raise ctx.problem_key(
            raw, "args", join_field(field, "args"), f"`args` must be a mapping or `any`, not {describe(args)}"
        )
    duration = raw.get("max_duration_ms", raw.get("maxDurationMs"))
    if duration is not None and (not finite_number(duration) or duration < 0):
        raise ctx.problem_at(
            raw,
            join_field(field, "max_duration_ms"),
            f"`max_duration_ms` must be a number >= 0, not {describe(duration)}",
        )
    args_key = "args_match" if "args_match" in raw else "argsMatch"
    args_match = _args_match(ctx, raw, args_key, join_field(field, args_key)) if raw.get(args_key) is not None else None
    return ExpectedToolCall(
        tool=tool,
        args=args,
        max_duration_ms=float(duration) if duration is not None else None,
        args_match=args_match,
    )


def _args_match(ctx: Context, raw: dict[str, Any], key: str, field: str) -> str | tuple[str, ...]:
    value = raw[key]
    if isinstance(value, str) and value in ARGS_MATCH_MODES:
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    raise ctx.problem_key(
        raw,
        key,
        field,
        f"`{key}` must be {', '.join(ARGS_MATCH_MODES)} or a list of argument paths, not {describe(value)}",
    )
