"""The engine's request/reply records and its settings.

Nothing here holds a secret: API keys are read from ``EngineSettings.env`` only when a request
is sent, and ``env`` is left out of ``repr``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pytest_weval.defaults as defaults
from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.results import Usage

CACHE_MODES = ("rw", "ro", "refresh", "off")
BATCH_MODES = ("off", "wait", "submit")  # --weval-batch (docs/batch.md)
SERVICE_TIERS = ("auto", "default", "flex", "priority")  # --weval-service-tier (docs/engine.md, 'Prices')
PROMPT_CACHE_MODES = ("auto", "off")  # --weval-prompt-cache
CACHE_STORES = ("sqlite", "files")  # or a postgresql:// URL (engine/store/backends.py)


@dataclasses.dataclass(frozen=True, slots=True)
class ChatMessage:
    role: str
    content: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class ModelRequest:
    """One completion (or embeddings) request. ``purpose``, ``priority``, ``no_cache``, ``timeout_s`` and
    ``max_attempts`` steer how it is sent; they are not part of the cache key. ``sample`` is:
    sample 1, 2, ... of the same request is a fresh answer, recorded under its own key."""

    model: ModelSpec
    messages: tuple[ChatMessage, ...]
    temperature: float | None = None
    max_tokens: int | None = None
    no_cache: bool = False
    priority: int = 0  # lower is sent first (item order)
    purpose: str = "generate"  # generate | judge | extract | ...
    timeout_s: float | None = None  # per attempt; None: the engine's setting
    max_attempts: int | None = None  # None: the engine's setting
    sample: int = 0
    # "chat" (a completion) or "embeddings" (the vector of the one message's text, as the
    # reply's text in JSON: docs/engine.md, 'Embeddings').
    endpoint: str = "chat"
    # The start of the request shared with other calls of the run (the judge calls of one
    # answer: system prompt, transcript and answer; only the criterion differs): every message
    # but the last, and this many characters of the last. ``shared_by``: how many calls of the
    # run share it. A provider's prompt cache may be told (``--weval-prompt-cache``); neither is
    # part of the cache key.
    shared_prefix_chars: int = 0
    shared_by: int = 0

    def __post_init__(self) -> None:
        # Accept lists and dicts for convenience; store an immutable tuple of ChatMessage.
        messages = tuple(
            m if isinstance(m, ChatMessage) else ChatMessage(m["role"], m.get("content")) for m in self.messages
        )
        object.__setattr__(self, "messages", messages)


@dataclasses.dataclass(slots=True)
class ModelReply:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    cached: bool = False  # served from the cache store (this or an earlier run)
    tool_calls: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    latency_s: float = 0.0
    refused: int = 0  # times the provider refused it (rate limits) before answering
    rate_wait_s: float = 0.0  # seconds it waited on rate limits
    # The reply body's usage and service tier as the provider sent them (``billing_of``), priced
    # by ``PriceBook.reply_cost``: cached reads and cache writes bill at their own rates.
    billing: dict[str, Any] | None = None
    # When its request was sent (epoch seconds): a dated price applies from its day.
    requested_at: float | None = None

    def copy(self, *, cached: bool | None = None) -> ModelReply:
        """A caller's own copy (its own ``tool_calls`` list), ``cached`` changed if given: what
        ``dataclasses.replace`` makes, at a fraction of its cost (it is made for every reply)."""
        return ModelReply(
            text=self.text,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached=self.cached if cached is None else cached,
            tool_calls=list(self.tool_calls),
            latency_s=self.latency_s,
            refused=self.refused,
            rate_wait_s=self.rate_wait_s,
            billing=self.billing,
            requested_at=self.requested_at,
        )

    def usage(self) -> Usage:
        """What this reply adds to an item's usage record."""
        return Usage(
            requests=1,
            cache_hits=int(self.cached),
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            refused=self.refused,
            rate_wait_s=self.rate_wait_s,
        )


class ModelClient(Protocol):
    """What sends a request and returns its reply (the ``Engine``, on its own loop)."""

    async def complete(self, request: ModelRequest) -> ModelReply: ...


@runtime_checkable
class HoldsBudget(Protocol):
    """A ``ModelClient`` that can reserve room in ``--weval-budget`` for ``count`` generations
    of ``request`` before the first is sent (an item's most samples, docs/sampling.md); raises
    ``BudgetReached`` when they do not fit. The plan's client does not: it sends nothing."""

    def holding(self, request: ModelRequest, count: int) -> AbstractAsyncContextManager[None]: ...


