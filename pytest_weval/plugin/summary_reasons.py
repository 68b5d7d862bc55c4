"""Every failed or errored item's reason in the short summary, however long its node id.

pytest's short summary ends each ``FAILED <node id>`` line with the reason (our one-line crash
message) only when it fits the terminal; at default verbosity and off CI a long node id leaves
no room and pytest drops it (``_pytest/terminal.py``, ``_get_line_with_reprcrash_message``).
This wrapper runs around pytest's own summary and says the dropped reasons right below it, by
item name, so each item still has its one line of why.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

from pytest_weval.report._fmt import fit

_ROOM = len(" - ...")  # pytest drops the reason when less than this is left on the line
_WORDS = {"failed": ("f", "FAILED"), "error": ("E", "ERROR")}


def _on_ci() -> bool:
    # pytest's own test (``_pytest.compat.running_on_ci``): on CI it never cuts the reason.
    return any(os.environ.get(name) for name in ("CI", "BUILD_NUMBER"))


def _as_shown(config: pytest.Config, nodeid: str) -> str:
    """The node id as the summary prints it: its path relative to where pytest was run."""
    path, sep, rest = nodeid.partition("::")
    shown = os.path.relpath(config.rootpath / path, config.invocation_params.dir)
    return shown + sep + rest


def dropped_reasons(terminalreporter: Any, config: pytest.Config) -> list[tuple[str, str]]:
    """(item name, reason) of the summary lines pytest shows without their reason."""
    if config.get_verbosity() >= 2 or _on_ci():
        return []
    chars = getattr(terminalreporter, "reportchars", "")
    width = terminalreporter._tw.fullwidth
    dropped = []
    for stat, (char, word) in _WORDS.items():
        if char not in chars and "a" not in chars and "A" not in chars:
            continue
        for report in terminalreporter.stats.get(stat, ()):
            message = getattr(getattr(getattr(report, "longrepr", None), "reprcrash", None), "message", None)
            # a weval item's report: its result, or once kept (item_results.py) its place in the spool
            if not message or not (getattr(report, "weval_result", None) or getattr(report, "weval_spool", None)):
                continue
            line = f"{word} {_as_shown(config, report.nodeid)}"
            if width - len(line) < _ROOM:
                dropped.append((report.nodeid.rpartition("::")[2], message))
    return dropped


class SummaryReasons:
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(
        self, terminalreporter: Any, exitstatus: int, config: pytest.Config
    ) -> Generator[None, None, None]:
        yield  # pytest's short summary is written as this returns
        dropped = dropped_reasons(terminalreporter, config)
        if not dropped:
            return
        width = terminalreporter._tw.fullwidth
        terminalreporter.write_line("reasons the lines above had no room for (-vv shows them in place):")
        for name, message in dropped:
            terminalreporter.write_line(fit(f"  {name}: {message}", width))
