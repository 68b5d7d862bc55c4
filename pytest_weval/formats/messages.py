"""Messages of agent eval files: ``input`` / ``input_messages``, ``expected_output`` /
``expected_messages``, content blocks and tool calls (docs/agent-formats.md §1.3, §1.4, §2.3).

* A string input is one user message; a string expected output is one assistant message; an
  expected object without ``role`` is an assistant message whose content is that object
  (structured output); a list whose first item has ``role`` is messages, any other list the
  structured content of one assistant message.
* Content is a string, an object (structured: rendered as pretty JSON), or a list of blocks
  ``text`` / ``file`` / ``image`` / ``json`` (a plain string in the list is a text block).
* A ``file`` block's path is found like AgentV finds it (the file's folder, then its ancestors
  up to the rootdir; a leading ``/`` is the rootdir) and read as UTF-8 with CRLF as LF; a
  missing file is the case's problem. In the message text it is ``<file path="...">`` text
  ``</file>``, as AgentV gives files to a language model.
* Tool calls: AgentV's ``{tool, input, output, id, duration_ms}``, OpenAI's
  ``{id, type: function, function: {name, arguments: "<JSON>"}}`` and ``{name, args}`` all
  become ``ToolCall``.

And back: :func:`message_dicts` gives messages in the shape AgentV shows them to judges and code
judges.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from pytest_weval.formats.context import Context, Problem, describe, finite_number, join_field, text_value
from pytest_weval.formats.model import AgentCase, AgentMessage, ContentBlock, ToolCall

ROLES = ("system", "user", "assistant", "tool")
BLOCK_TYPES = ("text", "file", "image", "json")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".svg", ".tif", ".tiff")


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def parse_input(ctx: Context, owner: Any, key: str, field: str) -> tuple[AgentMessage, ...]:
    """``owner[key]`` as input messages: a string is one user message, a list is messages."""
    value = owner[key]
    if isinstance(value, str):
        if not value.strip():
            raise ctx.problem_key(owner, key, field, "the input is empty", hint="write the question the target gets")
        return (AgentMessage(role="user", text=value),)
    if isinstance(value, dict) and "role" in value:
        return (parse_message(ctx, value, field),)
    if not isinstance(value, list):
        raise ctx.problem_key(
            owner,
            key,
            field,
            f"the input must be a string or a list of messages, not {describe(value)}",
            hint="write `input: \"...\"` or a list of `- role: user` / `content: ...` messages",
        )
    if not value:
        raise ctx.problem_key(owner, key, field, "the input has no messages", hint="add at least one user message")
    return tuple(_message_item(ctx, value, index, join_field(field, index)) for index in range(len(value)))


def parse_expected(ctx: Context, owner: Any, key: str, field: str) -> tuple[tuple[AgentMessage, ...], Any]:
    """``owner[key]`` as the reference: (messages, the structured output if it is one)."""
    value = owner[key]
    if value is None:
        return (), None
    if isinstance(value, str):
        return (AgentMessage(role="assistant", text=value),), None
    if isinstance(value, dict):
        if "role" in value:
            return (parse_message(ctx, value, field),), None
        return (AgentMessage(role="assistant", text=pretty_json(value), structured=value),), value
    if isinstance(value, list):
        if value and isinstance(value[0], dict) and "role" in value[0]:
            messages = tuple(_message_item(ctx, value, index, join_field(field, index)) for index in range(len(value)))
            return messages, None
        if not value:
            return (), None
        return (AgentMessage(role="assistant", text=pretty_json(value), structured=value),), value
    if finite_number(value) or isinstance(value, bool):
        text = json.dumps(value)
        return (AgentMessage(role="assistant", text=text),), None
    raise ctx.problem_key(
        owner,
        key,
        field,
        f"the expected output must be a string, an object or a list of messages, not {describe(value)}",
    )


def _message_item(ctx: Context, seq: list[Any], index: int, field: str) -> AgentMessage:
    raw = seq[index]
    if not isinstance(raw, dict):
        raise ctx.problem_item(
            seq,
            index,
            field,
            f"a message must be a mapping with `role` and `content`, not {describe(raw)}",
            hint="write `- role: user` with `content: ...` below it",
        )
    return parse_message(ctx, raw, field)


def parse_message(ctx: Context, raw: dict[str, Any], field: str) -> AgentMessage:
    role = raw.get("role")
    if role not in ROLES:
        if "role" not in raw:
            raise ctx.problem_at(
                raw, field, "a message has no `role`", hint=f"add `role:` ({', '.join(ROLES)}) to the message"
            )
        raise ctx.problem_key(
            raw,
            "role",
            join_field(field, "role"),
            f"unknown message role {role!r}",
            hint=f"a role is one of {', '.join(ROLES)}",
        )
    text: str = ""
    blocks: tuple[ContentBlock, ...] = ()
    structured: Any = None
    if raw.get("content") is not None:
        text, blocks, structured = _content(ctx, raw, join_field(field, "content"))
    tool_calls: tuple[ToolCall, ...] = ()
    if raw.get("tool_calls") is not None:
        calls = raw["tool_calls"]
        if not isinstance(calls, list):
            raise ctx.problem_key(
                raw, "tool_calls", join_field(field, "tool_calls"), "`tool_calls` must be a list of tool calls"
            )
        tool_calls = tuple(
            parse_tool_call(ctx, calls, index, join_field(join_field(field, "tool_calls"), index))
            for index in range(len(calls))
        )
    name = text_value(raw.get("name"))
    tool_call_id = text_value(raw.get("tool_call_id"))
    return AgentMessage(
        role=cast(Any, role),
        text=text,
        blocks=blocks,
        structured=structured,
        tool_calls=tool_calls,
        name=name,
        tool_call_id=tool_call_id,
    )


def _content(ctx: Context, message: dict[str, Any], field: str) -> tuple[str, tuple[ContentBlock, ...], Any]:
    content = message["content"]
    if isinstance(content, str):
        return content, (), None
    if isinstance(content, dict):
        if "type" in content and content.get("type") in BLOCK_TYPES and "value" in content:
            block, rendered = _block(ctx, [content], 0, field)
            return rendered or "", (block,), None
        return pretty_json(content), (), content
    if isinstance(content, list):
        if content and not all(isinstance(part, (dict, str)) for part in content):
            raise ctx.problem_key(message, "content", field, "content must be text, an object or a list of blocks")
        if content and all(isinstance(part, dict) and "type" not in part for part in content):
            return pretty_json(content), (), content  # structured output that happens to be a list
        blocks: list[ContentBlock] = []
        parts: list[str] = []
        for index in range(len(content)):
            block, rendered = _block(ctx, content, index, join_field(field, index))
            blocks.append(block)
            if rendered is not None and rendered != "":
                parts.append(rendered)
        return "\n\n".join(parts), tuple(blocks), None
    if finite_number(content) or isinstance(content, bool):
        return json.dumps(content), (), None
    raise ctx.problem_key(
        message, "content", field, f"content must be text, an object or a list of blocks, not {describe(content)}"
    )


def _block(ctx: Context, seq: list[Any], index: int, field: str) -> tuple[ContentBlock, str | None]:
    """One content block and the text it adds to the message (None: nothing, e.g. an image)."""
    raw = seq[index]
    if isinstance(raw, str):
        return ContentBlock(type="text", value=raw), raw
    kind = raw.get("type")
    if kind not in BLOCK_TYPES:
        where = ctx.where.key(raw, "type", join_field(field, "type")) if "type" in raw else ctx.where.at(raw, field)
        raise Problem(
            f"unknown content block type {kind!r}" if "type" in raw else "a content block has no `type`",
            where,
            hint=f"a block is `type:` {', '.join(BLOCK_TYPES)} with `value:`",
        )
    value_key = "value" if "value" in raw else "text" if kind == "text" and "text" in raw else None
    if value_key is None:
        raise ctx.problem_at(
            raw, field, f"the {kind} block has no `value`", hint=f"write `value:` under `type: {kind}`"
        )
    value = raw[value_key]
    value_field = join_field(field, value_key)
    if kind == "text":
        text = text_value(value)
        if text is None:
            raise ctx.problem_key(
                raw, value_key, value_field, f"a text block's value must be text, not {describe(value)}"
            )
        return ContentBlock(type="text", value=text), text
    if kind == "json":
        return ContentBlock(type="json", value=value), pretty_json(value)
    if not isinstance(value, str) or not value.strip():
        raise ctx.problem_key(
            raw, value_key, value_field, f"a {kind} block's value must be a path, not {describe(value)}"
        )
    if kind == "file":
        path, why = ctx.find_file(value, ancestors=True)
        if path is None:
            raise ctx.problem_key(
                raw,
                value_key,
                value_field,
                f"file {value!r} cannot be used: {why}",
                hint="add the file, or fix the path (relative to the eval file's folder or one above it; "
                "a leading / is the rootdir)",
            )
        text, why = ctx.read_text(path)
        if text is None:
            raise ctx.problem_key(raw, value_key, value_field, f"file {value!r} {why}")
        shown = value[len("file://") :] if value.startswith("file://") else value
        rendered = f'<file path="{shown.lstrip("/")}">\n{text.strip()}\n</file>'
        return ContentBlock(type="file", value=text, path=str(path)), rendered
    # image: a path (found like a file) or base64 / a data URL
    if _looks_like_image_path(value):
        path, why = ctx.find_file(value, ancestors=True)
        if path is None:
            raise ctx.problem_key(
                raw,
                value_key,
                value_field,
                f"image {value!r} cannot be used: {why}",
                hint="add the image, or fix the path",
            )
        return ContentBlock(type="image", value=value, path=str(path)), None
    return ContentBlock(type="image", value=value), None


def _looks_like_image_path(value: str) -> bool:
    if value.startswith("data:"):
        return False
    lowered = value.lower()
    return lowered.startswith(("./", "../", "/", "file://")) or lowered.endswith(IMAGE_SUFFIXES)


def parse_tool_call(ctx: Context, seq: list[Any], index: int, field: str) -> ToolCall:
    raw = seq[index]
    if not isinstance(raw, dict):
        raise ctx.problem_item(seq, index, field, f"a tool call must be a mapping, not {describe(raw)}")
    function = raw.get("function")
    if isinstance(function, dict):  # OpenAI: {id, type: function, function: {name, arguments}}
        name = text_value(function.get("name"))
        args = function.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else None
            except json.JSONDecodeError:
                pass  # kept as written: a reference may hold arguments that are not JSON
        output = raw.get("output")
    else:  # AgentV: {tool, input, output}; also {name, args | arguments}
        name = text_value(raw.get("tool", raw.get("name")))
        args = raw["input"] if "input" in raw else raw.get("args", raw.get("arguments"))
        output = raw.get("output")
    if not name:
        raise ctx.problem_item(
            seq,
            index,
            field,
            "a tool call has no tool name",
            hint="write `tool: <name>` (or OpenAI's `function: {name}`)",
        )
    duration = raw.get("duration_ms")
    return ToolCall(
        name=name,
        args=args,
        output=output,
        id=text_value(raw.get("id")),
        duration_ms=float(duration) if duration is not None and finite_number(duration) else None,
    )


# --- messages as AgentV shows them ---------------------------------------------------------------


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


def _message_dict(message: AgentMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role}
    out["content"] = message.structured if message.structured is not None else message.text
    if message.tool_calls:
        out["tool_calls"] = [_call_dict(call) for call in message.tool_calls]
    if message.name is not None:
        out["name"] = message.name
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


def message_dicts(messages: Sequence[AgentMessage]) -> list[dict[str, Any]]:
    """Messages as AgentV shows them to judges and code judges: ``{role, content, tool_calls?}``
    with ``content`` the message text (or its structured object) and tool calls as
    ``{tool, input, output, id, duration_ms}``."""
    return [_message_dict(m) for m in messages]


def expected_message_dicts(case: AgentCase) -> list[dict[str, Any]]:
    """The case's reference as :func:`message_dicts`: its expected messages, else its structured
    expected output as one assistant message, else none."""
    if case.expected:
        return message_dicts(case.expected)
    if case.expected_structured is not None:
        return [{"role": "assistant", "content": case.expected_structured}]
    return []
