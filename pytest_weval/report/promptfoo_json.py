"""``--weval-out``'s ``promptfoo-results.json``: the rows of every promptfoo-shaped suite of the
run in the shape promptfoo's ``-o results.json`` writes (docs/promptfoo.md, 'Results file'), so
promptfoo's viewer and the scripts written for its files read ours: per row ``success``,
``score``, ``gradingResult`` (with ``componentResults``), ``namedScores``, ``prompt``,
``provider``, ``vars``, ``response``, ``testIdx``, ``promptIdx``, ``failureReason``.
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_weval.files import write_atomic
from pytest_weval.results import Result

FILE_NAME = "promptfoo-results.json"
RESULTS_VERSION = 3  # promptfoo's results format version whose fields we write


def promptfoo_row(result: Result) -> dict[str, Any]:
    row = dict(result.promptfoo or {})
    if result.outcome == "error":
        row.update(success=False, score=0, error=result.error, failureReason=2)
    elif result.outcome == "skipped":
        row.update(success=False, error=result.error, failureReason=2)
    row.setdefault("namedScores", {})
    row["id"] = result.nodeid  # promptfoo's is a uuid; ours names the pytest item
    row["suite"] = result.blueprint_path
    return row


def promptfoo_document(results: Sequence[Result], *, timestamp: str | None = None) -> dict[str, Any] | None:
    rows = [promptfoo_row(r) for r in results if r.source == "promptfoo suite"]
    if not rows:
        return None
    prompts: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        prompt = row.get("prompt") or {}
        provider = row.get("provider") or {}
        key = (row["suite"], str(row.get("promptIdx")), str(provider.get("id")))
        entry = prompts.setdefault(
            key,
            {
                "raw": prompt.get("raw", ""),
                "label": prompt.get("label", ""),
                "provider": provider.get("label") or provider.get("id"),
                "metrics": {
                    "score": 0.0,
                    "testPassCount": 0,
                    "testFailCount": 0,
                    "testErrorCount": 0,
                    "namedScores": {},
                },
            },
        )
        metrics = entry["metrics"]
        metrics["score"] += row.get("score") or 0
        if row.get("failureReason") == 2:
            metrics["testErrorCount"] += 1
        elif row.get("success"):
            metrics["testPassCount"] += 1
        else:
            metrics["testFailCount"] += 1
        for name, value in (row.get("namedScores") or {}).items():
            metrics["namedScores"][name] = metrics["namedScores"].get(name, 0) + value
    stamp = timestamp or datetime.datetime.now(datetime.timezone.utc).isoformat()
    return {
        "evalId": None,
        "results": {
            "version": RESULTS_VERSION,
            "timestamp": stamp,
            "prompts": list(prompts.values()),
            "results": rows,
            "stats": {
                "successes": sum(1 for r in rows if r.get("success")),
                "failures": sum(1 for r in rows if not r.get("success") and r.get("failureReason") != 2),
                "errors": sum(1 for r in rows if r.get("failureReason") == 2),
                "tokenUsage": _token_usage(rows),
            },
        },
        "config": {"suites": sorted({r["suite"] for r in rows})},
        "shareableUrl": None,
    }


def _token_usage(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    total = {"total": 0, "prompt": 0, "completion": 0, "cached": 0}
    for row in rows:
        usage = (row.get("response") or {}).get("tokenUsage") or {}
        for key in total:
            total[key] += int(usage.get(key) or 0)
    return total


def write_promptfoo_results(out_dir: str | os.PathLike[str], results: Sequence[Result]) -> list[Path]:
    document = promptfoo_document(results)
    if document is None:
        return []
    target = Path(out_dir) / FILE_NAME
    text = json.dumps(document, ensure_ascii=False, indent=2, default=str)
    write_atomic(target, text.encode("utf-8", errors="backslashreplace"))
    return [target]
