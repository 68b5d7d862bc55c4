"""Markers: `pytest --markers` lists the tags of the blueprints a run would collect (without
collecting, and without sending anything), and `--strict-markers` accepts tag markers."""

from __future__ import annotations

import re

import pytest
from plugin_helpers import MODEL_ID, Project, answer_rule

TAGGED = """\
title: {title}
tags: {tags}
models: [{model}]
---
- id: p1
  prompt: Say hello.
  ideal: hello there
  should:
    - $contains: hello
"""


def tagged(title: str, tags: str, model: str = "ideal") -> str:
    return TAGGED.format(title=title, tags=tags, model=model)


def tag_markers(result: pytest.RunResult) -> dict[str, str]:
    """marker name -> description, for the markers described as blueprint tags."""
    found = {}
    for line in result.outlines:
        match = re.match(r"@pytest\.mark\.(\S+): (blueprint tag.*)$", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def _repository(project: Project) -> None:
    # Every tag needs the model the fake server answers: --markers must still send nothing.
    project.write("blueprints/a.yml", tagged("A", "[AI Safety, Medical Advice]", MODEL_ID))
    project.write("blueprints/deep/b.yml", tagged("B", "[ai-safety, _compass:agreeable]", MODEL_ID))
    project.write(
        "blueprints/c.json",
        '{"title": "C", "tags": ["Geography"], "models": ["' + MODEL_ID + '"],'
        ' "prompts": [{"id": "p1", "prompt": "hi", "should": ["is a greeting"]}]}\n',
    )
    project.write("blueprints/untagged.yml", "models: [ideal]\n---\n- prompt: hi\n  ideal: hi\n")


def test_markers_lists_the_tags_of_the_blueprints_with_their_counts(project: Project):
    _repository(project)
    project.rules(answer_rule("hi", "hi"))
    result = project.run("--markers", "blueprints", "--weval-judges=openai:judge-model")
    assert result.ret == 0, result.stdout.str()
    assert tag_markers(result) == {
        "ai-safety": "blueprint tag (2 blueprints)",  # normalized as the reference's normalizeTag
        "compass-agreeable": "blueprint tag (1 blueprint)",  # marker_name: no leading '_', ':' -> '-'
        "geography": "blueprint tag (1 blueprint)",
        "medical-advice": "blueprint tag (1 blueprint)",
    }
    out = result.stdout.str()
    assert "@pytest.mark.weval:" in out and "@pytest.mark.weval_lint:" in out
    assert project.requests() == []  # a dry run: nothing sent (issue 19, point 1)


def test_markers_follow_the_arguments_and_testpaths(project: Project):
    _repository(project)
    # only what a run with the same arguments would collect
    assert set(tag_markers(project.run("--markers", "blueprints/deep"))) == {"ai-safety", "compass-agreeable"}
    assert tag_markers(project.run("--markers", "blueprints/a.yml")) == {
        "ai-safety": "blueprint tag (1 blueprint)",
        "medical-advice": "blueprint tag (1 blueprint)",
    }
    # no argument: testpaths from the ini
    project.ini("testpaths = blueprints/deep")
    assert set(tag_markers(project.run("--markers"))) == {"ai-safety", "compass-agreeable"}


def test_markers_reads_only_the_files_a_run_would_collect(project: Project):
    project.write("blueprints/a.yml", tagged("A", "[kept]"))
    project.write("evals/extra.yml", tagged("Extra", "[by-glob]"))
    project.write("notes/other.yml", tagged("Other", "[not-a-blueprint]"))  # not collected, so not read
    project.write("blueprints/.hidden/h.yml", tagged("Hidden", "[hidden]"))  # norecursedirs '.*'
    project.write("blueprints/build/b.yml", tagged("Build", "[built]"))  # norecursedirs 'build'
    project.ini("weval_globs = evals/*.yml")
    assert set(tag_markers(project.run("--markers"))) == {"kept", "by-glob"}
    # a file named on the command line is a blueprint wherever it is
    assert set(tag_markers(project.run("--markers", "notes/other.yml"))) == {"not-a-blueprint"}


def test_markers_skips_unreadable_blueprints_silently(project: Project):
    project.write("blueprints/good.yml", tagged("Good", "[good]"))
    project.write("blueprints/syntax.yml", "title: Bad: colon\ntags: [broken]\n")
    project.write("blueprints/tags.yml", "title: T\ntags: not-a-list\nmodels: [ideal]\n")
    (project.path / "blueprints" / "binary.yml").write_bytes(b"tags: [\xff\xfe]\n")
    result = project.run("--markers")
    assert result.ret == 0
    assert tag_markers(result) == {"good": "blueprint tag (1 blueprint)"}
    assert "ERROR" not in result.stdout.str() and result.stderr.str().strip() == ""


def test_a_tag_named_like_a_pytest_marker_keeps_pytests_description(project: Project):
    project.write("blueprints/a.yml", tagged("A", "[skip, Flaky Stuff]"))
    result = project.run("--markers")
    assert tag_markers(result) == {"flaky-stuff": "blueprint tag (1 blueprint)"}
    assert sum(line.startswith("@pytest.mark.skip(") for line in result.outlines) == 1


def test_tags_are_not_read_without_markers(project: Project):
    # --markers is the only time blueprints are read before collection: a normal run registers
    # each tag as its blueprint is collected, with no count.
    project.write("blueprints/a.yml", tagged("A", "[ai-safety]"))
    project.write(
        "conftest.py", "def pytest_collection_finish(session):\n    print(session.config.getini('markers'))\n"
    )
    result = project.run("-s", "--collect-only", "-q")
    out = result.stdout.str()
    assert "'ai-safety: blueprint tag'" in out and "(1 blueprint)" not in out


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_strict_markers_accepts_tag_markers_in_a_normal_run(project: Project, workers: list[str]):
    project.write("blueprints/a.yml", tagged("A", "[AI Safety, _compass:agreeable]"))
    project.write("blueprints/b.yml", tagged("B", "[geography]"))
    result = project.run(
        "--strict-markers", "-W", "error::pytest.PytestUnknownMarkWarning", "-m", "ai-safety or geography", *workers
    )
    result.assert_outcomes(passed=2)
    result = project.run("--strict-markers", "-m", "compass-agreeable and not geography", *workers)
    outcomes = result.parseoutcomes()  # (xdist does not count what its workers deselect)
    assert (outcomes.get("passed"), outcomes.get("failed"), outcomes.get("errors")) == (1, None, None), outcomes
    assert "not found in `markers`" not in result.stdout.str()
