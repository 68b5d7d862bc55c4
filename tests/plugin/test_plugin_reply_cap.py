"""A 50 MB answer through a real pytest process: an item error naming the cap, never read whole
(the process stays far below the 2.1 GB it once took), in no file the run writes, and never
sent on to a judge."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_helpers import JUDGE, JUDGE_ID, MODEL, MODEL_ID, Project, answer_rule, judge_rule

BLUEPRINT = f"""\
title: Big
models: [{MODEL_ID}]
---
- id: big
  prompt: Say a lot
  should:
    - says a lot
    - $contains: x
"""


# pytest in a process of its own that reports its peak resident memory: VmHWM of its own
# address space, since the ru_maxrss of a child started from this (large) process keeps the
# peak it had before exec.
_MEASURED = (
    "import sys, pytest\n"
    "code = pytest.main(sys.argv[1:])\n"
    "peak = [line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM')][0]\n"
    "print('PEAK-KB', peak)\n"
    "sys.exit(code)\n"
)


def run_measured(project: Project, *args: str) -> tuple[int, str, int]:
    """(exit code, output, peak resident memory in bytes) of a pytest run."""
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to measure a process's peak memory")
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, "-p", "no:cacheprovider", *args],
        cwd=project.path,
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=300,
    )
    output = done.stdout + done.stderr
    peak = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("PEAK-KB ")]
    assert peak, output
    return done.returncode, output.replace(f"PEAK-KB {peak[0]}\n", ""), int(peak[0]) * 1024


@pytest.mark.parametrize("store", ["sqlite", "files"])
def test_a_50_mb_answer_is_an_item_error_not_read_stored_or_judged(project: Project, store: str):
    project.write("blueprints/big.yml", BLUEPRINT)
    project.ini(f"weval_cache_store = {store}")
    project.rules(answer_rule("Say a lot", "x" * 50_000_000), judge_rule("says a lot", "CLASS_EXACT"))
    code, output, peak = run_measured(
        project, f"--weval-judges={JUDGE_ID}", "--weval-out=out", "--weval-html=report.html", "--junitxml=j.xml"
    )
    assert code == 1, output
    assert "1 error" in [line for line in output.splitlines() if line.strip()][-1]
    assert "the reply is larger than 8 MB (50.0 MB announced) (--weval-max-reply-mb)" in output
    assert "INTERNALERROR" not in output
    assert peak < 600_000_000, f"peak memory {peak / 1e6:.0f} MB"
    assert [r.model for r in project.requests()] == [MODEL]  # asked once; no judge saw it
    assert not project.requests(JUDGE)
    sizes = {
        os.path.join(root, name): os.path.getsize(os.path.join(root, name))
        for root, _dirs, files in os.walk(project.path)
        for name in files
    }
    assert max(sizes.values()) < 20_000_000, sorted(sizes.items(), key=lambda kv: -kv[1])[:3]


def test_the_cap_is_an_option_with_an_ini_twin(project: Project):
    project.write("blueprints/big.yml", BLUEPRINT)
    project.rules(answer_rule("Say a lot", "x" * 3_000_000), judge_rule("says a lot", "CLASS_EXACT"))
    capped = project.run(f"--weval-judges={JUDGE_ID}", "--weval-max-reply-mb=2")
    capped.assert_outcomes(errors=1)
    capped.stdout.fnmatch_lines(["*larger than 2 MB*--weval-max-reply-mb*"])
    project.ini("weval_max_reply_mb = 10")
    project.run(f"--weval-judges={JUDGE_ID}").assert_outcomes(passed=1)
    project.ini_lines.clear()
    project.ini("weval_max_reply_mb = none")
    project.run().stderr.fnmatch_lines(
        ["*--weval-max-reply-mb (ini weval_max_reply_mb) = 'none': expected a number above 0*"]
    )
