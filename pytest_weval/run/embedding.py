"""The ``embedding`` evaluation method (``--weval-eval-methods``; docs/options.md, 'Similarity to
the ideal'): once a blueprint's items have answered, every answer and the ideal are embedded
with the blueprint's ``embeddingModel`` through the engine (cached, claimed, priced and limited
as any request), and each answer gets its row of its prompt's similarity matrix
(``ItemResult.similarities``), as the reference's ``embedding-evaluator.ts`` computes it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence

import pytest_weval.defaults as defaults
from pytest_weval.blueprint.checks import DEFAULT_EMBEDDING_MODEL
from pytest_weval.blueprint.model import Blueprint, ModelSpec, Prompt
from pytest_weval.engine.errors import ModelCallError
from pytest_weval.engine.request import ChatMessage, EngineSettings, ModelClient, ModelRequest
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.transport.providers.embeddings import embeddings_adapter, vector_of
from pytest_weval.results import ItemResult, weval_kept
from pytest_weval.scoring.similarity import IDEAL_MODEL_ID, prompt_matrix, unknown_count

EVAL_METHODS = ("embedding", "llm-coverage")


def parse_eval_methods(value: str | None) -> tuple[str, ...]:
    """``--weval-eval-methods``: a comma list of ``embedding`` and ``llm-coverage``, or ``all``
    (both), or ``none``; unset: ``llm-coverage``. Raises ``ValueError`` naming what is wrong."""
    parts = (value or "").split(",")
    names = [p.strip().lower() for p in parts if p.strip()]
    if not names:
        return defaults.EVAL_METHODS
    unknown = [n for n in names if n not in (*EVAL_METHODS, "all", "none")]
    if unknown:
        raise ValueError(
            f"unknown evaluation method {unknown[0]!r}: choose embedding, llm-coverage, "
            "a comma list of them, all or none"
        )
    if "none" in names and len(names) > 1:
        raise ValueError("'none' cannot be listed with other evaluation methods")
    if "all" in names:
        return EVAL_METHODS
    return tuple(m for m in EVAL_METHODS if m in names)


def embedding_model(blueprint: Blueprint) -> str:
    """The blueprint's ``embeddingModel``, or the reference's default."""
    config = blueprint.effective_config or blueprint.config
    model = config.get("embeddingModel") if isinstance(config, Mapping) else None
    return model.strip() if isinstance(model, str) and model.strip() else DEFAULT_EMBEDDING_MODEL


def embedding_problems(blueprints: Iterable[Blueprint], settings: EngineSettings) -> list[str]:
    """Before any request: the embedding models that cannot be asked (a provider with no
    embeddings endpoint here, a key not set), each once, with the blueprints that name it. The
    items run as usual; their similarities will be missing unless the cache holds them."""
    by_model: dict[str, list[str]] = {}
    for blueprint in blueprints:
        by_model.setdefault(embedding_model(blueprint), []).append(blueprint.path)
    lines = []
    for model_id, paths in sorted(by_model.items()):
        try:
            embeddings_adapter(model_id).connect(settings.environ, Redactor())
        except ModelCallError as exc:
            shown = ", ".join(sorted(paths)[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
            lines.append(
                f"weval: --weval-eval-methods=embedding: {exc}; the similarities of {shown} will be missing "
                "unless the cache holds their embeddings (the items run as usual)"
            )
    return lines


@dataclasses.dataclass
class Similarities:
    """What the embedding step made of a run: the results with their rows, and the lines to
    show (embeddings that failed, a blueprint left without a matrix)."""

    results: list[ItemResult]
    lines: list[str] = dataclasses.field(default_factory=list)


async def add_similarities(
    client: ModelClient, blueprints: Mapping[str, Blueprint], results: Sequence[ItemResult]
) -> Similarities:
    """Every blueprint's answers with their similarity rows (the blueprints concurrently; the
    engine limits the requests). An agent eval case has none."""
    by_path: dict[str, list[ItemResult]] = {}
    for result in results:
        if result.source == "blueprint" and result.blueprint_path in blueprints:
            by_path.setdefault(result.blueprint_path, []).append(result)
    done = await asyncio.gather(*(_blueprint_rows(client, blueprints[path], items) for path, items in by_path.items()))
    rows: dict[int, dict[str, float | None]] = {}  # by the kept result (id()): not its duplicates
    lines: list[str] = []
    for found, said in done:
        rows.update(found)
        lines += said
    out = []
    for result in results:
        row = rows.get(id(result))
        out.append(result if row is None else result.model_copy(update={"similarities": row}))
    return Similarities(out, lines)


async def _blueprint_rows(
    client: ModelClient, blueprint: Blueprint, results: Sequence[ItemResult]
) -> tuple[dict[int, dict[str, float | None]], list[str]]:
    kept = weval_kept(results)
    prompts: dict[str, Prompt] = {p.id: p for p in blueprint.prompts}  # a repeated id: the later
    order = list(dict.fromkeys(p.id for p in blueprint.prompts))
    prompt_ids = [pid for pid in order if any(r.prompt_id == pid for r in kept)]
    prompt_ids += sorted({r.prompt_id for r in kept} - set(prompt_ids))

    # What is embedded, per prompt: the ideal (when the prompt has one) and every answer that
    # did not fail and is not blank; every model id seen is in every prompt's matrix.
    texts: dict[tuple[str, str], str] = {}
    model_ids = {r.effective_model_id for r in kept}
    for pid in prompt_ids:
        ideal = prompts[pid].ideal if pid in prompts else None
        if ideal:
            texts[pid, IDEAL_MODEL_ID] = ideal
            model_ids.add(IDEAL_MODEL_ID)
    for r in kept:
        if (r.response or "").strip():
            texts[r.prompt_id, r.effective_model_id] = r.response or ""

    model = ModelSpec(id=embedding_model(blueprint))
    keys = list(texts)
    replies = await asyncio.gather(*(_embed(client, model, texts[key]) for key in keys), return_exceptions=True)
    vectors: dict[tuple[str, str], list[float]] = {}
    failures: list[str] = []
    for key, reply in zip(keys, replies, strict=True):
        if isinstance(reply, ModelCallError):
            failures.append(str(reply))
        elif isinstance(reply, BaseException):
            raise reply
        else:
            vectors[key] = reply

    ids = sorted(model_ids)
    matrices = {pid: prompt_matrix(ids, {m: v for (p, m), v in vectors.items() if p == pid}) for pid in prompt_ids}
    lines = []
    where = f"weval: {blueprint.path}: similarity ({model.id})"
    if failures:
        lines.append(f"{where}: {len(failures)} of {len(keys)} texts were not embedded; the first: {failures[0]}")
    unknown, total = unknown_count(matrices.values())
    if total and unknown == total:
        lines.append(
            f"{where}: no similarity could be computed (every pair lacks an embedding), so the "
            "comparison file has no similarity matrix; the items' scores stand"
        )
        return {}, lines
    if unknown and not failures:
        lines.append(f"{where}: {unknown} of {total} similarities are unknown (a blank or failed answer)")
    rows = {
        id(r): {m2: None if math.isnan(v) else v for m2, v in matrices[r.prompt_id][r.effective_model_id].items()}
        for r in kept
    }
    return rows, lines


def embedding_request(model: ModelSpec, text: str) -> ModelRequest:
    """The request for ``text``'s embedding (the plan builds the same)."""
    return ModelRequest(
        model=model,
        messages=(ChatMessage("user", text),),
        endpoint="embeddings",
        purpose="embed",
        priority=1 << 30,  # after every item's requests
    )


async def _embed(client: ModelClient, model: ModelSpec, text: str) -> list[float]:
    return vector_of(await client.complete(embedding_request(model, text)))
