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

Dialect (it sets defaults, see ``evaluators.py``): a ``name`` key, without an ``$schema`` that
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
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from pytest_weval.blueprint.ids import blueprint_id_from_path
from pytest_weval.blueprint.loader import (
    DEFAULT_MAX_FILE_MB,
    RawSource,
    decode_blueprint_bytes,
    load_source,
    read_blueprint_file,
    room_for_depth,
)
from pytest_weval.blueprint.model import BlueprintError, Location
from pytest_weval.formats.context import Context, Problem, Where, describe, finite_number, text_value
from pytest_weval.formats.discover import out_of_scope_reason, sidecar_of
from pytest_weval.formats.evaluators import parse_evaluator_list, parse_rubrics
from pytest_weval.formats.messages import parse_expected, parse_input
from pytest_weval.formats.model import AgentCase, AgentMessage, AgentSuite, Dialect, Evaluator
from pytest_weval.formats.targets import targets_for

CASE_LIST_KEYS = ("tests", "eval_cases", "evalcases", "cases")
_GLOB_CHARS = re.compile(r"[*?{\[]")
_ID_SUFFIX = re.compile(r"(\.eval)?\.(ya?ml|jsonl)$", re.I)


def load_agent_suite(path: Path, *, rootdir: Path, max_file_mb: float = DEFAULT_MAX_FILE_MB) -> AgentSuite | None:
    """Load one agent eval file (YAML, or JSONL with its sidecar). None for a file in a format
    out of scope (AgentV v5); ``BlueprintError`` for a file that cannot be used at all."""
    path = Path(path).resolve()
    rootdir = Path(rootdir).resolve()
    with room_for_depth():
        return _Loader(path, rootdir, max_file_mb).load()


def suite_id_from_path(rel_path: str) -> str:
    """``evals/dataset.eval.yaml`` -> ``evals__dataset``; ``a/EVAL.yaml`` -> ``a__EVAL``."""
    return blueprint_id_from_path(_ID_SUFFIX.sub("", rel_path))


@dataclasses.dataclass
class _Entry:
    """One written case, with where it comes from (this file, a cases file, a JSONL line)."""

    raw: Any
    where: Where
    location: Location
    problem: Problem | None = None
    fallback_id: str | None = None


@dataclasses.dataclass
class _Defaults:
    """What every case of the suite inherits."""

    input: tuple[AgentMessage, ...] = ()
    input_problem: Problem | None = None
    evaluators: tuple[Evaluator, ...] | None = None  # None: the suite has no list
    evaluators_problem: Problem | None = None
    override: bool = False  # v2.6.1: a case's own list replaces the suite's
    evaluator_kind: Any = None
    timeout_s: float | None = None


