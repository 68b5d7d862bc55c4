"""promptfoo 0.123.1 itself and us on the same suites against one fake server (issue 46, Acceptance):
a suite of ours and three of promptfoo's own examples (data/promptfoo_examples/README.md), each with
what the stand-in answers (a rules file: json-output runs twice, on plain and on fenced answers):
the same outcome, score and named scores for every test row x prompt x provider, and every
request we send (answers and grader requests) one promptfoo sent identically.

Needs promptfoo's CLI: ``npm install promptfoo@0.123.1`` somewhere and
``WEVAL_PROMPTFOO_MAIN=<that>/node_modules/promptfoo/dist/src/main.js`` (its ``main.js``
runs on Node 20; the ``promptfoo`` command refuses Node < 22). Skipped without it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from plugin_helpers import Project

from tests.fakeserver import Rule

DATA = Path(__file__).parent / "data"
# folder, its rules file (what the stand-in answers), how many rows promptfoo makes, our options:
# promptfoo's default grader (an OpenAI model once OPENAI_API_KEY is set, in its
# providers/defaults) is named, as ours is the run's judge
SUITES = {
    "ours": ("promptfoo_parity", "rules.json", 12, ()),
    "getting-started": ("promptfoo_examples/getting-started", "rules.json", 8, ()),
    "self-grading": ("promptfoo_examples/self-grading", "rules.json", 20, ("--weval-judges=openai:gpt-5.6-sol",)),
    # plain JSON answers: every assertion passes
    "json-output": ("promptfoo_examples/json-output", "rules.json", 2, ()),
    # answers in a ```json fence: JSON.parse throws, in an assertion (a failure) and in the
    # test's options.transform (the row's error)
    "json-output-fenced": ("promptfoo_examples/json-output", "rules_fenced.json", 2, ()),
    # providers written without a model (`openai:chat`, with and without `config.model`)
    "bare-openai-chat": ("promptfoo_bare_chat", "rules.json", 2, ()),
}
PROMPTFOO_MAIN = os.environ.get("WEVAL_PROMPTFOO_MAIN", "")


@pytest.mark.skipif(
    not (PROMPTFOO_MAIN and Path(PROMPTFOO_MAIN).is_file() and shutil.which("node")),
    reason="promptfoo's CLI is not installed (set WEVAL_PROMPTFOO_MAIN to its dist/src/main.js)",
)
@pytest.mark.parametrize("suite", list(SUITES))
def test_promptfoo_and_we_score_every_row_alike_and_send_the_same_requests(project: Project, suite: str):
    folder, rules, row_count, options = SUITES[suite]
    for file in (DATA / folder).iterdir():
        if not file.name.startswith("rules"):
            shutil.copyfile(file, project.path / file.name)
    project.rules(*[Rule.from_dict(rule) for rule in json.loads((DATA / folder / rules).read_text())])
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-test",
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CACHE_ENABLED": "false",
        "PROMPTFOO_CONFIG_DIR": str(project.path / ".promptfoo"),
    }
    ran = subprocess.run(
        ["node", PROMPTFOO_MAIN, "eval", "-c", "promptfooconfig.yaml", "-o", "pf.json", "--no-cache"]
        + ["--no-progress-bar", "--max-concurrency", "1"],
        cwd=project.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert (project.path / "pf.json").is_file(), ran.stdout[-3000:] + ran.stderr[-3000:]
    theirs_sent = list(project.requests())
    project.run("--weval-out=ours", "--weval-cache=off", *options)
    ours_sent = project.requests()[len(theirs_sent) :]

    def rows(path: str) -> dict[tuple[int, int, str, str], tuple[bool, float, dict, int]]:
        document = json.loads((project.path / path).read_text(encoding="utf-8"))
        return {
            (r["testIdx"], r["promptIdx"], r["provider"]["id"], r["provider"]["label"]): (
                r["success"],
                round(r["score"], 6),
                r["namedScores"],
                r["failureReason"],
            )
            for r in document["results"]["results"]
        }

    theirs, ours = rows("pf.json"), rows("ours/promptfoo-results.json")
    assert len(theirs) == row_count
    assert ours == theirs

    def sent(request) -> tuple:
        body = request.body
        cap = body.get("max_completion_tokens")
        # Known difference (docs/promptfoo.md): to an OpenAI reasoning model promptfoo sends no
        # token cap unless configured; our engine always sends one. The rest must be the same.
        if request.model.startswith(("o1", "o3", "o4", "gpt-5")):
            cap = None
        return (
            request.model,
            json.dumps(body["messages"], sort_keys=True),
            body.get("temperature"),
            body.get("max_tokens"),
            cap,
        )

    # Every request of ours is one promptfoo sent; promptfoo asks its grader again for two rows
    # with the same answer and rubric, which our engine answers once (docs/promptfoo.md).
    print(f"\n{suite}: {len(theirs)} rows alike; requests: promptfoo {len(theirs_sent)}, ours {len(ours_sent)}")
    assert {sent(r) for r in ours_sent} == {sent(r) for r in theirs_sent}
