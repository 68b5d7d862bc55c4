"""Model ids checked against the providers' own lists at pre-flight (issue 34): a typo in a
model name is refused before anything is sent, with a did-you-mean; the lists are asked once per
provider and kept a day; a list that cannot be had never stops a run; a provider's 404 for a
model at run time is one short line."""

from __future__ import annotations

import json

import pytest
from plugin_helpers import CANARY, MODEL, MODEL_ID, Project, answer_rule, section

from tests.fakeserver import Rule

LISTED = [MODEL, "gpt-4o", "judge-model", "o3-mini"]
TYPO_ID = "openai:gpt-4o-mnii"


def _blueprint(project: Project, models: str, prompts: int = 1) -> None:
    lines = [f"models: [{models}]", "---"]
    for n in range(prompts):
        lines += [f"- id: p{n}", f"  prompt: Say hello {n}.", "  should: [$contains: hello]"]
    project.write("blueprints/ids.yml", "\n".join(lines) + "\n")


def _lists(project: Project, path: str) -> list[dict]:
    """The listing requests the server got for ``path`` (a base URL's ``/models``)."""
    return [r for r in project.server.listings if r["path"] == path]


def _cache_file(project: Project) -> dict:
    return json.loads((project.path / ".weval_cache" / "model-lists.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_typo_is_refused_at_preflight_with_a_did_you_mean_and_nothing_is_sent(
    project: Project, workers: tuple[str, ...]
):
    project.server.model_lists = {"openai": LISTED}
    _blueprint(project, f"{MODEL_ID}, {TYPO_ID}")
    result = project.run(*workers, sub=bool(workers))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    line = (
        "blueprints/ids.yml:1:30 (models[1]): openai:gpt-4o-mnii is not among the models openai lists; "
        "did you mean 'openai:gpt-4o-mini'?"
    )
    assert text.count(line) == 1, text
    assert "Nothing was sent." in text
    assert project.requests() == []
    # One list and one question about the missing id, whatever the number of workers.
    assert len(_lists(project, "/openai/v1/models")) == 1
    assert len(_lists(project, "/openai/v1/models/gpt-4o-mnii")) == 1


def test_an_id_given_with_weval_models_is_located_at_the_option(project: Project):
    project.server.model_lists = {"openai": LISTED}
    _blueprint(project, MODEL_ID)
    result = project.run(f"--weval-models={TYPO_ID}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "--weval-models: openai:gpt-4o-mnii is not among the models openai lists; did you mean 'openai:gpt-4o-mini'?"
        in result.stderr.str()
    )
    assert project.requests() == []


def test_a_misspelt_judge_is_refused_too(project: Project):
    project.server.model_lists = {"openai": LISTED}
    project.write(
        "blueprints/judged.yml",
        f"models: [{MODEL_ID}]\n---\n- id: p\n  prompt: Say hello.\n  should: [greets the reader]\n",
    )
    result = project.run("--weval-judges=openai:judge-modle")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "--weval-judges: openai:judge-modle is not among the models openai lists; did you mean 'openai:judge-model'?"
        in result.stderr.str()
    )
    assert project.requests() == []


def test_a_listed_id_runs_and_the_list_is_asked_once_a_day(project: Project):
    project.server.model_lists = {"openai": LISTED}
    project.rules(answer_rule("Say hello", "hello"))
    _blueprint(project, MODEL_ID, prompts=2)
    project.run().assert_outcomes(passed=2)
    project.run().assert_outcomes(passed=2)  # the list and the replies from the cache
    project.run("--weval-cache=refresh").assert_outcomes(passed=2)  # refresh asks again
    assert len(_lists(project, "/openai/v1/models")) == 2
    assert _lists(project, "/openai/v1/models/gpt-4o-mini") == []  # listed: nothing more to ask
    assert sorted(next(iter(_cache_file(project)["lists"].values()))["ids"]) == sorted(LISTED)


