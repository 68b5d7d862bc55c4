"""``--weval-eval-methods`` with ``embedding``: at session end, before the reports, the answers
get their similarity rows (``run/embedding.py``), sent by this process (the xdist controller
under xdist, which holds every answer) through an engine of its own on the run's store, claims
and budget (docs/options.md, 'Similarity to the ideal')."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_weval.engine import Engine
from pytest_weval.engine.store.backends import StoreError
from pytest_weval.report._fmt import visible
from pytest_weval.results import Usage
from pytest_weval.run.embedding import add_similarities

if TYPE_CHECKING:
    from pytest_weval.plugin.weval_plugin import WevalPlugin


def embed_answers(plugin: WevalPlugin) -> None:
    """Give ``plugin``'s results their similarity rows; say what could not be embedded."""
    blueprints = plugin._blueprints_by_path()
    if not any(r.source == "blueprint" and r.blueprint_path in blueprints for r in plugin.results):
        return
    run_id = plugin._xdist_run_id
    workerinput = (
        None
        if run_id is None  # the xdist controller: one of the session's processes, on its run's claims and budget
        else {"workercount": 2, "workerid": "controller", "testrunuid": run_id, "weval_run_started": plugin._started}
    )
    terminal = plugin.config.pluginmanager.get_plugin("terminalreporter")

    def say(line: str) -> None:
        if terminal is not None:
            terminal.write_line(visible(line), yellow=True)

    engine = Engine(plugin.settings.engine_settings(workerinput))
    try:
        engine.start()
    except StoreError as exc:  # the store went away since the items ran: the scores still stand
        say(f"weval: no similarities: {exc}")
        return
    try:
        done = engine.run_coroutine(add_similarities(engine, blueprints, plugin.results)).result()
    finally:
        for model, used in engine.run_usage().items():
            plugin.run_usage.setdefault(model, Usage()).add(used)
        plugin.store_faults.add(engine.store_faults())
        notices = engine.take_notices()
        engine.close()
    for result in done.results:
        plugin._results[result.nodeid] = result
    for line in done.lines + notices:
        say(line)
