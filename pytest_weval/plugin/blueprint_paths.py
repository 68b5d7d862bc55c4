"""Which files are blueprints, by their path alone: the naming rules collection uses
(``collection.Collection``), and the plugin asks before anything else of it is loaded
(``activation.py``). Imports nothing but the standard library."""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

BLUEPRINT_SUFFIXES = (".yml", ".yaml", ".json")


class PathRules(Protocol):
    """What the rules read of the run's settings (``WevalSettings`` has both)."""

    @property
    def rootdir(self) -> Path: ...

    @property
    def globs(self) -> Sequence[str]: ...


def named_files(args: Iterable[str]) -> frozenset[Path]:
    """The blueprint-like files named on the command line (``tests/x.yml::item`` names the file)."""
    return frozenset(
        Path(arg.split("::")[0]).resolve()
        for arg in args
        if Path(arg.split("::")[0]).suffix.lower() in BLUEPRINT_SUFFIXES
    )


def is_blueprint_path(file_path: Path, rules: PathRules, named_files: frozenset[Path]) -> bool:
    if file_path.suffix.lower() not in BLUEPRINT_SUFFIXES:
        return False
    if file_path in named_files:
        return True
    rel = _rel(file_path, rules.rootdir)
    if any(fnmatch.fnmatch(rel, glob) for glob in rules.globs):
        return True
    # The configs-repository layout: anything below a folder named `blueprints`.
    return "blueprints" in _project_folders(file_path, rules.rootdir)


def _project_folders(path: Path, root: Path) -> tuple[str, ...]:
    """The folders holding ``path`` from the rootdir (its own name included) down. Folders
    above the rootdir do not count: a checkout in ``~/blueprints/repo`` must not turn every
    YAML file of the repository into a blueprint."""
    try:
        return path.parent.relative_to(root.parent).parts
    except ValueError:
        return path.parent.parts


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def blueprint_rel_path(path: Path, root: Path) -> str:
    """The path a blueprint id derives from: relative to its `blueprints/` folder, as Weval's
    GitHub runs do, else relative to the rootdir."""
    folders = _project_folders(path, root)
    if "blueprints" in folders:
        last = len(folders) - 1 - folders[::-1].index("blueprints")
        return Path(*folders[last + 1 :], path.name).as_posix()
    return _rel(path, root)


def uncollected_hints(args: list[str], cwd: Path, limit: int = 10_000) -> list[str]:
    """For each folder named on the command line that holds YAML or JSON files of which no
    blueprint was collected: how blueprints are found (nothing is collected silently)."""
    hints = []
    for arg in args:
        folder = (cwd / arg.split("::")[0]).resolve()
        if not folder.is_dir():
            continue
        found = 0
        for path in itertools.islice(folder.rglob("*"), limit):
            # hidden folders below the one named (.git, .venv), not those above it (~/.work/proj)
            hidden = any(part.startswith(".") for part in path.relative_to(folder).parts)
            if path.suffix.lower() in BLUEPRINT_SUFFIXES and not hidden:
                found += 1
        if found:
            hints.append(
                f"weval: {arg} holds {found} YAML/JSON file{'s' if found != 1 else ''}, but no blueprint was collected: "
                "blueprints are found below a folder named 'blueprints/', as files named on the command line, or by "
                "ini weval_globs (e.g. weval_globs = evals/*.yml)"
            )
    return hints