class _Loader:
    def __init__(self, path: Path, rootdir: Path, max_file_mb: float):
        self.path = path
        self.rootdir = rootdir
        self.max_file_mb = max_file_mb
        self.shown = _display(path, rootdir)

    # --- the file ------------------------------------------------------------------------------

    def load(self) -> AgentSuite | None:
        if self.path.suffix.lower() == ".jsonl":
            sidecar = sidecar_of(self.path)
            if sidecar.is_file():
                source = self._read_yaml(sidecar)
                document = self._single_mapping(source, what="a JSONL dataset's sidecar")
            else:
                source = RawSource(path=_display(sidecar, self.rootdir), fmt="yaml", documents=[{}])
                document = source.documents[0]
            suite_where = Where(source)
            entries = self._jsonl_entries(self.path)
            if not entries:
                raise BlueprintError(
                    "the JSONL dataset has no cases", Location(path=self.shown), hint="write one case object a line"
                )
            return self._build(document, suite_where, entries, case_list_key=None)
        source = self._read_yaml(self.path)
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
        entries = self._expand(document, key, suite_where)
        if not entries:
            raise BlueprintError(
                f"`{key}` holds no test cases", suite_where.key(document, key), hint="add at least one case"
            )
        return self._build(document, suite_where, entries, case_list_key=key)

    def _read_yaml(self, path: Path) -> RawSource:
        shown = _display(path, self.rootdir)
        try:
            return read_blueprint_file(path, display_path=shown, max_file_mb=self.max_file_mb)
        except BlueprintError as exc:
            raise _reworded(exc) from None
        except OSError as exc:
            raise BlueprintError(
                f"the file cannot be read ({exc.strerror or exc})", Location(path=shown), hint="check the path"
            ) from None

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

    # --- where the cases come from -------------------------------------------------------------

    def _expand(self, document: dict[str, Any], key: str, where: Where) -> list[_Entry]:
        tests = document[key]
        if isinstance(tests, str):
            ctx = self._context(where, "agentv")
            found, why = self._case_file(ctx, tests)
            if found is None:
                raise BlueprintError(
                    f"the cases file {tests!r} cannot be used: {why}",
                    where.key(document, key),
                    hint="add the file, or fix the path (relative to the eval file's folder)",
                )
            return self._case_file_entries(found)
        if not isinstance(tests, list):
            raise BlueprintError(
                f"`{key}` must be a list of test cases or the path of a cases file, not {describe(tests)}",
                where.key(document, key),
            )
        entries: list[_Entry] = []
        for index, item in enumerate(tests):
            location = where.item(tests, index, f"{key}[{index}]")
            if isinstance(item, dict):
                entries.append(_Entry(item, where, location))
            elif isinstance(item, str):
                entries.extend(self._reference_entries(item, where, location))
            else:
                entries.append(
                    _Entry(
                        item,
                        where,
                        location,
                        problem=Problem(
                            f"a test case must be a mapping (or the path of a cases file), not {describe(item)}",
                            location,
                            hint="write `- id: ...` with the case's keys below it",
                        ),
                    )
                )
        return entries

    def _reference_entries(self, written: str, where: Where, location: Location) -> list[_Entry]:
        """A string in the case list: a YAML/JSONL file of cases, or a ``file://`` glob."""
        ctx = self._context(where, "agentv")
        label = _reference_label(written)
        raw = written.removeprefix("file://")
        if _GLOB_CHARS.search(raw):
            files = ctx.find_glob(written)
            if not files:
                problem = Problem(f"no file matches the cases pattern {written!r}", location, hint="fix the pattern")
                return [_Entry(written, where, location, problem=problem, fallback_id=label)]
        else:
            found, why = self._case_file(ctx, written)
            if found is None:
                problem = Problem(
                    f"the cases file {written!r} cannot be used: {why}",
                    location,
                    hint="add the file, or fix the path (relative to the eval file's folder)",
                )
                return [_Entry(written, where, location, problem=problem, fallback_id=label)]
            files = [found]
        entries: list[_Entry] = []
        for file in files:
            try:
                entries.extend(self._case_file_entries(file))
            except BlueprintError as exc:
                problem = Problem(f"the cases file {written!r} cannot be used: {exc.message}", exc.location, exc.hint)
                entries.append(_Entry(written, where, location, problem=problem, fallback_id=label))
        return entries

    def _case_file(self, ctx: Context, written: str) -> tuple[Path | None, str | None]:
        found, why = ctx.find_file(written, ancestors=False)
        if found is not None and found.suffix.lower() not in (".yaml", ".yml", ".jsonl"):
            return None, f"a cases file is .yaml, .yml or .jsonl, not {found.suffix or 'without a suffix'}"
        return found, why

    def _case_file_entries(self, path: Path) -> list[_Entry]:
        if path.suffix.lower() == ".jsonl":
            return self._jsonl_entries(path)
        source = self._read_yaml(path)
        where = Where(source)
        cases = source.documents[0] if len(source.documents) == 1 else None
        if not isinstance(cases, list):
            raise BlueprintError(
                "a cases file must hold one YAML list of test cases",
                where.at(cases) if cases is not None else Location(path=source.path, line=1),
                hint="write `- id: ...` entries at the top level of the file",
            )
        entries = []
        for index, item in enumerate(cases):
            location = where.item(cases, index, f"[{index}]")
            problem = None
            if not isinstance(item, dict):
                problem = Problem(f"a test case must be a mapping, not {describe(item)}", location)
            entries.append(_Entry(item, where, location, problem=problem))
        return entries

    def _jsonl_entries(self, path: Path) -> list[_Entry]:
        shown = _display(path, self.rootdir)
        limit = int(self.max_file_mb * 1024 * 1024)
        try:
            with open(path, "rb") as handle:
                data = handle.read(limit + 1)
        except OSError as exc:
            raise BlueprintError(f"the file cannot be read ({exc.strerror or exc})", Location(path=shown)) from None
        if len(data) > limit:
            raise BlueprintError(
                f"the file is larger than the {self.max_file_mb:g} MB an eval file may be",
                Location(path=shown, field="file size"),
                hint="split the dataset, or raise the cap with ini `weval_max_file_mb`",
            )
        text = decode_blueprint_bytes(data, shown)
        entries: list[_Entry] = []
        for number, line in enumerate(text.split("\n")):
            if not line.strip():
                continue
            location = Location(path=shown, line=number + 1, column=1)
            try:
                source = load_source(line.rstrip("\r"), fmt="json", path=shown)
            except BlueprintError as exc:
                message = exc.message.replace("Failed to parse JSON blueprint", "this line is not valid JSON")
                at = exc.location.model_copy(update={"line": number + 1})
                bad_line = Problem(message, at, hint="each line of a JSONL file is one JSON object")
                entries.append(_Entry(None, Where(_empty(shown), number), location, bad_line, f"line-{number + 1}"))
                continue
            where = Where(source, line_offset=number)
            item = source.documents[0]
            problem: Problem | None = None
            if not isinstance(item, dict):
                problem = Problem(f"a line must hold one JSON object (a test case), not {describe(item)}", location)
            entries.append(_Entry(item, where, location, problem, f"line-{number + 1}"))
        return entries

    # --- the suite -----------------------------------------------------------------------------

    def _context(self, where: Where, dialect: Dialect) -> Context:
        return Context(
            file_dir=self.path.parent, rootdir=self.rootdir, dialect=dialect, where=where, max_file_mb=self.max_file_mb
        )

    def _build(
        self, document: dict[str, Any], where: Where, entries: list[_Entry], *, case_list_key: str | None
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
        defaults = self._defaults(ctx, document, execution, case_list_key=case_list_key)
        cases = [self._case(ctx, entry, index, defaults) for index, entry in enumerate(entries)]
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
            tags=_tags(document.get("tags"), metadata.get("tags")),
            targets=_suite_targets(document, execution, where),
            cases=tuple(cases),
            named_targets=targets_for(self.path, rootdir=self.rootdir, max_file_mb=self.max_file_mb),
            directory=str(self.path.parent),
        )

    def _defaults(
        self, ctx: Context, document: dict[str, Any], execution: dict[str, Any], *, case_list_key: str | None
    ) -> _Defaults:
        defaults = _Defaults(evaluator_kind=document.get("evaluator"))
        if document.get("input") is not None:
            try:
                defaults.input = parse_input(ctx, document, "input", "input")
            except Problem as problem:
                defaults.input_problem = problem
        if document.get("assert") is not None:
            owner, key, field = document, "assert", "assert"
        elif execution.get("evaluators") is not None:
            owner, key, field = execution, "evaluators", "execution.evaluators"
        else:
            owner = None
        if owner is not None:
            try:
                defaults.evaluators = parse_evaluator_list(ctx, owner, key, field)
            except Problem as problem:
                defaults.evaluators_problem = problem
        classic_list = case_list_key == "evalcases" or (case_list_key is None and ctx.dialect == "agentv-classic")
        defaults.override = classic_list and document.get("assert") is None
        timeout = execution.get("timeout_seconds")
        if timeout is not None:
            if not finite_number(timeout) or timeout <= 0:
                raise BlueprintError(
                    f"`execution.timeout_seconds` must be a number > 0, not {describe(timeout)}",
                    ctx.where.key(execution, "timeout_seconds", "execution.timeout_seconds"),
                )
            defaults.timeout_s = float(timeout)
        return defaults

    # --- one case ------------------------------------------------------------------------------

    def _case(self, suite_ctx: Context, entry: _Entry, index: int, defaults: _Defaults) -> AgentCase:
        fallback = entry.fallback_id or f"case-{index + 1}"
        if entry.problem is not None or not isinstance(entry.raw, dict):
            problem = entry.problem or Problem(
                f"a test case must be a mapping, not {describe(entry.raw)}", entry.location
            )
            return AgentCase(id=fallback, problem=problem.text(), location=entry.location)
        raw: dict[str, Any] = entry.raw
        ctx = suite_ctx.with_where(entry.where)
        location = ctx.where.at(raw)
        fields: dict[str, Any] = {"id": fallback, "location": location, "timeout_s": defaults.timeout_s}
        steps = (_case_id, _case_meta, _case_execution, _case_messages, _case_evaluators)
        try:
            for step in steps:
                fields.update(step(ctx, raw, defaults))
        except Problem as problem:
            return AgentCase(**fields, problem=problem.text())
        return AgentCase(**fields)


