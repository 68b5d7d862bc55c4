"""The fake's prompt-cache switch (issue 45): replies report a share of their prompt tokens as
cached reads (and, for Anthropic, cache writes) in each provider's own usage fields; every reply body sent is kept in ``sent`` so a test can price it.
And its service tiers: a reply says the tier its request asked for, as OpenAI (``service_tier``)
and Gemini (``usageMetadata.serviceTier``) do, and flex requests can be refused as OpenAI
refuses them when it has no capacity (429, ``resource_unavailable``)."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any


@dataclasses.dataclass
class PromptCache:
    read_share: float = 0.0  # of the prompt tokens, reported as cached reads
    write_share: float = 0.0  # of the prompt tokens, reported as cache writes (Anthropic only)
    prompt_scale: int = 1  # prompt tokens per prompt word (a long-context tier without long prompts)
    # Report what each provider's own cache would: OpenAI and Gemini cache any prompt of
    # ``min_tokens`` or more by themselves and serve the longest start it shares with an earlier
    # prompt to the same model (OpenAI in steps of 128 tokens); Anthropic caches only the prefix a
    # request marks with cache_control, written the first time, read after. Overrides the shares.
    by_prefix: bool = False
    min_tokens: int = 1024
    sent: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # every reply body sent
    _seen: dict[str, list[list[str]]] = dataclasses.field(default_factory=dict, repr=False)
    _marked: set[tuple[str, str]] = dataclasses.field(default_factory=set, repr=False)
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)

    def apply(self, reply: dict[str, Any], body: Any = None) -> dict[str, Any]:
        """``reply`` (to the request ``body``) with its usage as this switch says, then kept in ``sent``."""
        if self.by_prefix and isinstance(body, dict):
            with self._lock:
                self._by_prefix(reply, body)
                self.sent.append(reply)
            return reply
        if "usage" in reply and "prompt_tokens" in reply["usage"]:  # OpenAI chat shape
            usage = reply["usage"]
            usage["prompt_tokens"] *= self.prompt_scale
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            cached = int(usage["prompt_tokens"] * self.read_share)
            if cached:
                usage["prompt_tokens_details"] = {"cached_tokens": cached}
        elif "usage" in reply:  # Anthropic: input_tokens excludes the cached reads and writes
            usage = reply["usage"]
            prompt = usage["input_tokens"] * self.prompt_scale
            read, write = int(prompt * self.read_share), int(prompt * self.write_share)
            usage["input_tokens"] = prompt - read - write
            if read or write:
                usage["cache_read_input_tokens"] = read
                usage["cache_creation_input_tokens"] = write
        elif "usageMetadata" in reply:  # Gemini: promptTokenCount includes the cached content
            usage = reply["usageMetadata"]
            usage["promptTokenCount"] *= self.prompt_scale
            cached = int(usage["promptTokenCount"] * self.read_share)
            if cached:
                usage["cachedContentTokenCount"] = cached
        with self._lock:
            self.sent.append(reply)
        return reply

    def _by_prefix(self, reply: dict[str, Any], body: dict[str, Any]) -> None:
        model = str(reply.get("model") or body.get("model") or "")
        blocks = _last_user_blocks(body)
        words = " ".join(text for text, _ in blocks).split()
        if "usage" in reply and "input_tokens" in reply["usage"]:  # Anthropic: marked prefixes only
            usage = reply["usage"]
            prompt = usage["input_tokens"] * self.prompt_scale
            marked = next((i for i, (_, mark) in enumerate(blocks) if mark), None)
            read = write = 0
            if marked is not None:
                prefix = " ".join(text for text, _ in blocks[: marked + 1])
                tokens = len(prefix.split()) * self.prompt_scale
                if tokens >= self.min_tokens:
                    if (model, prefix) in self._marked:
                        read = tokens
                    else:
                        self._marked.add((model, prefix))
                        write = tokens
            usage["input_tokens"] = prompt - read - write
            if read or write:
                usage["cache_read_input_tokens"] = read
                usage["cache_creation_input_tokens"] = write
            return
        earlier = self._seen.setdefault(model, [])
        shared = max((_common(words, seen) for seen in earlier), default=0) * self.prompt_scale
        earlier.append(words)
        if "usage" in reply and "prompt_tokens" in reply["usage"]:  # OpenAI
            usage = reply["usage"]
            usage["prompt_tokens"] *= self.prompt_scale
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            if usage["prompt_tokens"] >= self.min_tokens and shared >= self.min_tokens:
                usage["prompt_tokens_details"] = {"cached_tokens": shared // 128 * 128}
        elif "usageMetadata" in reply:  # Gemini's implicit cache
            usage = reply["usageMetadata"]
            usage["promptTokenCount"] *= self.prompt_scale
            if usage["promptTokenCount"] >= self.min_tokens and shared >= self.min_tokens:
                usage["cachedContentTokenCount"] = shared


def _common(one: list[str], two: list[str]) -> int:
    count = 0
    for a, b in zip(one, two):
        if a != b:
            break
        count += 1
    return count


def _last_user_blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The last user turn's text, as (text, marked for the cache) blocks."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return [(str(b.get("text", "")), "cache_control" in b) for b in content if isinstance(b, dict)]
            return [(str(content or ""), False)]
    for content in reversed(body.get("contents") or []):
        if isinstance(content, dict) and content.get("role") == "user":
            return [("".join(str(p.get("text", "")) for p in content.get("parts") or []), False)]
    return []


# OpenAI's answer to a flex request it has no capacity for (its flex processing guide: "429
# Resource Unavailable"; it is not charged).
FLEX_UNAVAILABLE = {
    "error": {
        "message": "Resource unavailable: flex processing has no capacity right now, please retry later",
        "type": "resource_unavailable",
        "code": "resource_unavailable",
    }
}


def asked_tier(body: Any) -> str | None:
    """The service tier a request body asks for (OpenAI ``service_tier``, Gemini ``serviceTier``)."""
    if not isinstance(body, dict):
        return None
    tier = body.get("service_tier", body.get("serviceTier"))
    return tier if isinstance(tier, str) else None


@dataclasses.dataclass
class ServiceTiers:
    unavailable: int = 0  # the next flex requests answered 429 resource unavailable
    refused: int = 0  # how many were
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)

    def refuses(self, body: Any) -> bool:
        """Whether this request is a flex one to refuse now (counted down)."""
        if asked_tier(body) != "flex":
            return False
        with self._lock:
            if self.unavailable <= 0:
                return False
            self.unavailable -= 1
            self.refused += 1
            return True

    @staticmethod
    def echo(body: Any, reply: dict[str, Any]) -> dict[str, Any]:
        """``reply`` saying the tier that served it, when its request asked for one (OpenAI's
        'auto' is served at 'default'); a request that asks none gets the reply it always got,
        as the batch fake's lines do."""
        tier = asked_tier(body)
        if tier is None:
            return reply
        if "choices" in reply:
            reply["service_tier"] = "default" if tier == "auto" else tier
        elif "usageMetadata" in reply:
            reply["usageMetadata"]["serviceTier"] = tier
        return reply
