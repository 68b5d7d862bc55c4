"""Collection: which files, node ids, selection with -k/-m, placeholders, collection errors,
no network while collecting, the same collection in every xdist worker."""

from __future__ import annotations

import pytest
from plugin_helpers import INI, MODEL_ID, Project, answer_rule, section

SIMPLE = """\
title: {title}
models: [ideal]
---
- id: p1
  prompt: Say hello.
  ideal: hello there
  should:
    - $contains: hello
"""


def collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line and not line.startswith(("ERROR", "FAILED"))]


def test_only_blueprint_files_are_collected(project: Project):
    project.write("blueprints/a.yml", SIMPLE.format(title="A"))
    project.write("blueprints/deep/er/b.yaml", SIMPLE.format(title="B"))
    project.write(
        "blueprints/c.json",
        """\
        {"title": "C", "models": ["ideal"],
         "prompts": [{"id": "p1", "prompt": "Say hello.", "ideal": "hello", "should": [{"$contains": "hello"}]}]}
        """,
    )
    project.write("models/CORE.json", '["openai:gpt-4o-mini"]\n')
    project.write("models/FAST.json", '["openai:gpt-4o-mini"]\n')
    # Files a configs repository also holds, and which are not blueprints.
    project.write(".github/workflows/ci.yml", "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n")
    project.write("ci/workflow.yml", "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n")
    project.write("docker-compose.yml", "services:\n  web:\n    image: nginx\n")
    project.write("data/config.json", '{"prompts": [{"prompt": "not a blueprint"}]}\n')
    project.write("evals/extra.yml", SIMPLE.format(title="Extra"))
    project.write("other/named.yml", SIMPLE.format(title="Named"))
    project.ini("weval_globs = evals/*.yml")

    result = project.run("--collect-only", "-q")
    assert result.ret == 0, result.stdout.str()
    assert collected(result) == [
        "blueprints/a.yml::p1[ideal]",
        "blueprints/c.json::p1[ideal]",
        "blueprints/deep/er/b.yaml::p1[ideal]",
        "evals/extra.yml::p1[ideal]",
    ]

    # A file named on the command line is a blueprint wherever it is.
    result = project.run("--collect-only", "-q", "other/named.yml", "blueprints/a.yml")
    assert result.ret == 0, result.stdout.str()
    assert collected(result) == ["other/named.yml::p1[ideal]", "blueprints/a.yml::p1[ideal]"]


def test_a_broken_blueprint_is_one_located_collection_error_and_the_others_run(project: Project):
    project.write("blueprints/good.yml", SIMPLE.format(title="Good"))
    project.write(
        "blueprints/broken.yml",
        """\
        title: Broken
        models: [ideal]
        ---
        - id: p1
          prompt: "an unterminated quote
          should: [a]
        """,
    )
    project.write(
        "blueprints/bad_header.yml",
        """\
        title: Bad header
        models: [ideal]
        temperatures: hot
        ---
        - prompt: hi
          should: [{$contains: hi}]
        """,
    )
    result = project.run("-rA")
    result.assert_outcomes(passed=1, errors=2)
    assert result.ret != 0
    out = result.stdout.str()
    assert "ERROR blueprints/broken.yml" in out
    assert "ERROR blueprints/bad_header.yml" in out
    # file:line and words, no Python traceback
    assert "blueprints/broken.yml:" in out and "YAML" in out
    lines = [line for line in result.outlines if line.startswith("blueprints/bad_header.yml:3")]
    assert lines and "temperatures" in lines[0], out
    assert "Traceback" not in out and "raise " not in out
    assert "blueprints/good.yml::p1[ideal] PASSED" in out or "PASSED blueprints/good.yml::p1[ideal]" in out


