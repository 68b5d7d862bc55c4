"""Retry decisions: which failures are retried, how long to wait, and the circuit breaker."""

from __future__ import annotations

import dataclasses
import random
import time
from typing import Any

from pytest_weval.engine.errors import CircuitOpenError

# 408 request timeout, 409 (OpenAI: "conflict, retry"), 425, 429 and every 5xx (incl. 529).
RETRY_STATUSES = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))


@dataclasses.dataclass
class Failure:
    """One attempt that did not give a reply. Whether it is retried is decided here, by the
    constructors below, from the status and the decoded body: never from a message's words."""

    status: int | None  # None: no response (timeout, connection)
    message: str
    retryable: bool
    rate_limited: bool = False
    retry_after: float | None = None
    data: Any = None  # decoded error body, for the OpenAI 400 adaptation
    timed_out: bool = False  # no reply within the timeout
    no_such_model: bool = False  # the provider has no model by this id (``names_missing_model``)

    @classmethod
    def http(cls, status: int, message: str, data: Any, retry_after: float | None, model_name: str) -> Failure:
        """An HTTP error status: a refusal to wait out, a fault to retry, or a final answer."""
        limited = is_rate_limited(status, data)
        return cls(
            status,
            message,
            retryable=limited or status in RETRY_STATUSES,
            rate_limited=limited,
            retry_after=retry_after,
            data=data,
            no_such_model=names_missing_model(status, data, model_name),
        )

    @classmethod
    def in_body(cls, status: int, message: str) -> Failure:
        """An error object inside a 2xx body, retried as its code would be."""
        limited = is_rate_limited(status, None)
        return cls(status, message, retryable=limited or status in RETRY_STATUSES, rate_limited=limited)

    @classmethod
    def malformed(cls, status: int, message: str) -> Failure:
        """A 2xx body that is not JSON or lacks the documented fields: retried."""
        return cls(status, message, retryable=True)

    @classmethod
    def no_reply(cls, message: str, *, timed_out: bool = False) -> Failure:
        """A timeout or a transport error (refused, reset, dropped): retried."""
        return cls(None, message, retryable=True, timed_out=timed_out)


def is_rate_limited(status: int | None, data: Any) -> bool:
    """A refusal to wait out, not a fault: 429, Anthropic's 529, or an error body whose type
    says so (``rate_limit_error``, ``overloaded_error``, OpenAI's ``rate_limit_exceeded``)."""
    if status in (429, 529):
        return True
    error = data.get("error") if isinstance(data, dict) else None
    kind = " ".join(str(error.get(k, "")) for k in ("type", "code")) if isinstance(error, dict) else ""
    return any(word in kind for word in ("rate_limit", "overloaded"))


def names_missing_model(status: int | None, data: Any, model_name: str) -> bool:
    """A 404 saying the provider has no model by this id, not a wrong path: OpenAI's API (and
    the compatible ones) says so by its code, ``model_not_found``. Anthropic's
    ``not_found_error`` and Gemini's ``NOT_FOUND`` are the same for a wrong path, so for them
    the error object must name the model the request asked for (``model: <name>``,
    ``models/<name> is not found``); a wrong path's ``Not Found`` names none."""
    if status != 404 or not isinstance(data, dict):
        return False
    error = data.get("error")
    if not isinstance(error, dict):
        return False
    if error.get("code") == "model_not_found":
        return True
    return bool(model_name) and model_name in str(error.get("message") or "")


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random) -> float:
    """Exponential backoff with jitter: a random point in [d/2, d], d = min(cap, base*2^(n-1))."""
    delay = min(cap, base * (2 ** max(0, attempt - 1)))
    return rng.uniform(delay / 2, delay)


def retry_delay(
    failure: Failure, attempt: int, *, base: float, cap: float, retry_after_cap: float, rng: random.Random
) -> float:
    if failure.retry_after is not None:
        # Honour the provider's wait (capped), never less than it asked for.
        return min(failure.retry_after, retry_after_cap)
    return backoff_delay(attempt, base, cap, rng)


class Breaker:
    """Per model: after ``threshold`` consecutive faults (refusals do not count), requests fail fast.
    After ``cooldown_s`` one probe is let through; its success closes the breaker."""

    def __init__(self, threshold: int, cooldown_s: float):
        self.threshold = threshold
        self.cooldown_s = cooldown_s
        self._failures: dict[str, int] = {}
        self._last_error: dict[str, str] = {}
        self._opened: dict[str, float] = {}
        self._probing: set[str] = set()

    def check(self, model_id: str) -> None:
        opened = self._opened.get(model_id)
        if opened is None or self.threshold <= 0:
            return
        if time.monotonic() - opened >= self.cooldown_s and model_id not in self._probing:
            self._probing.add(model_id)  # half-open: this request is the probe
            return
        raise CircuitOpenError(
            f"model '{model_id}' failed {self._failures.get(model_id, 0)} times in a row, so its "
            f"requests now fail fast (circuit breaker; last error: {self._last_error.get(model_id, '?')})",
            model_id=model_id,
        )

    def success(self, model_id: str) -> None:
        self._failures.pop(model_id, None)
        self._opened.pop(model_id, None)
        self._probing.discard(model_id)

    def failure(self, model_id: str, message: str) -> None:
        count = self._failures.get(model_id, 0) + 1
        self._failures[model_id] = count
        self._last_error[model_id] = message
        self._probing.discard(model_id)
        if self.threshold > 0 and count >= self.threshold:
            self._opened[model_id] = time.monotonic()

    def release_probe(self, model_id: str) -> None:
        """A probe that ended without a verdict (rate limit, cancellation)."""
        self._probing.discard(model_id)
