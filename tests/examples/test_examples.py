"""The example suite (example_blueprints/): replayed offline from its committed recordings, as
the README and CI run it, in a fresh copy so the repository stays untouched."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.fakeserver import FakeServer, Rule

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "example_blueprints"

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
BASE_URL_VARS = (
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "GEMINI_BASE_URL",
    "MISTRAL_BASE_URL",
    "TOGETHER_BASE_URL",
    "XAI_BASE_URL",
    "OPENROUTER_BASE_URL",
)
UNROUTABLE = "http://127.0.0.1:9"  # the discard port: nothing answers there


def offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "WEVAL_"))}
    for name in PROVIDER_VARS:
        env[name] = ""
    for name in BASE_URL_VARS:
        env[name] = UNROUTABLE
    return env


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def outcomes(junit: Path) -> dict[str, str]:
    """node name -> passed/failed/error/skipped, from a junit XML file."""
    result: dict[str, str] = {}
    for case in ET.parse(junit).iter("testcase"):
        kind = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                kind = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
        result[f"{case.get('classname')}::{case.get('name')}"] = kind
    return result


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copytree(
        EXAMPLES,
        tmp_path / "example_blueprints",
        ignore=shutil.ignore_patterns(".pytest_cache", ".weval_cache", "__pycache__"),
    )
    return tmp_path


def recordings(workdir: Path) -> list[Path]:
    return sorted((workdir / "example_blueprints" / "recordings").rglob("*.json"))


def test_the_readme_command_replays_every_item_offline(workdir):
    before = {p: p.read_bytes() for p in recordings(workdir)}
    assert len(before) >= 40
    junit = workdir / "junit.xml"
    result = run(["example_blueprints/", f"--junitxml={junit}"], workdir, offline_env())
    out = result.stdout
    assert result.returncode == 0, out[-4000:] + result.stderr[-2000:]
    found = outcomes(junit)
    assert 40 <= len(found) <= 80
    assert set(found.values()) == {"passed"}, {k: v for k, v in found.items() if v != "passed"}
    assert "never recorded" not in out
    # The score report is printed, with every blueprint and both recorded models.
    assert "weval scores" in out and "Mean score per blueprint and model" in out
    assert "local:smollm2" in out and "local:smollm2-terse" in out
    assert f"{len(found)} passed" in out
    # Replay reads the recordings and writes nothing back.
    assert {p: p.read_bytes() for p in recordings(workdir)} == before


def test_every_feature_the_examples_promise_is_collected(workdir):
    result = run(["example_blueprints/", "--collect-only", "-q"], workdir, offline_env())
    ids = result.stdout
    assert result.returncode == 0, ids
    for fragment in (
        ".yml::",
        ".json::",  # YAML and JSON blueprints
        ",temp=0]",
        ",temp=0.9]",  # temperatures
        ",sp=0]",
        ",sp=2]",  # system prompt variants
        "[local:smollm2-terse]",  # a custom model object written in the blueprint
    ):
        assert fragment in ids, fragment


def test_the_examples_are_lint_clean(workdir):
    result = run(["example_blueprints/", "--weval-lint-strict", "-m", "weval_lint", "-q"], workdir, offline_env())
    assert result.returncode == 0, result.stdout[-3000:]
    assert "10 passed" in result.stdout


def test_recordings_hold_no_secret_and_one_small_file_each():
    for path in sorted((EXAMPLES / "recordings").rglob("*.json")):
        text = path.read_text(encoding="utf-8")
        assert path.stat().st_size < 20_000, path
        for needle in ("sk-", "Bearer", "Authorization", "api_key", "x-goog-api-key"):
            assert needle not in text, (path, needle)


def test_the_command_line_overrides_the_ini_for_real_providers(workdir):
    """README: the same suite against a real provider. Here the provider is the loopback fake
    server; --weval-models/--weval-judges/--weval-cache/--weval-cache-dir must win over the
    example ini, and the committed recordings must stay untouched."""
    before = {p: p.read_bytes() for p in recordings(workdir)}
    verdict = "<reflection>Judged by the fake server.</reflection><classification>CLASS_EXACT</classification>"
    with FakeServer(rules=[Rule(model="judge-model", reply=verdict)]) as server:
        env = offline_env()
        env.update(server.env())
        junit = workdir / "junit.xml"
        result = run(
            [
                "example_blueprints/",
                "--weval-models=openai:gpt-4o-mini",
                "--weval-judges=openai:judge-model",
                "--weval-cache=rw",
                "--weval-cache-dir=.weval_cache",
                f"--junitxml={junit}",
            ],
            workdir,
            env,
        )
        models = {r.model for r in server.requests}
    found = outcomes(junit)
    assert found and "error" not in found.values(), result.stdout[-4000:]
    assert all("[openai:gpt-4o-mini" in name for name in found)
    assert models == {"gpt-4o-mini", "judge-model"}
    assert {p: p.read_bytes() for p in recordings(workdir)} == before
    assert list((workdir / "example_blueprints" / ".weval_cache").rglob("*.json"))


def test_the_plan_of_the_example_suite_is_all_in_the_recordings(workdir):
    """Every request the suite's plan foresees, and no other, is one the replay then uses."""
    plan_run = run(["example_blueprints/", "--collect-only", "--weval-out=plan"], workdir, offline_env())
    assert plan_run.returncode == 0, plan_run.stdout[-3000:] + plan_run.stderr[-2000:]
    plan = json.loads((workdir / "example_blueprints" / "plan" / "plan.json").read_text())  # beside its ini
    assert plan["requests"]["total"] == plan["requests"]["cached"] > 0
    replay = run(["example_blueprints/", "--weval-out=out"], workdir, offline_env())
    assert replay.returncode == 0
    usage = json.loads((workdir / "example_blueprints" / "out" / "summary.json").read_text())["usageTotal"]
    assert usage["requests"] == usage["cacheHits"] == plan["requests"]["total"]
