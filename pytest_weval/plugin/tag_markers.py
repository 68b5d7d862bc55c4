"""Blueprint tags in `pytest --markers`.

Tags become markers as their blueprints are collected (collect.make_items), but pytest prints
its markers without collecting anything. So with --markers, and only then, the files a run
with the same arguments would collect are read at configure time (parsed, not built: no
collections, no items, nothing sent) and their tags registered, each with how many blueprints
carry it (the corpus's 196 files: about 0.45 s).
"""

from __future__ import annotations

import fnmatch
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_weval.blueprint.ids import normalize_tags
from pytest_weval.blueprint.loader import room_for_depth
from pytest_weval.blueprint.model import BlueprintError
from pytest_weval.blueprint.parser import parse_config
from pytest_weval.plugin.blueprint_paths import is_blueprint_path
from pytest_weval.plugin.collect import marker_name
from pytest_weval.plugin.registration import inputs_of
from pytest_weval.plugin.settings import WevalSettings


def register_run_tags(config: pytest.Config) -> None:
    """The tags of the blueprints this run would collect, as markers (``activation.TagMarkers``
    calls it for `pytest --markers`, which activates the plugin at configure time)."""
    inputs = inputs_of(config)
    register_tag_markers(config, inputs.settings, inputs.named_files)


def tag_marker_counts(config: pytest.Config, settings: WevalSettings, named_files: frozenset[Path]) -> Counter[str]:
    """Marker name -> how many blueprints carry the tag, over the files a run with the same
    arguments would collect (for `pytest --markers`, which lists markers before any collection).
    A file that cannot be read is left out silently (a run would report it as a collection
    error)."""
    counts: Counter[str] = Counter()
    for path in _would_collect(config, settings, named_files):
        try:
            source = settings.read_source(path)
            with room_for_depth():
                tags = parse_config(source).config.get("tags")
        except (BlueprintError, OSError, RecursionError):
            continue
        if isinstance(tags, list) and all(isinstance(tag, str) for tag in tags):
            counts.update({name for name in map(marker_name, normalize_tags(tags)) if name})
    return counts


def register_tag_markers(config: pytest.Config, settings: WevalSettings, named_files: frozenset[Path]) -> None:
    """Register the blueprints' tags as markers, so `pytest --markers` lists them."""
    registered = {line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}
    for name, count in sorted(tag_marker_counts(config, settings, named_files).items()):
        if name not in registered:  # a tag named like pytest's own marker keeps pytest's description
            config.addinivalue_line("markers", f"{name}: blueprint tag ({count} blueprint{'s' if count != 1 else ''})")


def _would_collect(config: pytest.Config, settings: WevalSettings, named_files: frozenset[Path]) -> Iterator[Path]:
    """The blueprint files below the run's arguments (or testpaths), skipping `norecursedirs`."""
    skip = tuple(config.getini("norecursedirs"))
    seen: set[Path] = set()
    for arg in config.args:
        start = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        for path in [start] if start.is_file() else _files_below(start, skip):
            if path not in seen and is_blueprint_path(path, settings, named_files):
                seen.add(path)
                yield path


def _files_below(folder: Path, skip: tuple[str, ...]) -> Iterator[Path]:
    for parent, folders, names in os.walk(folder):
        # Pruned in place, as pytest does with norecursedirs (hidden folders included: '.*').
        folders[:] = sorted(f for f in folders if not any(fnmatch.fnmatch(f, pattern) for pattern in skip))
        yield from (Path(parent) / name for name in sorted(names))
