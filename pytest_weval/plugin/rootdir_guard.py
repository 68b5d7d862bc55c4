"""pytest decides its rootdir and ini file before it loads plugins, so it does not know that
``--weval-cache-dir /some/dir`` takes a value: it reads ``/some/dir`` as a test path, and once
that folder exists (from the second run on) the rootdir is the folder it shares with the tests,
often without the ini file. Node ids, ``--lf``, junit names and every ini setting then change
between runs, and under xdist a worker that starts after the folder was made collects other
node ids than the first ("Different tests were collected"). Found here, before anything runs,
with the way to write it that pytest reads right (``--opt=value``)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

import pytest
from _pytest.config.findpaths import determine_setup  # pytest's own choice, asked again

from pytest_weval.plugin.options import _OPTIONS

_INI_NAME = {opt: ini for opt, ini, _help, kind, _default in _OPTIONS if kind != "flag"}
_TAKES_A_VALUE = frozenset(_INI_NAME)
# Those whose value is a file or folder the run may make (the others' never appear later).
_PATHS = frozenset(("--weval-cache-dir", "--weval-out", "--weval-html", "--weval-fixtures", "--weval-baseline"))


def misread_values(args: Sequence[str]) -> list[tuple[str, str]]:
    """(option, value) for each of our options written apart from its value in ``args``."""
    return [(arg, args[i + 1]) for i, arg in enumerate(args[:-1]) if arg in _TAKES_A_VALUE]


def rootdir_problem(config: pytest.Config) -> str | None:
    """What to say when an option's value moved (or will move, once its folder exists) the
    rootdir or the ini file pytest found; None when it did not."""
    env_args = shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))  # read before the rootdir, as the command line
    misread = misread_values([*env_args, *config.invocation_params.args])
    if not misread:
        return None
    try:

        def found(extra: list[str]) -> tuple[Path, Path | None]:
            rootpath, inipath, *_ = determine_setup(
                inifile=config.option.inifilename,
                override_ini=config.option.override_ini,
                args=[*(config.option.file_or_dir or []), *extra],
                rootdir_cmd_arg=config.option.rootdir or None,
                invocation_dir=config.invocation_params.dir,
            )
            return rootpath, inipath

        taken = [(opt, value, path) for opt, value in misread if (path := _taken_for(config, opt, value))]
        meant = found([])
        later = found([str(path) for _opt, _value, path in taken])
    except (TypeError, ValueError):  # another pytest's internals: nothing to compare
        return None
    if not taken or (meant == later and meant == (config.rootpath, config.inipath)):
        return None
    moved = (config.rootpath, config.inipath) != meant
    written = " ".join(f"{opt} {value}" for opt, value, _path in taken)
    fixed = " ".join(f"{opt}={value}" for opt, value, _path in taken)
    ini_names = ", ".join(_INI_NAME[opt] for opt, _value, _path in taken)
    outcome = (
        f"its rootdir is {later[0]} ({_ini(later[1])})"
        if moved
        else f"its rootdir will be {later[0]} ({_ini(later[1])}) once that folder exists (the next run)"
    )
    return (
        f"weval: pytest reads `{written}` as a test path when it chooses its rootdir (before it knows "
        f"this plugin's options), so {outcome} instead of {meant[0]} ({_ini(meant[1])}): node ids, --lf "
        f"and ini settings would change between runs. Write `{fixed}`, or set {ini_names} in the ini file"
    )


def _taken_for(config: pytest.Config, opt: str, value: str) -> Path | None:
    """What pytest takes ``value`` for, now or once the run made it: itself when it exists, the
    nearest folder that does for a path the run may make, else nothing."""
    path = Path(config.invocation_params.dir, value.split("::", 1)[0])
    if path.exists():
        return path
    if opt not in _PATHS:
        return None
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _ini(inipath: Path | None) -> str:
    return f"ini file {inipath}" if inipath is not None else "no ini file"