@dataclasses.dataclass(frozen=True)
class EngineSettings:
    """How the engine sends, retries, limits and caches. Defaults suit a real run."""

    cache_mode: str = defaults.CACHE_MODE  # rw | ro (replay) | refresh | off
    cache_dir: Path | str = defaults.CACHE_FOLDER
    # sqlite | files | postgresql://user@host:port/database; out of the repr (a URL may hold a password)
    cache_store: str = dataclasses.field(default=defaults.CACHE_STORE, repr=False)
    concurrency: int | None = None  # global cap on requests in flight (whole run)
    provider_concurrency: Mapping[str, int] = dataclasses.field(default_factory=dict)
    adaptive: bool = True  # AIMD: shrink on 429, grow back on success
    max_attempts: int = defaults.MAX_ATTEMPTS  # per request, for faults; rate-limit refusals spend none
    timeout_s: float = defaults.TIMEOUT_S  # per attempt, whole request (connect + send + read)
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 60.0  # a faulty reply's Retry-After (503, say) is honoured up to this
    # Longest a request waits on rate limits (refusals and pacing) before it is an error.
    rate_limit_wait_s: float = defaults.RATE_LIMIT_WAIT_S
    # After an interrupt: how long replies already on the wire may take to arrive (and be
    # stored, so the next run does not buy them again) before they are cancelled.
    stop_grace_s: float = defaults.STOP_GRACE_S
    max_reply_mb: float = defaults.MAX_REPLY_MB  # a reply's body larger than this is an error, never read whole
    # How long a store server that does not answer is waited for (sending paused) before the
    # run gives it up and keeps its replies in the spool.
    store_retry_s: float = defaults.STORE_RETRY_S
    budget_usd: float | None = None  # stop sending once the run's spend reaches it
    prices: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # model id -> prices.Price (weval_prices)
    breaker_threshold: int = 10  # consecutive non-rate-limit failures that open a model's breaker
    breaker_cooldown_s: float = 60.0  # then one probe request is let through
    allowed_env: frozenset[str] = frozenset()  # ${VAR} allowed in custom model url/headers
    env: Mapping[str, str] | None = dataclasses.field(default=None, repr=False)  # None: os.environ
    worker_count: int = 1
    worker_id: str = "main"
    run_id: str | None = None  # shared by all xdist workers of one run (and machines, --weval-run-id)
    session_id: str | None = None  # this pytest session (xdist's testrunuid): its controller's stop signal
    # When the run began (all xdist workers share the controller's): a stored reply created
    # since then was fetched by this run, not replayed from an earlier one.
    run_started: float | None = None
    # Cross-process claims on requests; None: whenever another process may share the store
    # (``coordinating``). True also shares items out (a run id given by the user).
    coordinate: bool | None = None
    claim_lease_s: float = 30.0  # a claim's lease, renewed by its holder every lease/3
    poll_interval_s: float = 0.05  # how often a waiter looks for a result another process sends
    coordination_dir: Path | str | None = None  # files store: where the claims DB lives
    # Requests to providers with a batch API go through it (docs/batch.md): off | wait | submit.
    batch: str = defaults.BATCH
    batch_poll_s: float = defaults.BATCH_POLL_S  # how often an open batch's status is asked
    batch_round_s: float = 1.0  # a round is submitted once no request joined it for this long
    service_tier: str = defaults.SERVICE_TIER  # --weval-service-tier: auto | default | flex | priority
    prompt_cache: str = defaults.PROMPT_CACHE  # --weval-prompt-cache: auto | off

    def __post_init__(self) -> None:
        if self.cache_mode not in CACHE_MODES:
            raise ValueError(f"cache_mode {self.cache_mode!r}: choose one of {', '.join(CACHE_MODES)}")
        if self.cache_store not in CACHE_STORES and not self.cache_store.lower().startswith(
            ("postgresql://", "postgres://")
        ):
            raise ValueError("cache_store: choose sqlite, files or a postgresql://user@host:port/database URL")
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.service_tier not in SERVICE_TIERS:
            raise ValueError(f"service_tier {self.service_tier!r}: choose one of {', '.join(SERVICE_TIERS)}")
        if self.prompt_cache not in PROMPT_CACHE_MODES:
            raise ValueError(f"prompt_cache {self.prompt_cache!r}: choose auto or off")
        if self.worker_count < 1:
            raise ValueError("worker_count must be at least 1")
        if self.batch not in BATCH_MODES:
            raise ValueError(f"batch {self.batch!r}: choose off, wait or submit")
        if self.batch != "off" and self.cache_mode not in ("rw", "refresh"):
            raise ValueError(
                f"--weval-batch={self.batch} needs a cache to collect into (--weval-cache=rw or refresh), "
                f"not --weval-cache={self.cache_mode}"
            )
        object.__setattr__(self, "allowed_env", frozenset(self.allowed_env or ()))
        object.__setattr__(self, "provider_concurrency", dict(self.provider_concurrency or {}))

    @property
    def environ(self) -> Mapping[str, str]:
        return os.environ if self.env is None else self.env

    @property
    def coordinating(self) -> bool:
        """Requests are claimed in the store before they are sent: under xdist, and whenever
        replies are written to a store that a second run (another terminal, another CI job) may
        be writing at the same time, so the two never buy the same reply (docs/engine.md,
        'Cross-process claims')."""
        if self.coordinate is not None:
            return self.coordinate or self.batch != "off"
        return self.worker_count > 1 or self.cache_mode in ("rw", "refresh")

    @property
    def shares_items(self) -> bool:
        """Items, not only requests, are shared out: the workers of one xdist session, or the
        machines that give one ``--weval-run-id``."""
        return self.worker_count > 1 or self.coordinate is True
