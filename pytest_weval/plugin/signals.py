"""Stopping a run as pytest users expect (docs/engine.md, 'Stopping a run').

The first SIGINT or SIGTERM stops sending at once (the engine starts no request from then on and
gives the replies on the wire ``--weval-stop-grace`` to arrive and be stored), then pytest unwinds
as it does for Ctrl-C: every report is still written, marked interrupted, and the exit code is
pytest's ``INTERRUPTED``. SIGTERM counts as Ctrl-C because CI systems cancel a job with it and
kill the job a few seconds later: dying at once would lose the reports and the replies paid for.
A second signal is the user saying "now": one line, and the process ends (no traceback). The
same signal again within ``_SAME_STOP_S`` of the first is not a second one: GNU ``timeout``
signals its child and then the child's process group, so the controller receives one stop twice
(issue 41, item 7); a person's second Ctrl-C comes later than that.

An xdist worker whose controller died (SIGKILL, an OOM kill) would go on sending for the items it
holds, with nobody to report to: a watchdog notices the parent is gone and stops it the same way.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

_DEFAULT_HANDLERS = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
# One kill delivered twice (child, then its group) arrives within microseconds; a second
# keypress or `kill` takes far longer than this.
_SAME_STOP_S = 0.5
_PARENT_POLL_S = 0.5  # a worker notices a dead controller within this (the issue asks a second or two)


class StopSignals:
    """This process's SIGINT and SIGTERM handlers while the session runs. ``stop`` is called on
    the first signal, before pytest unwinds (from the main thread, between two bytecodes: it must
    only flag, never block)."""

    def __init__(self, stop: Callable[[], None]):
        self._stop = stop
        self.received: str | None = None  # the first signal's name
        self._received_at = 0.0
        self._previous: dict[int, Any] = {}
        self._closed = threading.Event()
        self._says_hard_stop = True  # an xdist worker leaves the line to its controller
        self._parent: int | None = None  # an xdist worker's controller (``watch_parent``)

    def install(self) -> None:
        """Take over SIGINT and SIGTERM where they still have Python's defaults (a program that
        embeds pytest and set its own keeps them)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, default in _DEFAULT_HANDLERS.items():
            if signal.getsignal(signum) is default:
                self._previous[signum] = default
                signal.signal(signum, self._handle)

    def restore(self) -> None:
        self._closed.set()
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, previous in self._previous.items():
            if signal.getsignal(signum) == self._handle:
                signal.signal(signum, previous)
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.received is not None:
            if name == self.received and time.monotonic() - self._received_at < _SAME_STOP_S:
                return  # the same stop delivered again (timeout: child, then group): already handled
            # os.write and os._exit: nothing here may wait on a lock the interrupted code holds
            if self._says_hard_stop:  # one group kill reaches every worker: one line, the controller's
                os.write(
                    2, f"\nweval: {name} again: stopped at once; replies still on the wire are not stored\n".encode()
                )
            os._exit(int(pytest.ExitCode.INTERRUPTED))
        self.received = name
        self._received_at = time.monotonic()
        self._stop()
        raise KeyboardInterrupt(name)

    def watch_parent(self) -> None:
        """xdist worker: stop as if signalled once the controller that started it is gone."""
        parent = self._parent = os.getppid()
        self._says_hard_stop = False

        def watch() -> None:
            while not self._closed.wait(_PARENT_POLL_S):
                if os.getppid() != parent:
                    self._stop()  # from this thread at once: no request starts while the signal travels
                    os.kill(os.getpid(), signal.SIGTERM)
                    return

        threading.Thread(target=watch, name="weval-controller-watch", daemon=True).start()

    def end_if_orphaned(self) -> None:
        """xdist worker at the end of its session, its replies stored: if its controller is gone
        (a second signal ended it at once while this worker still waited for replies on the wire),
        nobody will read its end, and xdist's attempt to send it would print 'cannot send' through a
        PluggyTeardownRaisedWarning (issue 41, item 9). It ends here, quietly."""
        if self._parent is not None and os.getppid() != self._parent:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(int(pytest.ExitCode.INTERRUPTED))
