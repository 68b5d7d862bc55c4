"""An agent eval file -> a typed ``AgentSuite`` (docs/agent-formats.md §1-§2, §4, §5.1, §7).

One tolerant loader for AgentV classic (v2.6.1), AgentV transitional (v2.10) and AgentEvals
``EVAL.yaml``; the alias table of §4 is applied here and nowhere else:

* cases: ``tests`` > ``eval_cases`` > ``evalcases`` > ``cases``; a string is a YAML or JSONL
  file of cases, and a string entry in the list (``file://`` optional, globs allowed) is too;
  a ``.jsonl`` suite is one case a line, with its ``<base>.yaml`` sidecar as the suite's keys;
* criterion: ``criteria`` > ``expected_outcome`` > ``outcome``;
* input: ``input_messages`` > ``input`` (a string is one user message); the suite's ``input``
  is put before each case's (not for a case with ``execution.skip_defaults``);
* reference: ``expected_messages`` > ``expected_output``;
* evaluators: the case's ``assert`` > ``execution.evaluators`` > ``evaluators``; the suite's
  ``assert`` > ``execution.evaluators`` follow them (merged; ``execution.skip_defaults`` drops
  them), except in a file that lists ``evalcases`` and has no top-level ``assert`` (AgentV
  v2.6.1 and the first AgentEvals spec), where a case's own list replaces the suite's
  (§1.5, §7.2); inline ``rubrics`` come first, as an evaluator named ``rubric``;
* targets: the case's ``execution.targets`` / ``execution.target``; the file's
  ``execution.targets`` / ``execution.target`` / ``target``; named targets from the nearest
  ``.agentv/targets.yaml`` (``targets.py``).

Dialect (it sets defaults, see ``rubrics.py`` and ``trajectory.py``): a ``name`` key, without an ``$schema`` that
says AgentV, is AgentEvals; ``evalcases``, or cases written with ``expected_outcome``, is AgentV
classic; the rest is AgentV (v2.7+).

Mistakes: a file that cannot be read as a suite at all (YAML error, not a mapping, no case
list, an empty one, a missing ``tests: ./cases.yaml`` file, a wrongly typed suite key) raises a
located ``BlueprintError``. A mistake inside one case, or in a suite default a case inherits (a
missing fixture or prompt file, an invalid evaluator, a bad weight or score range, an unknown
type), becomes that case's ``problem``; the other cases still load. A case without an ``id``
is ``case-<n>`` with a problem; an id used again keeps a problem and becomes ``<id>#2`` (AgentV
keys results by id, so two cases cannot share one).

AgentV v5 (promptfoo-like) files give None: no item, no error.

Here: the file and the suite. Where the cases come from is ``case_sources.py``; one case, with
the suite defaults it inherits, ``cases.py``; evaluators ``evaluators.py``; messages
``messages.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pytest_weval.blueprint.ids import blueprint_id_from_path
from pytest_weval.blueprint.loader import DEFAULT_MAX_FILE_MB, RawSource, room_for_depth
from pytest_weval.blueprint.model import BlueprintError, Location
from pytest_weval.formats.case_sources import CaseEntry, expand_case_list, jsonl_entries, read_yaml
from pytest_weval.formats.cases import build_case, suite_defaults, tags_of
from pytest_weval.formats.context import (
    Context,
    RegexCheck,
    Where,
    describe,
    display_path,
    no_regex_check,
    text_value,
)
from pytest_weval.formats.discover import out_of_scope_reason, sidecar_of
from pytest_weval.formats.model import AgentCase, AgentSuite, Dialect
from pytest_weval.formats.targets import targets_for

CASE_LIST_KEYS = ("tests", "eval_cases", "evalcases", "cases")
_ID_SUFFIX = re.compile(r"(\.eval)?\.(ya?ml|jsonl)$", re.I)


def load_agent_suite(
    path: Path,
    *,
    rootdir: Path,
    max_file_mb: float = DEFAULT_MAX_FILE_MB,
    check_regex: RegexCheck = no_regex_check,
) -> AgentSuite | None:
    """Load one agent eval file (YAML, or JSONL with its sidecar). None for a file in a format
    out of scope (AgentV v5); ``BlueprintError`` for a file that cannot be used at all.

    ``check_regex(pattern)`` says why a `regex` evaluator's pattern is not valid ECMAScript
    (None when it is): the plugin passes ``scoring.check_pattern_syntax``, so formats/ needs no
    regex engine of its own (and imports nothing from scoring/)."""
    path = Path(path).resolve()
    rootdir = Path(rootdir).resolve()
    with room_for_depth():
        return _Loader(path, rootdir, max_file_mb, check_regex).load()


def suite_id_from_path(rel_path: str) -> str:
    """``evals/dataset.eval.yaml`` -> ``evals__dataset``; ``a/EVAL.yaml`` -> ``a__EVAL``."""
    return blueprint_id_from_path(_ID_SUFFIX.sub("", rel_path))


class _Loader:
    def __init__(self, path: Path, rootdir: Path, max_file_mb: float, check_regex: RegexCheck):
        self.path = path
        self.rootdir = rootdir
        self.max_file_mb = max_file_mb
        self.check_regex = check_regex
        self.shown = display_path(path, rootdir)

    # --- the file ------------------------------------------------------------------------------

    def load(self) -> AgentSuite | None:
        if self.path.suffix.lower() == ".jsonl":
            sidecar = sidecar_of(self.path)
            if sidecar.is_file():
                source = read_yaml(sidecar, rootdir=self.rootdir, max_file_mb=self.max_file_mb)
                document = self._single_mapping(source, what="a JSONL dataset's sidecar")
            else:
                source = RawSource(path=display_path(sidecar, self.rootdir), fmt="yaml", documents=[{}])
                document = source.documents[0]
            suite_where = Where(source)
            entries = jsonl_entries(self.path, rootdir=self.rootdir, max_file_mb=self.max_file_mb)
            if not entries:
                raise BlueprintError(
                    "the JSONL dataset has no cases", Location(path=self.shown), hint="write one case object a line"
                )
            return self._build(document, suite_where, entries, case_list_key=None)
        source = read_yaml(self.path, rootdir=self.rootdir, max_file_mb=self.max_file_mb)
        document = self._single_mapping(source, what="an eval file")
        suite_where = Where(source)
        key = next((k for k in CASE_LIST_KEYS if document.get(k) is not None), None)
        tests = document.get(key) if key else None
        tests_folder = None
        if isinstance(tests, str):
            tests_folder = (self.path.parent / tests.removeprefix("file://")).resolve()
        if out_of_scope_reason(document, tests_folder=tests_folder) is not None:
            return None
        if key is None:
            raise BlueprintError(
                "the file has no list of test cases",
                suite_where.at(document),
                hint="list the cases under `tests:` (AgentV classic: `evalcases:`), each with `id`, `criteria` and `input`",
            )
        entries = expand_case_list(self._context(suite_where, "agentv"), document, key)
        if not entries:
            raise BlueprintError(
                f"`{key}` holds no test cases", suite_where.key(document, key), hint="add at least one case"
            )
        return self._build(document, suite_where, entries, case_list_key=key)

    def _single_mapping(self, source: RawSource, *, what: str) -> dict[str, Any]:
        where = Where(source)
        if len(source.documents) > 1:
            raise BlueprintError(
                f"{what} holds one YAML document; this one has {len(source.documents)}",
                where.at(source.documents[1], "---"),
                hint="remove the extra `---` documents (several documents are a Weval blueprint's shape)",
            )
        document = source.documents[0]
        if not isinstance(document, dict):
            raise BlueprintError(
                f"{what} must be a mapping of keys (`tests:`, `execution:`, ...), not {describe(document)}",
                where.at(document) if isinstance(document, list) else Location(path=source.path, line=1),
                hint="a bare list of cases belongs in a cases file that an eval file names with `tests: ./cases.yaml`",
            )
        return document

    # --- the suite -----------------------------------------------------------------------------

    def _context(self, where: Where, dialect: Dialect) -> Context:
        return Context(
            file_dir=self.path.parent,
            rootdir=self.rootdir,
            dialect=dialect,
            where=where,
            max_file_mb=self.max_file_mb,
            check_regex=self.check_regex,
        )

    def _build(
        self, document: dict[str, Any], where: Where, entries: list[CaseEntry], *, case_list_key: str | None
    ) -> AgentSuite:
        dialect = detect_dialect(document, [e.raw for e in entries], case_list_key=case_list_key)
        ctx = self._context(where, dialect)
        execution = document.get("execution")
        if execution is not None and not isinstance(execution, dict):
            raise BlueprintError(
                f"`execution` must be a mapping, not {describe(execution)}",
                where.key(document, "execution"),
                hint="e.g. `execution: {target: default}`",
            )
        execution = execution or {}
        defaults = suite_defaults(ctx, document, execution, case_list_key=case_list_key)
        cases = [build_case(ctx, entry, index, defaults) for index, entry in enumerate(entries)]
        cases = _unique_ids(cases)
        name = text_value(document.get("name"))
        dataset = text_value(document.get("dataset"))
        suite_id = (name or dataset or "").strip() or suite_id_from_path(self.shown)
        description = text_value(document.get("description"))
        metadata: dict[str, Any] = document["metadata"] if isinstance(document.get("metadata"), dict) else {}
        return AgentSuite(
            path=self.shown,
            id=suite_id,
            dialect=dialect,
            title=(name or dataset or "").strip() or suite_id,
            description=description,
            tags=tags_of(document.get("tags"), metadata.get("tags")),
            targets=_suite_targets(document, execution, where),
            cases=tuple(cases),
            named_targets=targets_for(self.path, rootdir=self.rootdir, max_file_mb=self.max_file_mb),
            directory=str(self.path.parent),
        )


# --- helpers ---------------------------------------------------------------------------------------


def detect_dialect(document: dict[str, Any], cases: list[Any], *, case_list_key: str | None = None) -> Dialect:
    """AgentEvals for a ``name`` (unless ``$schema`` says AgentV); AgentV classic for
    ``evalcases`` or classic case keys; else AgentV (v2.7+)."""
    schema = document.get("$schema")
    agentv_schema = isinstance(schema, str) and schema.lower().startswith("agentv")
    if document.get("name") is not None and not agentv_schema:
        return "agentevals"
    if case_list_key == "evalcases":
        return "agentv-classic"
    if case_list_key in ("tests", "eval_cases") or document.get("assert") is not None:
        return "agentv"
    modern = ("criteria", "assert")
    classic = ("expected_outcome", "input_messages", "expected_messages")
    dicts = [c for c in cases if isinstance(c, dict)]
    if any(any(k in c for k in modern) for c in dicts):
        return "agentv"
    if any(any(k in c for k in classic) for c in dicts):
        return "agentv-classic"
    return "agentv"


def _suite_targets(document: dict[str, Any], execution: dict[str, Any], where: Where) -> tuple[str, ...]:
    if execution.get("targets") is not None:
        targets = execution["targets"]
        if not isinstance(targets, list) or not targets or not all(isinstance(t, str) and t.strip() for t in targets):
            raise BlueprintError(
                f"`execution.targets` must list target names, not {describe(targets)}",
                where.key(execution, "targets", "execution.targets"),
            )
        return tuple(t.strip() for t in targets)
    for owner, key, field in ((execution, "target", "execution.target"), (document, "target", "target")):
        if owner.get(key) is not None:
            target = text_value(owner[key])
            if not target or not target.strip():
                raise BlueprintError(
                    f"`{field}` must name a target, not {describe(owner[key])}", where.key(owner, key, field)
                )
            return (target.strip(),)
    return ()


def _unique_ids(cases: list[AgentCase]) -> list[AgentCase]:
    first: dict[str, AgentCase] = {}
    taken = {case.id for case in cases}
    result = []
    for case in cases:
        if case.id not in first:
            first[case.id] = case
            result.append(case)
            continue
        number = 2
        while f"{case.id}#{number}" in taken:
            number += 1
        new_id = f"{case.id}#{number}"
        taken.add(new_id)
        original = first[case.id]
        problem = case.problem or str(
            BlueprintError(
                f"test case id {case.id!r} is used again (first at line {original.location.line}); ids must be unique in a file",
                case.location.model_copy(update={"field": "id"}),
                hint="rename one of the cases",
            )
        )
        result.append(case.model_copy(update={"id": new_id, "problem": problem}))
    return result
