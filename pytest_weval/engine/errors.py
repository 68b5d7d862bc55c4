"""Errors a model call can end with. Their text never holds a secret (the engine redacts it)."""

from __future__ import annotations

from pytest_weval.errors import ErrorKind, WevalError


class ModelCallError(WevalError):
    """A model request that could not be answered. ``str()`` is the user-facing message."""

    kind = "error"
    retryable = False

    def __init__(self, message: str, *, model_id: str | None = None):
        self.message = message
        self.model_id = model_id
        super().__init__(message)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"

    @property
    def error_kind(self) -> ErrorKind:
        """What the failure is, for an item's report (``ItemResult.error_kind``)."""
        return _KINDS.get(self.kind, "provider")

    def scrub(self, redact) -> ModelCallError:
        self.message = redact(self.message)
        self.args = (self.message,)
        return self


class ConfigError(ModelCallError):
    """The model id or custom model definition cannot be used (unknown provider, bad field,
    a ${VAR} that is not allowed)."""

    kind = "config"


class MissingKeyError(ModelCallError):
    """An API key (or a variable a custom model needs) is not set; ``variable`` names it."""

    kind = "missing_key"

    def __init__(self, message: str, *, model_id: str | None = None, variable: str = ""):
        self.variable = variable
        super().__init__(message, model_id=model_id)


class ReplayMissError(ModelCallError):
    """Replay mode (cache ro) and this response was never recorded. No network call was made."""

    kind = "replay_miss"


class ProviderError(ModelCallError):
    """The provider answered with an error, a malformed body, or not at all (after retries).

    ``status`` is the HTTP status, or None when no response arrived (timeout, connection).
    """

    kind = "provider"

    def __init__(
        self,
        status: int | None,
        message: str,
        *,
        model_id: str | None = None,
        rate_limited: bool = False,
        timed_out: bool = False,
    ):
        self.status = status
        self.rate_limited = rate_limited
        self.timed_out = timed_out
        super().__init__(message, model_id=model_id)

    @property
    def error_kind(self) -> ErrorKind:
        if self.status in (401, 403):
            return "auth"
        if self.rate_limited or self.status == 429:
            return "rate_limit"
        if self.timed_out:
            return "timeout"
        return "provider"


class UnknownModelError(ProviderError):
    """The provider answered 404 naming the model: it has no model by this id (a typo the
    pre-flight could not catch). Said once per model: later requests for it fail at once."""

    kind = "unknown_model"

    @property
    def error_kind(self) -> ErrorKind:
        return "unknown_model"


class RunInterrupted(ModelCallError):
    """The run was interrupted (Ctrl-C): no request is sent any more. Never shared with other
    processes as a request's outcome: the request was not answered, so it is asked again next run."""

    kind = "interrupted"


class BudgetReached(ModelCallError):
    """The run's spend reached ``--weval-budget`` (or the model has no known price under a
    budget): the request was not sent. Not shared with other processes as its outcome."""

    kind = "budget"


class BatchPending(ModelCallError):
    """``--weval-batch=submit``: the request is in a provider's batch that has not ended; its
    item is skipped, and a later run collects it (docs/batch.md). Never an outcome shared with
    other processes: each reads the batch's state in the store."""

    kind = "batch_pending"

    def __init__(self, message: str, *, model_id: str | None = None, provider: str = "", batch_id: str = ""):
        self.provider = provider
        self.batch_id = batch_id
        super().__init__(message, model_id=model_id)


class ReplyTooLargeError(ModelCallError):
    """A reply's body passed ``--weval-max-reply-mb``: it was not read further, so it is not
    stored, judged or written to any report. Not retried (the same request gets the same reply)."""

    kind = "too_large"


class StoreStoppedError(ModelCallError):
    """The store cannot keep replies, so no new request is sent: each would be paid for and lost.
    Not shared with other processes as the request's outcome. Its subclass says why, as the
    store reported it (an errno, SQLite's result code, PostgreSQL's SQLSTATE; see
    ``store/sqlite_health.py``), never read back from a message."""

    kind = "store"


class StoreFullError(StoreStoppedError):
    """The cache's disk (or database) is full."""

    kind = "store_full"


class StoreReadOnlyError(StoreStoppedError):
    """The cache is read-only: its file, folder, file system or database refuses writes."""

    kind = "store_read_only"


class StoreDamagedError(StoreStoppedError):
    """A write failed because the cache file is damaged."""

    kind = "store_damaged"


class StoreDownError(StoreStoppedError):
    """The store stayed unreachable past ``--weval-store-retry``: a reply could be neither stored
    nor shared."""

    kind = "store_unreachable"


class EmptyReplyError(ModelCallError):
    """The model answered, with nothing (an empty or blank text): there is nothing to score. The
    same error for a blueprint's prompt and an agent eval case."""

    kind = "empty_reply"

    def __init__(self, model_id: str):
        super().__init__(f"{model_id} returned an empty reply", model_id=model_id)


class CircuitOpenError(ModelCallError):
    """The model failed too many times in a row; requests for it fail fast for a while."""

    kind = "circuit_open"


_KINDS: dict[str, ErrorKind] = {
    "config": "config",
    "missing_key": "missing_key",
    "replay_miss": "replay_miss",
    "not_cached": "replay_miss",
    "interrupted": "interrupted",
    "budget": "budget",
    "circuit_open": "circuit_open",
    "unknown_model": "unknown_model",
    "too_large": "too_large",
    "store": "store",
    "store_full": "store_full",
    "store_read_only": "store_read_only",
    "store_unreachable": "store_unreachable",
    "store_damaged": "store_damaged",
    "batch_pending": "batch_pending",
    "empty_reply": "empty_reply",
}

ERROR_KINDS: dict[str, type[ModelCallError]] = {
    cls.kind: cls
    for cls in (
        ModelCallError,
        ConfigError,
        MissingKeyError,
        ReplayMissError,
        ProviderError,
        CircuitOpenError,
        ReplyTooLargeError,
    )
}

ERROR_KINDS[UnknownModelError.kind] = UnknownModelError


def rebuild_error(kind: str, message: str, status: int | None, model_id: str | None) -> ModelCallError:
    """An error another process recorded for a shared request (claims), as the same class."""
    cls = ERROR_KINDS.get(kind, ModelCallError)
    if issubclass(cls, ProviderError):
        return cls(status, message, model_id=model_id)
    return cls(message, model_id=model_id)
