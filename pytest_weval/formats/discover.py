"""Which files are agent eval suites (issue 20, point 1; docs/agent-formats.md §1.1, §2.1, §4).

* ``EVAL.yaml`` / ``eval.yaml`` / ``*.eval.yaml`` / ``*.eval.yml`` (any case), anywhere;
* AgentV datasets below a folder named ``evals``: a YAML file whose top level has a case list
  (``tests`` / ``evalcases`` / ``eval_cases``; a Weval blueprint never has one), and a
  ``.jsonl`` file with its ``<base>.yaml`` sidecar. The sidecar is not a suite of its own;
* a file named on the command line: any YAML file that looks like an agent eval, and a
  ``.jsonl`` file with its sidecar.

AgentV v5 files (promptfoo-like: ``prompts`` / ``providers`` / ``tests[].vars``, a folder of
cases) are not agent suites: ``is_promptfoo_file`` claims them, with promptfoo's own
``promptfooconfig.yaml`` (docs/promptfoo.md), and ``load_agent_suite`` returns None for one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

CASE_LIST_KEYS = ("tests", "eval_cases", "evalcases")
V5_TOP_KEYS = ("prompts", "providers", "defaultTest", "default_test", "evaluate_options", "scenarios")
EVALS_FOLDER = "evals"

_TOP_LEVEL_KEY = re.compile(r"""^(?:"([^"]+)"|'([^']+)'|([A-Za-z_$][\w$-]*))[ \t]*:(?:[ \t]|$)""", re.M)


def is_named_like_eval(path: Path) -> bool:
    """``EVAL.yaml``, ``eval.yaml``, ``*.eval.yaml`` or ``*.eval.yml``, in any case."""
    name = path.name.lower()
    return name == "eval.yaml" or name.endswith((".eval.yaml", ".eval.yml"))


def is_sidecar(path: Path) -> bool:
    """``<base>.yaml`` beside ``<base>.jsonl``: the JSONL dataset's defaults, not a suite."""
    return path.suffix.lower() == ".yaml" and path.with_suffix(".jsonl").is_file()


def sidecar_of(path: Path) -> Path:
    return path.with_suffix(".yaml")


def under_evals_folder(path: Path, rootdir: Path | None = None) -> bool:
    """Whether a folder named ``evals`` holds ``path`` (counting from the rootdir's own name
    down, so a checkout inside ``~/evals/`` does not make every YAML file a suite)."""
    folders = path.parent.parts
    if rootdir is not None:
        try:
            folders = path.parent.relative_to(rootdir.parent).parts
        except ValueError:
            pass
    return EVALS_FOLDER in folders


def is_agent_eval_file(
    path: Path, *, rootdir: Path | None = None, named: bool = False, max_file_mb: float | None = None
) -> bool:
    """Whether pytest should collect ``path`` as an agent eval suite. ``named``: the user gave
    this file on the command line. Reads the file (capped: ``max_file_mb``, the loader's default
    when None) when its name alone does not say."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return sidecar_of(path).is_file() and (named or under_evals_folder(path, rootdir))
    if suffix not in (".yaml", ".yml") or is_sidecar(path):
        return False
    by_name = is_named_like_eval(path)
    if not (by_name or named or under_evals_folder(path, rootdir)):
        return False
    text = _read(path, max_file_mb)
    if text is None:
        return by_name  # unreadable: an eval file by its name says so through the loader
    if not by_name and not looks_like_agent_eval(text):
        return False
    document = _document(text, path)
    if document is _UNPARSED:
        return by_name or looks_like_agent_eval(text)
    return out_of_scope_reason(document) is None


PROMPTFOO_NAMES = ("promptfooconfig.yaml", "promptfooconfig.yml", "promptfooconfig.json")
AGENTV_SUITE_NAMES = ("suite.yaml", "suite.yml")


def is_promptfoo_file(
    path: Path, *, rootdir: Path | None = None, named: bool = False, max_file_mb: float | None = None
) -> bool:
    """Whether pytest should collect ``path`` as a promptfoo-shaped suite: promptfoo's
    ``promptfooconfig.yaml|yml|json`` and ``*.promptfoo.yaml|yml``; AgentV v5's ``suite.yaml``
    below an ``evals`` folder and ``EVAL.yaml`` / ``*.eval.yaml`` (or a YAML file named on the
    command line) whose keys are the new shape (``prompts``, ``providers``, ``default_test``,
    ``tests[].vars``, ``tests:`` naming a folder), told apart from AgentV's older shape."""
    name = path.name.lower()
    if name in PROMPTFOO_NAMES or name.endswith((".promptfoo.yaml", ".promptfoo.yml")):
        return True
    if path.suffix.lower() not in (".yaml", ".yml") or is_sidecar(path):
        return False
    suite_name = name in AGENTV_SUITE_NAMES and under_evals_folder(path, rootdir)
    if not (suite_name or is_named_like_eval(path) or named):
        return False
    text = _read(path, max_file_mb)
    if text is None:
        return False
    keys = top_level_keys(text)
    if not any(key in keys for key in (*V5_TOP_KEYS, "default_test", "evaluate_options", "tests")):
        return False
    document = _document(text, path)
    if document is _UNPARSED or not isinstance(document, dict):
        return False
    reason = out_of_scope_reason(document, tests_folder=_tests_folder(document, path))
    if reason is None or "case file" in reason:
        return False
    if not (suite_name or is_named_like_eval(path)):
        # Only named on the command line: a Weval blueprint may have a top-level `prompts` too
        # (its single-document form), so ask for what only the promptfoo shape has.
        if "models" in document or "title" in document:
            return False
        return any(key in document for key in ("providers", "defaultTest", "default_test", "evaluate_options"))
    return True


