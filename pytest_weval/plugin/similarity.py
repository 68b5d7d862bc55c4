"""``--weval-eval-methods`` with ``embedding``: at session end, before the reports, the answers
get their similarity rows (``run/embedding.py``), sent by this process (the xdist controller
under xdist, which holds every answer) through an engine of its own on the run's store, claims
and budget (docs/options.md, 'Similarity to the ideal')."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from pytest_weval.blueprint.model import Blueprint
from pytest_weval.engine.store.backends import StoreError
from pytest_weval.engine.store.cache import StoreFaults
from pytest_weval.plugin.role import Role
from pytest_weval.plugin.settings import WevalSettings
from pytest_weval.report._fmt import visible
from pytest_weval.results import ItemResult, Usage
from pytest_weval.run.embedding import add_similarities


def embed_answers(
    settings: WevalSettings,
    config: pytest.Config,
    results: Sequence[ItemResult],
    blueprints: Mapping[str, Blueprint],
    *,
    role: Role,
    usage: dict[str, Usage],
    faults: StoreFaults,
) -> dict[str, ItemResult]:
    """The results that got a similarity row, by node id; what the requests used is added to
    ``usage`` and ``faults``; what could not be embedded is said on the terminal."""
    if not any(r.source == "blueprint" and r.blueprint_path in blueprints for r in results):
        return {}
    terminal = config.pluginmanager.get_plugin("terminalreporter")

    def say(line: str) -> None:
        if terminal is not None:
            terminal.write_line(visible(line), yellow=True)

    # The engine's code, loaded here by the process writing the reports (the xdist
    # controller runs no item and has no engine otherwise).
    from pytest_weval.engine.engine import Engine

    engine = Engine(settings.engine_settings(role))
    try:
        engine.start()
    except StoreError as exc:  # the store went away since the items ran: the scores still stand
        say(f"weval: no similarities: {exc}")
        return {}
    try:
        done = engine.run_coroutine(add_similarities(engine, blueprints, results)).result()
    except KeyboardInterrupt:  # Ctrl-C: the reports are still written, without similarities
        engine.interrupt()
        say(
            "weval: interrupted while embedding the answers: no similarities this time "
            "(embeddings already received are kept in the cache for the next run)"
        )
        return {}
    finally:
        for model, used in engine.run_usage().items():
            usage.setdefault(model, Usage()).add(used)
        faults.add(engine.store_faults())
        notices = engine.take_notices()
        engine.close()
    for line in done.lines + notices:
        say(line)
    return {r.nodeid: r for r in done.results if r.similarities is not None}
