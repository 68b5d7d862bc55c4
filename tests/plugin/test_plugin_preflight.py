"""The pre-flight: bad model ids and missing keys said once, before any request; every bad
option or ini value a one-line usage error."""

from __future__ import annotations

import pytest
from plugin_helpers import JUDGE_ID, MODEL_ID, Project

FIFTEEN = "\n".join(
    [f"models: [{MODEL_ID}, anthropic:claude-3-haiku]", "---"]
    + [
        line
        for n in range(15)
        for line in (f"- id: p{n}", f"  prompt: Question {n}, please.", "  should:", f"    - answers question {n}")
    ]
)


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_no_keys_one_screen_usage_error_and_nothing_sent(project: Project, workers: tuple[str, ...]):
    project.monkeypatch.delenv("OPENAI_API_KEY")
    project.write("blueprints/fifteen.yml", FIFTEEN + "\n")
    result = project.run(*workers, sub=True)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert len(text.splitlines()) <= 80, text
    for variable, who in (
        ("OPENAI_API_KEY", f"model {MODEL_ID}"),
        ("ANTHROPIC_API_KEY", "model anthropic:claude-3-haiku"),
        ("OPENROUTER_API_KEY", "judges openrouter:"),
    ):
        assert text.count(f"{variable} is not set; needed by {who}") == 1, text
    assert "15 items" in text and "30 items" in text
    assert "Traceback" not in text
    assert project.requests() == []


def test_a_built_in_stand_in_cannot_judge(project: Project):
    project.write("blueprints/fifteen.yml", FIFTEEN + "\n")
    result = project.run("--weval-judges=echo", "--weval-models=ideal")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "'echo' cannot judge: it is a stand-in for a tested model" in result.stderr.str()
    assert project.requests() == []


def test_a_misspelt_provider_is_a_usage_error_that_suggests_the_right_one(project: Project):
    project.write("blueprints/fifteen.yml", FIFTEEN + "\n")
    result = project.run(f"--weval-judges={JUDGE_ID}", "--weval-models=opneai:gpt-4o,ideal")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "Unsupported provider 'opneai' in model id 'opneai:gpt-4o'" in err
    assert "did you mean 'openai:gpt-4o'?" in err
    assert project.requests() == []


def test_replay_needs_no_key(project: Project):
    """With --weval-cache=ro nothing is sent, so no key is needed: each miss is the item's error."""
    project.monkeypatch.delenv("OPENAI_API_KEY")
    project.write("blueprints/fifteen.yml", FIFTEEN + "\n")
    result = project.run("--weval-cache=ro", f"--weval-judges={JUDGE_ID}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=30)
    assert "never recorded" in result.stdout.str()


@pytest.mark.parametrize(
    ("args", "ini", "says"),
    [
        (
            (),
            "weval_cache_store = bogus",
            "--weval-cache-store (ini weval_cache_store) = 'bogus': choose one of sqlite, files or a postgresql://",
        ),
        (
            ("--weval-cache-store=postgresql://weval:hunter22@127.0.0.1:1/weval",),
            None,
            "ERROR: --weval-cache-store (ini weval_cache_store): cache store "
            "postgresql://weval:***@127.0.0.1:1/weval: cannot connect: ",
        ),
        (
            ("--weval-cache-store=mysql://u:hunter22@db/x",),
            None,
            "--weval-cache-store (ini weval_cache_store) = 'mysql://u:***@db/x': choose one of sqlite, files",
        ),
        (("--weval-threshold=high",), None, "--weval-threshold (ini weval_threshold) = 'high': expected a number"),
        (("--weval-threshold=2",), None, "a threshold is a score between 0 and 1"),
        (
            ("--weval-concurrency=-1",),
            None,
            "--weval-concurrency (ini weval_concurrency) = '-1': expected a whole number of at least 1",
        ),
        (("--weval-timeout=0",), None, "--weval-timeout (ini weval_timeout) = '0': expected a number above 0"),
        (("--weval-max-attempts=0",), None, "expected a whole number of at least 1"),
        (("--weval-budget=-5",), None, "--weval-budget (ini weval_budget) = '-5': expected a number of at least 0"),
        (("--weval-missing-keys=maybe",), None, "choose one of stop, error, skip"),
        (
            ("--weval-cache=sometimes",),
            None,
            "--weval-cache (ini weval_cache) = 'sometimes': choose one of rw, ro, refresh, off",
        ),
        ((), "weval_max_file_mb = big", "ini weval_max_file_mb = 'big': expected a number above 0"),
        ((), "weval_provider_concurrency = openai:lots", "'openai:lots' is not provider:number"),
        (
            (),
            "weval_prices =\n    openai:gpt-4o-mini 0.15",
            "ini weval_prices: line 1 'openai:gpt-4o-mini 0.15': expected",
        ),
    ],
)
def test_a_bad_setting_is_one_usage_error_line(project: Project, args: tuple[str, ...], ini: str | None, says: str):
    if ini:
        project.ini(ini)
    project.write("blueprints/fifteen.yml", FIFTEEN + "\n")
    result = project.run(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert says in err, err
    assert "Traceback" not in err + result.stdout.str()
    assert project.requests() == []
