"""promptfoo's assertions as typed records: what a written ``assert`` entry means, the context an
assertion is scored in, and the results, shaped like promptfoo's results JSON (``componentResults``,
``namedScores``). Read against promptfoo 0.123.1 (``src/assertions/``, ``src/types``).

Pure: no pytest, no HTTP.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pytest_weval.blueprint.loader import load_source
from pytest_weval.blueprint.model import BlueprintError, Location
from pytest_weval.errors import WevalError
from pytest_weval.jsvalues import is_number, js_json, js_string, js_trim

__all__ = [
    "DETERMINISTIC_TYPES",
    "MODEL_GRADED_TYPES",
    "PROGRAM_TYPES",
    "SUPPORTED_TYPES",
    "Assertion",
    "AssertionContext",
    "AssertionProblem",
    "ComponentResult",
    "GradingResult",
    "describe",
    "grading_json",
    "metric_names",
    "needs_exec",
    "parse_assertion",
]

DETERMINISTIC_TYPES = frozenset(
    {
        "equals",
        "contains",
        "icontains",
        "contains-any",
        "contains-all",
        "icontains-any",
        "icontains-all",
        "starts-with",
        "regex",
        "is-json",
        "contains-json",
        "javascript",
        "levenshtein",
        "rouge-n",
        "bleu",
        "word-count",
        "latency",
        "cost",
    }
)
MODEL_GRADED_TYPES = frozenset(
    {
        "llm-rubric",
        "model-graded-closedqa",
        "factuality",
        "model-graded-factuality",
        "answer-relevance",
        "g-eval",
        # embedding similarity: graded through embedding requests
        "similar",
        "similar:cosine",
        "similar:dot",
        "similar:euclidean",
    }
)
# Assertions that run a program the file names: only with --weval-allow-exec (ruling 27), by the
# run layer (scoring/promptfoo/python.py says what the program's value means).
PROGRAM_TYPES = frozenset({"python"})
SUPPORTED_TYPES = DETERMINISTIC_TYPES | MODEL_GRADED_TYPES | PROGRAM_TYPES | {"assert-set"}

# Types promptfoo has that we do not run, with why: the located error names the reason.
_WHY_NOT = {
    "ruby": "Ruby assertions run programs from the eval file; this runner does not run them",
    "webhook": "it would send the output to a web service named by the file",
    "moderation": "moderation endpoints are not implemented for promptfoo suites",
}

# Keys an assertion may have (promptfoo's AssertionSchema); others are ignored by promptfoo too,
# so we do not reject them.
_NUMBER_KEYS = ("threshold", "weight")


class AssertionProblem(BlueprintError):
    """An assertion that cannot be used: an unknown type, a malformed value. Located at the
    assertion; the row it belongs to is an error, the other rows run."""


class Assertion(BaseModel):
    """One written assertion. ``type`` is without the ``not-`` prefix (``negate`` says it)."""

    model_config = ConfigDict(frozen=True)

    type: str
    negate: bool = False
    value: Any = None
    threshold: float | None = None
    weight: float = 1.0
    metric: str | None = None
    transform: str | None = None
    provider: Any | None = None  # the assertion's own grader (``provider``), else the test's
    rubric_prompt: Any | None = None  # ``rubricPrompt``: a string, or messages/objects promptfoo stringifies
    config: dict[str, Any] | None = None
    children: tuple[Assertion, ...] = ()  # assert-set's ``assert``
    raw: dict[str, Any] = Field(default_factory=dict)  # as written, for the results file
    location: Location | None = None

    @property
    def written_type(self) -> str:
        """The type as written, with ``not-`` when negated."""
        return f"not-{self.type}" if self.negate else self.type


@dataclasses.dataclass(frozen=True)
class AssertionContext:
    """What an assertion is scored against: one answer of one prompt x provider for one test row.

    ``output`` is the answer after ``options.transform`` (a string, or whatever the transform
    returned: promptfoo hands JavaScript the value and every other type its string form).
    ``test`` is the test as promptfoo's ``context.test`` shows it (vars, options, description,
    threshold, metadata). ``render`` renders a ``{{ }}`` template with vars (nunjucks' semantics,
    supplied by the caller who owns the templates); without one, assertion values are used as
    written.
    """

    output: Any
    prompt: str = ""
    vars: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    test: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    provider_id: str = ""
    latency_ms: float | None = None
    cost: float | None = None
    provider_label: str | None = None
    prompt_label: str | None = None
    provider_metadata: Mapping[str, Any] | None = None  # providerResponse.metadata
    render: Callable[[str, Mapping[str, Any]], str] | None = None
    base_dir: str | None = None  # where ``file://`` values are read from (the suite's folder)

    @property
    def output_string(self) -> str:
        """promptfoo's ``coerceString``: a string as is, anything else as JSON."""
        return output_string(self.output)

    @property
    def description(self) -> str | None:
        value = self.test.get("description")
        return value if isinstance(value, str) else None

    @property
    def test_options(self) -> Mapping[str, Any]:
        options = self.test.get("options")
        return options if isinstance(options, Mapping) else {}

    def render_text(self, template: str) -> str:
        return self.render(template, self.vars) if self.render is not None else template


