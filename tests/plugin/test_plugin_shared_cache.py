"""Two runs at once on one cache (a second terminal, two CI jobs sharing a cache folder), with no
run id in common: every request is claimed in the store before it is sent, so each reply is
bought once between them (issue 31, item 2)."""

from __future__ import annotations

import collections
import json
import os
import signal

import pytest
from plugin_helpers import Project
from test_plugin_interrupt import _alive, _start, _suite

PROMPTS = 40


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ((), ()),
        ((), ("-n", "2")),
        (("-o", "weval_cache_store=files"), ("-o", "weval_cache_store=files")),
    ],
    ids=["serial+serial", "serial+xdist", "files-store"],
)
def test_two_runs_at_once_on_one_cache_buy_each_reply_once(
    project: Project, first: tuple[str, ...], second: tuple[str, ...]
):
    _suite(project, PROMPTS)
    project.server.latency_ms = 200
    runs = [_start(project, *first), _start(project, *second)]
    try:
        outputs = [run.communicate(timeout=300)[0] for run in runs]
    finally:
        for run in runs:
            if _alive(run.pid):
                os.killpg(run.pid, signal.SIGKILL)
    for run, output in zip(runs, outputs):
        assert run.returncode == 0, output[-3000:]
        assert f"{PROMPTS} passed" in output, output[-3000:]
    sent = collections.Counter(json.dumps(r.body, sort_keys=True) for r in project.requests())
    twice = [body for body, count in sent.items() if count > 1]
    assert twice == [], f"{len(twice)} requests sent by both runs"
    assert len(sent) == 2 * PROMPTS  # every answer and every verdict, once