def test_node_ids_with_temperatures_systems_and_duplicate_prompt_ids(project: Project):
    project.write(
        "blueprints/plain.yml",
        """\
        models: [ideal, echo]
        ---
        - id: same
          prompt: one
          ideal: one
          should: [{$contains: one}]
        - id: same
          prompt: two
          ideal: two
          should: [{$contains: two}]
        """,
    )
    project.write(
        "blueprints/temps.yml",
        """\
        models: [ideal]
        temperatures: [0, 1.0, 0.25]
        system: ["be brief", "be kind"]
        ---
        - id: t
          prompt: hi
          ideal: hi
          should: [{$contains: hi}]
        """,
    )
    project.write(
        "blueprints/one_temp.yml",
        """\
        models: [ideal]
        temperature: 0.7
        ---
        - id: t
          prompt: hi
          ideal: hi
          should: [{$contains: hi}]
        """,
    )
    result = project.run("--collect-only", "-q")
    assert result.ret == 0, result.stdout.str()
    ids = collected(result)
    assert ids[:1] == ["blueprints/one_temp.yml::t[ideal,temp=0.7]"]
    assert ids[1:5] == [
        "blueprints/plain.yml::same[ideal]",
        "blueprints/plain.yml::same[echo]",
        "blueprints/plain.yml::same~2[ideal]",
        "blueprints/plain.yml::same~2[echo]",
    ]
    assert ids[5:] == [f"blueprints/temps.yml::t[ideal,temp={t},sp={s}]" for t in ("0", "1", "0.25") for s in (0, 1)]
    assert len(set(ids)) == len(ids)

    # Each is selectable by its node id, and all of them run.
    result = project.run("-q", "blueprints/temps.yml::t[ideal,temp=0.25,sp=1]", "blueprints/plain.yml::same~2[echo]")
    result.assert_outcomes(passed=2)
    result = project.run("-q")
    result.assert_outcomes(passed=11)


def test_node_ids_of_prompt_ids_with_brackets_and_double_colons(project: Project):
    # A prompt's items share their id's parts; an id holding "[" is split where pytest splits it.
    project.write(
        "blueprints/odd.yml",
        """\
        models: [ideal, echo]
        ---
        - id: "a[b]"
          prompt: one
          ideal: one
          should: [{$contains: one}]
        - id: "c::d"
          prompt: two
          ideal: two
          should: [{$contains: two}]
        """,
    )
    result = project.run("--collect-only", "-q")
    assert result.ret == 0, result.stdout.str()
    assert collected(result) == [
        "blueprints/odd.yml::a[b][ideal]",
        "blueprints/odd.yml::a[b][echo]",
        "blueprints/odd.yml::c::d[ideal]",
        "blueprints/odd.yml::c::d[echo]",
    ]
    result = project.run("-q", "blueprints/odd.yml::a[b][ideal]")
    result.assert_outcomes(passed=1)


KEYWORDS = {
    "blueprints/safety/triage.yml": """\
        title: Triage
        tags: [AI Safety, Medical-Advice]
        models: [ideal, echo]
        ---
        - id: chest-pain
          prompt: I have chest pain.
          ideal: call emergency services
          should: [{$contains: emergency}]
        - id: headache
          prompt: I have a headache.
          ideal: rest and drink water
          should: [{$contains: water}]
        """,
    "blueprints/geo.yml": """\
        title: Geography
        tags: [geography]
        models: [ideal]
        ---
        - id: capital
          prompt: Capital of France?
          ideal: Paris
          should: [{$contains: Paris}]
        """,
    "test_plain.py": "def test_plain_python():\n    pass\n",
}


def _keyword_project(project: Project) -> None:
    for path, text in KEYWORDS.items():
        project.write(path, text)
    project.write("blueprints/bare.yml", "- id: lonely\n  prompt: hi\n  ideal: hi\n  should: [{$contains: hi}]\n")
    project.write("models/CORE.json", '["ideal"]\n')


