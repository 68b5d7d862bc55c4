"""What a run writes (--weval-out, --weval-html, --junitxml) and says on the terminal: output
paths checked before anything is sent, full disks, the cache header, notices between progress
lines, narrow terminals and text from files made safe to print."""

from __future__ import annotations

import errno
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from plugin_helpers import JUDGE_ID, MODEL, MODEL_ID, Project, answer_rule

from tests.fakeserver import RateLimiter, Rule

ESC = "\x1b"

SIMPLE = f"""\
title: Simple
models: [{MODEL_ID}]
---
- id: greet
  prompt: Say hello.
  should:
    - $contains: hello
- id: part
  prompt: Say goodbye.
  should:
    - $contains: goodbye
"""


def _simple(project: Project, rel: str = "blueprints/simple.yml") -> None:
    project.write(rel, SIMPLE)
    project.rules(answer_rule("Say hello.", "hello"), answer_rule("Say goodbye.", "goodbye"))


# -- issue 40 item 9: the header says a cache is new ------------------------------------------
def test_the_header_says_new_for_a_cache_the_run_creates(project: Project):
    _simple(project)
    first = project.run("-p", "no:randomly")
    assert first.ret == pytest.ExitCode.OK
    header = [line for line in first.outlines if line.startswith("weval: cache ")]
    assert header and header[0].endswith("(sqlite, rw, new)"), header
    again = project.run("-p", "no:randomly")
    header = [line for line in again.outlines if line.startswith("weval: cache ")]
    assert header and header[0].endswith("(sqlite, rw)"), header


# -- issue 40 item 16: a project below a dot-directory still gets the hint ---------------------
def test_a_project_below_a_hidden_folder_gets_the_no_blueprint_hint(project: Project):
    project.write(".work/proj/evals/one.yml", SIMPLE)
    result = project.run(".work/proj/evals")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    out = result.stdout.str()
    assert "holds 1 YAML/JSON file, but no blueprint was collected" in out, out


def test_hidden_folders_below_the_named_one_are_still_not_counted(project: Project):
    project.write("evals/.venv/lib/x.yml", SIMPLE)
    result = project.run("evals")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "no blueprint was collected" not in result.stdout.str()


# -- issue 41 item 8: escape bytes from files are written out, never sent to the terminal -------
def test_the_plan_table_shows_a_model_id_with_escapes_written_out(project: Project):
    project.write(
        "blueprints/esc.yml",
        'title: Escapes\nmodels: ["openai:gpt\\e]0;owned\\a-4o\\e[2J"]\n---\n- id: p\n  prompt: Hi.\n'
        "  should:\n    - $contains: hi\n",
    )
    result = project.run("--collect-only", "-p", "no:randomly")
    text = result.stdout.str() + result.stderr.str()
    assert "weval plan" in text, text
    assert ESC not in text and "\a" not in text
    assert "\\x1b[2J" in text


def test_an_unused_fixture_id_with_escapes_is_written_out_in_the_warning(project: Project):
    _simple(project)
    project.write("fixtures.json", json.dumps({"responses": {f"gre{ESC}[31met": {"default": "hello"}}}))
    result = project.run("--weval-fixtures=fixtures.json", "-p", "no:randomly")
    text = result.stdout.str() + result.stderr.str()
    assert "matches no collected prompt" in text, text
    assert ESC not in text
    assert "gre\\x1b[31met" in text


def test_a_model_id_with_escapes_is_written_out_when_the_pre_flight_stops(project: Project):
    project.write(
        "blueprints/esc.yml",
        'title: Escapes\nmodels: ["anthropic:clau\\e[2Jde"]\n---\n- id: p\n  prompt: Hi.\n'
        "  should:\n    - $contains: hi\n",
    )
    result = project.run("-p", "no:randomly", f"--weval-judges={JUDGE_ID}")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert ESC not in text
    assert project.requests() == []


