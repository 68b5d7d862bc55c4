"""The built-in models `ideal` and `echo`: a first run with no key and no network."""

from __future__ import annotations

import pytest

PROVIDER_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "TOGETHER_API_KEY",
    "XAI_API_KEY",
    "OPENROUTER_API_KEY",
)

INI = """\
[pytest]
asyncio_default_fixture_loop_scope = function
weval_cache = off
filterwarnings =
    ignore::pytest.PytestAssertRewriteWarning
"""

BLUEPRINT = """\
title: Built-ins
models: [openai:gpt-4o-mini]
threshold: 0.75
---
- id: capital
  prompt: What is the capital of France?
  ideal: Paris is the capital of France.
  should:
    - $icontains: paris
    - $not_contains: Lyon
- id: wrong-ideal
  prompt: Say hello.
  ideal: Goodbye.
  should:
    - $icontains: hello
- id: no-ideal
  prompt: Repeat after me, the word banana.
  should:
    - $icontains: banana
- id: multi-turn
  messages:
    - user: First question
    - assistant: null
    - user: Second question
  ideal: An answer.
  should:
    - $js: "context.messages.filter(m => m.role === 'assistant').length === 2"
    - $icontains: answer
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in PROVIDER_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    pytester.makefile(".ini", pytest=INI)
    (pytester.path / "blueprints").mkdir()
    (pytester.path / "blueprints" / "builtins.yml").write_text(BLUEPRINT)
    return pytester


def test_ideal_answers_with_the_prompts_ideal(project):
    result = project.runpytest("blueprints", "--weval-models=ideal", "-rA", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1, errors=1)
    out = result.stdout.str()
    assert "PASSED blueprints/builtins.yml::capital[ideal]" in out
    # Every generated turn of a multi-turn prompt is the ideal.
    assert "PASSED blueprints/builtins.yml::multi-turn[ideal]" in out
    assert "FAILED blueprints/builtins.yml::wrong-ideal[ideal]" in out
    assert "| Goodbye." in out  # the failure shows the response
    # A prompt without an ideal is an error that says so, not a failure.
    assert "ERROR blueprints/builtins.yml::no-ideal[ideal]" in out
    assert "model 'ideal' needs an `ideal` answer, and this prompt has none" in out


def test_echo_answers_with_the_last_user_message(project):
    result = project.runpytest("blueprints", "--weval-models=echo", "-rA", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    assert "PASSED blueprints/builtins.yml::no-ideal[echo]" in out  # "... the word banana."
    assert "PASSED blueprints/builtins.yml::wrong-ideal[echo]" in out  # "Say hello."
    assert "FAILED blueprints/builtins.yml::capital[echo]" in out  # the question names no Paris
    assert "| What is the capital of France?" in out
    # Two generated turns (`assistant: null`, then the end), each the user message before it.
    assert "FAILED blueprints/builtins.yml::multi-turn[echo]" in out
    assert "| Second question" in out  # the final turn (the failure report shows that one)


def test_both_builtins_together_need_no_key(project):
    result = project.runpytest("blueprints", "--weval-models=ideal,echo", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, failed=3, errors=1)
    assert "API key" not in result.stdout.str()
