"""The fixtures in hand-written tests (sync and async), and custom model objects (in a
blueprint and from ``weval_model_defs``) served by the fake server over loopback HTTP."""

from __future__ import annotations

from pathlib import Path

from plugin_helpers import JUDGE, JUDGE_ID, MODEL, MODEL_ID, Project, answer_rule, judge_rule

TESTS = f'''
import pytest


def test_sync(weval_client, weval_judge):
    reply = weval_client.generate("{MODEL_ID}", "Say hello to Ada.")
    assert reply == "Hello Ada, nice to meet you."
    verdict = weval_judge(reply, should=["greets Ada by name", {{"$not_icontains": "sorry"}}])
    assert verdict.passed, verdict.explain()
    assert verdict.score == 1
    assert weval_client is weval_judge  # one engine per session


def test_sync_failing_verdict(weval_client, weval_judge):
    reply = weval_client.generate("{MODEL_ID}", "Say hello to Ada.")
    verdict = weval_judge(reply, should=["writes a poem"], should_not=[{{"$icontains": "ada"}}])
    assert not verdict.passed
    text = verdict.explain()
    assert "writes a poem" in text and "No poem here." in text


def test_threshold_and_system(weval_client, weval_judge):
    reply = weval_client.generate("{MODEL_ID}", "Say hello to Ada.", system="Be formal.")
    assert reply == "Hello Ada, nice to meet you."
    assert weval_judge(reply, should=["greets Ada by name", "writes a poem"], threshold=0.5).passed
    assert not weval_judge(reply, should=["greets Ada by name", "writes a poem"], threshold=0.9).passed


@pytest.mark.asyncio
async def test_async(weval_client, weval_judge):
    reply = await weval_client.agenerate("{MODEL_ID}", "Say hello to Ada.")
    verdict = await weval_judge.ajudge(reply, should=["greets Ada by name"])
    assert verdict.passed, verdict.explain()


def test_generation_error_is_an_exception(weval_client):
    from pytest_weval import WevalError
    from pytest_weval.engine.errors import MissingKeyError

    with pytest.raises(MissingKeyError, match="ANTHROPIC_API_KEY") as caught:
        weval_client.generate("anthropic:claude-3-haiku", "hi")
    assert isinstance(caught.value, WevalError) and caught.value.error_kind == "missing_key"
'''

RULES = (
    answer_rule("Say hello to Ada.", "Hello Ada, nice to meet you.", model=MODEL),
    judge_rule("greets Ada by name", "CLASS_EXACT", "Ada is greeted."),
    judge_rule("writes a poem", "CLASS_UTTERLY_UNMET", "No poem here."),
)


def test_fixtures_sync_and_async_against_the_fake_server(project: Project):
    project.write("test_uses_fixtures.py", TESTS)
    project.rules(*RULES)
    result = project.run(f"--weval-judges={JUDGE_ID}", "-rA")
    result.assert_outcomes(passed=5)
    systems = [r.body["messages"][0] for r in project.requests(MODEL) if r.body["messages"][0]["role"] == "system"]
    assert systems == [{"role": "system", "content": "Be formal."}]
    judge_calls = project.requests(JUDGE)
    assert judge_calls and all(r.path == "/openai/v1/chat/completions" for r in judge_calls)
    # the ini twin, and a second run served from the cache
    sent = project.server.count
    project.ini(f"weval_judges = {JUDGE_ID}")
    project.run("-rA").assert_outcomes(passed=5)
    assert project.server.count == sent


def test_custom_models_in_a_blueprint_and_from_model_defs(project: Project):
    url = project.server.url
    project.write(
        "models.yml",
        f"""\
        - id: local:judge
          url: {url}/custom-judge/v1/chat/completions
          modelName: tiny-judge
          inherit: openai
        """,
    )
    project.ini("weval_model_defs = models.yml")
    project.write(
        "blueprints/custom.yml",
        f"""\
        models:
          - id: local:tested
            url: {url}/custom/v1/chat/completions
            modelName: tiny-model
            inherit: openai
        ---
        - id: hello
          prompt: Say hello.
          should:
            - says hello
        """,
    )
    project.rules(
        answer_rule("Say hello.", "Hello!", model="tiny-model"),
        judge_rule("says hello", "CLASS_EXACT", model="tiny-judge"),
    )
    # no provider key is needed for custom models
    project.monkeypatch.delenv("OPENAI_API_KEY")
    result = project.run("--weval-judges=local:judge", "-rA")
    result.assert_outcomes(passed=1)
    paths = sorted({r.path for r in project.server.requests})
    assert paths == ["/custom-judge/v1/chat/completions", "/custom/v1/chat/completions"]
    assert "blueprints/custom.yml::hello[local:tested]" in result.stdout.str()


def test_the_readme_fixture_example_runs_as_written(project: Project):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Using the judges from ordinary tests", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    project.write("test_readme_example.py", code)
    project.rules(
        answer_rule("Say hello to Ada.", "Hello Ada!", model=MODEL),
        answer_rule("Say hello.", "Hello!", model=MODEL),
        judge_rule("greets Ada by name", "CLASS_EXACT"),
        judge_rule("is a greeting", "CLASS_EXACT"),
    )
    project.run(f"--weval-judges={JUDGE_ID}").assert_outcomes(passed=2)
