"""Issue 43 item 4: no tax on other suites. pytest loads the plugin's entry module in every run of
every project where it is installed; a run that uses no blueprint, agent eval file, weval option
or fixture loads nothing heavy (pydantic, YAML, the engine, the report, aiohttp, V8), and a run
that does still works as before. Each run is a real pytest subprocess: what it imported is read
from its own ``sys.modules``, written by a conftest at the session's end."""

from __future__ import annotations

import json

import pytest
from plugin_helpers import HELLO_BLUEPRINT, MODEL_ID, Project, answer_rule

from pytest_weval.plugin.options import _OPTIONS

HEAVY = (
    "pydantic",
    "yaml",
    "aiohttp",
    "py_mini_racer",
    "pytest_weval.engine",
    "pytest_weval.report",
    "pytest_weval.results",
    "pytest_weval.plugin.registration",
)

# Writes which of HEAVY the process imported, once its session is over (the plugin's own hooks
# included).
CONFTEST = f"""\
import json, os, sys
import pytest

HEAVY = {HEAVY!r}

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    who = getattr(session.config, "workerinput", {{}}).get("workerid", "main")
    with open(os.path.join(str(session.config.rootpath), f"imported-{{who}}.json"), "w") as f:
        json.dump(sorted(m for m in HEAVY if m in sys.modules), f)
"""

PLAIN_TEST = """\
def test_plain():
    assert 1 + 1 == 2
"""

BLUEPRINT = HELLO_BLUEPRINT
# an agent eval suite of one case, answered as BLUEPRINT's prompt is
AGENT_SUITE = """\
name: greet-suite
evalcases:
  - id: hello
    expected_outcome: Greets the user.
    input: Say hello.
    execution:
      evaluators:
        - name: has-hello
          type: contains
          value: hello
"""


def _plain(project: Project) -> None:
    project.write("conftest.py", CONFTEST)
    project.write("tests/test_plain.py", PLAIN_TEST)
    # YAML and JSON a project keeps for itself: not blueprints (no `blueprints/` folder, not named)
    project.write("tests/data/settings.yaml", "name: not a blueprint\n")
    project.write("tests/data/values.json", "[1, 2]\n")


def _imported(project: Project, who: str = "main") -> list[str]:
    return json.loads((project.path / f"imported-{who}.json").read_text())


@pytest.mark.parametrize(
    "args", [(), ("--collect-only",), ("--html=report.html",)], ids=["run", "collect-only", "html"]
)
def test_a_run_without_blueprints_loads_nothing_heavy(project: Project, args: tuple[str, ...]):
    _plain(project)
    result = project.run(*args, sub=True)
    assert result.ret == pytest.ExitCode.OK, result.outlines
    assert "weval-" in result.stdout.str()  # the plugin is loaded ("plugins: weval-0.1.0")
    assert _imported(project) == []
    assert not (project.path / ".weval_cache").exists()
    assert not any(line.startswith("weval: cache") for line in result.outlines)


def test_pytest_html_gets_the_weval_columns_without_blueprints(project: Project):
    _plain(project)
    result = project.run("--html=report.html", sub=True)
    assert result.ret == pytest.ExitCode.OK, result.outlines
    page = (project.path / "report.html").read_text()
    assert 'data-column-type="score"' in page and 'data-column-type="prompt"' in page
    assert _imported(project) == []


def test_pytest_help_lists_every_weval_option_without_loading_the_plugin(project: Project):
    _plain(project)
    result = project.run("--help", sub=True)
    assert result.ret == pytest.ExitCode.OK
    out = result.stdout.str()
    missing = [opt for opt, *_ in _OPTIONS if opt not in out]
    assert missing == []


def test_a_blueprint_run_activates_the_plugin_when_its_file_is_collected(project: Project):
    _plain(project)
    project.write("blueprints/one.yml", BLUEPRINT)
    project.rules(answer_rule("Say hello.", "hello"))
    result = project.run("-p", "no:randomly", sub=True)
    result.assert_outcomes(passed=2)
    assert any(line.startswith("weval: cache ") and line.endswith("(sqlite, rw, new)") for line in result.outlines)
    assert "weval scores" in result.stdout.str()
    assert len(project.requests()) == 1
    assert (project.path / ".weval_cache").is_dir()


