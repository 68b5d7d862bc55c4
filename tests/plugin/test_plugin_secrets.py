"""An API key (a canary value) never shows: not in the terminal output at any verbosity, the
junit XML, the --weval-out files or the cache directory, even when the provider quotes it back
in an error body."""

from __future__ import annotations

import pytest
from plugin_helpers import CANARY, JUDGE_ID, MODEL, MODEL_ID, Project, answer_rule, judge_rule

from tests.fakeserver import Rule

BLUEPRINT = f"""\
title: Secrets
models: [{MODEL_ID}]
---
- id: ok
  prompt: Say something nice.
  should:
    - is nice
    - $icontains: nice
- id: fails
  prompt: Say something rude.
  should:
    - is nice
- id: refused
  prompt: This one is refused.
  should:
    - $contains: x
- id: js-error
  prompt: Say something nice again.
  should:
    - $js: "throw new Error('boom')"
    - $icontains: nice
"""

TESTS = f'''
def test_fixture_with_refused_key(weval_client):
    weval_client.generate("{MODEL_ID}", "This one is refused, from a test.")
'''


def _setup(project: Project) -> None:
    project.write("blueprints/secrets.yml", BLUEPRINT)
    project.write("test_fixture_secret.py", TESTS)
    project.rules(
        # the provider quotes the Authorization header back (some really do)
        Rule(model=MODEL, contains="This one is refused", status=401, echo_header="authorization"),
        answer_rule("Say something nice", "Something nice."),
        answer_rule("Say something rude", "Go away."),
        Rule(
            model="judge-model",
            contains="Go away.",
            reply="<reflection>Rude.</reflection><classification>CLASS_UNMET</classification>",
        ),
        judge_rule("is nice", "CLASS_EXACT"),
    )


def _check_no_canary(project: Project, result: pytest.RunResult) -> None:
    # the provider really was sent the key (so the checks below mean something)
    sent = [r for r in project.server.requests if r.headers.get("authorization") == f"Bearer {CANARY}"]
    assert sent
    assert any(r.outcome == "401" for r in project.server.requests)
    out = result.stdout.str() + result.stderr.str()
    assert "you sent authorization=" in out  # the echoed error body is shown, redacted
    assert CANARY not in out
    assert CANARY[8:24] not in out  # not even a part of it
    assert CANARY not in (project.path / "junit.xml").read_text(encoding="utf-8")
    assert CANARY not in project.all_text_under("out")
    cache = project.all_text_under(".weval_cache")
    assert cache  # something was recorded
    assert CANARY not in cache


def test_the_key_never_appears_serial(project: Project):
    _setup(project)
    result = project.run(
        f"--weval-judges={JUDGE_ID}",
        "-vv",
        "--tb=long",
        "-rA",
        "-l",
        "--junitxml=junit.xml",
        "--weval-out=out",
        "--weval-max-attempts=1",
        "--log-level=DEBUG",
        "-o",
        "log_cli=true",
    )
    result.assert_outcomes(passed=2, failed=2, errors=1, warnings=1)
    _check_no_canary(project, result)


def test_the_key_never_appears_with_xdist(project: Project):
    _setup(project)
    result = project.run(
        f"--weval-judges={JUDGE_ID}",
        "-vv",
        "--tb=long",
        "-rA",
        "-l",
        "--junitxml=junit.xml",
        "--weval-out=out",
        "--weval-max-attempts=1",
        "-n",
        "2",
        "--log-level=DEBUG",
        sub=True,
    )
    result.assert_outcomes(passed=2, failed=2, errors=1, warnings=1)
    _check_no_canary(project, result)
