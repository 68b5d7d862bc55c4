"""Named targets: AgentV's ``.agentv/targets.yaml`` (docs/agent-formats.md §1.10, §2.10).

The file is the first of ``targets.yaml``, ``targets.yml``, ``.agentv/targets.yaml``,
``.agentv/targets.yml`` found walking up from the eval file's folder to the rootdir. Each entry
becomes a ``TargetDef``: ``name`` and ``provider`` are required; ``model`` (or ``deployment``),
``judge_target``, ``command_template`` (or ``command``, argv or a string), ``cwd`` (resolved from
the targets file's folder), ``timeout_seconds`` and ``files_format`` are read, and every other
key is kept in ``config`` as written.

``${{ VAR }}`` references are NOT resolved here: the values keep their text, so loading a
file never reads the environment (a later layer decides which variables a file may read).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from pytest_weval.blueprint.loader import DEFAULT_MAX_FILE_MB, read_blueprint_file, room_for_depth
from pytest_weval.blueprint.locate import Locator
from pytest_weval.blueprint.model import BlueprintError, Location
from pytest_weval.formats.model import TargetDef

TARGETS_FILE_NAMES = ("targets.yaml", "targets.yml", ".agentv/targets.yaml", ".agentv/targets.yml")
ENV_REFERENCE = re.compile(r"\$\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")

_READ_KEYS = frozenset(
    (
        "name",
        "provider",
        "model",
        "deployment",
        "judge_target",
        "command_template",
        "command",
        "cwd",
        "timeout_seconds",
        "files_format",
    )
)


def find_targets_file(start: Path, rootdir: Path) -> Path | None:
    """The targets file nearest ``start`` (a folder), walking up to ``rootdir`` (included). A
    folder outside the rootdir is searched alone."""
    current = start.resolve()
    root = rootdir.resolve()
    inside = current == root or root in current.parents
    while True:
        for name in TARGETS_FILE_NAMES:
            candidate = current / name
            if candidate.is_file():
                return candidate
        if not inside or current == root or current.parent == current:
            return None
        current = current.parent


def targets_for(eval_file: Path, *, rootdir: Path, max_file_mb: float = DEFAULT_MAX_FILE_MB) -> dict[str, TargetDef]:
    """The named targets an eval file can use ({} when no targets file is found)."""
    found = find_targets_file(eval_file.resolve().parent, rootdir)
    return load_targets(found, rootdir=rootdir, max_file_mb=max_file_mb) if found else {}


def load_targets(path: Path, *, rootdir: Path, max_file_mb: float = DEFAULT_MAX_FILE_MB) -> dict[str, TargetDef]:
    """A targets file's entries by name. A file that cannot be used (YAML error, no
    ``targets`` list, an entry without ``name`` / ``provider``, a name used twice) raises a
    located ``BlueprintError``."""
    path = path.resolve()
    shown = _display(path, rootdir)
    with room_for_depth():
        source = read_blueprint_file(path, display_path=shown, max_file_mb=max_file_mb)
    loc = Locator(source)
    document = source.documents[0] if source.documents else None
    if len(source.documents) > 1:
        raise BlueprintError(
            "a targets file holds one YAML document; this one has more",
            loc.at(source.documents[1], "---"),
            hint="remove the extra `---` documents",
        )
    entries = document.get("targets") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise BlueprintError(
            "a targets file needs a `targets:` list",
            loc.key(document, "targets")
            if isinstance(document, dict) and "targets" in document
            else Location(path=shown, line=1),
            hint="write `targets:` with `- name: ...` / `provider: ...` entries",
        )
    targets: dict[str, TargetDef] = {}
    for index, entry in enumerate(entries):
        field = f"targets[{index}]"
        if not isinstance(entry, dict):
            raise BlueprintError(
                "a target must be a mapping with `name` and `provider`", loc.item(entries, index, field)
            )
        name, provider = entry.get("name"), entry.get("provider")
        if not isinstance(name, str) or not name.strip():
            raise BlueprintError(
                "a target has no `name`", loc.at(entry, field), hint="add `name:`, the name eval files use for it"
            )
        if not isinstance(provider, str) or not provider.strip():
            raise BlueprintError(
                f"target {name!r} has no `provider`",
                loc.at(entry, field),
                hint="add `provider:` (e.g. openai, anthropic, azure, gemini, cli)",
            )
        if name in targets:
            first = targets[name].location
            raise BlueprintError(
                f"target name {name!r} is used twice"
                + (f" (first at line {first.line})" if first and first.line else ""),
                loc.key(entry, "name", f"{field}.name"),
                hint="give each target its own name",
            )
        targets[name] = _target(entry, name, provider, path.parent, loc, field)
    return targets


def _target(entry: dict[str, Any], name: str, provider: str, folder: Path, loc: Locator, field: str) -> TargetDef:
    model = entry.get("model", entry.get("deployment"))
    command: tuple[str, ...] | str | None = None
    command_key = "command_template" if entry.get("command_template") is not None else "command"
    written = entry.get(command_key)
    if isinstance(written, str) and written.strip():
        command = written.strip()
    elif isinstance(written, list) and written and all(isinstance(a, str) for a in written):
        command = tuple(written)
    elif written is not None:
        raise BlueprintError(
            f"target {name!r}: `{command_key}` must be a command line or a list of arguments",
            loc.key(entry, command_key, f"{field}.{command_key}"),
        )
    cwd = None
    if entry.get("cwd") is not None:
        if not isinstance(entry["cwd"], str):
            raise BlueprintError(f"target {name!r}: `cwd` must be a folder path", loc.key(entry, "cwd", f"{field}.cwd"))
        # Kept even if it does not exist yet (or holds ${{ VAR }}): the run says so if used.
        cwd = entry["cwd"] if ENV_REFERENCE.search(entry["cwd"]) else str((folder / entry["cwd"]).resolve())
    timeout = entry.get("timeout_seconds")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0
    ):
        raise BlueprintError(
            f"target {name!r}: `timeout_seconds` must be a number > 0",
            loc.key(entry, "timeout_seconds", f"{field}.timeout_seconds"),
        )
    files_format = entry.get("files_format")
    return TargetDef(
        name=name,
        provider=provider.strip(),
        model=str(model) if model is not None else None,
        judge_target=str(entry["judge_target"]) if entry.get("judge_target") is not None else None,
        command=command,
        cwd=cwd,
        timeout_s=float(timeout) if timeout is not None else None,
        files_format=str(files_format) if files_format is not None else None,
        config={key: value for key, value in entry.items() if key not in _READ_KEYS},
        location=loc.at(entry, field),
    )


def _display(path: Path, rootdir: Path) -> str:
    try:
        return path.relative_to(rootdir.resolve()).as_posix()
    except ValueError:
        return path.as_posix()
