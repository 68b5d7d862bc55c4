"""Embeddings endpoints (docs/engine.md, 'Embeddings'): the providers the reference embeds
with, OpenAI and Together, each as its client asks.

An embeddings request is a ``ModelRequest`` with ``endpoint="embeddings"`` and one message, the
text. Its reply's text is the vector in JSON, so the cache, the claims, the spool and the
budget keep and price it as any reply (never bought twice).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pytest_weval.engine.errors import ConfigError
from pytest_weval.engine.request import ModelReply, ModelRequest
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.transport.keys import api_key, base_url
from pytest_weval.engine.transport.providers.base import Adapter, MalformedReply, as_int, body_error, dig

EMBEDDING_PROVIDERS = ("openai", "together")
# The dimensions the reference's OpenAI client asks for; any other OpenAI model gets the first.
OPENAI_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072}


class Embeddings(Adapter):
    endpoint = "embeddings"
    default_temperature = None
    default_max_tokens = None

    def __init__(self, provider: str, model_id: str, model_name: str):
        super().__init__(model_id)
        self.provider = provider
        self.model_name = model_name

    @property
    def dimensions(self) -> int | None:
        if self.provider != "openai":
            return None
        return OPENAI_DIMENSIONS.get(self.model_name, OPENAI_DIMENSIONS["text-embedding-3-small"])

    def identity(self) -> dict[str, Any]:
        identity: dict[str, Any] = {"provider": self.provider, "endpoint": self.endpoint, "model": self.model_name}
        if self.dimensions is not None:
            identity["dimensions"] = self.dimensions
        return identity

    def _connect(self, env: Mapping[str, str], redactor: Redactor) -> tuple[str, dict[str, str]]:
        key = api_key(self.provider, self.model_id, env, redactor)
        url = base_url(self.provider, env) + "/embeddings"
        return url, {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def body(self, request: ModelRequest) -> dict[str, Any]:
        text = "".join(m.content or "" for m in request.messages)
        if self.provider == "together":
            # The reference's Together client sends every newline as a space.
            return {"model": self.model_name, "input": text.replace("\n", " ")}
        return {"model": self.model_name, "input": text, "dimensions": self.dimensions, "encoding_format": "float"}

    def parse(self, data: Any) -> ModelReply:
        error = body_error(data)
        if error is not None:
            raise error
        vector = dig(data, "data", 0, "embedding")
        if not isinstance(vector, list) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector
        ):
            raise MalformedReply("data[0].embedding is not a list of numbers")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return ModelReply(
            text=json.dumps(vector, separators=(",", ":")),
            input_tokens=as_int(usage.get("prompt_tokens")),
        )


def embeddings_adapter(model_id: str) -> Embeddings:
    provider, colon, name = model_id.partition(":")
    provider = provider.strip().lower()
    if not colon:  # as the reference's dispatcher: a bare name is an OpenAI model
        provider, name = "openai", model_id
    if provider not in EMBEDDING_PROVIDERS or not name.strip():
        raise ConfigError(
            f"embedding model '{model_id}': expected openai:<model> or together:<model> "
            "(the providers with an embeddings endpoint here); set the blueprint's embeddingModel",
            model_id=model_id,
        )
    return Embeddings(provider, model_id, name.strip())


def vector_of(reply: ModelReply) -> list[float]:
    """The vector an embeddings reply holds (its text, as the adapter wrote it)."""
    return [float(x) for x in json.loads(reply.text)]
