"""What the reference CLI checks and fills in after parsing (`loadAndValidateConfig`; docs/format.md, 'Checks after parsing').

Header problems (temperature, temperatures, tags, systems, title) reject the file as in the
reference. Prompt validation (docs/format.md, 'Prompt validation') is per prompt instead: the message is kept on that
prompt, whose items error, and the rest of the file runs (docs/rulings.md, ruling 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_weval.jsvalues import ABSENT, is_number, js_string, js_trim, truthy

from .ids import normalize_tags
from .model import BlueprintError, Location

DEFAULT_EMBEDDING_MODEL = "openai:text-embedding-3-small"
MESSAGE_ROLES = ("user", "assistant", "system")


def prompt_validation_error(prompt: dict[str, Any]) -> str | None:
    """validatePrompts for one normalized prompt: the reference's message, or None."""
    pid = js_string(prompt.get("id", ABSENT))
    messages = prompt.get("messages", ABSENT)
    # `promptText` is never emitted by the parser, so only `messages` can satisfy this.
    if not isinstance(messages, list) or not messages:
        return f"Prompt ID '{pid}' must have either a valid 'promptText' or a non-empty 'messages' array."
    if _role(messages[0]) == "assistant":
        return f"Prompt ID '{pid}': First message role cannot be 'assistant'. Must be 'user' or 'system'."
    last_role = _role(messages[-1])
    if last_role != "user":
        return f"Prompt ID '{pid}': Last message role in the input sequence must be 'user'. Found '{js_string(last_role)}'."
    for index, message in enumerate(messages):
        role = _role(message)
        if not truthy(role) or role not in MESSAGE_ROLES:
            return (
                f"Prompt ID '{pid}', message {index}: Invalid role '{js_string(role)}'. "
                "Must be 'user', 'assistant', or 'system'."
            )
        content = message.get("content", ABSENT)
        if role == "assistant" and content is None:
            continue  # a turn for the model to generate
        if not isinstance(content, str) or js_trim(content) == "":
            return f"Prompt ID '{pid}', message {index} (role '{role}'): Content cannot be empty."
    last = None
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "system":
            continue
        if role == last:
            return f"Prompt ID '{pid}', message {index}: Invalid sequence. Two '{role}' messages in a row."
        last = role
    return None


def _role(message: Any) -> Any:
    return message.get("role", ABSENT) if isinstance(message, dict) else ABSENT


@dataclass
class RunAxes:
    """The permutation axes and header values the run uses (docs/format.md, 'Temperatures and system prompts' and 'Checks after parsing')."""

    temperatures: list[Any]  # `temperatures` if non-empty, else [temperature] (maybe [None])
    systems: list[Any]  # `systems` if non-empty, else [system] (maybe [None])
    sets_temperature: bool
    tags: list[str]
    # The config after the CLI's edits, models not yet resolved (the caller sets them).
    effective: dict[str, Any]


def run_axes(
    config: dict[str, Any], *, blueprint_id: str, header: dict[str, Any], locate: Any, prompt_locations: list[Location]
) -> RunAxes:
    """Apply the CLI's header checks and defaults; `locate(key)` gives a header key's location."""
    effective = dict(config)
    effective["id"] = blueprint_id
    if not truthy(effective.get("title")):
        effective["title"] = blueprint_id
    title = effective["title"]
    if not isinstance(title, str) or js_trim(title) == "":
        raise BlueprintError(
            "Failed to determine a valid 'title' for the blueprint from file content or 'id'.",
            locate("title"),
            hint="make `title` a line of text",
        )
    models = effective.get("models")
    if not isinstance(models, list) or not models:
        effective["models"] = ["CORE"]
    if not truthy(effective.get("embeddingModel")):
        effective["embeddingModel"] = DEFAULT_EMBEDDING_MODEL

    temperature = effective.get("temperature", ABSENT)
    if temperature is not ABSENT and not is_number(temperature):
        raise BlueprintError(
            "Config file has invalid 'temperature'",
            locate("temperature"),
            hint="write one number, e.g. temperature: 0.7",
        )
    temperatures = effective.get("temperatures", ABSENT)
    if temperatures is not ABSENT and (not isinstance(temperatures, list) or not all(map(is_number, temperatures))):
        raise BlueprintError(
            "Config file has invalid 'temperatures'",
            locate("temperatures"),
            hint="write a list of numbers, e.g. temperatures: [0, 0.7]",
        )
    tags: list[str] = []
    if "tags" in effective:
        raw_tags = effective["tags"]
        if not isinstance(raw_tags, list) or not all(isinstance(t, str) for t in raw_tags):
            raise BlueprintError(
                "Config file has an invalid 'tags' field (must be an array of strings if provided).",
                locate("tags"),
                hint="write tags as a list of strings",
            )
        tags = normalize_tags(raw_tags)
        effective["tags"] = tags

    system = effective.get("system", ABSENT)
    if isinstance(system, list):
        systems_given = effective.get("systems")
        if not (truthy(systems_given) and _length(systems_given) > 0):
            effective["systems"] = system
        effective.pop("system")  # `system = undefined`
    elif system is not ABSENT and system is not None and not isinstance(system, str):
        raise BlueprintError(
            f"The 'system' field must be a string, null or a list. Found: {js_string(system)}",
            locate("system"),
            hint="write one system prompt, or a list of them as `systems`",
        )
    systems = effective.get("systems", ABSENT)
    if systems is not ABSENT and (
        not isinstance(systems, list) or not all(s is None or isinstance(s, str) for s in systems)
    ):
        raise BlueprintError(
            "Config file has invalid 'systems' (must be an array of strings or nulls).",
            locate("systems"),
            hint="write systems as a list of strings (and at most one null)",
        )
    if isinstance(systems, list) and systems.count(None) > 1:
        raise BlueprintError(
            "Config file validation error: The 'systems' array can contain at most one 'null' entry.",
            locate("systems"),
            hint="keep one null (the variant without a system prompt)",
        )
    if isinstance(systems, list) and systems:
        for prompt, where in zip(effective.get("prompts", []), prompt_locations):
            if truthy(prompt.get("system")):
                raise BlueprintError(
                    "Config validation error: When a top-level 'systems' array is defined for permutation, "
                    f"individual prompts (like '{js_string(prompt.get('id'))}') cannot have their own 'system' "
                    "override. This is to ensure a clean comparison across all system prompts.",
                    where.model_copy(update={"field": f"{where.field}.system" if where.field else "system"}),
                    hint="drop the prompt's `system`, or the header's `systems`",
                )

    temperature_axis = (
        temperatures
        if isinstance(temperatures, list) and temperatures
        else [None if temperature is ABSENT else temperature]
    )
    system_axis = systems if isinstance(systems, list) and systems else [effective.get("system")]
    return RunAxes(
        temperatures=list(temperature_axis),
        systems=list(system_axis),
        sets_temperature=is_number(temperature) or (isinstance(temperatures, list) and bool(temperatures)),
        tags=tags,
        effective=effective,
    )


def _length(value: Any) -> int:
    return len(value) if isinstance(value, (list, str)) else 0
