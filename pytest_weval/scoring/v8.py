"""V8 isolates (mini-racer) shared by the whole process, created lazily, one lock each.

Why this shape:

* Starting an isolate costs ~5 ms, so each kind is started once per process and reused.
* mini-racer runs every evaluation as a task on the isolate's thread and reports back through
  an asyncio loop. If the isolate were created inside a running loop (the pytest-weval engine
  loop, pytest-asyncio's), mini-racer would bind to that loop and could not apply timeouts
  from it. So every isolate here is bound to one private loop on a daemon thread.
* mini-racer is not thread-safe: every use of an isolate holds its lock. V8 is initialized,
  and isolates are created and freed, on the loop's thread, which never exits: done from a
  short-lived thread (a ``to_thread`` worker), the next isolate crashes the process.
* A timeout (TerminateExecution) or the hard memory limit leaves V8 usable, but work a script
  queued for later (a promise job that never ends) runs outside any task and cannot be
  terminated; only closing the isolate stops it. ``Isolate.probe`` detects that case so the
  caller can recreate the isolate.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_weval.errors import WevalError

if TYPE_CHECKING:
    from py_mini_racer import MiniRacer


class JsTimeout(WevalError):
    """The evaluation ran past its time limit and was terminated."""


class JsOutOfMemory(WevalError):
    """The evaluation hit the isolate's hard memory limit and was terminated."""


class JsEngineError(WevalError):
    """V8 raised where our own runner code never should (an internal failure)."""


@dataclass
class EngineStats:
    """Time spent waiting on V8, for the bench (``bench/points.py``)."""

    evals: int = 0
    seconds: float = 0.0
    isolates_started: int = 0

    def reset(self) -> None:
        self.evals = 0
        self.seconds = 0.0
        self.isolates_started = 0


STATS = EngineStats()

T = TypeVar("T")
_ISOLATES: list[Isolate] = []
_loop_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
# mini-racer as it was imported when V8 started: its isolates and its exception classes are
# used from this one module object, even if sys.modules later loses it (pytester's in-process
# runs drop what each run imported; a second import would bring new exception classes that
# the running isolates never raise, and a second V8 initialisation).
_mini_racer: Any = None


def _engine_loop() -> asyncio.AbstractEventLoop:
    """The private loop, on a daemon thread that lives as long as the process. V8 is
    initialized there, and isolates are created and freed there (``_on_engine_thread``)."""
    global _loop
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            ready = threading.Event()
            failure: list[BaseException] = []

            def serve() -> None:
                try:
                    # mini-racer and V8 only when a run evaluates JavaScript (a $js point, a
                    # regex): not at import, so a run without them starts without them.
                    global _mini_racer
                    import py_mini_racer

                    py_mini_racer.init_mini_racer(ignore_duplicate_init=True)
                    _mini_racer = py_mini_racer
                except BaseException as exc:  # noqa: BLE001 - reported to the caller below
                    failure.append(exc)
                finally:
                    ready.set()
                loop.run_forever()

            threading.Thread(target=serve, name="weval-v8", daemon=True).start()
            ready.wait()
            if failure:
                raise failure[0]
            _loop = loop
        return _loop


def _on_engine_thread(fn: Callable[[], T]) -> T:
    """Run ``fn`` on the engine thread. Isolates are created and freed there: created on a
    short-lived thread (a ``to_thread`` worker), the next isolate crashes the process."""
    loop = _engine_loop()

    async def call() -> T:
        return fn()

    return asyncio.run_coroutine_threadsafe(call(), loop).result()


class Isolate:
    """One lazily started V8 isolate with a setup script, a memory cap and a lock."""

    def __init__(self, name: str, setup_js: str, memory_limit_bytes: int) -> None:
        self.name = name
        self._setup_js = setup_js
        self._memory_limit = memory_limit_bytes
        self.lock = threading.RLock()
        self._stack: contextlib.ExitStack | None = None
        self._mr: MiniRacer | None = None
        _ISOLATES.append(self)

    def _racer(self) -> MiniRacer:
        if self._mr is None:
            self._stack, self._mr = _on_engine_thread(self._start)
            STATS.isolates_started += 1
        return self._mr

    def _start(self) -> tuple[contextlib.ExitStack, MiniRacer]:
        loop = _engine_loop()  # imports mini-racer
        stack = contextlib.ExitStack()
        mr = stack.enter_context(_mini_racer.mini_racer(loop))
        mr.set_hard_memory_limit(self._memory_limit)
        mr.eval(self._setup_js)  # on the loop's thread mini-racer runs it synchronously
        return stack, mr

    def eval(self, code: str, timeout_s: float) -> Any:
        """Evaluate ``code`` (the caller holds ``lock``); V8 failures become our exceptions."""
        mr = self._racer()
        start = time.perf_counter()
        try:
            return mr.eval(code, timeout_sec=timeout_s)
        except Exception as exc:
            ours = _ours(exc)
            if ours is None:
                raise
            raise ours from exc
        finally:
            STATS.evals += 1
            STATS.seconds += time.perf_counter() - start

    def probe(self, timeout_s: float = 0.05) -> bool:
        """True when the isolate answers at once (nothing left running from a past script)."""
        if self._mr is None:
            return True
        try:
            return self.eval("0", timeout_s) == 0
        except (JsTimeout, JsOutOfMemory, JsEngineError):
            return False

    def reset(self) -> None:
        """Close the isolate (terminating anything still running in it); the next use starts a
        fresh one."""
        stack, self._stack, self._mr = self._stack, None, None
        if stack is not None:
            with contextlib.suppress(Exception):
                _on_engine_thread(stack.close)

    def ensure_healthy_after_failure(self) -> None:
        """After a timeout or OOM: keep the isolate if it answers, else replace it."""
        if not self.probe():
            self.reset()


def _ours(exc: Exception) -> WevalError | None:
    """Our exception for a V8 failure mini-racer raised, or None for any other."""
    if _mini_racer is None:
        return None
    if isinstance(exc, _mini_racer.JSTimeoutException):
        return JsTimeout()
    if isinstance(exc, _mini_racer.JSOOMException):
        return JsOutOfMemory()
    if isinstance(exc, _mini_racer.JSEvalException):
        return JsEngineError(str(exc))
    return None


@atexit.register
def _close_all() -> None:
    # Close isolates while the interpreter is whole: freed during finalization, a V8 thread
    # calling back into Python can wait forever for a GIL that is gone (the process hangs).
    for isolate in _ISOLATES:
        isolate.reset()
    if _loop is not None:
        _loop.call_soon_threadsafe(_loop.stop)