def _case_id(ctx: Context, raw: dict[str, Any], defaults: _Defaults) -> dict[str, Any]:
    written = raw.get("id")
    case_id = text_value(written)
    if case_id is None or not case_id.strip():
        raise ctx.problem_at(
            raw,
            "id",
            "the test case has no `id`" if written is None else f"`id` must be text, not {describe(written)}",
            hint="give each case a unique `id:` (it names the test)",
        )
    return {"id": case_id.strip()}


def _case_meta(ctx: Context, raw: dict[str, Any], defaults: _Defaults) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    criteria_key = next((k for k in ("criteria", "expected_outcome", "outcome") if raw.get(k) is not None), None)
    if criteria_key is not None:
        criteria = text_value(raw[criteria_key])
        if criteria is None:
            raise ctx.problem_key(
                raw, criteria_key, criteria_key, f"`{criteria_key}` must be text, not {describe(raw[criteria_key])}"
            )
        fields["criteria"] = criteria
    for key in ("description", "note", "conversation_id"):
        if raw.get(key) is not None:
            value = text_value(raw[key])
            if value is None:
                raise ctx.problem_key(raw, key, key, f"`{key}` must be text, not {describe(raw[key])}")
            fields[key] = value
    metadata = raw.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise ctx.problem_key(
                raw, "metadata", "metadata", f"`metadata` must be a mapping, not {describe(metadata)}"
            )
        fields["metadata"] = metadata
    fields["tags"] = _tags(raw.get("tags"), (metadata or {}).get("tags"))
    return fields


