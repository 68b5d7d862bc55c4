"""Where an eval file's cases come from (docs/agent-formats.md §1.2, §2.2, §4): the file's own
case list, a cases file it names instead (``tests: ./cases.yaml``), string entries in the list
(a YAML or JSONL file of cases, ``file://`` optional, globs allowed), and the lines of a JSONL
dataset. Each written case becomes a :class:`CaseEntry`: the raw case with where it was written.

A cases file that cannot be used at all is the file's ``BlueprintError`` when the file's
``tests`` names it, and a problem of one entry when a string in the list does.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from pytest_weval.blueprint.loader import RawSource, decode_blueprint_bytes, load_source, read_blueprint_file
from pytest_weval.blueprint.model import BlueprintError, Location
from pytest_weval.formats.context import Context, Problem, Where, describe, display_path

GLOB_CHARS = re.compile(r"[*?{\[]")


@dataclasses.dataclass
class CaseEntry:
    """One written case, with where it comes from (this file, a cases file, a JSONL line)."""

    raw: Any
    where: Where
    location: Location
    problem: Problem | None = None
    fallback_id: str | None = None


def read_yaml(path: Path, *, rootdir: Path, max_file_mb: float) -> RawSource:
    """An eval file, a sidecar or a cases file, read as the blueprint reader reads YAML, its
    errors in an eval file's words."""
    shown = display_path(path, rootdir)
    try:
        return read_blueprint_file(path, display_path=shown, max_file_mb=max_file_mb)
    except BlueprintError as exc:
        raise _reworded(exc) from None
    except OSError as exc:
        raise BlueprintError(
            f"the file cannot be read ({exc.strerror or exc})", Location(path=shown), hint="check the path"
        ) from None


def expand_case_list(ctx: Context, document: dict[str, Any], key: str) -> list[CaseEntry]:
    """The cases ``document[key]`` gives (``ctx.where`` is the document's): a list of cases and
    of cases files, or the path of one cases file."""
    where = ctx.where
    tests = document[key]
    if isinstance(tests, str):
        found, why = _case_file(ctx, tests)
        if found is None:
            raise BlueprintError(
                f"the cases file {tests!r} cannot be used: {why}",
                where.key(document, key),
                hint="add the file, or fix the path (relative to the eval file's folder)",
            )
        return _case_file_entries(ctx, found)
    if not isinstance(tests, list):
        raise BlueprintError(
            f"`{key}` must be a list of test cases or the path of a cases file, not {describe(tests)}",
            where.key(document, key),
        )
    entries: list[CaseEntry] = []
    for index, item in enumerate(tests):
        location = where.item(tests, index, f"{key}[{index}]")
        if isinstance(item, dict):
            entries.append(CaseEntry(item, where, location))
        elif isinstance(item, str):
            entries.extend(_reference_entries(ctx, item, location))
        else:
            entries.append(
                CaseEntry(
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


def _reference_entries(ctx: Context, written: str, location: Location) -> list[CaseEntry]:
    """A string in the case list: a YAML/JSONL file of cases, or a ``file://`` glob."""
    where = ctx.where
    label = _reference_label(written)
    raw = written.removeprefix("file://")
    if GLOB_CHARS.search(raw):
        files = ctx.find_glob(written)
        if not files:
            problem = Problem(f"no file matches the cases pattern {written!r}", location, hint="fix the pattern")
            return [CaseEntry(written, where, location, problem=problem, fallback_id=label)]
    else:
        found, why = _case_file(ctx, written)
        if found is None:
            problem = Problem(
                f"the cases file {written!r} cannot be used: {why}",
                location,
                hint="add the file, or fix the path (relative to the eval file's folder)",
            )
            return [CaseEntry(written, where, location, problem=problem, fallback_id=label)]
        files = [found]
    entries: list[CaseEntry] = []
    for file in files:
        try:
            entries.extend(_case_file_entries(ctx, file))
        except BlueprintError as exc:
            problem = Problem(f"the cases file {written!r} cannot be used: {exc.message}", exc.location, exc.hint)
            entries.append(CaseEntry(written, where, location, problem=problem, fallback_id=label))
    return entries


def _case_file(ctx: Context, written: str) -> tuple[Path | None, str | None]:
    found, why = ctx.find_file(written, ancestors=False)
    if found is not None and found.suffix.lower() not in (".yaml", ".yml", ".jsonl"):
        return None, f"a cases file is .yaml, .yml or .jsonl, not {found.suffix or 'without a suffix'}"
    return found, why


def _case_file_entries(ctx: Context, path: Path) -> list[CaseEntry]:
    if path.suffix.lower() == ".jsonl":
        return jsonl_entries(path, rootdir=ctx.rootdir, max_file_mb=ctx.max_file_mb)
    source = read_yaml(path, rootdir=ctx.rootdir, max_file_mb=ctx.max_file_mb)
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
        entries.append(CaseEntry(item, where, location, problem=problem))
    return entries


def jsonl_entries(path: Path, *, rootdir: Path, max_file_mb: float) -> list[CaseEntry]:
    """A JSONL dataset: one case a line (blank lines skipped); a line that is not one JSON object
    is an entry with a problem."""
    shown = display_path(path, rootdir)
    limit = int(max_file_mb * 1024 * 1024)
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise BlueprintError(f"the file cannot be read ({exc.strerror or exc})", Location(path=shown)) from None
    if len(data) > limit:
        raise BlueprintError(
            f"the file is larger than the {max_file_mb:g} MB an eval file may be",
            Location(path=shown, field="file size"),
            hint="split the dataset, or raise the cap with ini `weval_max_file_mb`",
        )
    text = decode_blueprint_bytes(data, shown)
    entries: list[CaseEntry] = []
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
            entries.append(CaseEntry(None, Where(_empty(shown), number), location, bad_line, f"line-{number + 1}"))
            continue
        where = Where(source, line_offset=number)
        item = source.documents[0]
        problem: Problem | None = None
        if not isinstance(item, dict):
            problem = Problem(f"a line must hold one JSON object (a test case), not {describe(item)}", location)
        entries.append(CaseEntry(item, where, location, problem, f"line-{number + 1}"))
    return entries


def _reference_label(written: str) -> str:
    return written.removeprefix("file://").strip() or "cases"


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