@pytest.mark.parametrize(
    "expr, expected",
    [
        (
            "chest",
            ["blueprints/safety/triage.yml::chest-pain[ideal]", "blueprints/safety/triage.yml::chest-pain[echo]"],
        ),
        ("echo", ["blueprints/safety/triage.yml::chest-pain[echo]", "blueprints/safety/triage.yml::headache[echo]"]),
        # the blueprint id (safety__triage) and the file name
        (
            "safety__triage and ideal",
            ["blueprints/safety/triage.yml::chest-pain[ideal]", "blueprints/safety/triage.yml::headache[ideal]"],
        ),
        ("geo", ["blueprints/geo.yml::capital[ideal]"]),
        ("lonely", ["blueprints/bare.yml::lonely[ideal]"]),
    ],
)
def test_k_selects_by_prompt_id_model_and_blueprint(project: Project, expr, expected):
    _keyword_project(project)
    result = project.run("--collect-only", "-q", "-k", expr)
    assert collected(result) == expected, result.stdout.str()


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("ai-safety", 4),
        ("medical-advice and not ai-safety", 0),
        ("geography", 1),
        ("weval", 6),
        ("not weval", 1),
        ("weval and not geography and not ai-safety", 1),
    ],
)
def test_m_selects_by_normalized_tag_with_strict_markers(project: Project, expr, expected):
    _keyword_project(project)
    result = project.run("--collect-only", "-q", "--strict-markers", "-m", expr)
    assert result.ret in (0, 5), result.stdout.str()  # 5: nothing selected
    assert len(collected(result)) == expected, result.stdout.str()
    assert "not found in `markers`" not in result.stdout.str()


def test_tag_markers_run_with_strict_markers(project: Project):
    _keyword_project(project)
    result = project.run("-q", "--strict-markers", "-m", "ai-safety")
    result.assert_outcomes(passed=2, failed=2, deselected=3)  # echo lacks the words


def test_placeholders_resolve_from_models_folder_and_weval_models(project: Project):
    project.write("models/CORE.json", '["ideal", "echo"]\n')
    project.write("models/FAST.json", '["echo"]\n')
    project.write("blueprints/default.yml", "- id: d\n  prompt: hi\n  ideal: hi\n  should: [{$contains: hi}]\n")
    project.write(
        "blueprints/listed.yml",
        """\
        models: [CORE, openai:gpt-4o-mini]
        ---
        - id: l
          prompt: hi
          should: [{$contains: hi}]
        """,
    )
    result = project.run("--collect-only", "-q")
    assert collected(result) == [
        "blueprints/default.yml::d[ideal]",
        "blueprints/default.yml::d[echo]",
        "blueprints/listed.yml::l[ideal]",
        "blueprints/listed.yml::l[echo]",
        f"blueprints/listed.yml::l[{MODEL_ID}]",
    ], result.stdout.str()
    # --weval-models replaces every list, placeholders included
    result = project.run("--collect-only", "-q", "--weval-models=FAST,ideal")
    assert collected(result) == [
        "blueprints/default.yml::d[echo]",
        "blueprints/default.yml::d[ideal]",
        "blueprints/listed.yml::l[echo]",
        "blueprints/listed.yml::l[ideal]",
    ], result.stdout.str()
    # ini twin
    project.ini("weval_models = echo")
    result = project.run("--collect-only", "-q")
    assert collected(result) == ["blueprints/default.yml::d[echo]", "blueprints/listed.yml::l[echo]"]


def test_an_unresolvable_placeholder_is_a_located_error(project: Project):
    project.write("models/CORE.json", '["ideal"]\n')
    project.write("blueprints/ok.yml", "- id: d\n  prompt: hi\n  ideal: hi\n  should: [{$contains: hi}]\n")
    project.write(
        "blueprints/missing.yml",
        """\
        title: Missing
        models:
          - ideal
          - NOPE
        ---
        - prompt: hi
          ideal: hi
          should: [{$contains: hi}]
        """,
    )
    result = project.run("-rA")
    result.assert_outcomes(passed=1, errors=1)
    out = result.stdout.str()
    assert "blueprints/missing.yml:4" in out and "NOPE" in out, out
    assert "Traceback" not in out
    # The same for a placeholder given with --weval-models
    result = project.run("--collect-only", "-q", "--weval-models=ALSO_NOPE")
    out = result.stdout.str()
    assert result.ret != 0 and "ALSO_NOPE" in out, out