class ValueFileError(WevalError):
    """A ``file://`` value that cannot be read: the row is an error."""


def rendered_value(assertion: Assertion, ctx: AssertionContext) -> Any:
    """The assertion's value as ``runAssertion`` makes it: ``{{ }}`` rendered from the row's vars
    (a string, or each string of a list), a ``file://`` JSON/YAML file read as data and a
    ``.txt`` file as its trimmed text. Raises ``ValueFileError`` for a file it cannot read."""
    value = assertion.value
    if isinstance(value, str):
        return _file_value(value, ctx) if value.startswith("file://") else ctx.render_text(value)
    if isinstance(value, list):
        return [
            (_file_value(v, ctx) if v.startswith("file://") else ctx.render_text(v)) if isinstance(v, str) else v
            for v in value
        ]
    return value


def _file_value(reference: str, ctx: AssertionContext) -> Any:
    path = Path(ctx.base_dir or ".") / reference[len("file://") :]
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueFileError(f"{reference}: cannot be read ({exc.__class__.__name__}: {exc})") from None
    suffix = path.suffix.lower()
    if suffix in {".json", ".yaml", ".yml"}:
        try:
            source = load_source(text, fmt="yaml", path=str(path), what="value")
        except BlueprintError as exc:
            raise ValueFileError(str(exc)) from None
        return source.documents[0] if source.documents else None
    if suffix == ".txt":
        return js_trim(text)
    raise ValueFileError(f"Unsupported file type: {path} (a value file is .json, .yaml, .yml or .txt)")


def rendered_metric(assertion: Assertion, ctx: AssertionContext) -> str | None:
    """The metric name rendered with the row's vars (promptfoo's ``renderMetricName``); the name
    as written when rendering fails."""
    if not assertion.metric:
        return assertion.metric
    try:
        return ctx.render_text(assertion.metric)
    except Exception:  # noqa: BLE001 - promptfoo keeps the written name when rendering fails
        return assertion.metric


def output_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    return js_json(value)


class ComponentResult(BaseModel):
    """One assertion's outcome (promptfoo's ``GradingResult`` of a component)."""

    model_config = ConfigDict(frozen=True)

    pass_: bool
    score: float
    reason: str
    assertion: Assertion | None = None
    metric: str | None = None  # the assertion's metric, rendered with the row's vars
    error: bool = False  # the row errors (e.g. ``cost`` without a price), rather than fails
    named_scores: dict[str, float] = Field(default_factory=dict)
    named_score_weights: dict[str, float] = Field(default_factory=dict)
    component_results: tuple[ComponentResult, ...] = ()  # an assert-set's children
    metadata: dict[str, Any] = Field(default_factory=dict)


class GradingResult(BaseModel):
    """A row's outcome from its assertions (promptfoo's ``gradingResult``)."""

    model_config = ConfigDict(frozen=True)

    success: bool
    score: float
    reason: str
    component_results: tuple[ComponentResult, ...] = ()
    named_scores: dict[str, float] = Field(default_factory=dict)
    # Set when an assertion could not be scored at all (promptfoo's row ``error``, failureReason 2).
    error: str | None = None

    @property
    def pass_(self) -> bool:
        return self.success


