"""promptfoo's CSV test files (its ``src/csv.ts``): a header row, one test a row; columns
``__expected``/``__expectedN`` (an assertion written as text), ``__description``,
``__threshold``, ``__metric``, ``__prefix``/``__suffix``, ``__metadata:<key>`` (and ``__metadata``
holding a JSON object); every other column a var."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

# promptfoo's base assertion types, for reading `__expected` text (`not-` forms follow).
BASE_TYPES = (
    "answer-relevance",
    "bleu",
    "classifier",
    "contains-all",
    "contains-any",
    "contains-html",
    "contains-json",
    "contains-sql",
    "contains-xml",
    "contains",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "cost",
    "equals",
    "factuality",
    "finish-reason",
    "g-eval",
    "gleu",
    "icontains-all",
    "icontains-any",
    "icontains",
    "is-html",
    "is-json",
    "is-refusal",
    "is-sql",
    "is-valid-function-call",
    "is-valid-openai-function-call",
    "is-valid-openai-tools-call",
    "is-xml",
    "javascript",
    "latency",
    "levenshtein",
    "llm-rubric",
    "meteor",
    "model-graded-closedqa",
    "model-graded-factuality",
    "moderation",
    "perplexity-score",
    "perplexity",
    "python",
    "regex",
    "rouge-n",
    "similar",
    "starts-with",
    "webhook",
    "word-count",
)
_ASSERTION = re.compile(
    r"^(not-)?(" + "|".join(re.escape(t) for t in BASE_TYPES) + r")(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$"
)
_LIST_TYPES = ("contains-all", "contains-any", "icontains-all", "icontains-any")
_THRESHOLD_TYPES = (
    "answer-relevance",
    "classifier",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "cost",
    "latency",
    "levenshtein",
    "perplexity-score",
    "perplexity",
    "rouge-n",
    "similar",
    "starts-with",
)


def assertion_from_string(expected: str) -> dict[str, Any]:
    """An ``__expected`` cell as promptfoo reads it (``assertionFromString``)."""
    for prefix in ("javascript:", "fn:", "eval:"):
        if expected.startswith(prefix):
            return {"type": "javascript", "value": expected[len(prefix) :].strip()}
    if expected.startswith("grade:"):
        return {"type": "llm-rubric", "value": expected[len("grade:") :]}
    if expected.startswith("llm-rubric:"):
        return {"type": "llm-rubric", "value": expected[len("llm-rubric:") :]}
    if expected.startswith("python:") or (
        expected.startswith("file://") and (expected.endswith(".py") or ".py:" in expected)
    ):
        cut = len("python:") if expected.startswith("python:") else len("file://")
        return {"type": "python", "value": expected[cut:].strip()}
    if expected.startswith("file://") and (
        expected.endswith((".js", ".ts")) or ".js:" in expected or ".ts:" in expected
    ):
        return {"type": "javascript", "value": expected[len("file://") :].strip()}
    match = _ASSERTION.match(expected)
    if match is None:
        return {"type": "equals", "value": expected}
    negated, base, threshold_text, value = match.groups()
    full = f"not-{base}" if negated else base
    if base in _LIST_TYPES:
        return {"type": full, "value": [part.strip() for part in (value or "").split(",")]}
    if base in ("contains-json", "is-json"):
        return {"type": full, "value": value} if value is not None else {"type": full}
    if base in _THRESHOLD_TYPES:
        threshold = float(threshold_text) if threshold_text else 0.0
        default = 0.8 if base == "similar" else 0.75
        out: dict[str, Any] = {"type": full, "threshold": threshold or default}
        if value is not None:
            out["value"] = value
        return out
    return {"type": full, "value": value} if value is not None else {"type": full}


def csv_tests(text: str) -> list[tuple[int, dict[str, Any]]]:
    """(line of the row, the test it makes) for each data row (``testCaseFromCsvRow``)."""
    reader = csv.reader(io.StringIO(text))
    rows = list(reader)
    if not rows:
        return []
    header = [name.strip() if index == 0 else name for index, name in enumerate(rows[0])]
    header = [name.lstrip("\ufeff") for name in header]
    out: list[tuple[int, dict[str, Any]]] = []
    # a quoted cell may hold newlines: each row's first physical line, counted by the reader
    starts = _row_lines(text)
    for number, row in enumerate(rows[1:], start=1):
        if not any(cell.strip() for cell in row):
            continue
        line = starts[number] if number < len(starts) else 0
        out.append((line, test_from_row(dict(zip(header, row, strict=False)))))
    return out


def _row_lines(text: str) -> list[int]:
    lines: list[int] = []
    reader = csv.reader(io.StringIO(text))
    previous = 0
    for _ in reader:
        lines.append(previous + 1)
        previous = reader.line_num
    return lines


def test_from_row(row: dict[str, str]) -> dict[str, Any]:
    variables: dict[str, Any] = {}
    asserts: list[dict[str, Any]] = []
    options: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    test: dict[str, Any] = {}
    metric = None
    for key, value in row.items():
        if key is None:
            continue
        value = value if value is not None else ""
        if key.startswith("__expected"):
            if value.strip():
                asserts.append(assertion_from_string(value))
        elif key == "__prefix":
            options["prefix"] = value
        elif key == "__suffix":
            options["suffix"] = value
        elif key == "__description":
            if value:
                test["description"] = value
        elif key == "__metric":
            metric = value
        elif key == "__threshold":
            threshold = _parse_float(value)
            if threshold:  # promptfoo drops a threshold of 0 (and one that is not a number)
                test["threshold"] = threshold
        elif key.startswith("__metadata:"):
            if value:
                metadata[key[len("__metadata:") :]] = value
        elif key == "__metadata":
            try:
                parsed = json.loads(value) if value.strip() else {}
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                metadata.update(parsed)
        else:
            variables[key] = value
    if metric:
        for assertion in asserts:
            assertion["metric"] = metric
    test.update({"vars": variables, "assert": asserts, "options": options})
    if metadata:
        test["metadata"] = metadata
    return test


def _parse_float(text: str) -> float:
    match = re.match(r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text)
    return float(match.group(0)) if match else 0.0