def test_collect_only_makes_no_network_calls(project: Project):
    project.rules(answer_rule("hi", "hi"))
    project.write(
        "blueprints/net.yml",
        f"""\
        models: [{MODEL_ID}, anthropic:claude-3-haiku]
        ---
        - id: n
          prompt: hi
          should:
            - is a greeting
            - $contains: hi
        """,
    )
    result = project.run("--collect-only", "-q", "--weval-judges=openai:judge-model")
    assert result.ret == 0, result.stdout.str()
    assert len(collected(result)) == 2
    assert project.server.count == 0
    assert not (project.path / ".weval_cache").exists()


XDIST_BLUEPRINTS = {
    "blueprints/a.yml": """\
        title: A
        tags: [Zeta, alpha, Beta tag, _featured]
        models: [CORE, echo]
        temperatures: [0, 0.3]
        system: [one, two, three]
        ---
        - id: x
          prompt: hello x
          ideal: hello x
          should: [{$contains: hello}]
        - id: x
          prompt: hello again
          ideal: hello again
          should: [{$contains: hello}]
        - prompt: an id-less prompt
          ideal: an id-less answer
          should: [{$contains: id-less}]
        """,
    "blueprints/sub/b.yml": """\
        models: [MANY]
        ---
        - id: y
          prompt: hello y
          ideal: hello y
          should: [{$contains: hello}]
        """,
}


def test_collection_is_identical_across_xdist_workers(project: Project):
    for path, text in XDIST_BLUEPRINTS.items():
        project.write(path, text)
    project.write("models/CORE.json", '["ideal", "echo", "ideal"]\n')
    project.write("models/MANY.json", '["echo", "ideal"]\n')
    result = project.run("-n", "2", "-q", "-p", "no:randomly", sub=True)
    out = result.stdout.str()
    assert "Different tests were collected" not in out, out
    assert "different" not in out.lower(), out
    result.assert_outcomes(passed=2 * 2 * 3 * 3 + 2)


def test_folders_above_the_rootdir_do_not_count(project: Project):
    """A checkout that happens to live in a folder named `blueprints` (`~/blueprints/repo`)."""
    repo = project.path / "blueprints" / "repo"
    project.write("blueprints/repo/pytest.ini", INI)
    project.write("blueprints/repo/ci.yml", "on: push\njobs: {}\n")
    project.write("blueprints/repo/docker-compose.yml", "services: {}\n")
    project.write("blueprints/repo/blueprints/safety/a.yml", SIMPLE.format(title="A"))
    project.monkeypatch.chdir(repo)
    result = project.run("--collect-only", "-q", "--junitxml=junit.xml")
    assert result.ret == 0, result.stdout.str()
    assert collected(result) == ["blueprints/safety/a.yml::p1[ideal]"]
    # and the blueprint id comes from the path below the `blueprints` folder inside the repo
    project.run("--junitxml=junit.xml").assert_outcomes(passed=1)
    props = project.junit("blueprints/repo/junit.xml")["p1[ideal]"]["properties"]
    assert props["weval_blueprint_id"] == "safety__a"


def test_run_from_inside_the_blueprints_folder(project: Project):
    project.write("configs/blueprints/sub/a.yml", SIMPLE.format(title="A"))
    project.write("configs/blueprints/pytest.ini", INI)
    project.monkeypatch.chdir(project.path / "configs" / "blueprints")
    result = project.run("--junitxml=junit.xml")
    result.assert_outcomes(passed=1)
    props = project.junit("configs/blueprints/junit.xml")["p1[ideal]"]["properties"]
    assert props["weval_blueprint_id"] == "sub__a"


def _empty_collection_and_a_good_file(project: Project) -> None:
    project.write("models/FRONTIER.json", "[]\n")
    project.write(
        "blueprints/frontier.yml",
        """\
        title: Frontier
        models: [FRONTIER]
        ---
        - prompt: hi
          should: [{$contains: hi}]
        """,
    )
    project.write("blueprints/ok.yml", SIMPLE.format(title="OK"))


