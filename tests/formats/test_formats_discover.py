"""Which files are agent eval suites (issue 20, point 1): names anywhere, datasets below an
``evals`` folder (with a content sniff so a Weval blueprint there stays a blueprint), JSONL with
its sidecar, files named on the command line, and AgentV v5 files left alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from formats_helpers import write

from pytest_weval.formats.discover import (
    is_agent_eval_file,
    is_named_like_eval,
    looks_like_agent_eval,
    out_of_scope_reason,
    top_level_keys,
    under_evals_folder,
)

SUITE = "tests:\n  - id: a\n    criteria: c\n    input: q\n"
BLUEPRINT = "title: A blueprint\nmodels: [openai:gpt-4o-mini]\n---\n- prompt: Hi\n  should: [greets]\n"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("EVAL.yaml", True),
        ("eval.yaml", True),
        ("Eval.YAML", True),
        ("dataset.eval.yaml", True),
        ("dataset.EVAL.yml", True),
        ("eval.yml", False),
        ("evaluation.yaml", False),
        ("dataset.yaml", False),
        ("EVAL.json", False),
    ],
)
def test_names(name: str, expected: bool) -> None:
    assert is_named_like_eval(Path("x") / name) is expected


def test_a_named_file_is_claimed_anywhere(tmp_path: Path) -> None:
    assert is_agent_eval_file(write(tmp_path, "deep/down/EVAL.yaml", SUITE), rootdir=tmp_path)
    assert is_agent_eval_file(write(tmp_path, "x/check.eval.yml", SUITE), rootdir=tmp_path)
    # an unreadable name-matched file is still claimed: the loader says what is wrong with it
    assert is_agent_eval_file(write(tmp_path, "y/eval.yaml", "tests: [\n"), rootdir=tmp_path)


def test_evals_folder_datasets_are_sniffed(tmp_path: Path) -> None:
    assert is_agent_eval_file(write(tmp_path, "feature/evals/dataset.yaml", SUITE), rootdir=tmp_path)
    assert is_agent_eval_file(
        write(tmp_path, "feature/evals/sub/classic.yml", "evalcases:\n  - id: a\n"), rootdir=tmp_path
    )
    # a Weval blueprint below evals/ stays a blueprint; so do a targets file and a bare case list
    assert not is_agent_eval_file(write(tmp_path, "feature/evals/blueprint.yaml", BLUEPRINT), rootdir=tmp_path)
    assert not is_agent_eval_file(write(tmp_path, "feature/evals/targets.yaml", "targets: []\n"), rootdir=tmp_path)
    assert not is_agent_eval_file(write(tmp_path, "feature/evals/cases.yaml", "- id: a\n"), rootdir=tmp_path)
    # outside evals/ an unnamed YAML file is not looked at
    assert not is_agent_eval_file(write(tmp_path, "feature/dataset.yaml", SUITE), rootdir=tmp_path)


def test_evals_folder_counts_only_below_the_rootdir(tmp_path: Path) -> None:
    root = tmp_path / "evals" / "repo"
    path = write(root, "suite/dataset.yaml", SUITE)
    assert not under_evals_folder(path, root)
    assert not is_agent_eval_file(path, rootdir=root)
    assert under_evals_folder(path, None)  # without a rootdir every folder counts


def test_jsonl_needs_its_sidecar_and_the_sidecar_is_no_suite(tmp_path: Path) -> None:
    jsonl = write(tmp_path, "evals/dataset.jsonl", '{"id": "a", "criteria": "c", "input": "q"}\n')
    assert not is_agent_eval_file(jsonl, rootdir=tmp_path)  # no sidecar yet
    sidecar = write(tmp_path, "evals/dataset.yaml", "dataset: d\nexecution: {target: default}\n")
    assert is_agent_eval_file(jsonl, rootdir=tmp_path)
    assert not is_agent_eval_file(sidecar, rootdir=tmp_path)
    # even a sidecar that itself lists cases belongs to its JSONL file
    write(tmp_path, "evals/dataset.yaml", SUITE)
    assert not is_agent_eval_file(sidecar, rootdir=tmp_path)
    other = write(tmp_path, "data/rows.jsonl", "{}\n")
    write(tmp_path, "data/rows.yaml", "dataset: rows\n")
    assert not is_agent_eval_file(other, rootdir=tmp_path)  # not below evals/
    assert is_agent_eval_file(other, rootdir=tmp_path, named=True)


def test_a_file_named_on_the_command_line(tmp_path: Path) -> None:
    assert is_agent_eval_file(write(tmp_path, "anywhere/suite.yaml", SUITE), rootdir=tmp_path, named=True)
    assert not is_agent_eval_file(write(tmp_path, "anywhere/bp.yaml", BLUEPRINT), rootdir=tmp_path, named=True)
    assert not is_agent_eval_file(write(tmp_path, "anywhere/notes.txt", SUITE), rootdir=tmp_path, named=True)


def test_v5_files_are_not_claimed(tmp_path: Path) -> None:
    v5 = 'prompts:\n  - "{{ input }}"\ntests:\n  - vars: {input: hi}\n'
    assert not is_agent_eval_file(write(tmp_path, "a/EVAL.yaml", v5), rootdir=tmp_path)
    assert not is_agent_eval_file(write(tmp_path, "b/evals/suite.yaml", v5), rootdir=tmp_path)
    folder = "name: d\ntests: ./cases/\n"
    assert not is_agent_eval_file(write(tmp_path, "c/EVAL.yaml", folder), rootdir=tmp_path)


def test_sniff_and_out_of_scope_reasons() -> None:
    assert top_level_keys('name: x\n"tests": []\n  nested: 1\n# c: 2\n') == ["name", "tests"]
    assert looks_like_agent_eval("description: d\nevalcases:\n  - id: a\n")
    assert looks_like_agent_eval("eval_cases: []\n")
    assert not looks_like_agent_eval("title: t\nprompts:\n  - tests: x\n")
    assert out_of_scope_reason({"providers": ["x"], "tests": []}) is not None
    assert out_of_scope_reason({"tests": [{"vars": {}}]}) is not None
    assert out_of_scope_reason({"tests": "./cases/"}) is not None
    assert out_of_scope_reason({"assert": ["text"], "input": "x"}) is not None  # a v5 case file
    assert out_of_scope_reason({"tests": [{"id": "a"}], "assert": [{"type": "contains"}]}) is None
    assert out_of_scope_reason(["not", "a", "mapping"]) is None
