"""What a run keeps for its whole length (each item's place in the scheduler, each finished
item's record and pytest's reports) is moved out of the garbage collector's sight as it piles
up (plugin/running.py: ``Runner``, ``KeptSettler``), and the collector pauses while the files
of the session's end are written (``ItemRunning.pytest_sessionfinish``), so that its full passes
do not walk them again and again: a replay's time grew faster than its items (docs/engine.md,
'A replay, by phase and by thread'). The run's reports stay what they were."""

from __future__ import annotations

from plugin_helpers import MODEL_ID, Project, answer_rule

ITEMS = 600  # more than the 512 finished items between two settlings

# The objects of ours the collector can still see (``gc.get_objects`` leaves out the frozen
# ones): at the first item, and after the 520th.
CONFTEST = """\
import collections
import gc
import json

import pytest

seen = {}
finished = [0]


def visible():
    names = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
    return {name: names[name] for name in ("ScheduledItem", "ItemWork", "KeptResult", "TestReport")}


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if report.when != "call":
        return
    finished[0] += 1
    if finished[0] in (1, 520):
        seen[finished[0]] = visible()


passes = []


def count_passes(phase, info):
    if phase == "stop":
        passes.append(info["generation"])


# The plain hooks of the session's end, where the weval summary writes every file: counted
# from the first of them to the last.
class StartCounting:
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        gc.callbacks.append(count_passes)


class StopCounting:
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        gc.callbacks.remove(count_passes)


def pytest_configure(config):
    config.pluginmanager.register(StartCounting(), "start-counting")
    config.pluginmanager.register(StopCounting(), "stop-counting")


def pytest_unconfigure(config):
    seen["session_end_passes"] = len(passes)
    with open("visible.json", "w") as f:
        json.dump(seen, f)
"""


def write_suite(project: Project) -> None:
    lines = [f"models: [{MODEL_ID}]", "---"]
    for n in range(ITEMS):
        lines += [f"- id: q{n}", f"  prompt: Question {n}, say hello.", "  should:", "    - $contains: hello"]
    project.write("blueprints/many.yml", "\n".join(lines) + "\n")
    project.write("conftest.py", CONFTEST)
    project.rules(answer_rule("say hello", "hello there"))


def test_what_a_run_keeps_is_out_of_the_collectors_sight(project: Project):
    write_suite(project)
    result = project.run("-p", "no:randomly", "--weval-cache=off", "--weval-out=out", "--junitxml=junit.xml", sub=True)
    result.assert_outcomes(passed=ITEMS)
    visible = project.json("visible.json")
    # The items' places in the scheduler are frozen once they are made.
    assert visible["1"]["ScheduledItem"] < ITEMS // 10
    # After 520 finished items, at most the 8 kept since the last settling and those still
    # waiting for pytest are seen, not the 520 records and their 1,560 reports.
    assert visible["520"]["KeptResult"] < 100
    assert visible["520"]["TestReport"] < 300
    # The files of the session's end are written without a pass of the collector.
    assert visible["session_end_passes"] == 0


def test_a_run_that_keeps_its_objects_frozen_reports_every_item_as_before(project: Project):
    """The settling moves nothing a report reads: a replay of the same items (their records
    frozen along the way) says what the first run said, item by item."""
    write_suite(project)
    first = project.run("-p", "no:randomly", "--junitxml=first.xml", sub=True)
    first.assert_outcomes(passed=ITEMS)
    again = project.run("-p", "no:randomly", "--weval-cache=ro", "--junitxml=again.xml", sub=True)
    again.assert_outcomes(passed=ITEMS)
    assert project.junit("again.xml") == project.junit("first.xml")
    assert len(project.junit("again.xml")) == ITEMS