# What a run of blueprints alone never loads: the agent eval and promptfoo formats' code, the
# plan (made for --collect-only and -v) and the batch APIs (--weval-batch).
NOT_FOR_BLUEPRINTS = (
    "pytest_weval.run.plan",
    "pytest_weval.engine.batching",
    "pytest_weval.engine.transport.batch_api",
    "pytest_weval.formats.load",
    "pytest_weval.formats.model",
    "pytest_weval.formats.promptfoo.load",
    "pytest_weval.formats.promptfoo.model",
    "pytest_weval.plugin.agent_items",
    "pytest_weval.plugin.promptfoo_items",
    "pytest_weval.run.agent",
    "pytest_weval.run.promptfoo",
    "pytest_weval.scoring.agent",
    "pytest_weval.scoring.promptfoo",
    "pytest_weval.judges.agent",
    "pytest_weval.judges.promptfoo",
)

FORMATS_CONFTEST = f"""\
import json, os, sys
import pytest

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    with open(os.path.join(str(session.config.rootpath), "formats.json"), "w") as f:
        json.dump(sorted(m for m in {NOT_FOR_BLUEPRINTS!r} if m in sys.modules), f)
"""


def test_a_blueprint_run_loads_no_agent_eval_or_promptfoo_code_and_no_plan(project: Project):
    """The formats' loaders, collectors, runners and scoring load at a run's first such file
    (their own tests run them), the plan's code for a run that makes one (tests/plugin/
    test_plugin_plan.py), not in every run that activates the plugin."""
    project.write("conftest.py", FORMATS_CONFTEST)
    project.write("blueprints/one.yml", BLUEPRINT)
    project.rules(answer_rule("Say hello.", "hello"))
    result = project.run("-p", "no:randomly", "--weval-judges=openai:judge-model", sub=True)
    result.assert_outcomes(passed=1)
    assert json.loads((project.path / "formats.json").read_text()) == []
    project.write("agents/EVAL.yaml", AGENT_SUITE)
    project.run("-p", "no:randomly", f"--weval-models={MODEL_ID}", sub=True).assert_outcomes(passed=2)
    loaded = json.loads((project.path / "formats.json").read_text())
    assert "pytest_weval.run.agent" in loaded and "pytest_weval.plugin.agent_items" in loaded
    project.run("-p", "no:randomly", "-v", f"--weval-models={MODEL_ID}", sub=True).assert_outcomes(passed=2)
    assert "pytest_weval.run.plan" in json.loads((project.path / "formats.json").read_text())


def test_a_blueprint_named_on_the_command_line_outside_blueprints_is_still_collected(project: Project):
    _plain(project)
    project.write("evals/one.yml", BLUEPRINT)
    project.rules(answer_rule("Say hello.", "hello"))
    result = project.run("evals/one.yml", "-p", "no:randomly", sub=True)
    result.assert_outcomes(passed=1)


def test_agent_eval_files_activate_the_plugin(project: Project):
    _plain(project)
    project.write("agents/EVAL.yaml", AGENT_SUITE)
    # below a folder named evals, told from other YAML by its case list
    project.write("evals/dataset.yaml", "tests:\n  - id: judged\n    criteria: Names Paris.\n    input: Capital?\n")
    result = project.run("--collect-only", "-q", sub=True)
    out = result.stdout.str()
    assert "agents/EVAL.yaml::hello" in out and "evals/dataset.yaml::judged" in out, out
    assert "pydantic" in _imported(project)


@pytest.mark.parametrize("how", ["--weval-cache=sometimes", "ini"], ids=["option", "ini"])
def test_a_weval_option_without_blueprints_is_still_read_and_checked(project: Project, how: str):
    _plain(project)
    if how == "ini":
        project.ini("weval_cache = sometimes")
        result = project.run(sub=True)
    else:
        result = project.run(how, sub=True)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.outlines
    assert "--weval-cache (ini weval_cache) = 'sometimes'" in result.stderr.str()