def _case_execution(ctx: Context, raw: dict[str, Any], defaults: _Defaults) -> dict[str, Any]:
    execution = raw.get("execution")
    if execution is None:
        return {}
    if not isinstance(execution, dict):
        raise ctx.problem_key(
            raw, "execution", "execution", f"`execution` must be a mapping, not {describe(execution)}"
        )
    fields: dict[str, Any] = {}
    if execution.get("targets") is not None:
        targets = execution["targets"]
        if not isinstance(targets, list) or not targets or not all(isinstance(t, str) and t.strip() for t in targets):
            raise ctx.problem_key(
                execution,
                "targets",
                "execution.targets",
                f"`execution.targets` must list target names, not {describe(targets)}",
            )
        fields["targets"] = tuple(t.strip() for t in targets)
    elif execution.get("target") is not None:
        target = text_value(execution["target"])
        if not target or not target.strip():
            raise ctx.problem_key(
                execution,
                "target",
                "execution.target",
                f"`execution.target` must name a target, not {describe(execution['target'])}",
            )
        fields["targets"] = (target.strip(),)
    skip = execution.get("skip_defaults", False)
    if not isinstance(skip, bool):
        raise ctx.problem_key(
            execution,
            "skip_defaults",
            "execution.skip_defaults",
            f"`skip_defaults` must be true or false, not {describe(skip)}",
        )
    timeout = execution.get("timeout_seconds")
    if timeout is not None:
        if not finite_number(timeout) or timeout <= 0:
            raise ctx.problem_key(
                execution,
                "timeout_seconds",
                "execution.timeout_seconds",
                f"`timeout_seconds` must be a number > 0, not {describe(timeout)}",
            )
        fields["timeout_s"] = float(timeout)
    return fields


def _skips_defaults(raw: dict[str, Any]) -> bool:
    execution = raw.get("execution")
    return isinstance(execution, dict) and execution.get("skip_defaults") is True