def test_anthropic_and_gemini_lists_are_read_page_by_page_with_the_key_in_a_header(project: Project):
    env = project.server.env()
    for name in ("ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        project.monkeypatch.setenv(name, env[name])
    project.server.model_lists = {
        "anthropic": ["claude-a", "claude-b", "claude-3-haiku-20240307", "claude-c", "claude-d"],
        "google": ["gemini-a", "gemini-b", "gemini-2.0-flash", "gemini-c", "gemini-d"],
    }
    project.rules(Rule(reply="hello"))
    _blueprint(project, "anthropic:claude-3-haiku-20240307, google:gemini-2.0-flash, google:gemini-2.0-flahs")
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert (
        "google:gemini-2.0-flahs is not among the models google lists; did you mean 'google:gemini-2.0-flash'?" in err
    )
    assert "claude" not in err
    anthropic = _lists(project, "/anthropic/v1/models")
    google = _lists(project, "/google/v1beta/models")
    assert len(anthropic) == 3 and len(google) == 3  # five ids, two a page
    assert [r["query"].get("after_id") for r in anthropic] == [None, "claude-b", "claude-c"]
    assert [r["query"].get("pageToken") for r in google] == [None, "2", "4"]
    assert all(
        r["headers"]["x-api-key"] == env["ANTHROPIC_API_KEY"] and r["headers"]["anthropic-version"] for r in anthropic
    )
    assert all(r["headers"]["x-goog-api-key"] == env["GEMINI_API_KEY"] for r in google)
    assert not any("key" in r["query"] for r in google)  # never in the URL
    assert project.requests() == []


def test_an_alias_the_list_leaves_out_is_asked_about_and_runs(project: Project):
    """A list may leave out an alias the provider still answers to: the provider is asked about
    that one id before it is refused, and the answer is kept with the list."""
    project.server.model_lists = {"openai": LISTED}
    project.server.unlisted_models = ["gpt-4o-alias"]
    project.rules(answer_rule("Say hello", "hello", model="gpt-4o-alias"))
    _blueprint(project, "openai:gpt-4o-alias")
    project.run().assert_outcomes(passed=1)
    project.run().assert_outcomes(passed=1)
    assert len(_lists(project, "/openai/v1/models/gpt-4o-alias")) == 1


@pytest.mark.parametrize("status", [401, 404, 500])
def test_a_list_that_cannot_be_had_never_stops_a_run_and_is_not_kept(project: Project, status: int):
    project.server.model_lists = {"openai": LISTED}
    project.server.list_status = status
    project.rules(answer_rule("Say hello", "hello", model="gpt-4o-mnii"))
    _blueprint(project, TYPO_ID)
    result = project.run()
    result.assert_outcomes(passed=1)
    assert "pre-flight" not in result.stdout.str() + result.stderr.str()
    assert len(_lists(project, "/openai/v1/models")) == 1
    assert not (project.path / ".weval_cache" / "model-lists.json").exists()


def test_a_provider_that_cannot_be_reached_never_stops_a_run(project: Project):
    project.server.model_lists = {"openai": LISTED}
    project.monkeypatch.setenv("OPENROUTER_API_KEY", "test-openrouter-key")
    project.monkeypatch.setenv("OPENROUTER_BASE_URL", "http://127.0.0.1:9/api/v1")  # nothing listens
    project.rules(answer_rule("Say hello", "hello"))
    _blueprint(project, MODEL_ID)
    project.run().assert_outcomes(passed=1)


def test_the_key_never_reaches_the_cache_file(project: Project):
    project.server.model_lists = {"openai": LISTED}
    project.rules(answer_rule("Say hello", "hello"))
    _blueprint(project, MODEL_ID)
    project.run().assert_outcomes(passed=1)
    text = (project.path / ".weval_cache" / "model-lists.json").read_text(encoding="utf-8")
    assert CANARY not in text and "127.0.0.1" not in text
    assert CANARY not in project.all_text_under(".weval_cache")


def test_under_xdist_the_list_is_asked_once(project: Project):
    project.server.model_lists = {"openai": LISTED}
    project.rules(answer_rule("Say hello", "hello"))
    _blueprint(project, MODEL_ID, prompts=4)
    project.run("-n", "2", sub=True).assert_outcomes(passed=4)
    assert len(_lists(project, "/openai/v1/models")) == 1


@pytest.mark.parametrize(
    "args",
    [("--weval-check-models=off",), ("--collect-only",), ("--weval-cache=ro",)],
    ids=["off", "collect-only", "replay"],
)
def test_no_list_is_asked_when_off_on_a_dry_run_or_in_replay(project: Project, args: tuple[str, ...]):
    project.server.model_lists = {"openai": LISTED}
    _blueprint(project, TYPO_ID)
    project.run(*args)
    assert project.server.listings == []


def test_the_ini_twin_turns_it_off(project: Project):
    project.server.model_lists = {"openai": LISTED}
    project.ini("weval_check_models = off")
    project.rules(answer_rule("Say hello", "hello", model="gpt-4o-mnii"))
    _blueprint(project, TYPO_ID)
    project.run().assert_outcomes(passed=1)
    assert project.server.listings == []


def test_a_bad_value_is_a_usage_error(project: Project):
    _blueprint(project, MODEL_ID)
    result = project.run("--weval-check-models=maybe")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--weval-check-models (ini weval_check_models) = 'maybe': choose one of on, off" in result.stderr.str()


def test_with_cache_off_the_list_is_asked_and_nothing_written(project: Project):
    project.server.model_lists = {"openai": LISTED}
    _blueprint(project, TYPO_ID)
    result = project.run("--weval-cache=off")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "did you mean 'openai:gpt-4o-mini'?" in result.stderr.str()
    assert not (project.path / ".weval_cache").exists()


def test_a_404_for_a_model_at_run_time_is_one_located_line(project: Project):
    """No list to check against (the fake lists nothing): the provider's 404 naming the model
    ends that model's items with one short line each, and nothing more is sent for it."""
    not_found = json.dumps(
        {
            "error": {
                "message": "The model `gpt-4o-mnii` does not exist or you do not have access to it.",
                "type": "invalid_request_error",
                "code": "model_not_found",
            }
        }
    )
    project.rules(Rule(model="gpt-4o-mnii", status=404, body=not_found), answer_rule("Say hello", "hello"))
    _blueprint(project, f"{MODEL_ID}, {TYPO_ID}", prompts=3)
    result = project.run("--tb=line", "--weval-concurrency=1")
    result.assert_outcomes(passed=3, errors=3)
    assert len(project.requests("gpt-4o-mnii")) == 1
    lines = [line for line in result.outlines if line.startswith("blueprints/ids.yml:1: [openai:gpt-4o-mnii]")]
    assert (
        lines
        == [
            "blueprints/ids.yml:1: [openai:gpt-4o-mnii] no score: the provider has no model openai:gpt-4o-mnii (HTTP 404)"
        ]
        * 3
    )
    summary = " ".join(section(result.outlines, "weval scores"))
    assert (
        "3 items of openai:gpt-4o-mnii (in blueprints/ids.yml): the provider has no such model (HTTP 404); "
        "fix the id where it is named" in " ".join(summary.split())
    )


def test_a_404_error_report_says_where_the_id_is_written(project: Project):
    not_found = json.dumps({"type": "error", "error": {"type": "not_found_error", "message": "model: gpt-4o-mnii"}})
    project.rules(Rule(model="gpt-4o-mnii", status=404, body=not_found))
    _blueprint(project, TYPO_ID)
    result = project.run()
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert "No score: The provider has no model by this id (it answered 404)." in out
    assert "Fix the model id where it is named (blueprints/ids.yml:1)" in out
    assert "Check the network" not in out


def test_an_unusable_id_in_a_blueprint_is_located_at_its_line(project: Project):
    """``models: [foo:bar, openai]``: an unknown provider and an id with no model name are
    said where they are written, as an unlisted name is (issue 40)."""
    project.server.model_lists = {"openai": LISTED}
    project.write(
        "blueprints/ids.yml",
        f"""\
        title: ids
        models:
          - {MODEL_ID}
          - foo:bar
          - openai
        ---
        - id: p0
          prompt: Say hello.
          should: [$contains: hello]
        """,
    )
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "blueprints/ids.yml:4:5 (models[1]): Unsupported provider 'foo' in model id 'foo:bar'" in err, err
    assert "blueprints/ids.yml:5:5 (models[2]): Invalid model id 'openai'" in err, err
    assert project.requests() == []


# Writes the HTTP stacks the process loaded, once its session is over.
_HTTP_MODULES_CONFTEST = """\
import json, os, sys
import pytest

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    with open(os.path.join(str(session.config.rootpath), "http-modules.json"), "w") as f:
        json.dump(sorted(m for m in ("aiohttp", "httpcore", "certifi") if m in sys.modules), f)
"""


def _http_modules(project: Project) -> list[str]:
    return json.loads((project.path / "http-modules.json").read_text())


def test_the_list_is_asked_over_the_engines_http_and_a_kept_list_opens_nothing(project: Project):
    """The list goes over aiohttp, as the model requests do: no HTTP client of httpx's own (its
    transport and certifi's bundle cost a process ~40 ms before the first request); a replay
    whose list is kept loads no HTTP client at all."""
    project.server.model_lists = {"openai": LISTED}
    project.rules(answer_rule("Say hello", "hello"))
    project.write("conftest.py", _HTTP_MODULES_CONFTEST)
    _blueprint(project, MODEL_ID)
    project.run(sub=True).assert_outcomes(passed=1)
    assert len(_lists(project, "/openai/v1/models")) == 1
    assert _http_modules(project) == ["aiohttp"]
    project.run(sub=True).assert_outcomes(passed=1)  # the list and the reply from the cache
    assert len(_lists(project, "/openai/v1/models")) == 1
    assert len(project.requests()) == 1
    assert _http_modules(project) == []
