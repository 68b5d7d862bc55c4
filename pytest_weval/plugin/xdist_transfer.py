"""What an xdist worker hands its controller at the end, in ``workeroutput``: the parsed
blueprints of the items it reported (reporters never read a blueprint file again), what its
engine sent and failed to store, and why its pre-flight stopped the run. The items' results
travel earlier, on their reports (``item_results.py``)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from pytest_weval.blueprint.model import Blueprint
from pytest_weval.engine.store.cache import StoreFaults
from pytest_weval.plugin.item_results import ItemResults
from pytest_weval.plugin.role import USAGE_OUTPUT, Role
from pytest_weval.plugin.run_state import Blueprints, EngineTally, RunOutputs
from pytest_weval.plugin.running import building_long_lived
from pytest_weval.results import Usage

BLUEPRINTS_OUTPUT = "weval_blueprints"  # workeroutput key: blueprint path -> Blueprint JSON
STOP_OUTPUT = "weval_stop"  # workeroutput key: why the pre-flight stopped the run
STORE_FAULTS_OUTPUT = "weval_store_faults"  # workeroutput key: the worker's StoreFaults as a dict


class WorkerOutput:
    """On an xdist worker."""

    def __init__(
        self,
        workeroutput: dict[str, Any],
        blueprints: Blueprints,
        results: ItemResults,
        tally: EngineTally,
        outputs: RunOutputs,
    ):
        self._workeroutput = workeroutput
        self._blueprints = blueprints
        self._results = results
        self._tally = tally
        self._outputs = outputs

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        # A plain hook: the engine is closed by then (running.ItemRunning), its usage counted.
        output = self._workeroutput
        ran = {result.blueprint_path for result in self._results.results}
        output[BLUEPRINTS_OUTPUT] = {
            blueprint.path: blueprint.model_dump_json()
            for blueprint in self._blueprints.parsed.values()
            if blueprint.path in ran
        }
        output[USAGE_OUTPUT] = {model: used.model_dump_json() for model, used in self._tally.usage.items()}
        output[STORE_FAULTS_OUTPUT] = self._tally.store_faults.to_dict()
        if self._outputs.stop_message is not None:
            output[STOP_OUTPUT] = self._outputs.stop_message


class ControllerInput:
    """On the xdist controller, which collects and sends nothing."""

    def __init__(self, blueprints: Blueprints, tally: EngineTally, outputs: RunOutputs):
        self._blueprints = blueprints
        self._tally = tally
        self._outputs = outputs

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Every worker learns when the run began, so a reply another worker fetched during this
        run is not mistaken for a replay from an earlier one."""
        started = node.workerinput.setdefault("weval_run_started", time.time())
        self._outputs.session_role = Role(
            "controller",
            worker_id="controller",
            worker_count=int(node.workerinput["workercount"]),
            session_id=node.workerinput.get("testrunuid"),
            run_started=started,
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", None) or {}
        received = self._blueprints.received
        with building_long_lived():
            for path, data in output.get(BLUEPRINTS_OUTPUT, {}).items():
                if path not in received:
                    received[path] = Blueprint.model_validate_json(data)
        if output.get(STOP_OUTPUT):
            self._outputs.stop_message = output[STOP_OUTPUT]
        usage = {model: Usage.model_validate_json(data) for model, data in output.get(USAGE_OUTPUT, {}).items()}
        faults = StoreFaults(**output[STORE_FAULTS_OUTPUT]) if output.get(STORE_FAULTS_OUTPUT) else StoreFaults()
        self._tally.add(usage, faults)
