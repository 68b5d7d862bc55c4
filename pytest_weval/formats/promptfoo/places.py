"""Where a promptfoo-shaped file's parts are: a key's location for messages, and the files a
``file://`` reference names (globs taken in directory order, as promptfoo takes them)."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

from pytest_weval.blueprint.model import Location
from pytest_weval.formats.case_sources import GLOB_CHARS
from pytest_weval.formats.context import Context, Where, is_within


def key_location(where: Where, shown: str, obj: Any, key: str, field: str) -> Location:
    try:
        return where.key(obj, key, field)
    except Exception:  # noqa: BLE001 - a location is best effort; the message still names the field
        return Location(path=shown, field=field)


def files_named(ctx: Context, folder: Path, written: str) -> tuple[list[Path], str | None]:
    """The files ``file://...`` names, relative to ``folder``; or none and why."""
    raw = written.removeprefix("file://")
    if GLOB_CHARS.search(raw):
        # promptfoo takes glob matches in directory order: not sorted
        found = [Path(p).resolve() for p in glob.glob(str(folder / raw), recursive=True)]
        found = [p for p in found if p.is_file() and is_within(p, ctx.boundary)]
        return (found, None) if found else ([], "no file matches it")
    found_one, why = ctx.find_file(written, ancestors=False)
    return ([found_one], None) if found_one is not None else ([], why)