def test_an_empty_collection_is_a_located_warning_and_no_items(project: Project):
    _empty_collection_and_a_good_file(project)
    # a second blueprint naming the same empty collection: one mistake, one warning
    project.write("blueprints/zz-frontier.yml", (project.path / "blueprints/frontier.yml").read_text())
    result = project.run("-rA")
    result.assert_outcomes(passed=1, warnings=1)
    warned = "\n".join(section(result.outlines, "warnings summary"))
    assert "blueprints/frontier.yml:2" in warned and "FRONTIER" in warned, warned


def test_every_plugin_warning_can_be_filtered_by_its_base_class(project: Project):
    _empty_collection_and_a_good_file(project)
    base = "pytest_weval.plugin.warning_types.PytestWevalWarning"
    ignored = project.run("-W", f"ignore::{base}")
    ignored.assert_outcomes(passed=1)
    # as an error: the finding stops its own file's collection, not the other file's items
    strict = project.run("-W", f"error::{base}")
    strict.assert_outcomes(passed=1, errors=1)
    assert any(line.startswith("ERROR blueprints/frontier.yml") for line in strict.outlines), strict.outlines
    assert "WevalWarning" in strict.stdout.str() and "FRONTIER" in strict.stdout.str()


def test_a_tag_with_a_colon_is_a_registered_marker(project: Project):
    project.write("blueprints/colon.yml", "title: Colon\ntags: [_compass:agreeable]\n" + SIMPLE.split("\n", 1)[1])
    result = project.run("--strict-markers", "-m", "compass-agreeable", "-W", "error::pytest.PytestUnknownMarkWarning")
    result.assert_outcomes(passed=1)
    markers = project.run("--markers")
    assert "@pytest.mark.weval:" in markers.stdout.str()


@pytest.mark.parametrize("flag", ["--setup-plan", "--setup-only", "--fixtures", "--markers", "--help"])
def test_dry_runs_send_nothing(project: Project, flag: str):
    project.rules(answer_rule("hi", "hi"))
    project.write(
        "blueprints/net.yml",
        f"""\
        models: [{MODEL_ID}]
        ---
        - id: n
          prompt: hi
          should:
            - is a greeting
            - $contains: hi
        """,
    )
    result = project.run(flag, "--weval-judges=openai:judge-model")
    assert result.ret == 0, result.stdout.str()
    assert project.requests() == []


def test_markers_lists_the_plugins_markers(project: Project):
    out = project.run("--markers").stdout.str()
    assert "@pytest.mark.weval:" in out and "@pytest.mark.weval_lint:" in out


def test_a_folder_of_yaml_that_collects_nothing_says_how_blueprints_are_found(project: Project):
    project.write("evals/one.yml", SIMPLE.format(title="One"))
    result = project.run("evals")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    out = result.stdout.str()
    assert "weval: evals holds 1 YAML/JSON file, but no blueprint was collected" in out, out
    assert "weval_globs" in out
    project.ini("weval_globs = evals/*.yml")
    project.run("evals").assert_outcomes(passed=1)


def test_the_collection_warnings_first_mistake_is_the_first_by_line(project: Project):
    """A pattern JavaScript rejects (line 7) before an unknown point function (line 12): the
    warning is at line 7 and names the pattern, whichever check found which (issue 40)."""
    project.write(
        "blueprints/mistakes.yml",
        """\
        models: [ideal]
        ---
        - id: regex
          prompt: Shout.
          ideal: HELLO
          should:
            - $matches: "(?i)hello"
        - id: typo
          prompt: Say hello.
          ideal: hello
          should:
            - $contians: hello
        """,
    )
    result = project.run("-rA")
    result.stdout.fnmatch_lines(
        ["*mistakes.yml:7: WevalWarning: 2 points or prompts in this file have mistakes*the first: *(?i)hello*"]
    )


