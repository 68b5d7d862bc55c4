"""``RunFacts``: what the plugin knows about the run beyond the records. Its own module, so that
the process writing the reports builds it without loading the HTML page's code (``html.py`` and
its assets), which only ``--weval-html`` needs."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True)
class RunFacts:
    """What the plugin knows about the run beyond the records: when, how long, with which options."""

    started: dt.datetime | None = None
    duration_s: float | None = None
    options: tuple[tuple[str, str], ...] = ()  # (name, value) of the settings that shaped the run
    judges: tuple[str, ...] = ()  # the judges asked for (--weval-judges); the ones that answered are read from results
    not_run: int | None = None  # the run was stopped early (Ctrl-C, SIGTERM, -x): selected items that never ran
