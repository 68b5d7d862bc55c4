"""Similarity between answers, as the reference's ``embedding-evaluator.ts`` computes it
(docs/options.md, 'Similarity to the ideal'; spec §3.5).

Pure arithmetic over embedding vectors: the run's embedding step (``run/embedding.py``) asks
for the vectors, the comparison file (``report/weval_json.py``) averages the per-prompt
matrices. ``NaN`` stands for "no similarity" (a side with no embedding); JSON writes it as null.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from pytest_weval.errors import WevalError

IDEAL_MODEL_ID = "IDEAL_BENCHMARK"  # the ideal answer's row and column in every matrix

Matrix = dict[str, dict[str, float]]


class VectorLengthError(WevalError, ValueError):
    """Two embeddings of different lengths (a changed embedding model between cached replies)."""


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two vectors, clamped to [-1, 1] against rounding; 0 when either is all
    zeros, 1 for two empty vectors (the reference's ``cosineSimilarity``, term for term, so the
    sums round as its do)."""
    if len(a) != len(b):
        raise VectorLengthError(f"vectors of {len(a)} and {len(b)} numbers")
    if not a:
        return 1.0
    mag_a = math.sqrt(_sum_products(a, a))
    mag_b = math.sqrt(_sum_products(b, b))
    if mag_a == 0 or mag_b == 0:
        return 0.0
    return max(-1.0, min(1.0, _sum_products(a, b) / (mag_a * mag_b)))


def _sum_products(a: Sequence[float], b: Sequence[float]) -> float:
    total = 0.0
    for x, y in zip(a, b, strict=True):
        total += x * y
    return total


def prompt_matrix(model_ids: Sequence[str], vectors: Mapping[str, Sequence[float]]) -> Matrix:
    """One prompt's matrix over every model id of the run: 1.0 on the diagonal, the cosine where
    both sides have a vector, NaN elsewhere (and where the vectors' lengths differ)."""
    matrix: Matrix = {}
    for m1 in model_ids:
        row = matrix[m1] = {}
        for m2 in model_ids:
            if m1 == m2:
                row[m2] = 1.0
                continue
            a, b = vectors.get(m1), vectors.get(m2)
            value = math.nan
            if a is not None and b is not None:
                try:
                    value = cosine(a, b)
                except VectorLengthError:
                    pass
            row[m2] = value
    return matrix


def mean_matrix(model_ids: Sequence[str], per_prompt: Iterable[Mapping[str, Mapping[str, float | None]]]) -> Matrix:
    """``similarityMatrix``: per pair, the mean over prompts (in order) of its valid values; NaN
    where a pair has none; 1.0 on the diagonal. A missing or null value counts as NaN."""
    sums: dict[tuple[str, str], float] = {}
    counts: dict[tuple[str, str], int] = {}
    for matrix in per_prompt:
        for m1 in model_ids:
            row = matrix.get(m1) or {}
            for m2 in model_ids:
                value = row.get(m2)
                if m1 == m2 or value is None or math.isnan(value):
                    continue
                sums[m1, m2] = sums.get((m1, m2), 0.0) + value
                counts[m1, m2] = counts.get((m1, m2), 0) + 1
    out: Matrix = {m1: {} for m1 in model_ids}
    for m1 in model_ids:
        for m2 in model_ids:
            if m1 == m2:
                out[m1][m2] = 1.0
            else:
                count = counts.get((m1, m2), 0)
                out[m1][m2] = sums[m1, m2] / count if count else math.nan
    return out


def unknown_count(matrices: Iterable[Mapping[str, Mapping[str, float]]]) -> tuple[int, int]:
    """(NaN values, values) among the values other than 1.0 of every prompt's matrix, as the
    reference counts them after its embedding step (a pair equal to 1.0 is left out with the
    diagonal). All of them NaN: the reference stops its run; ours says so and writes no matrix
    (docs/compatibility.md)."""
    unknown = total = 0
    for matrix in matrices:
        for row in matrix.values():
            for value in row.values():
                if value != 1.0:
                    total += 1
                    unknown += math.isnan(value)
    return unknown, total