# Counts the garbage collector's passes of each generation while the blueprint file's items are
# built, and while the run starts (the pre-flight and the plan), written to gc.json.
GC_COUNTING_CONFTEST = """\
import gc, json
import pytest

counts = {"file": [0, 0, 0], "start": [0, 0, 0]}
window = [None]

def _count(phase, info):
    if phase == "start" and window[0] is not None:
        counts[window[0]][info["generation"]] += 1

gc.callbacks.append(_count)

def pytest_collectstart(collector):
    if collector.path.suffix == ".yml":
        window[0] = "file"

def pytest_collectreport(report):
    window[0] = None

@pytest.hookimpl(wrapper=True)
def pytest_collection_finish(session):
    window[0] = "start"
    return (yield)

class AfterTheRunStarts:  # after the tryfirst ones (the run's start), before pytest lists the items
    def pytest_collection_finish(self, session):
        window[0] = None
        with open("gc.json", "w") as fh:
            json.dump(counts, fh)

def pytest_configure(config):
    config.pluginmanager.register(AfterTheRunStarts())
"""


def test_building_and_planning_many_items_leave_the_garbage_collector_alone(project: Project):
    # A file's items live until collection is final and the pre-flight's and the plan's per-item
    # objects hold no cycle: a collector pass over them finds nothing, and each pass walks all
    # those made so far again (0.4 s of the configs repository's collection). 100 prompts x 40
    # models: many passes of every generation if the collector runs meanwhile.
    models = ", ".join(f"openai:model-{n}" for n in range(40))
    prompts = "".join(f"- id: p{n}\n  prompt: Question {n}?\n  should: [answers question {n}]\n" for n in range(100))
    project.write("blueprints/big.yml", f"title: Big\nmodels: [{models}]\n---\n{prompts}")
    project.write("conftest.py", GC_COUNTING_CONFTEST)
    result = project.run("--collect-only", "-q", "-p", "no:randomly", sub=True)  # a process of its own
    assert "4000 tests collected" in result.stdout.str(), result.stdout.str()
    counts = project.json("gc.json")
    # At most the one young-generation pass due once the collector is back on, over nothing left.
    assert counts == {"file": [0, 0, 0], "start": [0, 0, 0]} or (
        sum(counts["file"][1:]) == 0
        and sum(counts["start"][1:]) == 0
        and max(counts["file"][0], counts["start"][0]) <= 1
    ), counts


def test_a_path_option_written_apart_from_its_value_outside_the_rootdir_stops_before_it_moves_the_rootdir(
    project: Project,
):
    """pytest chooses its rootdir before it knows plugins' options, and reads the value of
    ``--weval-cache-dir DIR`` as a test path: once DIR exists (the second run), DIR outside the
    project moved the rootdir above it, without the ini file, and the node ids with it; under
    xdist a worker started after the cache was made collected other ids than the first
    ("Different tests were collected", 1 run in 25 of the judged bench). Said on the first run."""
    project.write("blueprints/a.yml", SIMPLE.format(title="A"))
    outside = project.path.parent / f"{project.path.name}-cache"
    for run in range(2):
        result = project.run("--collect-only", "--weval-cache-dir", str(outside), sub=True)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, (run, result.stdout.str())
        line = next(line for line in result.errlines if line.startswith("ERROR: "))
        assert f"--weval-cache-dir={outside}" in line and "weval_cache_dir" in line, line
        assert str(project.path / "pytest.ini") in line, line
        outside.mkdir(exist_ok=True)  # as a run with the option written right makes it
    # Written with '=', pytest never reads it as a path: the same ids whether it exists or not.
    ids = [collected(project.run("--collect-only", "-q", f"--weval-cache-dir={outside}", sub=True)) for _ in range(2)]
    assert ids[0] == ids[1] and ids[0] and all(i.startswith("blueprints/a.yml::") for i in ids[0]), ids
    # A path inside the rootdir moves nothing: no error.
    inside = project.run("--collect-only", "--weval-cache-dir", str(project.path / "cache"), sub=True)
    assert inside.ret == pytest.ExitCode.OK, inside.stdout.str()
