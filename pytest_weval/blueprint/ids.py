"""Ids and hashes that must equal the reference's, byte for byte.

Generated prompt ids (docs/format.md, 'Prompt ids'), blueprint ids from paths (docs/format.md, 'Blueprint ids'), the
run-label content hash (docs/format.md, 'Run label'), tag normalization (docs/format.md, 'Tags') and effective model ids (docs/format.md, 'Effective model ids').
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from pytest_weval.jsvalues import ABSENT, JS_WHITESPACE, js_json, js_number_str, js_string, js_trim, stable_stringify

__all__ = [
    "blueprint_id_from_path",
    "content_hash",
    "effective_model_id",
    "generated_prompt_id",
    "js_number_str",
    "locale_compare_key",
    "normalize_tag",
    "normalize_tags",
    "stable_stringify",
]


def generated_prompt_id(normalized_prompt: dict[str, Any]) -> str:
    """`hash-` + 12 hex of SHA-256 over json-stable-stringify of the prompt without its id."""
    body = {k: v for k, v in normalized_prompt.items() if k != "id"}
    digest = hashlib.sha256(stable_stringify(body).encode("utf-8", "surrogatepass")).hexdigest()
    return f"hash-{digest[:12]}"


# Applied in sequence, as the reference's chain of .replace() calls (docs/format.md, 'Blueprint ids': foo.json.yml -> foo).
_ID_SUFFIXES = (
    re.compile(r"\.civic\.ya?ml$"),
    re.compile(r"\.weval\.ya?ml$"),
    re.compile(r"\.ya?ml$"),
    re.compile(r"\.json$"),
)


def blueprint_id_from_path(rel_path: str) -> str:
    """`subdir/my-test.weval.yml` -> `subdir__my-test`. The caller rejects an id ending in `__`."""
    blueprint_id = rel_path
    for suffix in _ID_SUFFIXES:
        # JS `$` without the m flag matches only at the very end (Python's also before a final \n).
        match = suffix.search(blueprint_id)
        if match and match.end() == len(blueprint_id):
            blueprint_id = blueprint_id[: match.start()]
    return blueprint_id.replace("/", "__")


def normalize_tag(tag: str) -> str:
    """normalizeTag (docs/format.md, 'Tags'): `_internal` tags stay as written; others become kebab-case ASCII."""
    if not tag:
        return ""
    tag = js_trim(tag)
    if tag.startswith("_"):
        return tag
    return _NOT_TAG_CHAR.sub("", _TAG_SEPARATORS.sub("-", tag.lower()))


_TAG_SEPARATORS = re.compile(f"[{re.escape(JS_WHITESPACE)}_]+")
_NOT_TAG_CHAR = re.compile(r"[^a-z0-9-]")


def normalize_tags(tags: Iterable[str]) -> list[str]:
    """Normalized, empty ones dropped, first occurrence kept."""
    return list(dict.fromkeys(t for t in map(normalize_tag, tags) if t))


def effective_model_id(
    model_id: str,
    temperature: float | int | None,
    system_index: int | None = None,
    multi_system: bool | None = None,
) -> str:
    """`<id>[temp:<T>]`, plus `[sp_idx:<i>]` when the blueprint has several system variants.

    `temperature` is the resolved value sent (`tempValue ?? prompt.temperature ??
    config.temperature ?? 0`); None counts as 0. The system suffix is added when
    `multi_system` is true, or, if `multi_system` is not given, whenever `system_index` is.
    """
    text = f"{model_id}[temp:{js_number_str(0 if temperature is None else temperature)}]"
    with_system = (system_index is not None) if multi_system is None else multi_system
    if with_system:
        text += f"[sp_idx:{0 if system_index is None else system_index}]"
    return text


# --- String.prototype.localeCompare (ICU root collation), approximated -------------------------

# Primary order of ASCII punctuation and symbols in the root collation (CLDR/DUCET): they sort
# before digits, and digits before letters. Weights are encoded as characters so that keys
# compare as strings.
_PUNCTUATION_ORDER = "\t\n\v\f\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"
_PRIMARY_ASCII = {ord(ch): chr(1 + i) for i, ch in enumerate(_PUNCTUATION_ORDER)}
_PRIMARY_ASCII.update({ord(ch): chr(100 + i) for i, ch in enumerate("0123456789")})
_PRIMARY_ASCII.update({ord(ch): chr(200 + i) for i, ch in enumerate("abcdefghijklmnopqrstuvwxyz")})
_CASE_ASCII = {code: "1" if chr(code).isupper() else "0" for code in range(128)}


def _primary_weight(ch: str) -> str:
    code = ord(ch)
    if code < 128:
        return _PRIMARY_ASCII.get(code, chr(60 + code))
    return chr(min(0x400 + code, 0x10FFFF))  # after ASCII letters, in code-point order


def locale_compare_key(text: str) -> tuple[str, str, str]:
    """Sort key approximating `a.localeCompare(b)` (ICU root collation): letters compared
    without case or accents first, then accents, then case with lowercase first
    (`a-prompt` < `A-prompt` < `b-prompt`)."""
    if text.isascii():
        return (text.lower().translate(_PRIMARY_ASCII), "", text.translate(_CASE_ASCII))
    decomposed = unicodedata.normalize("NFD", text)
    base = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    primary = "".join(map(_primary_weight, base.casefold()))
    secondary = "".join(ch for ch in decomposed.casefold() if unicodedata.combining(ch))
    tertiary = "".join("1" if ch.isupper() else "0" for ch in base)
    return (primary, secondary, tertiary)


# --- Content hash (docs/format.md, 'Run label') -----------------------------------------------------------------------


def _js_default_sort(values: list[Any]) -> list[Any]:
    """Array.prototype.sort() without a comparator: by String(value) in UTF-16 code units,
    objects as "[object Object]", undefined last; stable."""
    return sorted(values, key=lambda v: js_string(v).encode("utf-16-be", "surrogatepass"))


_HASHED_PROMPT_KEYS = ("id", "promptText", "idealResponse", "system", "points", "weight")


def content_hash(config: dict[str, Any]) -> str:
    """generateConfigContentHash over the effective config (models resolved, not yet ids)."""
    temperatures = config.get("temperatures", ABSENT)
    if isinstance(temperatures, list) and temperatures:
        temperature_settings = temperatures[0] if len(temperatures) == 1 else _js_default_sort(temperatures)
    else:
        temperature_settings = config.get("temperature", ABSENT)
    systems = config.get("systems", ABSENT)
    prompts = []
    for prompt in config.get("prompts", []):
        # JSON.stringify drops undefined: absent keys are simply left out.
        prompts.append({k: prompt[k] for k in _HASHED_PROMPT_KEYS if k in prompt})
    prompts.sort(key=lambda p: locale_compare_key(js_string(p["id"]) if p.get("id") else ""))
    data: dict[str, Any] = {"models": _js_default_sort(list(config.get("models", [])))}
    if "system" in config:
        data["system"] = config["system"]
    if isinstance(systems, list):
        data["systems"] = _js_default_sort(list(systems))
    data["prompts"] = prompts
    if temperature_settings is not ABSENT:
        data["temperatureSettings"] = temperature_settings
    return hashlib.sha256(js_json(data).encode("utf-8", "surrogatepass")).hexdigest()[:16]
