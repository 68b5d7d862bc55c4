"""Reporters: they read ``ItemResult`` records (and the parsed ``Blueprint``) and never run
anything. No pytest and no engine here: the plugin calls these pure functions from its hooks.

- ``rollup.build_rollup``: means per blueprint x model and up the folder tree, usage, agreement
- ``terminal.render_summary``: the end-of-run summary as text lines
- ``gates.check_min_score``: ``--weval-min-score`` failures as lines
- ``weval_json``: Weval comparison files and ``summary.json`` (``write_outputs``)
- ``junit.junit_properties``: an item's junit properties
- ``failure.explain_failure`` / ``explain_error``: what a person reads when an item fails

The names below load their modules when first asked for: a process that uses one reporter
(an xdist worker: an item's failure text and junit properties) does not load the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_weval.lazy import names_on_first_use

if TYPE_CHECKING:
    from pytest_weval.report.failure import explain_error, explain_failure
    from pytest_weval.report.gates import check_min_score
    from pytest_weval.report.junit import junit_properties
    from pytest_weval.report.rollup import Rollup, Tally, build_rollup
    from pytest_weval.report.terminal import render_summary
    from pytest_weval.report.weval_json import build_comparison, build_run_summary, write_outputs

_WHERE = {
    "Rollup": "rollup",
    "Tally": "rollup",
    "build_comparison": "weval_json",
    "build_rollup": "rollup",
    "build_run_summary": "weval_json",
    "check_min_score": "gates",
    "explain_error": "failure",
    "explain_failure": "failure",
    "junit_properties": "junit",
    "render_summary": "terminal",
    "write_outputs": "weval_json",
}

__all__ = [
    "Rollup",
    "Tally",
    "build_comparison",
    "build_rollup",
    "build_run_summary",
    "check_min_score",
    "explain_error",
    "explain_failure",
    "junit_properties",
    "render_summary",
    "write_outputs",
]


__getattr__ = names_on_first_use(__name__, {name: f"{__name__}.{module}" for name, module in _WHERE.items()})
