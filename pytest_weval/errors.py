"""The root of every error pytest-weval raises, so a caller can catch "any pytest-weval error"
(``except WevalError``), as ``httpx.HTTPError`` roots httpx's. Each layer's own errors subclass
it where they are defined; this module imports nothing, so any layer may use it.

``ErrorKind`` is what an item's error *is*, recorded on its ``ItemResult`` where the error is
made, so that reports say it in plain words from the kind, never by reading the message back.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["ErrorKind", "WevalError"]


class WevalError(Exception):
    """Base class of pytest-weval's exceptions."""


ErrorKind = Literal[
    "blueprint",  # the blueprint (or eval file) has a mistake: fix the file
    "missing_key",  # a provider key (or a variable a custom model needs) is not set
    "auth",  # the provider refused the key
    "replay_miss",  # offline replay has no recorded answer
    "rate_limit",  # the provider kept refusing: too many requests
    "timeout",  # the provider took too long
    "circuit_open",  # the model failed many times in a row; requests to it stopped
    "provider",  # the provider could not be reached or answered with an error
    "config",  # the model id or custom model definition cannot be used
    "budget",  # --weval-budget was reached before this item's requests were sent
    "interrupted",  # the run was interrupted before this item's requests were answered
    "judges",  # no judge could score the judged points
    "extraction",  # key points could not be extracted from the ideal answer
    "program",  # a program named by an agent eval file (code judge, cli target) failed
    "not_allowed",  # programs from eval files are not allowed in this run
    "no_points",  # nothing to score
    "internal",  # our own bug
]
