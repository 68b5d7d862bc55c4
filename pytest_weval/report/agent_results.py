"""``--weval-out`` for agent eval files: ``<suite id>.jsonl``, one record per case x target in
AgentV's result shape (snake_case keys, as AgentV writes them), so AgentV's own tooling and a
person used to it can read them. Blueprints get Weval's comparison JSON instead (``weval_json``);
both kinds are in ``summary.json``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_weval.files import write_atomic
from pytest_weval.report.spool import FullResults, whole_results
from pytest_weval.report.weval_json import file_stem
from pytest_weval.results import ItemResult, Result


def agent_record(result: ItemResult) -> dict[str, Any]:
    return {
        "eval_id": result.prompt_id,
        "dataset": result.blueprint_id,
        "target": result.effective_model_id,
        "score": result.score,
        "verdict": result.verdict,
        "outcome": result.outcome,
        "candidate_answer": result.response,
        "evaluator_results": [
            {
                "name": p.key_point_text,
                "type": p.kind,
                "score": p.coverage_extent,
                "weight": p.multiplier,
                "reasoning": p.reflection,
                **({"error": p.error} if p.error else {}),
            }
            for p in result.points
        ],
        "error": result.error,
        "node_id": result.nodeid,
    }


def write_agent_results(
    out_dir: str | os.PathLike[str], results: Sequence[Result], *, full: FullResults | None = None
) -> list[Path]:
    """One ``<suite id>.jsonl`` per agent suite that has results (a repeated id gets ``.2``);
    ``full`` gives the results their texts back, a suite's at a time."""
    suites: dict[str, list[Result]] = {}
    for result in results:
        if result.source == "agent eval file":
            suites.setdefault(result.blueprint_path, []).append(result)
    written: list[Path] = []
    used: dict[str, int] = {}
    for path in sorted(suites):
        items = suites[path]
        stem = file_stem(items[0].blueprint_id)
        used[stem] = used.get(stem, 0) + 1
        name = f"{stem}.jsonl" if used[stem] == 1 else f"{stem}.{used[stem]}.jsonl"
        whole = whole_results(items, full)
        text = "".join(json.dumps(agent_record(r), ensure_ascii=False) + "\n" for r in whole)
        target = Path(out_dir) / name
        write_atomic(target, text.encode("utf-8", errors="backslashreplace"))
        written.append(target)
    return written
