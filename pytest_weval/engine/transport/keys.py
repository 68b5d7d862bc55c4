"""Provider names, API key variables, base URLs and ${VAR} substitution (docs/rulings.md, ruling 16)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from pytest_weval.engine.errors import ConfigError, MissingKeyError
from pytest_weval.engine.secrets import Redactor

STANDARD_PROVIDERS = ("openrouter", "openai", "anthropic", "google", "mistral", "together", "xai")

# Variables holding each provider's key, in the order they are tried.
KEY_VARS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral": ("MISTRAL_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
}

# <PROVIDER>_BASE_URL and its default, as each official SDK spells it.
BASE_URLS: dict[str, tuple[str, str]] = {
    "openai": ("OPENAI_BASE_URL", "https://api.openai.com/v1"),
    "anthropic": ("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
    "google": ("GEMINI_BASE_URL", "https://generativelanguage.googleapis.com"),
    "mistral": ("MISTRAL_BASE_URL", "https://api.mistral.ai/v1"),
    "together": ("TOGETHER_BASE_URL", "https://api.together.xyz/v1"),
    "xai": ("XAI_BASE_URL", "https://api.x.ai/v1"),
    "openrouter": ("OPENROUTER_BASE_URL", "https://openrouter.ai/api/v1"),
}

_VAR = re.compile(r"\$\{([^}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def base_url(provider: str, env: Mapping[str, str]) -> str:
    var, default = BASE_URLS[provider]
    value = (env.get(var) or "").strip()
    return (value or default).rstrip("/")


def api_key(provider: str, model_id: str, env: Mapping[str, str], redactor: Redactor) -> str:
    names = KEY_VARS[provider]
    for name in names:
        value = (env.get(name) or "").strip()
        if value:
            redactor.add(value, env.get(name))
            return value
    wanted = " or ".join(names)
    raise MissingKeyError(f"{wanted} is not set: model '{model_id}' needs it", model_id=model_id, variable=wanted)


def env_references(text: str) -> list[str]:
    return _VAR.findall(text)


def check_references(text: str, where: str, model_id: str, allowed: frozenset[str]) -> None:
    """Raise ConfigError for a ${VAR} that the allow-list does not name (checked without
    reading the environment, so replay from the cache needs no variable to be set)."""
    for name in env_references(text):
        if not _NAME.match(name):
            raise ConfigError(
                f"custom model '{model_id}': {where} has '${{{name}}}', which is not a variable name",
                model_id=model_id,
            )
        if name not in allowed:
            raise ConfigError(
                f"custom model '{model_id}': {where} refers to ${{{name}}}, which is not allowed; "
                f"allow it with --weval-allow-env={name} (or ini weval_allow_env)",
                model_id=model_id,
            )


def substitute(
    text: str,
    where: str,
    model_id: str,
    allowed: frozenset[str],
    env: Mapping[str, str],
    redactor: Redactor,
) -> str:
    """Replace each allowed ${VAR} by its value; the values are registered as secrets."""
    check_references(text, where, model_id, allowed)

    def value_of(match: re.Match[str]) -> str:
        name = match.group(1)
        value = env.get(name)
        if value is None or value == "":
            raise MissingKeyError(
                f"custom model '{model_id}': {where} needs environment variable {name}, which is not set",
                model_id=model_id,
                variable=name,
            )
        redactor.add(value)
        return value

    return _VAR.sub(value_of, text)
