"""A blueprint's similarity matrices, from its answers' rows (``ItemResult.similarities``, made
by the run's embedding step, ``run/embedding.py``): the comparison file's
``perPromptSimilarities`` and ``similarityMatrix`` and the HTML report's similarity to the ideal
read them from here (docs/options.md, 'Similarity to the ideal')."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from pytest_weval.report._fmt import utf16_key
from pytest_weval.results import Result, weval_kept
from pytest_weval.scoring.similarity import IDEAL_MODEL_ID, mean_matrix

PromptMatrix = dict[str, dict[str, float | None]]


@dataclasses.dataclass(frozen=True)
class SimilarityTables:
    model_ids: list[str]  # sorted as JavaScript sorts them, IDEAL_BENCHMARK among them
    per_prompt: dict[str, PromptMatrix]  # prompt id -> m1 -> m2 -> cosine (None: unknown)
    matrix: dict[str, dict[str, float]]  # the mean over prompts (NaN: no prompt had the pair)

    def to_ideal(self, model_id: str) -> float | None:
        """A model's mean similarity to the ideal answer, None when unknown."""
        value = self.matrix.get(model_id, {}).get(IDEAL_MODEL_ID)
        return None if value is None or math.isnan(value) else value


def similarity_tables(prompt_ids: Sequence[str], results: Sequence[Result]) -> SimilarityTables | None:
    """One blueprint's tables, prompts in ``prompt_ids`` order; None when its answers have no
    rows (the embedding method did not run, or found nothing to compare)."""
    rows = {(r.prompt_id, r.effective_model_id): r.similarities for r in weval_kept(results) if r.similarities}
    if not rows:
        return None
    ids = sorted({m for row in rows.values() if row for m in row}, key=utf16_key)
    per_prompt: dict[str, PromptMatrix] = {}
    for pid in prompt_ids:
        matrix: PromptMatrix = {}
        for m1 in ids:
            row = rows.get((pid, m1))
            # A model with no answer here (the ideal, one not run on this prompt): its row is its
            # column, the cosine being symmetric.
            matrix[m1] = {
                m2: 1.0 if m1 == m2 else (row.get(m2) if row is not None else (rows.get((pid, m2)) or {}).get(m1))
                for m2 in ids
            }
        per_prompt[pid] = matrix
    return SimilarityTables(ids, per_prompt, mean_matrix(ids, per_prompt.values()))
