"""Writing between pytest's progress lines: lines of our own never split one of pytest's."""

from __future__ import annotations

import pytest

from pytest_weval.report._fmt import visible


def write_lines(config: pytest.Config, text: str, **markup: bool) -> None:
    """Lines for the person watching, each on its own line: after pytest's progress characters
    (``-q`` writes them with no file name, so its ``ensure_newline`` does not end that line)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return
    terminal.ensure_newline()  # pytest's own line ended: it starts the file's line again
    if terminal._tw.width_of_current_line:
        terminal._tw.line()
    terminal.write_line(visible(text), **markup)


def at_line_end(config: pytest.Config, nodeid: str) -> bool:
    """pytest's reporter is at the start of a line, or ends its line as this item starts: a line
    per item (-v), or a line per file and this item opens the next file. Mid-line (-q, or the
    file's line goes on), a line written would split the progress and repeat its file name."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return False
    if not terminal._tw.width_of_current_line or terminal.showlongtestinfo:
        return True
    return bool(terminal.showfspath) and terminal.currentfspath != config.rootpath / nodeid.split("::")[0]


def say_between_progress_lines(config: pytest.Config, text: str) -> None:
    """Lines said where pytest's reporter ends a progress line, that line finished first as
    pytest finishes it (with its percentage)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return
    line_per_file = terminal.showfspath and not terminal.showlongtestinfo
    if line_per_file and terminal.currentfspath is not None and terminal._show_progress_info:
        terminal._write_progress_information_filling_space()
    write_lines(config, text, yellow=True)
