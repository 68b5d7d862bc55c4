"""Issue 43 item 3: what every process of a run (serial, the xdist controller, each worker) pays to
start. pytest rewrites the asserts of an installed plugin's modules as it imports them; for the
plugin's own modules that work buys nothing (their asserts are internal checks) and, where bytecode
is not cached, costs each process more than the rest of its start-up (docs/engine.md, 'Where a
run's time goes'). Each run is a real pytest subprocess; a conftest writes, at the session's end,
which of the plugin's modules each process imported through pytest's assertion rewriter."""

from __future__ import annotations

import json

import pytest
from plugin_helpers import HELLO_BLUEPRINT, Project, answer_rule

# Which pytest_weval modules this process loaded through pytest's rewriting import hook, and how
# many of the plugin's modules it imported at all (so an empty list means something).
CONFTEST = """\
import json, os, sys
import pytest

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    who = getattr(session.config, "workerinput", {}).get("workerid", "main")
    ours = {name: m for name, m in list(sys.modules.items()) if name.split(".")[0] == "pytest_weval" and m}
    rewritten = sorted(
        name for name, m in ours.items()
        if type(getattr(getattr(m, "__spec__", None), "loader", None)).__name__ == "AssertionRewritingHook"
    )
    with open(os.path.join(str(session.config.rootpath), f"loaded-{who}.json"), "w") as f:
        json.dump({"modules": len(ours), "rewritten": rewritten}, f)
"""

BLUEPRINT = (
    HELLO_BLUEPRINT
    + """\
- id: wave
  prompt: Wave.
  should:
    - $contains: hello
"""
)

# Loaded when the plugin is activated (registration.py and what it imports), never by pytest's
# entry point, which imports a few small modules before the plugin can say anything.
ACTIVATED = (
    "pytest_weval.engine",
    "pytest_weval.run",
    "pytest_weval.report",
    "pytest_weval.scoring",
    "pytest_weval.plugin.registration",
    "pytest_weval.plugin.running",
    "pytest_weval.api",
)


def _loaded(project: Project, who: str) -> dict:
    return json.loads((project.path / f"loaded-{who}.json").read_text())


@pytest.mark.parametrize("xdist", [False, True], ids=["serial", "xdist"])
def test_the_plugins_modules_are_imported_without_assertion_rewriting(project: Project, xdist: bool):
    project.write("conftest.py", CONFTEST)
    project.write("blueprints/one.yml", BLUEPRINT)
    project.rules(answer_rule("Say hello.", "hello"), answer_rule("Wave.", "hello"))
    result = project.run("-p", "no:randomly", *(("-n", "2") if xdist else ()), sub=True)
    result.assert_outcomes(passed=2)
    for who in ("main", "gw0", "gw1") if xdist else ("main",):
        loaded = _loaded(project, who)
        assert loaded["modules"] > 50, who  # the whole plugin: the engine, the report, ...
        assert [name for name in loaded["rewritten"] if name.startswith(ACTIVATED)] == [], who


def test_a_users_own_asserts_are_still_rewritten(project: Project):
    project.write("blueprints/one.yml", BLUEPRINT)
    project.rules(answer_rule("Say hello.", "hello"), answer_rule("Wave.", "hello"))
    project.write("tests/test_plain.py", "def test_plain():\n    x = [1, 2]\n    assert x == [1, 3]\n")
    result = project.run("-p", "no:randomly", sub=True)
    result.assert_outcomes(passed=2, failed=1)
    assert "At index 1 diff: 2 != 3" in result.stdout.str()