def test_an_option_without_blueprints_activates_the_plugin_from_the_start(project: Project):
    _plain(project)
    result = project.run("--weval-out=out", sub=True)
    assert result.ret == pytest.ExitCode.OK, result.outlines
    assert any(line.startswith("weval: cache ") for line in result.outlines)  # the header, at the start
    assert "pydantic" in _imported(project)


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_the_fixtures_activate_the_plugin_for_a_test_that_asks_for_them(project: Project, workers: tuple[str, ...]):
    project.write("conftest.py", CONFTEST)
    project.write(
        "test_fixture.py",
        f"""\
        def test_generate(weval_client):
            assert "hello" in weval_client.generate("{MODEL_ID}", "Say hello.")

        def test_plain():
            pass
        """,
    )
    project.rules(answer_rule("Say hello.", "hello"))
    result = project.run(*workers, "-p", "no:randomly", sub=True)
    result.assert_outcomes(passed=2)
    if not workers:
        assert any(line.startswith("weval: cache ") for line in result.outlines)
    assert len(project.requests()) == 1


def test_a_fixture_asked_for_by_name_while_a_test_runs_activates_the_plugin(project: Project):
    project.write(
        "test_fixture.py",
        f"""\
        def test_generate(request):
            weval_client = request.getfixturevalue("weval_client")
            assert "hello" in weval_client.generate("{MODEL_ID}", "Say hello.")
        """,
    )
    project.rules(answer_rule("Say hello.", "hello"))
    project.run("-p", "no:randomly", sub=True).assert_outcomes(passed=1)


def test_under_xdist_a_plain_run_and_a_blueprint_run_work(project: Project):
    _plain(project)
    result = project.run("-n", "2", "-p", "no:randomly", sub=True)
    result.assert_outcomes(passed=1)
    project.write("blueprints/one.yml", BLUEPRINT)
    project.rules(answer_rule("Say hello.", "hello"))
    result = project.run("-n", "2", "-p", "no:randomly", sub=True)
    result.assert_outcomes(passed=2)
    assert "weval scores" in result.stdout.str()


def test_under_xdist_a_run_without_blueprints_loads_nothing_heavy_in_any_process(project: Project):
    _plain(project)
    project.write("tests/test_more.py", "".join(f"def test_{i}():\n    pass\n\n" for i in range(8)))
    result = project.run("-n", "2", "-p", "no:randomly", sub=True)
    result.assert_outcomes(passed=9)
    imported = {who: _imported(project, who) for who in ("main", "gw0", "gw1")}
    assert imported == {"main": [], "gw0": [], "gw1": []}
    assert not (project.path / ".weval_cache").exists()
    assert not any(line.startswith("weval: cache") for line in result.outlines)


def test_under_xdist_a_blueprint_activates_the_controller_before_anything_runs(project: Project):
    _plain(project)
    project.write("blueprints/one.yml", BLUEPRINT)
    project.rules(answer_rule("Say hello.", "hello"))
    result = project.run("-n", "2", "-p", "no:randomly", sub=True)
    result.assert_outcomes(passed=2)
    lines = result.outlines
    header = next(i for i, line in enumerate(lines) if line.startswith("weval: cache "))
    first_result = next(i for i, line in enumerate(lines) if "PASSED" in line or line.startswith("."))
    assert header < first_result, lines
    assert "weval scores" in result.stdout.str()
    assert "pydantic" in _imported(project, "main")


def test_without_the_plugin_nothing_of_it_runs(project: Project):
    _plain(project)
    project.write("blueprints/one.yml", BLUEPRINT)
    result = project.run("-p", "no:weval", sub=True)
    result.assert_outcomes(passed=1)  # the blueprint is not collected
    assert _imported(project) == []


