"""promptfoo provider ids -> this plugin's model ids (docs/promptfoo.md, 'Providers').

Chat models of the providers the engine speaks to map onto its ids; an OpenAI-compatible
``config.apiBaseUrl`` becomes a custom model object (``url`` from the file, as a blueprint's
custom model may name one; ``{{ env.NAME }}`` is written as ``${NAME}``, which the engine
substitutes only for variables ``--weval-allow-env`` allows, rulings 16-17). Anything else (a
script, an ``exec:``, ``python:``, an SDK package, an HTTP provider) cannot run here: the
provider carries a ``problem``, one located error for each of its items.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_weval.blueprint.model import Location
from pytest_weval.formats.promptfoo.model import PfProvider

# promptfoo prefix -> (our provider, the parts of the id that are the model's name after it)
_CHAT_PREFIXES = (
    ("openai:chat:", "openai"),
    ("openai:responses:", "openai"),
    ("anthropic:messages:", "anthropic"),
    ("google:", "google"),
    ("vertex:", "google"),
    ("openrouter:", "openrouter"),
    ("mistral:", "mistral"),
    ("togetherai:", "together"),
    ("xai:", "xai"),
)
# openai:<kind>:... kinds that are not chat completions
_OPENAI_NOT_CHAT = (
    "completion",
    "embedding",
    "embeddings",
    "assistant",
    "image",
    "moderation",
    "realtime",
    "transcription",
)
_UNRUNNABLE = ("exec:", "python:", "file://", "http:", "https:", "webhook:", "browser:", "script:", "golang:", "ruby:")
_ENV_REF = re.compile(r"\{\{\s*env\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
HINT = (
    "use a chat model promptfoo id this plugin maps (openai:chat:<model>, openai:<model>, "
    "anthropic:messages:<model>, google:<model>, vertex:<model>, openrouter:<model>, mistral:<model>, "
    "or openai:chat:<model> with config.apiBaseUrl), or pass --weval-models=<provider:model>"
)


# promptfoo 0.123.1's model for `openai:chat` and `openai:responses` written without one (and no
# `config.model`); its provider registry names it as the default of both.
PROMPTFOO_DEFAULT_OPENAI_MODEL = "gpt-5.6-terra"
_OPENAI_BARE = ("openai:chat", "openai:chat:", "openai:responses", "openai:responses:")


def map_provider_id(written: str, config_model: Any = None) -> tuple[str | None, str | None]:
    """(our model id, None) or (None, why it cannot run). ``config_model``: the provider's
    ``config.model``, which names the model of a bare ``openai:chat`` as in promptfoo."""
    text = written.strip()
    if text in _OPENAI_BARE:
        named = config_model.strip() if isinstance(config_model, str) else ""
        return f"openai:{named or PROMPTFOO_DEFAULT_OPENAI_MODEL}", None
    if text.startswith(_UNRUNNABLE) or text.endswith((".py", ".js", ".ts", ".mjs", ".cjs", ".sh")):
        return None, f"provider '{written}' runs a program or calls a service this plugin does not run"
    for prefix, ours in _CHAT_PREFIXES:
        if text.startswith(prefix):
            name = text[len(prefix) :]
            if ours == "google" and name.startswith(("chat:", "gemini:")):
                name = name.split(":", 1)[1]
            if name:
                return f"{ours}:{name}", None
    if text.startswith("openai:"):
        rest = text[len("openai:") :]
        kind = rest.split(":", 1)[0]
        if kind in _OPENAI_NOT_CHAT:
            return None, f"provider '{written}' is an OpenAI '{kind}' endpoint, not chat completions"
        if rest and ":" not in rest:
            return f"openai:{rest}", None
    if text.startswith("anthropic:") and text.count(":") == 1:
        return f"anthropic:{text.split(':', 1)[1]}", None
    return None, f"provider '{written}' is not one this plugin speaks to"


def map_embedding_provider(raw: Any) -> tuple[str | None, str | None]:
    """A grader's embedding provider (``similar``, ``answer-relevance``): ``openai:embedding:<m>``
    (or ``openai:embeddings:<m>``, ``{id: ...}``) -> (``openai:<m>``, None), else (None, why)."""
    written = raw.get("id") if isinstance(raw, dict) else raw
    if isinstance(written, str):
        for prefix in ("openai:embedding:", "openai:embeddings:"):
            if written.startswith(prefix) and written[len(prefix) :]:
                return f"openai:{written[len(prefix) :]}", None
    return None, f"embedding provider {written!r} is not one this plugin speaks to (use openai:embedding:<model>)"


def promptfoo_provider_id(raw: Any) -> str | None:
    """promptfoo 0.123.1's ``provider.id()`` when it is not the id as written (measured against
    its CLI): its OpenAI chat provider, loaded from the text ``openai:chat:<m>``, calls itself
    ``openai:<m>``; an object's ``id`` (``{id: ...}`` or ``{<id>: {config}}``) is kept."""
    prefix = "openai:chat:"
    if isinstance(raw, str) and raw.startswith(prefix) and raw[len(prefix) :]:
        return "openai:" + raw[len(prefix) :]
    if isinstance(raw, str) and raw.strip() in ("openai:chat", "openai:chat:"):
        return "openai:" + PROMPTFOO_DEFAULT_OPENAI_MODEL
    return None


