"""Which lint codes count, as linters let a repository choose: codes ignored everywhere, per
file by glob, and by a comment in the blueprint itself.

Pure (no pytest)::

    selection = LintSelection.parse(ignore="empty-collection ignored-header-id",
                                    per_file=["blueprints/legacy/*: should-not-rule"])
    ignored = selection.ignored_for("blueprints/legacy/a.yml") | file_directives(text, "a.yml")[0]
    findings = [f for f in findings if f.code not in ignored]

A comment directive is a whole line ``# weval-lint: ignore=code,code`` anywhere in a YAML
file (JSON has no comments: only the ini reaches JSON files). A directive that cannot be read
is itself a finding (`invalid-lint-directive`), located at its line: one file's typo must not
stop a whole run, while a typo in the ini (read once, for every file) is a usage error.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass

from pytest_weval.blueprint.functions import did_you_mean
from pytest_weval.blueprint.model import Finding, Location
from pytest_weval.lint import PARSER_CODES, RULES

__all__ = ["DIRECTIVE_CODE", "KNOWN_CODES", "LintSelection", "file_directives", "split_codes", "unknown_codes_message"]

DIRECTIVE_CODE = "invalid-lint-directive"
#: Every code a finding can carry under pytest (a file that cannot be parsed is a collection
#: error, never a lint finding, so `parse-error` is not selectable).
KNOWN_CODES: frozenset[str] = frozenset(RULES) | frozenset(PARSER_CODES)

# A whole-line comment, so that text inside a prompt (`prompt: "# weval-lint: ..."`) or after a
# value on the same line is never read as one.
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*weval-lint[ \t]*:(?P<body>.*)$", re.MULTILINE)
_IGNORE = re.compile(r"^\s*ignore\s*=(?P<codes>.*)$")


def split_codes(text: str) -> list[str]:
    """Codes separated by spaces, commas or newlines (the ini's and the directive's syntax)."""
    return [code for code in re.split(r"[\s,]+", text) if code]


def unknown_codes_message(unknown: Iterable[str]) -> str:
    """`unknown lint code 'x' (did you mean 'y'?)`, for each, and the known codes once."""
    parts = []
    for code in unknown:
        suggestion = did_you_mean(code, KNOWN_CODES)
        parts.append(f"'{code}'" + (f" (did you mean '{suggestion}'?)" if suggestion else ""))
    plural = "s" if len(parts) != 1 else ""
    return f"unknown lint code{plural} {', '.join(parts)}; known codes: {' '.join(sorted(KNOWN_CODES))}"


def _checked(codes: list[str], where: str) -> frozenset[str]:
    unknown = [code for code in codes if code not in KNOWN_CODES]
    if unknown:
        raise ValueError(f"{where}: {unknown_codes_message(unknown)}")
    return frozenset(codes)


@dataclass(frozen=True)
class LintSelection:
    """Codes ignored in every file, and per file by glob (matched as `weval_globs` are: fnmatch
    on the path relative to the rootdir, where `*` also crosses `/`)."""

    ignore: frozenset[str] = frozenset()
    per_file: tuple[tuple[str, frozenset[str]], ...] = ()

    @classmethod
    def parse(
        cls,
        *,
        ignore: str = "",
        per_file: Iterable[str] = (),
        ignore_name: str = "weval_lint_ignore",
        per_file_name: str = "weval_lint_per_file_ignores",
    ) -> LintSelection:
        """Read the ini values; a ValueError names the setting, the line and what is wrong."""
        ignored = _checked(split_codes(ignore), f"ini {ignore_name}")
        globs: list[tuple[str, frozenset[str]]] = []
        for line in per_file:
            if not line.strip():
                continue
            # Codes hold no ":", so the last one ends the glob (a ":" in a folder name stays in it).
            glob, sep, codes = line.rpartition(":")
            where = f"ini {per_file_name}: {line.strip()!r}"
            if not sep or not glob.strip():
                raise ValueError(
                    f"{where}: expected '<glob>: code code', e.g. 'blueprints/legacy/*: ignored-header-id'"
                )
            listed = split_codes(codes)
            if not listed:
                raise ValueError(f"{where}: names no lint code after ':'")
            globs.append((glob.strip(), _checked(listed, where)))
        return cls(ignore=ignored, per_file=tuple(globs))

    def ignored_for(self, rel_path: str) -> frozenset[str]:
        """The codes ignored in the file at `rel_path` (posix, relative to the rootdir)."""
        codes = set(self.ignore)
        for glob, listed in self.per_file:
            if fnmatch.fnmatchcase(rel_path, glob):
                codes |= listed
        return frozenset(codes)


def file_directives(text: str, path: str) -> tuple[frozenset[str], list[Finding]]:
    """The codes a YAML file's ``# weval-lint: ignore=...`` comments ignore, and a finding for
    each directive that cannot be read (no `ignore=`, no code, an unknown code: the known codes
    of the same directive still apply)."""
    codes: set[str] = set()
    problems: list[Finding] = []
    for match in _DIRECTIVE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        location = Location(path=path, line=line, column=match.group(0).index("#") + 1)
        body = match.group("body")
        ignore = _IGNORE.match(body)
        listed = split_codes(ignore.group("codes")) if ignore else []
        if not listed:
            problems.append(
                Finding(
                    code=DIRECTIVE_CODE,
                    message=f"'# weval-lint:{body}' is not read: write '# weval-lint: ignore=code,code'",
                    location=location,
                )
            )
            continue
        unknown = [code for code in listed if code not in KNOWN_CODES]
        if unknown:
            problems.append(
                Finding(
                    code=DIRECTIVE_CODE, message=f"'# weval-lint:': {unknown_codes_message(unknown)}", location=location
                )
            )
        codes.update(code for code in listed if code in KNOWN_CODES)
    return frozenset(codes), problems
