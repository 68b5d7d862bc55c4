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
from pytest_weval.report.agent_results import write_agent_results
from pytest_weval.report.rollup import build_rollup, item_key
from pytest_weval.report.weval_json import write_outputs
from pytest_weval.results import ItemResult, Usage

RECORD_DIR = ".weval"
ITEMS = "items.jsonl"
BLUEPRINTS = "blueprints.jsonl"
USAGE = "usage.json"


class MergeError(WevalError):
    """Folders that cannot be merged; ``str()`` names the folder or the item and the problem."""


def write_run_record(
    out_dir: str | os.PathLike[str],
    blueprints_by_path: Mapping[str, Blueprint],
    results: Sequence[ItemResult],
    usage: Mapping[str, Usage] | None = None,
) -> None:
    """``<out_dir>/.weval/``: the records the folder's other files are made from."""
    folder = Path(out_dir) / RECORD_DIR
    ordered = sorted(results, key=item_key)
    used = {r.blueprint_path for r in ordered}
    items = "".join(r.model_dump_json() + "\n" for r in ordered)
    blueprints = "".join(
        json.dumps({"path": path, "blueprint": json.loads(blueprints_by_path[path].model_dump_json())}) + "\n"
        for path in sorted(used)
        if path in blueprints_by_path
    )
    usage_data = {model: json.loads(u.model_dump_json()) for model, u in sorted((usage or {}).items())}
    write_atomic(folder / ITEMS, items.encode("utf-8", errors="backslashreplace"))
    write_atomic(folder / BLUEPRINTS, blueprints.encode("utf-8", errors="backslashreplace"))
    write_atomic(folder / USAGE, json.dumps(usage_data, indent=2, sort_keys=True).encode("utf-8"))


class RunRecord:
    def __init__(
        self, folder: Path, results: list[ItemResult], blueprints: dict[str, Blueprint], usage: dict[str, Usage]
    ):
        self.folder = folder
        self.results = results
        self.blueprints = blueprints
        self.usage = usage


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
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MergeError(f"{record}: cannot read: {str(exc).splitlines()[0]}") from None
    return RunRecord(folder, results, blueprints, usage)


def _identity(result: ItemResult) -> str:
    return result.nodeid or "::".join((result.blueprint_path, result.prompt_id, result.effective_model_id))


def _substance(result: ItemResult) -> tuple:
    """What two reports of one item must agree on (not timings, usage or cache flags)."""
    return (
        result.outcome,
        result.score,
        result.response,
        result.error,
        tuple(result.sample_scores),
        tuple((p.key_point_text, p.coverage_extent, p.error, p.is_inverted) for p in result.points),
    )


def _describe(result: ItemResult) -> str:
    score = "no score" if result.score is None else f"score {result.score:g}"
    return f"{result.outcome}, {score}"


def merge_outputs(dirs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str]) -> list[Path]:
    """Combine the ``--weval-out`` folders ``dirs`` into ``out`` (the files one run over all of
    them writes). Raises ``MergeError``; writes nothing then."""
    if not dirs:
        raise MergeError("no folder to merge")
    records = [read_run_record(d) for d in dirs]
    results: dict[str, tuple[ItemResult, Path]] = {}
    blueprints: dict[str, tuple[Blueprint, Path]] = {}
    usage: dict[str, Usage] = {}
    for record in records:
        for result in record.results:
            key = _identity(result)
            seen = results.get(key)
            if seen is None:
                results[key] = (result, record.folder)
            elif _substance(seen[0]) != _substance(result):
                raise MergeError(
                    f"conflicting results for {key}: {seen[1]} has {_describe(seen[0])}, "
                    f"{record.folder} has {_describe(result)}"
                )
        for path, blueprint in record.blueprints.items():
            known = blueprints.get(path)
            if known is None:
                blueprints[path] = (blueprint, record.folder)
            elif known[0].content_hash != blueprint.content_hash:
                raise MergeError(
                    f"blueprint {path} differs between {known[1]} and {record.folder} (runs of different versions)"
                )
        for model, used in record.usage.items():
            usage.setdefault(model, Usage()).add(used)
    merged = [result for result, _ in results.values()]
    by_path = {path: blueprint for path, (blueprint, _) in blueprints.items()}
    written = write_outputs(out, by_path, merged, rollup=build_rollup(merged, usage=usage or None))
    written += write_agent_results(out, merged)
    write_run_record(out, by_path, merged, usage)
    return written