# -- issue 40 item 3: an output that cannot be written stops the run before anything is sent ---
@pytest.mark.parametrize(
    "option,reason",
    [
        ("--weval-out=afile/out", "afile is not a folder"),
        ("--weval-html=afile/r.html", "afile is not a folder"),
        ("--weval-html=adir", "adir is a folder"),
        ("--junitxml=afile/junit.xml", "afile is not a folder"),
        ("--weval-out=/proc/weval-out", "cannot write in /proc/weval-out"),
    ],
)
def test_an_output_path_that_cannot_be_written_is_a_usage_error_before_anything_is_sent(
    project: Project, option: str, reason: str
):
    _simple(project)
    (project.path / "afile").write_text("a file, not a folder")
    (project.path / "adir").mkdir()
    result = project.run(option, "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.outlines
    errors = [line for line in result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1 and reason in errors[0], result.errlines
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert project.requests() == []  # the run cost nothing
    assert not (project.path / ".weval_cache").exists()


def test_output_folders_that_do_not_exist_yet_are_made_at_the_end_and_not_left_by_the_check(project: Project):
    _simple(project)
    result = project.run("--weval-out=new/deep/out", "--weval-html=pages/r.html", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    assert (project.path / "new/deep/out/summary.json").is_file()
    assert (project.path / "pages/r.html").is_file()
    assert not list(project.path.rglob(".weval-probe.*"))
    (project.path / "afile").write_text("a file, not a folder")
    stopped = project.run("--weval-out=gone/out", "--weval-html=afile/x.html", "-p", "no:randomly")
    assert stopped.ret == pytest.ExitCode.USAGE_ERROR
    assert not (project.path / "gone").exists()  # the check made it, then took it away


# -- issue 41 item 5: outputs on a full disk --------------------------------------------------
@pytest.fixture
def full_disk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A real 64 KiB tmpfs, filled up: every file written there fails with ENOSPC."""
    mount = tmp_path_factory.mktemp("full")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root or CAP_SYS_ADMIN): {done.stderr.decode().strip()}")
    try:
        with pytest.raises(OSError) as filled, open(mount / "filler", "wb") as handle:
            while True:
                handle.write(b"x" * 4096)
                handle.flush()
        assert filled.value.errno == errno.ENOSPC
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_outputs_on_a_full_disk_are_one_line_each_and_the_summary_stays(project: Project, full_disk: Path):
    _simple(project)
    result = project.run(
        f"--weval-out={full_disk / 'out'}",
        f"--weval-html={full_disk / 'report.html'}",
        f"--junitxml={full_disk / 'junit.xml'}",
        "-p",
        "no:randomly",
        sub=True,
    )
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text, text
    assert result.parseoutcomes().get("passed") == 2, text  # pytest's last line is there
    assert "weval scores" in text  # and the run's summary
    unwritten = [line for line in result.outlines if " was not written: " in line]
    for name in ("junit.xml", "report.html", "summary.json"):
        assert [line for line in unwritten if str(full_disk / name) in line or line.split()[1].endswith(name)], (
            name,
            unwritten,
        )
    assert all("No space left on device" in line for line in unwritten), unwritten
    assert len(unwritten) == len(set(unwritten))
    assert "weval results written to" not in text and "HTML report written to" not in text
    assert not (full_disk / "junit.xml").exists()  # no cut XML file left behind
    assert "generated xml file" not in text
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # what was asked for is missing


# -- issue 40 item 11: notices between progress lines, never inside one ------------------------
KEYS = """\
models: [anthropic:claude-3-haiku, ideal]
---
- id: p{n}
  prompt: say beta {n}
  ideal: beta
  should: [$contains: beta]
- id: q{n}
  prompt: say gamma {n}
  ideal: gamma
  should: [$contains: gamma]
"""


PROGRESS = re.compile(r"^(blueprints/\S+ )?[.EFs]+ *\[ *\d+%\]$|^blueprints/\S+::\S+ (PASSED|ERROR) +\[ *\d+%\]$")


@pytest.mark.parametrize("verbosity", [(), ("-q",), ("-v",)])
def test_the_pre_flight_block_comes_before_the_progress_and_no_file_name_repeats(project: Project, verbosity):
    project.write("blueprints/a.yml", KEYS.format(n=1))
    project.write("blueprints/b.yml", KEYS.format(n=2))
    result = project.run("--weval-missing-keys=error", "-p", "no:randomly", *verbosity)
    lines = [line.rstrip() for line in result.outlines]
    text = "\n".join(lines)
    start = next(i for i, line in enumerate(lines) if line.startswith("weval pre-flight:"))
    progress = [i for i, line in enumerate(lines) if PROGRESS.match(line)]
    assert len(progress) == {(): 2, ("-q",): 1, ("-v",): 8}[verbosity], text  # no line split by a notice
    assert start < progress[0], text  # said before the first item's progress
    if not verbosity:
        assert [lines[i].split()[0] for i in progress] == ["blueprints/a.yml", "blueprints/b.yml"], text
        for name in ("a.yml", "b.yml"):  # each file's progress on one line, never started twice
            assert sum(bool(re.match(rf"blueprints/{name} [.EFs]*( +\[.*)?$", line)) for line in lines) == 1, text


def test_a_rate_limit_notice_mid_run_splits_no_progress_line(project: Project):
    for name in ("a", "b"):
        lines = [f"models: [{MODEL_ID}]", "---"]
        for n in range(6):
            lines += [
                f"- id: {name}{n}",
                f"  prompt: Question {name}{n}, please answer.",
                "  should: [$icontains: question]",
            ]
        project.write(f"blueprints/{name}.yml", "\n".join(lines) + "\n")
    project.rules(Rule(model=MODEL, reply="question answered"))
    project.server.rate_limit = RateLimiter(rate=30, burst=2, headers=None, retry_after="ms")
    result = project.run("--weval-max-attempts=1", "-p", "no:randomly", sub=True)
    result.assert_outcomes(passed=12)
    lines = [line.rstrip() for line in result.outlines]
    text = "\n".join(lines)
    assert project.server.rate_limit.refused > 0
    assert text.count("openai is rate limiting this run") == 1, text
    for name in ("a", "b"):
        assert sum(bool(re.match(rf"blueprints/{name}\.yml [.EFs]*( +\[.*)?$", line)) for line in lines) == 1, text