def parse_assertion(raw: Any, where: Location | str) -> Assertion:
    """A written assertion -> ``Assertion``; ``AssertionProblem`` (located) when it cannot be used."""
    location = where if isinstance(where, Location) else Location(path=str(where))
    return _parse(raw, location, nested=False)


def _problem(message: str, location: Location, field: str | None = None, hint: str | None = None) -> AssertionProblem:
    if field:
        base = location.field
        location = location.model_copy(update={"field": f"{base}.{field}" if base else field})
    return AssertionProblem(message, location, hint)


def _parse(raw: Any, location: Location, *, nested: bool) -> Assertion:
    if not isinstance(raw, Mapping):
        raise _problem(f"an assertion is a mapping with a `type`, not {_shown(raw)}", location)
    written = raw.get("type")
    if not isinstance(written, str) or not written:
        raise _problem("an assertion needs a `type` (equals, contains, llm-rubric, ...)", location, "type")
    negate = written.startswith("not-")
    base = written[4:] if negate else written
    if base not in SUPPORTED_TYPES:
        why = _WHY_NOT.get(base, "this runner does not implement it")
        raise _problem(
            f"assertion type '{written}' is not supported: {why}",
            location,
            "type",
            "docs/promptfoo.md lists the assertion types that run",
        )
    if base == "assert-set" and negate:
        raise _problem("assert-set cannot be negated ('not-assert-set')", location, "type")
    numbers: dict[str, float | None] = {}
    for key in _NUMBER_KEYS:
        value = raw.get(key)
        if value is None:
            numbers[key] = None
            continue
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                value = None
        if not is_number(value):
            raise _problem(f"`{key}` must be a number, not {_shown(raw.get(key))}", location, key)
        numbers[key] = float(value)
    metric = raw.get("metric")
    if metric is not None and not isinstance(metric, str):
        raise _problem(f"`metric` must be a name (text), not {_shown(metric)}", location, "metric")
    transform = raw.get("transform")
    if transform is not None and not isinstance(transform, str):
        raise _problem(f"`transform` must be JavaScript (text), not {_shown(transform)}", location, "transform")
    if isinstance(transform, str) and transform.startswith("file://"):
        raise _problem(
            "assertion `transform` from a file is not supported: it runs a program named by the eval file",
            location,
            "transform",
            "write the transform inline",
        )
    value = raw.get("value")
    if isinstance(value, str) and value.startswith("file://") and _is_script(value):
        raise _problem(
            f"assertion type '{written}' is not supported: its value runs a program named by the eval file ({value})",
            location,
            "value",
        )
    config = raw.get("config")
    children: tuple[Assertion, ...] = ()
    if base == "assert-set":
        if nested:
            raise _problem("an assert-set cannot hold another assert-set", location, "type")
        items = raw.get("assert")
        if not isinstance(items, list) or not items:
            raise _problem("an assert-set needs `assert`: a list of assertions", location, "assert")
        parsed = []
        for index, item in enumerate(items):
            child_location = location.model_copy(
                update={"field": f"{location.field}.assert[{index}]" if location.field else f"assert[{index}]"}
            )
            parsed.append(_parse(item, child_location, nested=True))
        children = tuple(parsed)
    assertion = Assertion(
        type=base,
        negate=negate,
        value=value,
        threshold=numbers["threshold"],
        weight=1.0 if numbers["weight"] is None else numbers["weight"],
        metric=metric,
        transform=transform,
        provider=raw.get("provider"),
        rubric_prompt=raw.get("rubricPrompt"),
        config=dict(config) if isinstance(config, Mapping) else None,
        children=children,
        raw=dict(raw),
        location=location,
    )
    _check_value(assertion, location)
    return assertion


_SCRIPT_SUFFIXES = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts", ".py", ".rb")


def _is_script(value: str) -> bool:
    path = value[len("file://") :].split(":", 1)[0]
    return path.endswith(_SCRIPT_SUFFIXES)


