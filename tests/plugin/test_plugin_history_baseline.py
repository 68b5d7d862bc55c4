"""``--weval-baseline=last`` and "since the last run" take each item's newest scored result from
the history (docs/history.md, 'Which earlier result an item is compared with'): runs that
selected part of the suite (``-k``) or skipped every item (``--weval-batch=submit``) hide no
older score, so the gate pairs every item an earlier run scored. Real pytest runs against the
loopback fake server (its OpenAI Batch API for the batch recipe of docs/batch.md).

Every prompt asks for "alpha" and "beta" and is scored by ``$contains`` points only (no judge):
the echo scores 1; a reply of "alpha only" scores 0.5 (still a pass at the 0.5 threshold, so
only the paired gate can fail the run).
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import time

from plugin_helpers import MODEL, MODEL_ID, Project

from tests.fakeserver import Rule

PROMPTS = 12
WORSE = range(0, PROMPTS, 2)  # the prompts whose answers lose "beta" in the last run


def _suite(project: Project, wording: str = "Say alpha and beta.") -> None:
    lines = [f"models: [{MODEL_ID}]", "---"]
    for n in range(PROMPTS):
        lines += [
            f"- id: c{n}",
            f"  prompt: {wording} (c{n})",
            "  should:",
            "    - $contains: alpha",
            "    - $contains: beta",
        ]
    project.write("blueprints/letters.yml", "\n".join(lines) + "\n")


def _worse(project: Project) -> None:
    project.rules(*[Rule(model=MODEL, contains=f"(c{n})", reply=f"alpha only (c{n})") for n in WORSE])


def _comparison(project: Project, out: str) -> dict:
    return project.json(f"{out}/summary.json")["baseline"]


def _history(project: Project, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest_weval", "history", *args],
        cwd=project.path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_batch_recipe_submit_then_wait_gates_on_every_item(project: Project):
    _suite(project)
    first = project.run("--weval-out=first", sub=True)
    first.assert_outcomes(passed=PROMPTS)

    # The next night: new requests (the prompts changed), answered through the batch API.
    _suite(project, "Please say alpha and beta.")
    _worse(project)
    project.server.set_batch(batch_delay_s=600.0)
    submitted = project.run("--weval-batch=submit", "--weval-check-models=off", "--weval-batch-poll=0.2", sub=True)
    submitted.assert_outcomes(skipped=PROMPTS)  # recorded too: a run whose items were all skipped
    for batch in project.server.batches.values():  # the provider ends it meanwhile
        batch.ends_at = time.time()
    collected = project.run(
        "--weval-batch=wait",
        "--weval-baseline=last",
        "--weval-check-models=off",
        "--weval-batch-poll=0.2",
        "--weval-out=out",
        sub=True,
    )
    collected.assert_outcomes(passed=PROMPTS)
    text = collected.stdout.str()
    # Every item pairs with its score of the first run, and the drop fails the run.
    comparison = _comparison(project, "out")
    assert comparison["paired"] == PROMPTS and comparison["unpaired"]["items"] == [], text[-3000:]
    assert comparison["models"][MODEL_ID]["regressed"] is True
    assert collected.ret == 1, text[-3000:]
    assert f"{MODEL_ID} regressed: 1.00 -> 0.75 on {PROMPTS} paired items" in text
    line = next(x for x in text.splitlines() if x.startswith("since the last run:"))
    assert line.startswith(
        f"since the last run: {len(WORSE)} of {PROMPTS} items changed (0 better, {len(WORSE)} worse)"
    )


def test_a_k_run_in_between_hides_no_item_and_the_trends_compare_like_with_like(project: Project):
    _suite(project)
    project.run("--weval-out=first", "--weval-html=first.html", sub=True).assert_outcomes(passed=PROMPTS)
    partial = project.run("-k", "c5", "--weval-cache=refresh", "--weval-out=partial", sub=True)
    partial.assert_outcomes(passed=1)
    _worse(project)
    full = project.run(
        "--weval-cache=refresh", "--weval-baseline=last", "--weval-out=out", "--weval-html=report.html", sub=True
    )
    text = full.stdout.str()
    comparison = _comparison(project, "out")
    assert comparison["paired"] == PROMPTS, text[-3000:]
    assert full.ret == 1 and f"{MODEL_ID} regressed: 1.00 -> 0.75 on {PROMPTS} paired items" in text
    line = next(x for x in text.splitlines() if x.startswith("since the last run:"))
    assert line.startswith(
        f"since the last run: {len(WORSE)} of {PROMPTS} items changed (0 better, {len(WORSE)} worse)"
    )
    assert f"; {PROMPTS - 1} of them last scored in older runs]" in line
    changes = project.json("out/summary.json")["changes"]
    assert changes["compared"] == PROMPTS and len(changes["items"]) == len(WORSE)

    # The trend holds the first run and this one, not the -k run's mean over one item.
    page = (project.path / "report.html").read_text()
    points = re.search(rf'data-weval-trend="{re.escape(MODEL_ID)}" data-points="([^"]*)"', page)
    assert points is not None and json.loads(html.unescape(points.group(1))) == [1, 0.75]

    # The table shows no change from or to the -k run: the last row's change is from the first.
    table = _history(project)
    assert table.returncode == 0, table.stderr
    rows = table.stdout.splitlines()
    assert rows[2].endswith("1.00 (1 item)") and rows[3].endswith("0.75 -0.25 *"), rows
    assert rows[-1].startswith("(N items): a mean over other items than every earlier run's"), rows


def test_the_html_trends_are_of_the_models_of_this_run_only(project: Project):
    """A model of two old runs that this run dropped (a typo since fixed) gets no trend whose
    caption would call its old mean "in this run"."""
    typo = "openai:gpt-4o-mnii"
    project.write(
        "blueprints/one.yml",
        f"models: [{MODEL_ID}, {typo}]\n---\n- id: c0\n  prompt: Say alpha. (c0)\n  should:\n    - $contains: alpha\n",
    )
    for _ in range(2):
        project.run("--weval-cache=refresh", sub=True).assert_outcomes(passed=2)
    project.run(f"--weval-models={MODEL_ID}", "--weval-html=report.html", sub=True).assert_outcomes(passed=1)
    page = (project.path / "report.html").read_text()
    assert f'data-weval-trend="{MODEL_ID}"' in page
    assert typo not in page.split('id="weval-history"', 1)[1].split("</section>", 1)[0]
