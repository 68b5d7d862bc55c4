"""Named targets from ``.agentv/targets.yaml`` (docs/agent-formats.md §1.10): found walking up
to the rootdir, read into ``TargetDef``, located errors, and ``${{ VAR }}`` kept as text."""

from __future__ import annotations

from pathlib import Path

import pytest
from formats_helpers import load, write

from pytest_weval.blueprint.model import BlueprintError
from pytest_weval.formats.targets import (
    find_targets_file,
    load_targets,
    targets_for,
)

TARGETS = """
$schema: agentv-targets-v2.2
targets:
  - name: azure_base
    provider: azure
    endpoint: ${{ AZURE_OPENAI_ENDPOINT }}
    api_key: ${{ AZURE_OPENAI_API_KEY }}
    model: ${{ AZURE_DEPLOYMENT_NAME }}
    workers: 4
  - name: claude
    provider: anthropic
    model: claude-sonnet-4
    judge_target: azure_base
  - name: agent
    provider: cli
    command: [python, agent.py, "{PROMPT}"]
    cwd: ../tools
    timeout_seconds: 12.5
"""


def test_found_walking_up_and_nearest_first(tmp_path: Path) -> None:
    write(tmp_path, ".agentv/targets.yaml", TARGETS)
    deep = tmp_path / "a" / "b" / "evals"
    deep.mkdir(parents=True)
    assert find_targets_file(deep, tmp_path) == tmp_path / ".agentv/targets.yaml"
    nearer = write(tmp_path, "a/targets.yml", "targets: []\n")
    assert find_targets_file(deep, tmp_path) == nearer
    # in one folder, targets.yaml comes before .agentv/targets.yaml
    write(tmp_path, "a/b/.agentv/targets.yaml", "targets: []\n")
    plain = write(tmp_path, "a/b/targets.yaml", "targets: []\n")
    assert find_targets_file(tmp_path / "a" / "b", tmp_path) == plain


def test_not_looked_for_above_the_rootdir(tmp_path: Path) -> None:
    write(tmp_path, ".agentv/targets.yaml", TARGETS)
    root = tmp_path / "repo"
    (root / "evals").mkdir(parents=True)
    assert find_targets_file(root / "evals", root) is None
    assert targets_for(root / "evals" / "x.eval.yaml", rootdir=root) == {}


def test_entries_become_target_defs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_DEPLOYMENT_NAME", "must-not-be-read")
    path = write(tmp_path, "proj/.agentv/targets.yaml", TARGETS)
    targets = load_targets(path, rootdir=tmp_path)
    assert list(targets) == ["azure_base", "claude", "agent"]
    azure = targets["azure_base"]
    assert (azure.provider, azure.model) == ("azure", "${{ AZURE_DEPLOYMENT_NAME }}")
    assert azure.config == {
        "endpoint": "${{ AZURE_OPENAI_ENDPOINT }}",
        "api_key": "${{ AZURE_OPENAI_API_KEY }}",
        "workers": 4,
    }
    assert azure.location is not None and (azure.location.path, azure.location.line) == ("proj/.agentv/targets.yaml", 3)
    claude = targets["claude"]
    assert (claude.model, claude.judge_target) == ("claude-sonnet-4", "azure_base")
    agent = targets["agent"]
    assert agent.command == ("python", "agent.py", "{PROMPT}")
    assert agent.cwd == str(tmp_path / "proj" / "tools")
    assert agent.timeout_s == 12.5


def test_a_suite_gets_the_targets_of_its_tree(tmp_path: Path) -> None:
    write(tmp_path, "feature/.agentv/targets.yaml", TARGETS)
    suite = load(
        write(
            tmp_path,
            "feature/evals/x.eval.yaml",
            "execution: {target: claude}\ntests: [{id: a, criteria: c, input: q}]\n",
        ),
        tmp_path,
    )
    assert suite.targets == ("claude",)
    assert set(suite.named_targets) == {"azure_base", "claude", "agent"}


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("targets: {a: 1}\n", "needs a `targets:` list", 1),
        ("other: 1\n", "needs a `targets:` list", 1),
        ("targets:\n  - provider: azure\n", "a target has no `name`", 2),
        ("targets:\n  - name: x\n", "target 'x' has no `provider`", 2),
        ("targets:\n  - {name: x, provider: a}\n  - {name: x, provider: b}\n", "target name 'x' is used twice", 3),
        ("targets:\n  - {name: x, provider: cli, timeout_seconds: 0}\n", "`timeout_seconds` must be a number > 0", 2),
        ("targets:\n  - {name: x, provider: cli, command_template: 3}\n", "`command_template` must be", 2),
        ("targets:\n  - name: x\n    provider: [a\n", "YAML syntax error", 4),
    ],
)
def test_errors_are_located(tmp_path: Path, text: str, message: str, line: int) -> None:
    path = write(tmp_path, ".agentv/targets.yaml", text)
    with pytest.raises(BlueprintError) as caught:
        load_targets(path, rootdir=tmp_path)
    assert message in caught.value.message
    assert (caught.value.location.path, caught.value.location.line) == (".agentv/targets.yaml", line)


def test_a_broken_targets_file_is_the_suites_collection_error(tmp_path: Path) -> None:
    write(tmp_path, ".agentv/targets.yaml", "targets:\n  - name: x\n")
    path = write(tmp_path, "evals/x.eval.yaml", "tests: [{id: a, criteria: c, input: q}]\n")
    with pytest.raises(BlueprintError, match="has no `provider`"):
        load(path, tmp_path)
