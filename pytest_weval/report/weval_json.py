"""``--weval-out``: one Weval comparison file per blueprint, plus ``summary.json`` for the run.

The comparison file follows what the reference's pipeline writes (docs/options.md, 'Comparison file';
``aggregateAndSaveResults`` and ``LLMCoverageEvaluator.evaluate``): the same keys, in the same
order, absent values dropped as ``JSON.stringify`` drops ``undefined``, numbers the way
JavaScript writes them (``1``, not ``1.0``). ``llm-coverage`` always runs; ``embedding`` adds
``perPromptSimilarities`` and ``similarityMatrix`` when ``--weval-eval-methods`` asks for it
(its rows are on the items: ``report/similarity.py``). Map keys that the reference fills in completion order are
sorted, so a file is the same whatever order the items ran in.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ParamSpec

from pytest_weval.blueprint.checks import DEFAULT_EMBEDDING_MODEL
from pytest_weval.blueprint.model import Blueprint, Prompt
from pytest_weval.files import write_atomic
from pytest_weval.report._fmt import utf16_key
from pytest_weval.report.baseline import Comparison
from pytest_weval.report.json_text import indented_pieces
from pytest_weval.report.rollup import Rollup, build_rollup, item_key
from pytest_weval.report.similarity import SimilarityTables, similarity_tables
from pytest_weval.report.spool import FullResults, whole_results
from pytest_weval.results import ItemResult, PointAssessment, Result, weval_kept
from pytest_weval.scoring.aggregate import aggregate, prompt_weight, round2
from pytest_weval.scoring.similarity import IDEAL_MODEL_ID

P = ParamSpec("P")

EVAL_METHODS = ["llm-coverage"]  # and "embedding" first, when the items carry similarities
_SAFE_TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")


# ---------------------------------------------------------------- small pieces


def safe_timestamp(when: dt.datetime | str | None = None) -> str:
    """``YYYY-MM-DDTHH-mm-ss-SSSZ`` in UTC (the reference's ``toSafeTimestamp``)."""
    if isinstance(when, str):
        if _SAFE_TS.match(when):
            return when
        when = dt.datetime.fromisoformat(when.replace("Z", "+00:00"))
    if when is None:
        when = dt.datetime.now(dt.timezone.utc)
    if when.tzinfo is None:  # a naive time is taken as UTC
        when = when.replace(tzinfo=dt.timezone.utc)
    u = when.astimezone(dt.timezone.utc)
    return f"{u:%Y-%m-%dT%H-%M-%S}-{u.microsecond // 1000:03d}Z"


# Values js_data returns as they are, by exact type: the leaves of a comparison file (its
# texts, ids and counts) are met without a call each.
_AS_THEY_ARE = frozenset({str, int, bool, type(None)})


def js_data(value: Any) -> Any:
    """Plain JSON data as ``JSON.stringify`` would write it: integral floats become ints,
    NaN and infinities become null, ``None`` values in objects stay (callers drop absent keys)."""
    kind = type(value)
    if kind is dict:
        return {k if type(k) is str else str(k): v if type(v) in _AS_THEY_ARE else js_data(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _AS_THEY_ARE else js_data(v) for v in value]
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return None
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, Mapping):
        return {str(k): js_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [js_data(v) for v in value]
    return value


def _drop_absent(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if v is not None}


def _sorted_keys(keys: Iterable[str]) -> list[str]:
    return sorted(set(keys), key=utf16_key)


def generation_failed(result: ItemResult) -> bool:
    """No answer to score: the reference records ``{error: "Generation failed: ..."}``."""
    return result.outcome == "error" and not (result.response or "").strip()


# ---------------------------------------------------------------- point assessments


def point_assessment_json(p: PointAssessment) -> dict[str, Any]:
    """One ``pointAssessments[]`` entry, keys in the reference's order for its kind."""
    judgements = None
    if p.individual_judgements is not None:
        judgements = [
            {"judgeModelId": j.judge_model_id, "coverageExtent": j.coverage_extent, "reflection": j.reflection}
            for j in p.individual_judgements
        ]
    if p.kind == "judged":
        entry = {
            "keyPointText": p.key_point_text,
            "coverageExtent": p.coverage_extent,
            "reflection": p.reflection,
            "error": p.error,
            "individualJudgements": judgements,
            "judgeModelId": p.judge_model_id,
            "multiplier": p.multiplier,
            "citation": p.citation,
            "isInverted": p.is_inverted,
            "pathId": p.path_id,
        }
    else:
        entry = {
            "keyPointText": p.key_point_text,
            "coverageExtent": p.coverage_extent,
            "multiplier": p.multiplier,
            "citation": p.citation,
            "isInverted": p.is_inverted,
            "pathId": p.path_id,
            "reflection": p.reflection,
            "error": p.error,
            "judgeModelId": p.judge_model_id,
            "individualJudgements": judgements,
        }
    return _drop_absent(entry)


def coverage_json(result: ItemResult) -> dict[str, Any]:
    """``llmCoverageScores[promptId][effectiveModelId]``. An item held back by an authoring
    mistake has no answer, but records its points' errors, as the reference does (ruling 9)."""
    if generation_failed(result) and not result.points:
        return {"error": f"Generation failed: {result.error or 'no response'}"}
    # The reference lists function points first, then judged ones (docs/scoring.md, 'Assessment order').
    points = sorted(result.points, key=lambda p: p.kind != "function")
    avg = None
    if points:
        avg = result.score if result.score is not None else round2(aggregate(points))
    return _drop_absent(
        {
            "keyPointsCount": len(points),
            "avgCoverageExtent": avg,
            "pointAssessments": [point_assessment_json(p) for p in points],
            "judgeAgreement": result.judge_agreement or None,
        }
    )


# ---------------------------------------------------------------- conversations


def authored_messages(prompt: Prompt) -> list[dict[str, Any]]:
    return copy.deepcopy(_authored(prompt))


def _authored(prompt: Prompt) -> list[dict[str, Any]]:
    """``authored_messages``, its turns the prompt's own (read them, never change them)."""
    raw = prompt.raw.get("messages") if isinstance(prompt.raw, Mapping) else None
    if isinstance(raw, list) and raw:
        return raw
    return [{"role": m.role, "content": m.content} for m in prompt.messages]


def conversation_history(result: ItemResult, prompt: Prompt | None) -> list[dict[str, Any]]:
    """The item's history; rebuilt from the prompt when the engine recorded none."""
    return copy.deepcopy(conversation_turns(result, prompt))


def conversation_turns(result: ItemResult, prompt: Prompt | None) -> list[dict[str, Any]]:
    """``conversation_history`` in a list of its own whose turns may be the result's or the
    prompt's (read them, never change them): what reports that only read it, or copy it as they
    write it (``js_data``), take without copying every turn."""
    if result.history:
        return list(result.history)
    authored = _authored(prompt) if prompt is not None else []
    history: list[dict[str, Any]] = []
    if result.system_prompt:
        history.append({"role": "system", "content": result.system_prompt})
    if generation_failed(result):  # null turns removed, the error appended (docs/format.md, 'Multi-turn generation')
        history += [m for m in authored if not (m.get("role") == "assistant" and m.get("content") is None)]
        history.append({"role": "assistant", "content": final_response(result)})
        return history
    generated = iter(result.generated_texts)
    for m in authored:
        if m.get("role") == "assistant" and m.get("content") is None:
            history.append({"role": "assistant", "content": next(generated, result.response or "")})
        else:
            history.append(dict(m))
    if (not authored or authored[-1].get("role") == "user") and result.response is not None:
        history.append({"role": "assistant", "content": result.response})
    return history


def final_response(result: ItemResult) -> str:
    if generation_failed(result):
        return f"<<error>>{result.error or 'no response'}<</error>>"
    return result.response or ""


# ---------------------------------------------------------------- the comparison file


def _run_models(blueprint: Blueprint, results: Sequence[ItemResult]) -> list[str]:
    """Model ids that ran: the blueprint's order first, then any others (``--weval-models``)."""
    ran = {r.model_id for r in results}
    listed = [m.id for m in blueprint.models]
    if not ran:
        return listed
    return [m for m in listed if m in ran] + _sorted_keys(ran - set(listed))


def effective_config(blueprint: Blueprint, results: Sequence[ItemResult]) -> dict[str, Any]:
    """The comparison file's ``config``: the config as the reference's run uses and writes it
    (tags normalized, ``system: [...]`` as ``systems``, defaults filled: the blueprint's
    ``effective_config``), with the models that ran."""
    return copy.deepcopy(_config(blueprint, results))


def _config(blueprint: Blueprint, results: Sequence[ItemResult]) -> dict[str, Any]:
    """``effective_config``, its values the blueprint's own (read them, never change them)."""
    config = dict(blueprint.effective_config or blueprint.config)
    config["id"] = blueprint.id  # always path-derived (docs/format.md, 'Blueprint ids')
    if not config.get("title"):
        config["title"] = blueprint.title
    config["models"] = _run_models(blueprint, results)
    if not config.get("embeddingModel"):
        config["embeddingModel"] = DEFAULT_EMBEDDING_MODEL
    return config


def _prompt_order(blueprint: Blueprint, by_prompt: Mapping[str, Any]) -> list[str]:
    known = [p.id for p in blueprint.prompts if p.id in by_prompt]
    seen = set(known)
    return list(dict.fromkeys(known)) + _sorted_keys(k for k in by_prompt if k not in seen)


def _skips_coverage(result: ItemResult, prompt: Prompt | None) -> bool:
    """A skipped item without points: key-point extraction failed, the reference skips the
    prompt (docs/judges.md, 'Key-point extraction') unless the prompt simply has no points and no ideal."""
    if result.effective_model_id == IDEAL_MODEL_ID:
        return True
    if result.outcome == "skipped" and not result.points:
        return prompt is None or bool(prompt.ideal)
    return False


def comparison_data(
    blueprint: Blueprint,
    results: Sequence[ItemResult],
    *,
    run_label: str | None = None,
    timestamp: dt.datetime | str | None = None,
    source_commit_sha: str | None = None,
    source_blueprint_file_name: str | None = None,
    include_prompt_weights: bool = False,
    store_full_history: bool = True,
) -> dict[str, Any]:
    """One blueprint's Weval comparison object, before ``js_data`` (which copies the prompt's
    and results' own containers it holds: read it, never change it). ``run_label`` defaults to
    the content hash, as in the reference; ``include_prompt_weights`` adds the
    ``__promptWeights`` map Weval's storage and API inject when the file is read."""
    ordered = sorted(weval_kept(results), key=item_key)
    # Duplicate ids: the later prompt wins, as the reference's results map keeps the last
    # (docs/compatibility.md, 'Duplicate prompt ids').
    prompts = {p.id: p for p in blueprint.prompts}
    by_prompt: dict[str, list[ItemResult]] = {}
    for r in ordered:
        by_prompt.setdefault(r.prompt_id, []).append(r)
    prompt_ids = _prompt_order(blueprint, by_prompt)

    has_ideal = any(p.ideal for p in blueprint.prompts)
    effective = {r.effective_model_id for r in ordered}
    if has_ideal:
        effective.add(IDEAL_MODEL_ID)

    system_prompts: dict[str, str | None] = {}
    contexts: dict[str, Any] = {}
    extracted: dict[str, list[str]] = {}
    finals: dict[str, dict[str, str]] = {}
    histories: dict[str, dict[str, Any]] = {}
    coverage: dict[str, dict[str, Any]] = {}
    errors: dict[str, dict[str, str]] = {}
    fixture_sources: dict[str, dict[str, str]] = {}

    for pid in prompt_ids:
        prompt = prompts.get(pid)
        items = sorted(by_prompt[pid], key=lambda r: (utf16_key(r.effective_model_id), item_key(r)))
        # the turns the prompt and the results hold, copied by js_data below
        messages = _authored(prompt) if prompt is not None else []
        contexts[pid] = messages or "Error: No input context found"
        finals[pid] = {}
        if prompt is not None and prompt.ideal is not None:
            finals[pid][IDEAL_MODEL_ID] = prompt.ideal
        histories[pid] = {}
        coverage[pid] = {}
        if prompt is not None and not prompt.points and prompt.ideal:
            first = next((r for r in items if r.points), None)
            if first is not None:
                extracted[pid] = [p.key_point_text for p in first.points]
        for r in items:
            eff = r.effective_model_id
            if eff == IDEAL_MODEL_ID:
                continue
            system_prompts[eff] = r.system_prompt  # last prompt wins, as in the reference
            finals[pid][eff] = final_response(r)
            histories[pid][eff] = conversation_turns(r, prompt)
            if generation_failed(r):
                errors.setdefault(pid, {})[eff] = r.error or "no response"
            if r.fixture is not None:
                fixture_sources.setdefault(pid, {})[eff] = r.fixture
            if not _skips_coverage(r, prompt):
                coverage[pid][eff] = coverage_json(r)

    if include_prompt_weights:
        weights = {p.id: p.weight for p in blueprint.prompts if prompt_weight(p.weight) is not None}
        if weights:
            coverage["__promptWeights"] = weights
    evaluation = _evaluation_results(coverage, similarity_tables(prompt_ids, ordered))

    out = _drop_absent(
        {
            "configId": blueprint.id,
            "configTitle": blueprint.title,
            "runLabel": run_label or blueprint.content_hash,
            "timestamp": safe_timestamp(timestamp),
            "description": blueprint.description,
            "sourceCommitSha": source_commit_sha,
            "sourceBlueprintFileName": source_blueprint_file_name,
            "config": _config(blueprint, ordered),
            "evalMethodsUsed": (["embedding"] if "similarityMatrix" in evaluation else []) + EVAL_METHODS,
            "effectiveModels": _sorted_keys(effective),
            "modelSystemPrompts": {k: system_prompts[k] for k in _sorted_keys(system_prompts)},
            "promptIds": _sorted_keys(prompt_ids),
            "promptContexts": contexts,
            "extractedKeyPoints": extracted,  # the evaluator always returns this map, even empty
            "allFinalAssistantResponses": finals,
            "fullConversationHistories": histories if store_full_history else None,
            "evaluationResults": evaluation,
            "errors": errors or None,
            # Ours, only when --weval-fixtures answered (docs/fixtures.md): which answers are canned.
            "fixtureSources": fixture_sources or None,
        }
    )
    # modelSystemPrompts keeps its nulls: the reference writes ``systemPromptUsed ?? null``.
    return out


def _evaluation_results(coverage: dict[str, Any], similarities: SimilarityTables | None) -> dict[str, Any]:
    if similarities is None:
        return {"llmCoverageScores": coverage}
    # the embedding evaluator's keys come first, as it runs first
    return {
        "similarityMatrix": similarities.matrix,
        "perPromptSimilarities": similarities.per_prompt,
        "llmCoverageScores": coverage,
    }


# ---------------------------------------------------------------- the run summary


def run_summary_data(
    results: Sequence[Result],
    rollup: Rollup | None = None,
    *,
    run_label: str | None = None,
    timestamp: dt.datetime | str | None = None,
    min_score: float | None = None,
    gate_lines: Sequence[str] | None = None,
    files: Mapping[str, str] | None = None,
    comparison: Comparison | None = None,
    not_run: int | None = None,
    changes: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``summary.json``: run totals, per blueprint x model and per folder means, usage, judge
    agreement, pass counts, the items and every error. Our format (not Weval's), camelCase.
    Before ``js_data`` (``build_run_summary`` is it after; written with
    ``write_json_atomic(..., js=True)``)."""
    rollup = rollup if rollup is not None else build_rollup(results)
    data = rollup.to_dict()
    items = [
        _drop_absent(
            {
                "nodeid": r.nodeid or None,
                "file": r.blueprint_path,
                "blueprintId": r.blueprint_id,
                "promptId": r.prompt_id,
                "model": r.model_id,
                "effectiveModel": r.effective_model_id,
                "outcome": r.outcome,
                "score": r.score,
                "threshold": r.threshold,
                "promptWeight": r.prompt_weight,
                "samples": list(r.sample_scores) or None,
                "error": r.error,
            }
        )
        # the system prompt it was sent, null for none: --weval-baseline pairs items by it
        | {"systemPrompt": r.system_prompt or None}
        for r in sorted(results, key=item_key)
    ]
    summary = {
        "runLabel": run_label,
        "timestamp": safe_timestamp(timestamp),
        "totals": data["overall"],
        "models": data["models"],
        "effectiveModels": data["effectiveModels"],
        "blueprints": data["blueprints"],
        "folders": data["folders"],
        "usage": data["usage"],
        "usageTotal": data["usageTotal"],
        "cost": {
            "total_usd": data["usageTotal"]["costUsd"],
            "by_model": {model: used["costUsd"] for model, used in data["usage"].items()},
        },
        "judgeAgreement": data["judgeAgreement"],
        "errors": data["itemErrors"],
        "pointErrors": data["pointErrors"],
        "items": items,
        "files": dict(files) if files else None,
    }
    if "metrics" in data:  # promptfoo suites' named metrics (docs/promptfoo.md, 'Reports')
        summary["metrics"] = data["metrics"]
    if not_run is not None:  # stopped early: the figures cover only the items that ran
        summary["interrupted"] = True
        summary["notRun"] = not_run
    if min_score is not None:
        summary["minScore"] = {"threshold": min_score, "failures": list(gate_lines or [])}
    if comparison is not None:
        summary["baseline"] = comparison.to_dict()
    if changes is not None:  # since the store's previous run (docs/history.md)
        summary["changes"] = dict(changes)
    return _drop_absent(summary)


# ---------------------------------------------------------------- writing


def _as_js(data: Callable[P, dict[str, Any]], name: str) -> Callable[P, dict[str, Any]]:
    """``data`` with its object as JavaScript reads it (``js_data``): what the file holds."""

    @functools.wraps(data)
    def built(*args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        return js_data(data(*args, **kwargs))

    built.__name__ = built.__qualname__ = name
    built.__doc__ = f"``{data.__name__}``'s object after ``js_data``, as its file holds it."
    return built


# The public builders (pytest_weval.report): the files' contents as plain data.
build_comparison = _as_js(comparison_data, "build_comparison")
build_run_summary = _as_js(run_summary_data, "build_run_summary")


def write_json_atomic(path: Path, data: Any, *, js: bool = False) -> None:
    """``json.dumps(data, indent=2)`` written, then renamed into place: a reader never sees half
    a file. ``js``: ``data`` is written as ``js_data(data)``."""
    try:
        write_atomic(path, _json_pieces(data, ensure_ascii=False, js=js))
    except UnicodeEncodeError:  # lone surrogates: escape them, as JSON.stringify does
        write_atomic(path, _json_pieces(data, ensure_ascii=True, js=js))


def _json_pieces(data: Any, *, ensure_ascii: bool, js: bool = False, size: int = 1 << 16) -> Iterator[bytes]:
    """``json.dumps(data, indent=2)`` encoded, in pieces of about ``size`` characters (never
    whole in memory)."""
    pieces: list[str] = []
    held = 0
    for chunk in indented_pieces(data, ensure_ascii=ensure_ascii, js=js):
        pieces.append(chunk)
        held += len(chunk)
        if held >= size:
            yield "".join(pieces).encode("utf-8")
            pieces, held = [], 0
    yield "".join(pieces).encode("utf-8")


def file_stem(blueprint_id: str) -> str:
    stem = blueprint_id.replace("/", "__").replace("\\", "__").replace(os.sep, "__")
    return stem if stem.strip(".") else "blueprint"


def write_outputs(
    out_dir: str | os.PathLike[str],
    blueprints_by_path: Mapping[str, Blueprint],
    results: Sequence[Result],
    *,
    rollup: Rollup | None = None,
    run_label: str | None = None,
    timestamp: dt.datetime | str | None = None,
    min_score: float | None = None,
    gate_lines: Sequence[str] | None = None,
    include_prompt_weights: bool = False,
    comparison: Comparison | None = None,
    not_run: int | None = None,
    changes: Mapping[str, Any] | None = None,
    full: FullResults | None = None,
    each_blueprint: Callable[[str, Sequence[ItemResult]], None] | None = None,
) -> list[Path]:
    """Write ``<blueprint-id>.json`` per blueprint that has results, then ``summary.json``.

    ``blueprints_by_path`` is keyed by exactly ``ItemResult.blueprint_path`` (relative to the
    rootdir, "/"-separated); a blueprint missing from it gets no comparison file, but its items
    are still in ``summary.json``. A ``run_label`` becomes ``<label>_<contentHash>`` per
    blueprint, as the reference's ``--run-label`` does. Two blueprints with the same id
    (``a.yml`` and ``a.json``) get ``a.json`` and ``a.2.json``. Returns the paths written.
    ``full`` gives ``results`` their texts back, one blueprint's at a time (``report/spool.py``):
    one comparison file's data is in memory at once. ``each_blueprint`` is given each blueprint
    path's results, whole, in order, as they are read (another file made from them then reads
    them no more: ``report/finish.py``).
    """
    out = Path(out_dir)
    stamp = safe_timestamp(timestamp)  # one timestamp for the whole run
    groups: dict[str, list[Result]] = {}
    for r in results:
        groups.setdefault(r.blueprint_path, []).append(r)

    written: list[Path] = []
    files: dict[str, str] = {}
    used: dict[str, int] = {}
    for path in sorted(groups):
        bp = blueprints_by_path.get(path)
        if bp is None and each_blueprint is None:
            continue  # the blueprint could not be reloaded: its items still go in the summary
        items = list(whole_results(groups[path], full))
        if each_blueprint is not None:
            each_blueprint(path, items)
        if bp is None:
            continue
        label = f"{run_label}_{bp.content_hash}" if run_label else None
        # written as build_comparison's js_data, without that copy made first
        data = comparison_data(
            bp, items, run_label=label, timestamp=stamp, include_prompt_weights=include_prompt_weights
        )
        stem = file_stem(bp.id)
        used[stem] = used.get(stem, 0) + 1
        name = f"{stem}.json" if used[stem] == 1 else f"{stem}.{used[stem]}.json"
        write_json_atomic(out / name, data, js=True)
        written.append(out / name)
        files[path] = name

    summary = run_summary_data(
        results,
        rollup,
        run_label=run_label,
        timestamp=stamp,
        min_score=min_score,
        gate_lines=gate_lines,
        files=files,
        comparison=comparison,
        not_run=not_run,
        changes=changes,
    )
    write_json_atomic(out / "summary.json", summary, js=True)
    written.append(out / "summary.json")
    return written