def _tests_folder(document: dict[str, Any], path: Path) -> Path | None:
    tests = document.get("tests")
    return path.parent / tests if isinstance(tests, str) else None


def top_level_keys(text: str) -> list[str]:
    """The keys written at the start of a line (a block mapping's top level)."""
    return [next(g for g in match.groups() if g) for match in _TOP_LEVEL_KEY.finditer(text)]


def looks_like_agent_eval(text: str) -> bool:
    """A quick sniff (docs/agent-formats.md §4, 'Format detection heuristic'): a top-level case
    list (``tests``, ``evalcases`` or ``eval_cases``). A Weval blueprint has none: its header
    holds ``title`` / ``models`` and its prompts ``prompt`` / ``messages`` / ``should``."""
    return any(key in CASE_LIST_KEYS for key in top_level_keys(text))


def out_of_scope_reason(document: Any, *, tests_folder: Path | None = None) -> str | None:
    """Why a parsed file is a format this plugin leaves alone (AgentV v5, promptfoo-like), or
    None. ``tests_folder``: where ``tests:`` points, when it is a string naming a folder."""
    if not isinstance(document, dict):
        return None
    for key in V5_TOP_KEYS:
        if key in document:
            return f"AgentV v5 / promptfoo format (top-level `{key}`)"
    tests = document.get("tests")
    if isinstance(tests, str) and (
        tests.rstrip().endswith("/") or (tests_folder is not None and tests_folder.is_dir())
    ):
        return "AgentV v5 format (`tests` names a folder of cases)"
    if isinstance(tests, list) and any(isinstance(case, dict) and "vars" in case for case in tests):
        return "AgentV v5 / promptfoo format (`tests[].vars`)"
    if not any(key in document for key in CASE_LIST_KEYS) and _has_text_assertion(document.get("assert")):
        # a v5 case file of a folder of cases (`assert: [text]` and `input`, no case list)
        return "AgentV v5 case file (an `assert` entry that is plain text)"
    return None


def _has_text_assertion(value: Any) -> bool:
    return isinstance(value, list) and any(isinstance(entry, str) for entry in value)


_UNPARSED = object()


def _read(path: Path, max_file_mb: float | None) -> str | None:
    if max_file_mb is None:
        from pytest_weval.blueprint.loader import DEFAULT_MAX_FILE_MB

        max_file_mb = DEFAULT_MAX_FILE_MB
    limit = int(max_file_mb * 1024 * 1024)
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    return data.decode("utf-8", errors="replace")


def _document(text: str, path: Path) -> Any:
    """The file's first document, or ``_UNPARSED`` when it does not parse (the loader will say why)."""
    # Imported here: the plugin asks whether a file is an agent eval before any run needs the
    # YAML loader (and pydantic through it); only a file whose name or case list says so is parsed.
    from pytest_weval.blueprint.loader import load_source, room_for_depth
    from pytest_weval.blueprint.model import BlueprintError

    try:
        with room_for_depth():
            source = load_source(text, fmt="yaml", path=str(path))
    except BlueprintError:
        return _UNPARSED
    return source.documents[0] if source.documents else _UNPARSED