def _case_messages(ctx: Context, raw: dict[str, Any], defaults: _Defaults) -> dict[str, Any]:
    input_key = next((k for k in ("input_messages", "input") if raw.get(k) is not None), None)
    if input_key is None:
        raise ctx.problem_at(
            raw, "input", "the test case has no `input`", hint="write `input: \"...\"` or a list of messages"
        )
    messages = parse_input(ctx, raw, input_key, input_key)
    if not _skips_defaults(raw):
        if defaults.input_problem is not None:
            raise defaults.input_problem
        messages = defaults.input + messages
    fields: dict[str, Any] = {"input": messages}
    expected_key = next((k for k in ("expected_messages", "expected_output") if raw.get(k) is not None), None)
    if expected_key is not None:
        fields["expected"], fields["expected_structured"] = parse_expected(ctx, raw, expected_key, expected_key)
    return fields


def _case_evaluators(ctx: Context, raw: dict[str, Any], defaults: _Defaults) -> dict[str, Any]:
    execution: dict[str, Any] = raw["execution"] if isinstance(raw.get("execution"), dict) else {}
    if raw.get("assert") is not None:
        own: tuple[Evaluator, ...] | None = parse_evaluator_list(ctx, raw, "assert", "assert")
    elif execution.get("evaluators") is not None:
        own = parse_evaluator_list(ctx, execution, "evaluators", "execution.evaluators")
    elif raw.get("evaluators") is not None:
        own = parse_evaluator_list(ctx, raw, "evaluators", "evaluators")
    else:
        own = None
    if (defaults.override and own is not None) or _skips_defaults(raw):
        inherited: tuple[Evaluator, ...] = ()
    else:
        if defaults.evaluators_problem is not None:
            raise defaults.evaluators_problem
        inherited = defaults.evaluators or ()
    evaluators = (own or ()) + inherited
    if raw.get("rubrics") is not None:
        rubrics = parse_rubrics(ctx, raw, "rubrics", "rubrics", inline=True)
        rubric = Evaluator(name="rubric", type="rubric", rubrics=rubrics, location=ctx.where.key(raw, "rubrics"))
        evaluators = (rubric,) + evaluators
    if not evaluators:
        kind_owner = raw if raw.get("evaluator") is not None else None
        kind = raw.get("evaluator", defaults.evaluator_kind)
        if kind is not None and kind != "llm_judge":
            where = (
                ctx.where.key(raw, "evaluator", "evaluator")
                if kind_owner is not None
                else ctx.where.at(raw, "evaluator")
            )
            raise Problem(
                f"`evaluator: {kind}` names an evaluator kind that cannot run without its settings",
                where,
                hint="list the evaluator under `assert:` (or `execution.evaluators:`) with its fields",
            )
        criteria = next((raw[k] for k in ("criteria", "expected_outcome", "outcome") if raw.get(k) is not None), None)
        if not (isinstance(criteria, str) and criteria.strip()):
            raise ctx.problem_at(
                raw,
                "criteria",
                "the test case has nothing to judge by: no `criteria`, no `rubrics` and no evaluators",
                hint="write `criteria:` (what a good answer does), or add `rubrics:` or `assert:`",
            )
    return {"evaluators": evaluators}


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


def _tags(*values: Any) -> tuple[str, ...]:
    tags: list[str] = []
    for value in values:
        items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        for item in items:
            text = text_value(item)
            if text and text.strip():
                tags.append(text.strip())
    return tuple(dict.fromkeys(tags))


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


def _reference_label(written: str) -> str:
    return written.removeprefix("file://").strip() or "cases"


def _display(path: Path, rootdir: Path) -> str:
    try:
        return path.relative_to(rootdir).as_posix()
    except ValueError:
        return path.as_posix()


def _empty(shown: str) -> RawSource:
    return RawSource(path=shown, fmt="json", documents=[None])


def _reworded(exc: BlueprintError) -> BlueprintError:
    """The blueprint reader's errors, in an eval file's words."""
    message = (
        exc.message.replace("YAML blueprint is empty or contains only null documents.", "the file is empty")
        .replace("Failed to parse YAML blueprint", "YAML cannot be read")
        .replace("a blueprint may be", "an eval file may be")
    )
    hint = exc.hint
    if hint and "blueprint" in hint:
        hint = hint.replace(
            "add a header and prompts, or remove the file", "add `tests:` with cases, or remove the file"
        )
        hint = hint.replace("split the blueprint", "split the file")
    return BlueprintError(message, exc.location, hint)
