"""What this pytest process does in the run, decided once, when the plugin is configured.

A plain run collects, sends and reports. Under pytest-xdist the work is split: each worker
collects and sends, then hands what it made to the controller (``workeroutput``); the controller
collects nothing, sends nothing and reports for all. ``registration.register`` reads the role
and registers the concerns that role needs; the concerns read the few facts that differ (a
worker's id, the run's start) from here, never from xdist's ``workerinput`` themselves.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import pytest

Kind = Literal["serial", "controller", "worker"]
PLANNING_WORKER = "gw0"  # every worker holds the whole selection: this one plans for all
# workeroutput key: model id -> Usage JSON, as the worker's engine counted it. Every worker that
# used the plugin sets it (``xdist_transfer.WorkerOutput``): the controller learns so from it.
USAGE_OUTPUT = "weval_usage"


@dataclasses.dataclass(frozen=True)
class Role:
    kind: Kind
    # Options under which pytest runs no test, so nothing may be sent: --collect-only,
    # --setup-plan, --setup-only, --fixtures (which collects).
    dry_run: bool = False
    worker_id: str = "main"
    worker_count: int = 1
    session_id: str | None = None  # xdist's testrunuid: the session its workers share
    run_started: float | None = None  # the controller's start, given to every worker

    @property
    def is_worker(self) -> bool:
        return self.kind == "worker"

    @property
    def reports(self) -> bool:
        """This process says the run's outcome (the summary, the gates, the output files)."""
        return self.kind != "worker"

    @property
    def runs_items(self) -> bool:
        """This process collects and evaluates items (the xdist controller does neither)."""
        return self.kind != "controller"

    @property
    def makes_plan(self) -> bool:
        return self.kind != "worker" or self.worker_id == PLANNING_WORKER


def role_of(config: pytest.Config) -> Role:
    """The one place that reads xdist's ``workerinput``, and tells a controller from a plain run
    as xdist itself does (``xdist.plugin._is_distribution_mode``, not with --collect-only)."""
    option = config.option
    dry_run = bool(
        option.collectonly
        or getattr(option, "setupplan", False)
        or getattr(option, "setuponly", False)
        or getattr(option, "showfixtures", False)
    )
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        started = workerinput.get("weval_run_started")
        return Role(
            "worker",
            dry_run=dry_run,
            worker_id=str(workerinput["workerid"]),
            worker_count=int(workerinput["workercount"]),
            session_id=str(workerinput["testrunuid"]),
            run_started=float(started) if started else None,
        )
    distributed = getattr(option, "dist", "no") != "no" and bool(getattr(option, "tx", None))
    if distributed and not option.collectonly:
        return Role("controller", dry_run=dry_run, worker_id="controller")
    return Role("serial", dry_run=dry_run)
