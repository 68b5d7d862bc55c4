"""The root of every error pytest-weval raises (and of the warnings it emits), so a caller can catch "any pytest-weval error"
(``except WevalError``), as ``httpx.HTTPError`` roots httpx's. Each layer's own errors subclass
it where they are defined; this module imports nothing, so any layer may use it.

``ErrorKind`` is what an item's error *is*, recorded on its ``ItemResult`` where the error is
made, so that reports say it in plain words from the kind, never by reading the message back.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["STORE_KINDS", "ErrorKind", "PytestWevalWarning", "WevalError", "WevalPointError", "WevalWarning"]


class WevalError(Exception):
    """Base class of pytest-weval's exceptions."""


# The warnings, under one base class so a user can filter them all
# (``-W ignore::pytest_weval.PytestWevalWarning``), as pytest's own ``_pytest/warning_types.py``
# does for ``PytestWarning``. ``pytest_weval.plugin.warning_types`` names them too.
class PytestWevalWarning(UserWarning):
    """Base class of every warning pytest-weval emits."""


class WevalWarning(PytestWevalWarning):
    """A finding about a blueprint: it runs, but probably not as its author meant. Located at
    the blueprint's file and line."""


class WevalPointError(PytestWevalWarning):
    """A point that errored on this response: excluded from the score, never silently."""


ErrorKind = Literal[
    "blueprint",  # the blueprint (or eval file) has a mistake: fix the file
    "missing_key",  # a provider key (or a variable a custom model needs) is not set
    "auth",  # the provider refused the key
    "replay_miss",  # offline replay has no recorded answer
    "rate_limit",  # the provider kept refusing: too many requests
    "timeout",  # the provider took too long
    "circuit_open",  # the model failed many times in a row; requests to it stopped
    "provider",  # the provider could not be reached or answered with an error
    "empty_reply",  # the model answered with nothing (an empty or blank reply)
    "config",  # the model id or custom model definition cannot be used
    "unknown_model",  # the provider says it has no model by this id (HTTP 404)
    "budget",  # --weval-budget was reached before this item's requests were sent
    "too_large",  # a reply was larger than --weval-max-reply-mb
    # The cache could not keep replies, so no request was sent (each would be paid for and lost):
    "store_full",  # its disk (or database) is full
    "store_read_only",  # it is read-only (file, folder, file system or database)
    "store_unreachable",  # its server stayed unreachable past --weval-store-retry
    "store_damaged",  # its file is damaged: writes fail
    "store",  # one of those four, as results files of earlier versions say it
    "batch_pending",  # --weval-batch=submit: the request is in a provider's batch not ended yet
    "interrupted",  # the run was interrupted before this item's requests were answered
    "judges",  # no judge could score the judged points
    "extraction",  # key points could not be extracted from the ideal answer
    "program",  # a program named by an agent eval file (code judge, cli target) failed
    "not_allowed",  # programs from eval files are not allowed in this run
    "no_points",  # nothing to score
    "no_fixture",  # --weval-fixtures-strict: the fixture file has no answer for it
    "internal",  # our own bug
]

# The kinds of a store that could keep no reply: the item's requests were not sent, and every
# item after it says the same, so the summary says it once.
STORE_KINDS: frozenset[ErrorKind] = frozenset(
    {"store_full", "store_read_only", "store_unreachable", "store_damaged", "store"}
)
