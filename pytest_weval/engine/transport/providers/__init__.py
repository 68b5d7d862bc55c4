"""Choosing the adapter for a model id (docs/engine.md, 'Providers')."""

from __future__ import annotations

import difflib

from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.engine.errors import ConfigError
from pytest_weval.engine.transport.keys import STANDARD_PROVIDERS
from pytest_weval.engine.transport.providers.anthropic import Anthropic
from pytest_weval.engine.transport.providers.base import Adapter, BodyError, HttpCall, MalformedReply, error_message
from pytest_weval.engine.transport.providers.custom import Custom
from pytest_weval.engine.transport.providers.embeddings import embeddings_adapter
from pytest_weval.engine.transport.providers.google import Google
from pytest_weval.engine.transport.providers.openai_compat import OpenAICompat

__all__ = ["Adapter", "BodyError", "HttpCall", "MalformedReply", "adapter_for", "error_message"]


def adapter_for(model: ModelSpec, allowed_env: frozenset[str], endpoint: str = "chat") -> Adapter:
    """A custom model is found by its id first; otherwise ``provider:name``. ``endpoint``
    "embeddings": the provider's embeddings endpoint (openai and together only)."""
    model_id = model.id
    if endpoint == "embeddings":
        return embeddings_adapter(model_id)
    if model.custom is not None:
        return Custom(model_id, dict(model.custom), allowed_env)
    if ":" not in model_id:
        raise ConfigError(
            f"Invalid model id '{model_id}': expected provider:model (for example "
            f"openai:gpt-4o-mini) or the id of a custom model",
            model_id=model_id,
        )
    provider, name = model_id.split(":", 1)
    provider = provider.strip().lower()
    name = name.strip()
    if provider not in STANDARD_PROVIDERS:
        close = difflib.get_close_matches(provider, STANDARD_PROVIDERS, n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}:{name}'?" if close else ""
        raise ConfigError(
            f"Unsupported provider '{provider}' in model id '{model_id}' (supported: {', '.join(STANDARD_PROVIDERS)})"
            f"{hint}",
            model_id=model_id,
        )
    if not name:
        raise ConfigError(f"Invalid model id '{model_id}': no model name after '{provider}:'", model_id=model_id)
    if provider == "anthropic":
        return Anthropic(model_id, name)
    if provider == "google":
        return Google(model_id, name)
    return OpenAICompat(provider, model_id, name)
