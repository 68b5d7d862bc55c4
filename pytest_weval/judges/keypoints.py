"""Key points from an ideal answer, for a prompt without points (docs/judges.md, 'Key-point extraction')."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

from pytest_weval.blueprint.model import EvalPoint
from pytest_weval.jsvalues import js_trim

from .config import KEYPOINT_MAX_TOKENS, KEYPOINT_TEMPERATURE, JudgePanel, JudgeSpec
from .consensus import Ask

__all__ = ["KEYPOINT_EXTRACTOR_ID", "build_keypoint_messages", "extract_key_points", "parse_key_points"]

KEYPOINT_EXTRACTOR_ID = "key-point-extractor"

_KEY_POINT = re.compile(r"<key_point>([\s\S]*?)</key_point>", re.IGNORECASE)


def build_keypoint_messages(prompt_text: str, ideal: str) -> list[dict[str, str]]:
    """``[system, user]`` messages asking a model to distil the ideal answer into key points."""
    system = (
        "You distil answers into their essential content. Given an answer to a prompt, list the "
        "distinct pieces of information, requirements or advice it covers, briefly and without "
        "overlap. Put every key point between <key_point> and </key_point> tags."
    )
    user = (
        "Read the <IDEAL_RESPONSE> below, an answer to the <PROMPT>, and extract its most essential "
        "pieces of information, requirements or advice as separate key points. Every key point "
        "MUST be wrapped in <key_point> and </key_point> tags, for example:\n"
        "<key_point>Water boils at 100 degrees Celsius at sea level.</key_point>\n"
        "Return only the key points, one per line if you can; the tags are what matters.\n\n"
        f"<PROMPT>\n{prompt_text}\n</PROMPT>\n\n"
        f"<IDEAL_RESPONSE>\n{ideal}\n</IDEAL_RESPONSE>\n"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_key_points(reply: str | None) -> list[str]:
    """Every ``<key_point>`` body (tags case-insensitive), trimmed; blank ones dropped."""
    if not reply:
        return []
    points = (js_trim(m.group(1)) for m in _KEY_POINT.finditer(reply))
    return [p for p in points if p]


async def extract_key_points(
    *,
    prompt_text: str,
    ideal: str,
    panel: JudgePanel | None = None,
    ask: Ask,
    models: Sequence[str] | None = None,
    errors: list[str] | None = None,
) -> list[EvalPoint] | None:
    """Text points extracted from ``ideal``, or None when every model failed.

    Models are tried in order (``models``, else ``panel.extraction_models``: the CLI judges,
    else the blueprint's ``judgeModels``, else the reference's defaults); the first that yields at
    least one key point wins. ``ask`` is called with a :class:`JudgeSpec` whose id is
    ``key-point-extractor``, temperature 0.1 and max_tokens 2000. ``prompt_text`` is the prompt
    as :func:`~pytest_weval.judges.prompts.prompt_context_text` renders it. When ``errors`` is a
    list, each model's failure is appended to it.
    """
    if models is None:
        models = panel.extraction_models if panel is not None else ()
    messages = build_keypoint_messages(prompt_text, ideal)
    for model in models:
        spec = JudgeSpec(KEYPOINT_EXTRACTOR_ID, model, "standard")
        try:
            reply = await ask(spec, messages, KEYPOINT_TEMPERATURE, KEYPOINT_MAX_TOKENS)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - try the next model
            if errors is not None:
                errors.append(f"key point extraction with {model} failed: {exc}")
            continue
        if not reply or not js_trim(reply):
            if errors is not None:
                errors.append(f"key point extraction with {model}: empty response")
            continue
        texts = parse_key_points(reply)
        if not texts:
            if errors is not None:
                errors.append(f"key point extraction with {model}: no <key_point> tags in: {reply[:200]}")
            continue
        return [EvalPoint(text=t, display_text=t, multiplier=1.0) for t in texts]
    if errors is not None and not models:
        errors.append("key point extraction: no model to ask")
    return None
