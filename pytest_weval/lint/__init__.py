"""Blueprint linter: the pitfalls the format guide warns about, as located Findings.

Pure (no pytest, no network)::

    from pytest_weval.lint import lint_blueprint

    findings = lint_blueprint(blueprint, source)   # source: the RawSource it was built from

Every finding is a `pytest_weval.blueprint.Finding` (message, location with path/line/column/
field, code). The parser's own findings (ignored keys, unknown header keys, duplicate prompt ids,
unknown functions, undefined refs, ...) come first, then the linter's rules; `RULES` describes
every code. `pytest --weval-lint` shows them as warnings; `--weval-lint-strict` fails on them.
"""

from __future__ import annotations

from pathlib import Path

from pytest_weval.blueprint import Blueprint, Finding
from pytest_weval.blueprint.loader import DEFAULT_MAX_FILE_MB, RawSource, read_blueprint_file, room_for_depth

__all__ = ["PARSER_CODES", "RULES", "format_finding", "lint_blueprint", "read_source"]

#: The linter's own codes, with what each means.
RULES: dict[str, str] = {
    "single-element-paths": "nested lists of one point each (OR between single points) where a flat list was meant",
    "invalid-regex": "a $matches-family pattern JavaScript rejects ((?i), (?P<name>, a++, (?>...)): the point always errors",
    "regex-dialect": "a pattern JavaScript accepts but reads differently (\\A, \\Z, \\p{L} without u, [[:alpha:]], /.../i, \\b next to accented letters)",
    "should-not-function": "a function in should_not that has a $not_ twin to use in should",
    "should-not-double-negative": "a $not_ function or a negated criterion ('fails to ...') inside should_not",
    "should-not-rule": "a rule for the response ('should not ...') inside should_not, which inverts it",
    "invalid-args": "a function point that errors on every response (e.g. $word_count_between: [10, 5])",
    "never-scores": "a function point that is 0 for every response (e.g. $contains_any_of: [])",
    "capped-score": "a function point that cannot reach 1 ($contains_at_least_n_of with n above the list length)",
    "constant-point": "a function point that is 1 for every response, so it tests nothing",
    "unsupported-function": "$factcheck, which needs Weval's hosted service and always errors here",
    "weight-no-effect": "weights that change nothing (the only point of its group, all equal)",
    "ref-weight-ignored": "a weight on a $ref to an object definition, which Weval drops",
    "unused-point-def": "a point_defs entry no $ref uses",
    "shadowed-defs": "both point_defs and defs: defs is ignored",
    "ideal-fails": "a deterministic point scoring below 1 on the prompt's own ideal (should_not inverted)",
    "ideal-errors": "a deterministic point that errors on the prompt's own ideal",
    "undeclared-tool": "a tool check naming a tool the header's tools do not declare",
    "invalid-lint-directive": "a '# weval-lint:' comment that cannot be read (not 'ignore=code,code', or an unknown code)",
}

#: Codes the parser emits (reused as lint findings; see docs/compatibility.md).
PARSER_CODES: tuple[str, ...] = (
    "ignored-key",
    "unknown-header-key",
    "ignored-header-id",
    "prompt-in-header",
    "prompt-not-object",
    "points-not-list",
    "duplicate-prompt-id",
    "unknown-function",
    "undefined-ref",
    "invalid-point",
    "invalid-prompt",
    "model-whitespace",
    "empty-collection",
)


def read_source(
    path: str | Path, *, display_path: str | None = None, max_file_mb: float = DEFAULT_MAX_FILE_MB
) -> RawSource:
    """The raw documents of a blueprint file, located as `display_path` (as the parser reads it)."""
    with room_for_depth():
        return read_blueprint_file(path, display_path=display_path, max_file_mb=max_file_mb)


def lint_blueprint(
    blueprint: Blueprint, source: RawSource | None = None, *, parser_findings: bool = True
) -> list[Finding]:
    """Every finding for one parsed blueprint, sorted by line.

    `source` (the RawSource the blueprint was parsed from) enables the rules that need what
    the parser does not keep (`$ref` sites, point_defs keys); without it they are skipped."""
    # The rules (and the scoring code they check points with) load with the first blueprint
    # linted: a process that only reads the lint selection (the xdist controller) never does.
    from pytest_weval.lint.rules import BLUEPRINT_RULES, SOURCE_RULES

    findings: list[Finding] = list(blueprint.findings) if parser_findings else []
    with room_for_depth():
        for rule in BLUEPRINT_RULES:
            findings.extend(rule(blueprint))
        if source is not None:
            for source_rule in SOURCE_RULES:
                findings.extend(source_rule(blueprint, source))
    seen: set[tuple[str, str, int, int]] = set()
    unique: list[Finding] = []
    for finding in findings:
        key = (finding.code, finding.message, finding.location.line, finding.location.column)
        if key not in seen:
            seen.add(key)
            unique.append(finding)
    return sorted(unique, key=lambda f: (f.location.line, f.location.column))


def format_finding(finding: Finding) -> str:
    """`path:line:column (field): [code] message`, one line."""
    return f"{finding.location}: [{finding.code}] {finding.message}"