def build_provider(raw: Any, index: int, location: Location) -> PfProvider:
    """A ``providers:`` entry: a string id, ``{id, label, config}``, or promptfoo's
    ``{<id>: {config...}}`` single-key mapping."""
    config: Any
    if isinstance(raw, str):
        written, label, config = raw, None, {}
    elif isinstance(raw, dict) and "id" not in raw and len(raw) == 1 and isinstance(next(iter(raw.values())), dict):
        written, body = next(iter(raw.items()))
        label, config = body.get("label"), body.get("config") or {}
    elif isinstance(raw, dict) and isinstance(raw.get("id"), str):
        written, label, config = raw["id"], raw.get("label"), raw.get("config") or {}
    else:
        return PfProvider(
            written_id=f"provider-{index}",
            label=None,
            index=index,
            location=location,
            problem="a provider is a promptfoo provider id or an object with an `id`; " + HINT,
        )
    label = str(label) if label is not None else None
    if not isinstance(config, dict):
        return PfProvider(written, label, index, location, problem="a provider's `config` must be a mapping")
    temperature = config.get("temperature")
    max_tokens = config.get("max_tokens", config.get("maxTokens", config.get("max_completion_tokens")))
    system = config.get("systemPrompt", config.get("system"))
    problem = None
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))):
        problem = "`config.temperature` must be a number"
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)):
        problem = "`config.max_tokens` must be a whole number"
    if system is not None and not isinstance(system, str):
        problem = "`config.systemPrompt` must be text"
    model_id, why = map_provider_id(written, config.get("model"))
    custom: dict[str, Any] | None = None
    base = config.get("apiBaseUrl") or config.get("apiHost")
    if model_id is not None and base is not None:
        if not isinstance(base, str) or not model_id.startswith("openai:"):
            why, model_id = "`config.apiBaseUrl` is supported for OpenAI-compatible chat providers (openai:...)", None
        else:
            url = _ENV_REF.sub(lambda m: "${" + m.group(1) + "}", base.rstrip("/"))
            if not url.startswith(("http://", "https://", "${")):
                url = "https://" + url
            custom_id = label or written
            custom = {
                "id": custom_id,
                "url": url + "/chat/completions",
                "modelName": model_id.split(":", 1)[1],
                "inherit": "openai",
            }
            headers = config.get("headers")
            if isinstance(headers, dict):
                custom["headers"] = {
                    str(k): _ENV_REF.sub(lambda m: "${" + m.group(1) + "}", str(v)) for k, v in headers.items()
                }
            model_id = custom_id
    if why is not None:
        problem = problem or f"{why}; {HINT}"
    return PfProvider(
        written_id=written,
        label=label,
        index=index,
        location=location,
        model_id=model_id,
        custom=custom,
        temperature=float(temperature) if isinstance(temperature, (int, float)) and problem is None else None,
        max_tokens=max_tokens if isinstance(max_tokens, int) and problem is None else None,
        system=system if isinstance(system, str) else None,
        config=dict(config),
        problem=problem,
        promptfoo_id=promptfoo_provider_id(raw),
    )
