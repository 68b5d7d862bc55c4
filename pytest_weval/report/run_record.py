"""The run's own record in a ``--weval-out`` folder, and merging several such folders.

Beside the Weval comparison files and ``summary.json``, a run writes ``.weval/``: every item's
``ItemResult`` (``items.jsonl``), the blueprints they came from (``blueprints.jsonl``) and what
the run's requests used (``usage.json``). The comparison files and the summary are made from
those records, so ``merge`` rebuilds exactly the files one run over every shard would have
written (``python -m pytest_weval merge OUT_DIR... --out DIR``; teams that split a suite with
pytest-split or ``-k`` per CI job). An item found in several folders must have the same result in
each (two machines of one shared run report the same records); otherwise the merge stops and
names it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_weval.blueprint.model import Blueprint
from pytest_weval.errors import WevalError
from pytest_weval.files import write_atomic
from pytest_weval.report.rollup import item_key
from pytest_weval.report.spool import FullResults
from pytest_weval.results import ItemResult, Result, Usage

RECORD_DIR = ".weval"
ITEMS = "items.jsonl"
BLUEPRINTS = "blueprints.jsonl"
USAGE = "usage.json"
GATES = "run.json"  # what the run was held to as a whole (report/finish.py, RunGates)


class MergeError(WevalError):
    """Folders that cannot be merged; ``str()`` names the folder or the item and the problem."""


def write_run_record(
    out_dir: str | os.PathLike[str],
    blueprints_by_path: Mapping[str, Blueprint],
    results: Sequence[Result],
    usage: Mapping[str, Usage] | None = None,
    *,
    gates: str | None = None,
    full: FullResults | None = None,
) -> None:
    """``<out_dir>/.weval/``: the records the folder's other files are made from; ``gates`` is
    the JSON of the run's ``RunGates``. ``full`` gives the results their texts back, one at a
    time as the items' file is written (their spooled lines as they are, when nothing was added
    to them since)."""
    folder = Path(out_dir) / RECORD_DIR
    ordered = sorted(results, key=item_key)
    used = {r.blueprint_path for r in ordered}
    # a spooled result's line is already what this file holds (``FullResults.lines``)
    items = (full if full is not None else FullResults()).lines(ordered)
    # a line per blueprint, written as it is made (12 MB of them at bench/scale.py's 16,000 items)
    blueprints = (
        (json.dumps({"path": path, "blueprint": json.loads(blueprints_by_path[path].model_dump_json())}) + "\n").encode(
            "utf-8", errors="backslashreplace"
        )
        for path in sorted(used)
        if path in blueprints_by_path
    )
    usage_data = {model: json.loads(u.model_dump_json()) for model, u in sorted((usage or {}).items())}
    write_atomic(folder / ITEMS, items)
    write_atomic(folder / BLUEPRINTS, blueprints)
    write_atomic(folder / USAGE, json.dumps(usage_data, indent=2, sort_keys=True).encode("utf-8"))
    if gates is not None:
        write_atomic(folder / GATES, gates.encode("utf-8"))


class RunRecord:
    def __init__(
        self,
        folder: Path,
        results: list[ItemResult],
        blueprints: dict[str, Blueprint],
        usage: dict[str, Usage],
        gates: dict[str, object],
    ):
        self.folder = folder
        self.results = results
        self.blueprints = blueprints
        self.usage = usage
        self.gates = gates  # RunGates as JSON data; {} for a folder written before they were kept


def read_run_record(out_dir: str | os.PathLike[str]) -> RunRecord:
    folder = Path(out_dir)
    record = folder / RECORD_DIR
    if not folder.is_dir():
        raise MergeError(f"{folder}: no such folder")
    if not (record / ITEMS).is_file():
        raise MergeError(
            f"{folder}: no {RECORD_DIR}/{ITEMS} (not a --weval-out folder, or written by a pytest-weval "
            "older than merge)"
        )
    results: list[ItemResult] = []
    blueprints: dict[str, Blueprint] = {}
    usage: dict[str, Usage] = {}
    gates: dict[str, object] = {}
    try:
        for line in (record / ITEMS).read_text(encoding="utf-8").splitlines():
            if line.strip():
                results.append(ItemResult.model_validate_json(line))
        if (record / BLUEPRINTS).is_file():
            for line in (record / BLUEPRINTS).read_text(encoding="utf-8").splitlines():
                if line.strip():
                    data = json.loads(line)
                    blueprints[str(data["path"])] = Blueprint.model_validate(data["blueprint"])
        if (record / USAGE).is_file():
            for model, data in json.loads((record / USAGE).read_text(encoding="utf-8")).items():
                usage[model] = Usage.model_validate(data)
        if (record / GATES).is_file():
            gates = dict(json.loads((record / GATES).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MergeError(f"{record}: cannot read: {str(exc).splitlines()[0]}") from None
    return RunRecord(folder, results, blueprints, usage, gates)


def identity(result: ItemResult) -> str:
    return result.nodeid or "::".join((result.blueprint_path, result.prompt_id, result.effective_model_id))


def substance(result: ItemResult) -> tuple:
    """What two reports of one item must agree on (not timings, usage or cache flags)."""
    return (
        result.outcome,
        result.score,
        result.response,
        result.error,
        tuple(result.sample_scores),
        tuple((p.key_point_text, p.coverage_extent, p.error, p.is_inverted) for p in result.points),
    )


def describe(result: ItemResult) -> str:
    score = "no score" if result.score is None else f"score {result.score:g}"
    return f"{result.outcome}, {score}"
