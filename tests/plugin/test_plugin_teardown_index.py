"""The terminal summary's teardown lookup by node id (``plugin/teardown_index.py``) finds what
pytest's own scan finds, and a run's summary still shows each test's teardown output."""

from __future__ import annotations

import pytest
from _pytest.reports import TestReport
from _pytest.terminal import TerminalReporter
from plugin_helpers import HELLO_BLUEPRINT, Project, answer_rule

from pytest_weval.plugin.teardown_index import index_teardown_reports


class _Reporter:
    """pytest's own lookup over a stats dict, as its TerminalReporter does it."""

    getreports = TerminalReporter.getreports
    _get_teardown_reports = TerminalReporter._get_teardown_reports

    def __init__(self) -> None:
        self.stats: dict[str, list[TestReport]] = {}


def _report(nodeid: str, when: str) -> TestReport:
    return TestReport(nodeid, ("t.py", 0, nodeid), {}, "passed", None, when)


def test_the_index_finds_what_pytests_scan_finds_as_reports_come_in():
    scanned, indexed = _Reporter(), _Reporter()
    index_teardown_reports(indexed)
    nodeids = [f"t.py::test_{i}" for i in range(30)]
    for round_ in range(3):
        for nodeid in nodeids[round_ * 10 :]:
            for when in ("setup", "teardown"):
                report = _report(nodeid, when)
                for reporter in (scanned, indexed):
                    reporter.stats.setdefault("", []).append(report)
        shown = scanned.stats[""][round_]
        shown._pdbshown = True  # type: ignore[attr-defined]  # as pdb marks a report it showed
        for nodeid in [*nodeids, "t.py::absent"]:
            node_id = _report(nodeid, "call").id  # what pytest's summary passes
            assert indexed._get_teardown_reports(node_id) == _Reporter._get_teardown_reports(scanned, node_id)
    assert len(indexed._get_teardown_reports(_report("t.py::test_29", "call").id)) == 3


TESTS = """\
import pytest

@pytest.fixture
def noisy(request):
    yield
    print(f"teardown of {request.node.name}")

def test_fails(noisy):
    assert False

def test_passes(noisy):
    print("called")
"""


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_runs_summary_still_shows_each_tests_teardown_output(project: Project, workers: tuple[str, ...]):
    project.write("blueprints/one.yml", HELLO_BLUEPRINT)
    project.write("test_noisy.py", TESTS)
    project.rules(answer_rule("Say hello.", "hello"))
    result = project.run(*workers, "-rA", "-p", "no:randomly", sub=True)
    result.assert_outcomes(passed=2, failed=1)
    text = result.stdout.str()
    assert text.count("teardown of test_fails") == 1
    assert text.count("teardown of test_passes") == 1
    assert "weval scores" in text
