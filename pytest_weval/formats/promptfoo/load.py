"""A promptfoo-shaped file -> a typed ``PromptfooSuite`` (docs/promptfoo.md, 'Collection').

promptfoo's ``promptfooconfig.yaml`` and AgentV v5's ``suite.yaml`` / ``*.eval.yaml`` are one
shape; AgentV spells ``defaultTest`` as ``default_test``, writes a test's ``id``, and lets an
``assert`` entry be plain text (an ``llm-rubric``). As promptfoo's evaluator:

* a test is merged with ``defaultTest``: vars, options and metadata key by key (the test's win),
  ``defaultTest``'s assertions first, the test's ``threshold`` else the default's;
* a var holding a list of strings (or a ``file://`` glob) expands the test into a matrix, one row
  per combination, in the order promptfoo makes them; a list of anything else stays one value;
* ``tests:`` entries are tests, or ``file://`` CSV / JSON / JSONL / YAML files (globs in
  directory order); CSV and JSONL rows without a description are "Row #<n>" (n from 1);
* ``prompts:`` entries are template strings, chat arrays, ``{raw, label}`` objects, or
  ``file://`` text / JSON files;
* a ``file://`` var is read: YAML and JSON files parsed (rendered into a prompt as JSON), any
  other file as text.

Mistakes: a file that cannot be used at all raises a located ``BlueprintError``; a mistake in
one test, prompt or provider is that part's ``problem``, the rest still load.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import os
from pathlib import Path
from typing import Any

from pytest_weval.blueprint.loader import DEFAULT_MAX_FILE_MB, RawSource, load_source, room_for_depth
from pytest_weval.blueprint.model import BlueprintError, Location
from pytest_weval.errors import WevalError
from pytest_weval.formats.case_sources import GLOB_CHARS, jsonl_entries, read_yaml
from pytest_weval.formats.context import Context, Where, describe, display_path
from pytest_weval.formats.load import suite_id_from_path
from pytest_weval.formats.promptfoo.csv_rows import csv_tests
from pytest_weval.formats.promptfoo.model import (
    Dialect,
    PfProvider,
    PfTest,
    PromptfooSuite,
    RawAssertion,
)
from pytest_weval.formats.promptfoo.places import files_named, key_location
from pytest_weval.formats.promptfoo.prompts import PromptReader
from pytest_weval.formats.promptfoo.providers import build_provider

_TEST_FILE_SUFFIXES = (".csv", ".json", ".jsonl", ".yaml", ".yml")


def is_promptfoo_name(path: Path) -> bool:
    """``promptfooconfig.yaml|yml|json`` and ``*.promptfoo.yaml|yml``."""
    name = path.name.lower()
    return name in ("promptfooconfig.yaml", "promptfooconfig.yml", "promptfooconfig.json") or name.endswith(
        (".promptfoo.yaml", ".promptfoo.yml")
    )


def load_promptfoo_suite(
    path: Path, *, rootdir: Path, max_file_mb: float = DEFAULT_MAX_FILE_MB, dialect: Dialect | None = None
) -> PromptfooSuite:
    path = Path(path).resolve()
    rootdir = Path(rootdir).resolve()
    with room_for_depth():
        return _Loader(
            path, rootdir, max_file_mb, dialect or ("promptfoo" if is_promptfoo_name(path) else "agentv5")
        ).load()


class _Problem(WevalError):
    """A mistake in one test: caught at the test, kept as its ``problem`` text."""

    def __init__(self, message: str, location: Location, hint: str | None = None):
        super().__init__(message)
        self.text = str(BlueprintError(message, location, hint))


class _Loader:
    def __init__(self, path: Path, rootdir: Path, max_file_mb: float, dialect: Dialect):
        self.path = path
        self.rootdir = rootdir
        self.max_file_mb = max_file_mb
        self.dialect = dialect
        self.shown = display_path(path, rootdir)

    def load(self) -> PromptfooSuite:
        source = read_yaml(self.path, rootdir=self.rootdir, max_file_mb=self.max_file_mb)
        self.where = Where(source)
        self.ctx = Context(
            file_dir=self.path.parent,
            rootdir=self.rootdir,
            dialect="agentv",
            where=self.where,
            max_file_mb=self.max_file_mb,
        )
        documents = source.documents
        document = documents[0] if len(documents) == 1 else None
        if not isinstance(document, dict):
            raise BlueprintError(
                f"a {self._name} file must hold one mapping (prompts, providers, tests), not {describe(document)}",
                Location(path=self.shown, line=1),
                hint="write `prompts:`, `providers:` and `tests:` at the top level",
            )
        prompts = PromptReader(self.ctx, self.where, self.shown, self.dialect).prompts(document)
        providers = self._providers(document)
        default = self._default_test(document)
        tests = self._tests(document, default)
        title = document.get("description") or document.get("name") or ""
        tags: list[Any] = document["tags"] if isinstance(document.get("tags"), list) else []
        return PromptfooSuite(
            path=self.shown,
            directory=str(self.path.parent),
            id=suite_id_from_path(self.shown),
            title=str(title),
            dialect=self.dialect,
            prompts=tuple(prompts),
            providers=tuple(providers),
            tests=tuple(tests),
            tags=tuple(str(t) for t in tags if isinstance(t, (str, int))),
        )

    @property
    def _name(self) -> str:
        return "promptfoo config" if self.dialect == "promptfoo" else "AgentV v5 suite"

    # --- providers -----------------------------------------------------------------------

    def _providers(self, document: dict[str, Any]) -> list[PfProvider]:
        key = "providers" if "providers" in document else "targets" if "targets" in document else None
        if key is None:
            return []
        raw = document[key]
        entries = raw if isinstance(raw, list) else [raw]
        providers = []
        for index, entry in enumerate(entries):
            where = (
                self.where.item(raw, index, f"{key}[{index}]")
                if isinstance(raw, list)
                else key_location(self.where, self.shown, document, key, key)
            )
            provider = build_provider(entry, index, where)
            if provider.problem:
                provider = _with_problem(provider, str(BlueprintError(provider.problem, where)))
            providers.append(provider)
        return _numbered_duplicates(providers)

    # --- tests ---------------------------------------------------------------------------

    def _default_test(self, document: dict[str, Any]) -> dict[str, Any]:
        key = "defaultTest" if "defaultTest" in document else "default_test" if "default_test" in document else None
        if key is None:
            return {}
        value = document[key]
        if isinstance(value, str) and value.startswith("file://"):
            found, why = self.ctx.find_file(value, ancestors=False)
            if found is None:
                raise BlueprintError(
                    f"`{key}` names {value!r}, which cannot be used: {why}",
                    key_location(self.where, self.shown, document, key, key),
                )
            value = read_yaml(found, rootdir=self.rootdir, max_file_mb=self.max_file_mb).documents[0]
        if not isinstance(value, dict):
            raise BlueprintError(
                f"`{key}` must be a mapping (vars, assert, options), not {describe(value)}",
                key_location(self.where, self.shown, document, key, key),
            )
        return value

    def _tests(self, document: dict[str, Any], default: dict[str, Any]) -> list[PfTest]:
        key = "tests"
        raw = document.get(key)
        if raw is None:
            raw = [{}]  # promptfoo runs each prompt once with the default test
            written: list[tuple[Any, Location, str | None]] = [({}, Location(path=self.shown, line=1), None)]
        else:
            written = self._written_tests(document, raw)
        tests: list[PfTest] = []
        for test, location, row_description in written:
            tests.extend(self._expanded(test, location, row_description, default, len(tests)))
        if not tests:
            raise BlueprintError(
                "`tests` is empty", key_location(self.where, self.shown, document, key, key), hint="add a test"
            )
        return tests

    def _written_tests(self, document: dict[str, Any], raw: Any) -> list[tuple[Any, Location, str | None]]:
        if isinstance(raw, str):
            if self.dialect == "agentv5" and (raw.rstrip().endswith("/") or (self.path.parent / raw).is_dir()):
                return self._case_folder(document, raw)
            return self._test_file(raw, key_location(self.where, self.shown, document, "tests", "tests"))
        if not isinstance(raw, list):
            raise BlueprintError(
                f"`tests` must be a list of tests or a file of them, not {describe(raw)}",
                key_location(self.where, self.shown, document, "tests", "tests"),
            )
        out: list[tuple[Any, Location, str | None]] = []
        for index, entry in enumerate(raw):
            where = self.where.item(raw, index, f"tests[{index}]")
            if isinstance(entry, str):
                out.extend(self._test_file(entry, where))
            else:
                out.append((entry, where, None))
        return out

    def _test_file(self, written: str, where: Location) -> list[tuple[Any, Location, str | None]]:
        files, why = files_named(self.ctx, self.path.parent, written)
        if why is not None:
            return [(_Broken(f"the tests file {written!r} cannot be used: {why}"), where, None)]
        out: list[tuple[Any, Location, str | None]] = []
        for file in files:
            suffix = file.suffix.lower()
            shown = self.ctx.display(file)
            if suffix not in _TEST_FILE_SUFFIXES:
                out.append((_Broken(f"{shown}: a tests file is CSV, JSON, JSONL or YAML"), where, None))
                continue
            if suffix == ".csv":
                text, why = self.ctx.read_text(file)
                if text is None:
                    out.append((_Broken(f"the tests file {shown} {why}"), where, None))
                    continue
                for number, (line, test) in enumerate(csv_tests(text)):
                    out.append((test, Location(path=shown, line=line), f"Row #{number + 1}"))
                continue
            if suffix == ".jsonl":
                try:
                    entries = jsonl_entries(file, rootdir=self.rootdir, max_file_mb=self.max_file_mb)
                except BlueprintError as exc:
                    out.append((_Broken(str(exc)), where, None))
                    continue
                for number, entry in enumerate(entries):
                    value = _Broken(entry.problem.text()) if entry.problem else entry.raw
                    out.append((value, entry.location, f"Row #{number + 1}"))
                continue
            try:
                source = read_yaml(file, rootdir=self.rootdir, max_file_mb=self.max_file_mb)
            except BlueprintError as exc:
                out.append((_Broken(str(exc)), where, None))
                continue
            data = source.documents[0] if source.documents else None
            file_where = Where(source)
            if isinstance(data, dict):
                out.append((data, file_where.at(data), None))
            elif isinstance(data, list):
                out.extend((entry, file_where.item(data, i, f"[{i}]"), None) for i, entry in enumerate(data))
            else:
                out.append((_Broken(f"{shown}: a tests file holds a list of tests, not {describe(data)}"), where, None))
        return out

    def _case_folder(self, document: dict[str, Any], written: str) -> list[tuple[Any, Location, str | None]]:
        """AgentV v5's ``tests: ./cases/``: each ``case.yaml`` below the folder is one test
        (its ``input`` a var of the default prompt ``{{ input }}``)."""
        folder, why = self.ctx.find_dir(written.rstrip("/"))
        if folder is None:
            raise BlueprintError(
                f"`tests` names the folder {written!r}: {why}",
                key_location(self.where, self.shown, document, "tests", "tests"),
            )
        out: list[tuple[Any, Location, str | None]] = []
        for case_file in sorted(folder.rglob("case.y*ml")):
            source = read_yaml(case_file, rootdir=self.rootdir, max_file_mb=self.max_file_mb)
            case = source.documents[0] if source.documents else None
            location = Location(path=self.ctx.display(case_file), line=1)
            if not isinstance(case, dict):
                out.append((_Broken(f"{location}: a case file holds one mapping"), location, None))
                continue
            test = {k: v for k, v in case.items() if k != "input"}
            test.setdefault("id", case_file.parent.name)
            test["vars"] = {**(case.get("vars") or {}), "input": case.get("input")}
            out.append((test, location, None))
        return out

    def _expanded(
        self, test: Any, location: Location, row_description: str | None, default: dict[str, Any], first_index: int
    ) -> list[PfTest]:
        if isinstance(test, _Broken):
            return [_broken_test(first_index, location, test.text)]
        if not isinstance(test, dict):
            message = f"a test is a mapping (vars, assert) or the path of a tests file, not {describe(test)}"
            return [_broken_test(first_index, location, str(BlueprintError(message, location)))]
        try:
            merged = self._merged(test, default, location)
            combinations = self._var_combinations(merged["vars"], location)
        except _Problem as exc:
            return [_broken_test(first_index, location, exc.text, test.get("description"))]
        description = merged["description"]
        if description is None and row_description is not None:
            description = row_description
        tests = []
        for offset, variables in enumerate(combinations):
            try:
                resolved = {name: self._var_value(value, location, name) for name, value in variables.items()}
            except _Problem as exc:
                tests.append(_broken_test(first_index + offset, location, exc.text, description))
                continue
            tests.append(
                PfTest(
                    index=first_index + offset,
                    description=description,
                    vars=resolved,
                    asserts=merged["asserts"],
                    options=merged["options"],
                    threshold=merged["threshold"],
                    metadata=merged["metadata"],
                    location=location,
                    written_id=merged["id"],
                    problem=merged["problem"],
                )
            )
        return tests

    def _merged(self, test: dict[str, Any], default: dict[str, Any], location: Location) -> dict[str, Any]:
        def mapping(source: dict[str, Any], key: str, what: str) -> dict[str, Any]:
            value = source.get(key)
            if value is None:
                return {}
            if not isinstance(value, dict):
                raise _Problem(f"`{key}` of {what} must be a mapping, not {describe(value)}", location)
            return value

        variables = {**mapping(default, "vars", "defaultTest"), **mapping(test, "vars", "the test")}
        options = {**mapping(default, "options", "defaultTest"), **mapping(test, "options", "the test")}
        metadata = {**mapping(default, "metadata", "defaultTest"), **mapping(test, "metadata", "the test")}
        asserts: list[RawAssertion] = []
        problem = None
        for owner, what in ((default, "defaultTest"), (test, "the test")):
            written = owner.get("assert")
            if written is None:
                continue
            if not isinstance(written, list):
                raise _Problem(f"`assert` of {what} must be a list of assertions, not {describe(written)}", location)
            for index, entry in enumerate(written):
                try:
                    where = _assertion_place(self.where, written, index, f"assert[{index}]", location)
                except Exception:  # noqa: BLE001
                    where = location
                if isinstance(entry, str) and self.dialect == "agentv5":
                    entry = {"type": "llm-rubric", "value": entry}  # AgentV v5: plain text is a rubric
                elif isinstance(entry, dict) and self.dialect == "agentv5":
                    entry, problem = self._agentv_assertion(entry, where, problem)
                asserts.append(RawAssertion(entry, where))
        threshold = test.get("threshold", default.get("threshold"))
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))):
            raise _Problem(f"`threshold` must be a number, not {describe(threshold)}", location)
        description = test.get("description")
        written_id = test.get("id") if self.dialect == "agentv5" else None
        return {
            "vars": variables,
            "options": options,
            "metadata": metadata,
            "asserts": tuple(asserts),
            "threshold": float(threshold) if threshold is not None else None,
            "description": str(description) if description is not None else None,
            "id": str(written_id) if written_id is not None else None,
            "problem": problem,
        }

    def _agentv_assertion(
        self, entry: dict[str, Any], where: Location, problem: str | None
    ) -> tuple[dict[str, Any], str | None]:
        """AgentV v5's ``llm-rubric`` with ``prompt: file://...``: the file's text is the rubric."""
        prompt = entry.get("prompt")
        if entry.get("type") == "llm-rubric" and isinstance(prompt, str) and entry.get("value") is None:
            entry = {k: v for k, v in entry.items() if k != "prompt"}
            if prompt.startswith("file://"):
                found, why = self.ctx.find_file(prompt, ancestors=False)
                text, why = self.ctx.read_text(found) if found is not None else (None, why)
                if text is None:
                    problem = problem or str(
                        BlueprintError(f"the grader prompt {prompt!r} cannot be used: {why}", where, "add the file")
                    )
                    text = ""
                entry["value"] = text
            else:
                entry["value"] = prompt
        return entry, problem

    def _var_combinations(self, variables: dict[str, Any], location: Location) -> list[dict[str, Any]]:
        """promptfoo's generateVarCombinations: a list of strings (or a file:// glob) is one
        value per row; a list of anything else is one value."""
        choices: list[list[Any]] = []
        for name, value in variables.items():
            if isinstance(value, str) and value.startswith("file://") and GLOB_CHARS.search(value[len("file://") :]):
                files, why = files_named(self.ctx, self.path.parent, value)
                if why is not None:
                    raise _Problem(f"var `{name}`: {value!r}: {why}", location)
                values: list[Any] = [f"file://{f}" for f in files]
            elif isinstance(value, list) and value and isinstance(value[0], str):
                values = list(value)
            else:
                values = [value]
            choices.append(values)
        names = list(variables)
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*choices)] or [{}]

    def _var_value(self, value: Any, location: Location, name: str) -> Any:
        if not (isinstance(value, str) and value.startswith("file://")):
            return value
        target = value[len("file://") :]
        file = Path(target) if os.path.isabs(target) else None
        if file is None or not file.is_file():
            file, why = self.ctx.find_file(value, ancestors=False)
            if file is None:
                raise _Problem(f"var `{name}` names {value!r}, which cannot be used: {why}", location, "add the file")
        suffix = file.suffix.lower()
        if suffix in (".py", ".js", ".ts", ".mjs", ".cjs"):
            raise _Problem(
                f"var `{name}` names a program ({value!r}); vars made by programs are not supported (docs/promptfoo.md)",
                location,
            )
        text, why = self.ctx.read_text(file)
        if text is None:
            raise _Problem(f"var `{name}`: {value!r} {why}", location)
        if suffix in (".yaml", ".yml", ".json"):
            try:
                source: RawSource = load_source(
                    text, fmt="json" if suffix == ".json" else "yaml", path=self.ctx.display(file)
                )
            except BlueprintError as exc:
                raise _Problem(f"var `{name}`: {exc}", location) from None
            return source.documents[0] if source.documents else None
        return text


def _assertion_place(where: Where, seq: Any, index: int, field: str, fallback: Location) -> Location:
    """An assertion's place: in this file when it was written here, else the test's."""
    location = where.item(seq, index, field)
    return location if location.line else fallback


class _Broken:
    def __init__(self, text: str):
        self.text = text


def _broken_test(index: int, location: Location, text: str, description: str | None = None) -> PfTest:
    if not text.startswith(location.path):
        text = str(BlueprintError(text, location))
    return PfTest(
        index=index,
        description=description,
        vars={},
        asserts=(),
        options={},
        threshold=None,
        metadata={},
        location=location,
        problem=text,
    )


def _numbered_duplicates(providers: list[PfProvider]) -> list[PfProvider]:
    shown = collections.Counter(p.node_label for p in providers)
    seen: collections.Counter[str] = collections.Counter()
    numbered = []
    for provider in providers:
        label = provider.node_label
        if shown[label] > 1:
            provider = dataclasses.replace(provider, duplicate=seen[label])
            seen[label] += 1
        numbered.append(provider)
    return numbered


def _with_problem(provider: PfProvider, text: str) -> PfProvider:
    return dataclasses.replace(provider, problem=text)