def test_under_xdist_a_run_that_asks_for_the_plugin_starts_the_workers_before_the_controller_loads_it(
    project: Project,
):
    # xdist configures each worker as it starts it (pytest_configure_node): what the controller
    # has imported by then, it loaded before the workers could start.
    project.write(
        "conftest.py",
        CONFTEST
        + """
def pytest_configure_node(node):
    with open(os.path.join(str(node.config.rootpath), f"at-start-{node.gateway.id}.json"), "w") as f:
        json.dump(sorted(m for m in HEAVY if m in sys.modules), f)
""",
    )
    project.write("blueprints/one.yml", BLUEPRINT)
    project.rules(answer_rule("Say hello.", "hello"))
    result = project.run("-n", "2", "-p", "no:randomly", "--weval-threshold=0.5", sub=True)
    result.assert_outcomes(passed=1)
    assert [json.loads((project.path / f"at-start-{gw}.json").read_text()) for gw in ("gw0", "gw1")] == [[], []]
    assert "pytest_weval.plugin.registration" in _imported(project, "main")
    assert any(line.startswith("weval: cache") for line in result.outlines)
    assert "weval scores" in result.stdout.str()


# What each process of a run of blueprints loads only where its role needs it: the HTML page's
# code with --weval-html, the summary and the reports' writers in the process that writes them
# (serial, or the xdist controller; never a worker), the collection, the run's start, the engine
# and the pipeline in a process that runs items (never the controller).
HTML_PAGE = (
    "pytest_weval.report.html",
    "pytest_weval.report.html_assets",
    "pytest_weval.report.html_history",
    "pytest_weval.report.html_analyses",
)
REPORT_WRITERS = (
    "pytest_weval.plugin.summary",
    "pytest_weval.plugin.session_checks",
    "pytest_weval.plugin.history",
    "pytest_weval.report.finish",
    "pytest_weval.report.history",
    "pytest_weval.report.run_record",
    "pytest_weval.report.rollup",
    "pytest_weval.report.terminal",
    "pytest_weval.report.weval_json",
)
COLLECTING = ("pytest_weval.plugin.collection", "pytest_weval.plugin.run_start")
# the engine and the pipeline, by a process that runs items (never the xdist controller)
RUNNING = (
    "pytest_weval.api",
    "pytest_weval.engine.engine",
    "pytest_weval.run.pipeline",
    "pytest_weval.lint.rules",
    "httpx",
)

ROLES_CONFTEST = f"""\
import json, os, sys
import pytest

WATCHED = {HTML_PAGE + REPORT_WRITERS + COLLECTING + RUNNING!r}

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    who = getattr(session.config, "workerinput", {{}}).get("workerid", "main")
    with open(os.path.join(str(session.config.rootpath), f"loaded-{{who}}.json"), "w") as f:
        json.dump(sorted(m for m in WATCHED if m in sys.modules), f)
"""


def _loaded(project: Project, who: str = "main") -> set[str]:
    return set(json.loads((project.path / f"loaded-{who}.json").read_text()))


def test_a_run_loads_the_html_page_code_only_with_weval_html(project: Project):
    project.write("conftest.py", ROLES_CONFTEST)
    project.write("blueprints/one.yml", BLUEPRINT)
    project.rules(answer_rule("Say hello.", "hello"))
    project.run("-p", "no:randomly", "--weval-out=out", sub=True).assert_outcomes(passed=1)
    assert (project.path / "out" / "summary.json").is_file()
    assert _loaded(project) & set(HTML_PAGE) == set()
    project.run("-p", "no:randomly", "--weval-html=page.html", sub=True).assert_outcomes(passed=1)
    assert "data-weval-cell" in (project.path / "page.html").read_text()
    assert set(HTML_PAGE) <= _loaded(project)


def test_under_xdist_each_process_loads_only_what_its_role_needs(project: Project):
    project.write("conftest.py", ROLES_CONFTEST)
    project.write("blueprints/one.yml", BLUEPRINT)
    project.rules(answer_rule("Say hello.", "hello"))
    result = project.run("-n", "2", "-p", "no:randomly", "--weval-out=out", sub=True)
    result.assert_outcomes(passed=1)
    assert "weval scores" in result.stdout.str()
    assert (project.path / "out" / "summary.json").is_file()
    controller = _loaded(project, "main")
    assert set(REPORT_WRITERS) <= controller
    assert controller & set(COLLECTING + RUNNING + HTML_PAGE) == set()
    for worker in ("gw0", "gw1"):
        assert _loaded(project, worker) & set(REPORT_WRITERS + HTML_PAGE) == set(), worker
        assert set(COLLECTING + RUNNING) <= _loaded(project, worker)