def _check_value(assertion: Assertion, location: Location) -> None:
    """Values promptfoo would refuse at scoring time, refused at collection with a location."""
    kind, value = assertion.type, assertion.value
    if kind in {"latency", "cost"} and assertion.threshold is None:
        unit = " in milliseconds" if kind == "latency" else " in dollars"
        raise _problem(f"a {kind} assertion needs a `threshold`{unit}", location, "threshold")
    if kind in {"contains", "icontains"} and not (
        (isinstance(value, str) and value) or (is_number(value) and value == value)
    ):
        raise _problem(f'"{kind}" needs a text or number `value`', location, "value")
    text_kinds = {
        "starts-with",
        "regex",
        "levenshtein",
        "factuality",
        "model-graded-factuality",
        "model-graded-closedqa",
    }
    if kind in text_kinds and (not isinstance(value, str) or (kind in {"starts-with", "regex"} and not value)):
        raise _problem(f'"{kind}" needs a text `value`', location, "value")
    if kind in {"contains-any", "contains-all", "icontains-any", "icontains-all"} and not (
        (isinstance(value, str) and value) or (isinstance(value, list) and value)
    ):
        raise _problem(f'"{kind}" needs a `value`: a list, or text of comma-separated values', location, "value")
    if kind == "javascript" and not isinstance(value, str):
        raise _problem('"javascript" needs JavaScript (text) as its `value`', location, "value")
    if kind in {"bleu", "g-eval"} and not (
        isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    ):
        raise _problem(f'"{kind}" needs a text `value` or a list of texts', location, "value")
    if kind.startswith("similar") and not (isinstance(value, str) or (isinstance(value, list) and value)):
        raise _problem(f'"{kind}" needs a text `value` or a list of texts', location, "value")
    if kind == "rouge-n" and not isinstance(value, str):
        raise _problem('"rouge-n" needs a text `value`', location, "value")
    if kind == "word-count" and value is None:
        raise _problem('"word-count" needs a `value`: a number, or {min, max}', location, "value")


def _shown(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"the boolean {js_string(value)}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if is_number(value):
        return f"the number {js_string(value)}"
    return f"'{value}'"


def needs_exec(assertion: Assertion) -> bool:
    """Whether scoring this assertion (or one in its assert-set) runs a program named by the
    eval file: a ``python`` assertion. The run layer lets it run only with --weval-allow-exec."""
    return assertion.type in PROGRAM_TYPES or any(needs_exec(child) for child in assertion.children)


def metric_names(assertion: Assertion) -> list[str]:
    """The metric names the assertion (and an assert-set's children) report under, as written."""
    names = [assertion.metric] if assertion.metric else []
    for child in assertion.children:
        names.extend(metric_names(child))
    return names


def describe(assertion: Assertion) -> str:
    """One line naming the assertion, for reports (``contains: Paris``)."""
    if assertion.type == "assert-set":
        return f"assert-set ({len(assertion.children)} assertions)"
    value = assertion.value
    if value is None:
        return assertion.written_type
    shown = value if isinstance(value, str) else js_json(value)
    return f"{assertion.written_type}: {shown}"


def assertion_json(assertion: Assertion) -> dict[str, Any]:
    """The assertion as promptfoo's results file shows it (as written)."""
    return dict(assertion.raw) if assertion.raw else {"type": assertion.written_type, "value": assertion.value}


def component_json(result: ComponentResult) -> dict[str, Any]:
    out: dict[str, Any] = {"pass": result.pass_, "score": result.score, "reason": result.reason}
    if result.assertion is not None:
        out["assertion"] = assertion_json(result.assertion)
    if result.named_scores or result.component_results:
        out["namedScores"] = dict(result.named_scores)
    if result.component_results:
        out["componentResults"] = [component_json(child) for child in result.component_results]
    if result.metadata:
        out["metadata"] = dict(result.metadata)
    return out


def grading_json(result: GradingResult) -> dict[str, Any]:
    """promptfoo's ``gradingResult`` of a row: pass, score, reason, namedScores, componentResults."""
    return {
        "pass": result.success,
        "score": result.score,
        "reason": result.reason,
        "namedScores": dict(result.named_scores),
        "componentResults": [component_json(c) for c in result.component_results],
    }
