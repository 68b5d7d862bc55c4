"""`--weval-lint` and `--weval-lint-strict`: the linter (pytest_weval.lint) at collection.

* `--weval-lint`: every finding is a warning naming the blueprint file and line, and the
  blueprint's items run as usual.
* `--weval-lint-strict`: each blueprint file gets one more item, `<file>::lint` (marker
  `weval_lint`), which fails listing the file's findings and passes when there are none. So a
  CI job on a blueprint repository fails on any finding, the junit report names each file, and
  `pytest --weval-lint-strict -m weval_lint blueprints/` lints without calling any model.

Codes can be ignored (ini `weval_lint_ignore`, ini `weval_lint_per_file_ignores`, a
`# weval-lint: ignore=...` comment in a YAML blueprint; pytest_weval.lint.select): an ignored
finding is dropped wherever findings are shown (these warnings, the lint item, the warnings of
every run). Only what is shown: an item whose prompt has an authoring mistake still errors.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from pytest_weval.blueprint.model import Blueprint, Finding
from pytest_weval.errors import WevalError
from pytest_weval.lint import format_finding, lint_blueprint
from pytest_weval.lint.select import LintSelection, file_directives
from pytest_weval.plugin.markers import LINT_MARKER
from pytest_weval.plugin.settings import WevalSettings
from pytest_weval.report._fmt import visible

LINT_ITEM_NAME = "lint"
# Findings warned on every run, lint or not: a placeholder with no models (docs/rulings.md,
# ruling 5), and the authoring mistakes whose items will error (rulings 3 and 9: an unknown
# function, a missing $ref, an invalid point or prompt, a regex JavaScript rejects).
ALWAYS_WARN = frozenset(
    {
        "empty-collection",
        "duplicate-prompt-id",
        "ignored-key",
        "unknown-function",
        "undefined-ref",
        "invalid-point",
        "invalid-prompt",
        "invalid-regex",
    }
)
# Said on their own in an ordinary run: the items still run (the others are mistakes whose items error).
_NOT_MISTAKES = frozenset({"empty-collection", "duplicate-prompt-id"})


def invalid_regexes(blueprint: Blueprint) -> list[Finding]:
    """Patterns JavaScript rejects (their points error on every response), for every run."""
    from pytest_weval.lint.rules import regexes  # with the first blueprint, in a process that collects

    return [f for f in regexes(blueprint) if f.code == "invalid-regex"]


def lint_findings(path: Path, blueprint: Blueprint, settings: WevalSettings) -> list[Finding]:
    """The linter's findings (the parser's included) for a blueprint already parsed from `path`."""
    source = settings.read_source(path, display_path=blueprint.path)
    return lint_blueprint(blueprint, source)


_SELECTION = pytest.StashKey[LintSelection]()


def configure(config: pytest.Config) -> None:
    """Read the ini's lint selection once; a bad code is a usage error listing the known ones."""
    try:
        config.stash[_SELECTION] = LintSelection.parse(
            ignore=str(config.getini("weval_lint_ignore") or ""),
            per_file=config.getini("weval_lint_per_file_ignores") or (),
        )
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def select(config: pytest.Config, path: Path, shown: str, findings: list[Finding], *, linting: bool) -> list[Finding]:
    """`findings` of the blueprint file at `path` without the codes its selection ignores.
    `linting` (--weval-lint, --weval-lint-strict): a directive that cannot be read is a finding too.
    Without it, a file with nothing to show is not read again."""
    if not findings and not linting:
        return findings
    selection = config.stash.get(_SELECTION, LintSelection())
    try:
        rel = path.relative_to(config.rootpath).as_posix()
    except ValueError:
        rel = path.as_posix()
    ignored = selection.ignored_for(rel)
    if path.suffix.lower() in (".yml", ".yaml"):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:  # it was read a moment ago; if it is gone now, there is no directive to honour
            text = ""
        codes, problems = file_directives(text, shown)
        ignored |= codes
        if linting:
            findings = sorted([*findings, *problems], key=lambda f: (f.location.line, f.location.column))
    return [f for f in findings if f.code not in ignored]


def warn_findings(findings: list[Finding], path: Path, category: type[Warning], *, with_code: bool = True) -> None:
    for finding in findings:
        warnings.warn_explicit(
            category(visible(f"[{finding.code}] {finding.message}" if with_code else finding.message)),
            category=category,
            filename=str(path),
            lineno=finding.location.line or 1,
        )


def warn_mistakes(findings: list[Finding], path: Path, shown_path: str, category: type[Warning]) -> None:
    """The warnings of an ordinary run: each placeholder with no models and each repeated prompt
    id on its own; a file's authoring mistakes as one warning at the first, with how many there
    are, and its ignored keys (a misspelt `shuold:`) likewise (a benchmark blueprint can hold
    twenty quoted `"$contains: ..."` points: a warning each buried the rest of the output, and a
    configs repository with no keys must fit on one screen)."""
    warn_findings([f for f in findings if f.code in _NOT_MISTAKES], path, category, with_code=False)
    ignored = [f for f in findings if f.code == "ignored-key"]
    mistakes = [f for f in findings if f.code not in _NOT_MISTAKES and f.code != "ignored-key"]
    _warn_group(
        mistakes,
        f"points or prompts in this file have mistakes, so the items holding them error without being sent "
        f"(pytest --weval-lint {shown_path} lists each)",
        path,
        category,
    )
    _warn_group(ignored, f"keys in this file are ignored (pytest --weval-lint {shown_path} lists each)", path, category)


def _warn_group(findings: list[Finding], what: str, path: Path, category: type[Warning]) -> None:
    """One finding as it is; several as one warning at the first by line, with how many there
    are (the parser's findings and the regex check's come in separate lists)."""
    if len(findings) < 2:
        warn_findings(findings, path, category, with_code=False)
        return
    first = min(findings, key=lambda f: (not f.location.line, f.location.line, f.location.column))
    message = f"{len(findings)} {what}; the first: {first.message}"
    warnings.warn_explicit(
        category(visible(message)), category=category, filename=str(path), lineno=first.location.line or 1
    )


class LintFailure(WevalError):
    pass


class LintItem(pytest.Item):
    """One blueprint file's lint result under `--weval-lint-strict`."""

    def __init__(self, *, findings: list[Finding], **kwargs):
        super().__init__(**kwargs)
        self.findings = findings
        self.add_marker(LINT_MARKER)

    def runtest(self) -> None:
        if self.findings:
            raise LintFailure()

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, LintFailure):
            count = len(self.findings)
            lines = [
                f"{count} lint finding{'s' if count != 1 else ''} in {self.path.name} "
                "(--weval-lint-strict fails on any):"
            ]
            lines += [f"  {format_finding(f)}" for f in self.findings]
            return "\n".join(lines)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"{self.path.name}::{LINT_ITEM_NAME}"
