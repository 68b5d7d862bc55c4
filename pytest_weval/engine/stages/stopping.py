"""Whether new requests may start: the run's interruption (Ctrl-C, SIGTERM, a stop signal in
the claims store) and the grace the requests in flight get (docs/engine.md, 'Interruption')."""

from __future__ import annotations

import time

from pytest_weval.engine.errors import RunInterrupted


class Stopping:
    def __init__(self, grace_s: float):
        self.grace_s = grace_s
        self.interrupted = False
        self.cancel_at: float | None = None  # interrupted: when the requests in flight are given up

    def interrupt(self) -> bool:
        """From now on no request starts. False when it was interrupted already."""
        if self.interrupted:
            return False
        self.interrupted = True
        self.cancel_at = time.monotonic() + self.grace_s
        return True

    def check(self) -> None:
        """Raises ``RunInterrupted`` once the run was interrupted: this request is not sent."""
        if self.interrupted:
            raise RunInterrupted("the run was interrupted before this request was sent")

    def grace_left(self) -> float:
        return max(0.0, (self.cancel_at or 0.0) - time.monotonic())
