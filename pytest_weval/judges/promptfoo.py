"""promptfoo's model-graded assertions (llm-rubric, model-graded-closedqa, factuality,
answer-relevance, g-eval, and assert-sets holding them): the requests promptfoo 0.123.1 sends
its grader (``src/matchers``), and how it reads the replies, as a small state machine the run
layer drives. Reaches no engine.

    grading = grading_for(assertion, ctx)
    request = grading.next_request()
    while request is not None:
        if isinstance(request, EmbeddingRequest):
            grading.take_reply(<the vector of request.text>)
        else:
            grading.take_reply(<the grader's reply text>)   # or take_error(<why it failed>)
        request = grading.next_request()
    component = grading.result()

Each request names the grader to ask (``provider``: the assertion's ``provider``, else the test's
``options.provider``, for the request's kind; None means the run's default grader, i.e.
``defaultTest.options.provider`` or the built-in one).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Generator, Mapping
from typing import Any

from pytest_weval.errors import WevalError
from pytest_weval.jsvalues import is_number, js_json, js_number_str, js_string, js_trim, to_fixed, truthy
from pytest_weval.judges import promptfoo_prompts as prompts
from pytest_weval.scoring.promptfoo import (
    MODEL_GRADED_TYPES,
    Assertion,
    AssertionContext,
    ComponentResult,
    ScriptError,
    apply_assertion_transform,
    rendered_metric,
    rendered_value,
    score_assert_set,
    score_assertion,
)
from pytest_weval.scoring.promptfoo.deterministic import finish, parse_json
from pytest_weval.scoring.promptfoo.jsonish import extract_json_objects, js_trim_end, load_yaml_value
from pytest_weval.scoring.promptfoo.model import ValueFileError

__all__ = [
    "EmbeddingRequest",
    "GraderRequest",
    "Grading",
    "chat_messages",
    "grader_provider",
    "grading_for",
    "is_model_graded",
    "render_grading_prompt",
]

GEVAL_MAX_SCORE = 10


@dataclasses.dataclass(frozen=True)
class GraderRequest:
    """One request to the grader's chat model. ``prompt`` is the exact text promptfoo hands its
    provider; ``messages`` is what a chat provider sends for it (promptfoo's ``parseChatPrompt``:
    the JSON array of messages, or the text as one user message). ``temperature`` and
    ``max_tokens`` are None: promptfoo's graders ask for neither, so the grader provider's own
    config applies (promptfoo's OpenAI provider then sends temperature 0)."""

    prompt: str
    messages: list[dict[str, Any]]
    label: str  # promptfoo's label of the call ("llm-rubric", "g-eval-steps", ...)
    provider: Any | None = None
    temperature: float | None = None
    max_tokens: int | None = None


@dataclasses.dataclass(frozen=True)
class EmbeddingRequest:
    """answer-relevance: embed ``text`` with the grader's embedding model; reply with the vector
    (a list of floats) through ``take_reply``."""

    text: str
    provider: Any | None = None


Request = GraderRequest | EmbeddingRequest


@dataclasses.dataclass(frozen=True)
class _Failed:
    """The grader could not answer (an HTTP error, a refusal): promptfoo fails the assertion."""

    message: str


class _RowError(WevalError):
    """promptfoo throws while grading: the row is an error."""


def is_model_graded(assertion: Assertion) -> bool:
    """True for a model-graded assertion, or an assert-set holding one."""
    if assertion.type == "assert-set":
        return any(is_model_graded(child) for child in assertion.children)
    return assertion.type in MODEL_GRADED_TYPES


def grader_provider(assertion: Assertion, ctx: AssertionContext, kind: str = "text") -> Any | None:
    """The grader promptfoo asks (``getFinalTest`` then ``getGradingProvider``): the assertion's
    ``provider``, else the test's ``options.provider``; a mapping keyed by kind (``text``,
    ``embedding``) gives the one for ``kind``. None: the run's default grader."""
    provider = assertion.provider or ctx.test_options.get("provider")
    if isinstance(provider, Mapping) and kind in provider and provider[kind]:
        return provider[kind]
    return provider or None


# --- rendering ------------------------------------------------------------------------------------


def _template_value(value: Any) -> Any:
    """promptfoo's ``processContextForTemplating``: objects become JSON text, arrays keep their
    items (objects among them as JSON text)."""
    if isinstance(value, dict):
        return js_json(value)
    if isinstance(value, list):
        return [js_json(item) if isinstance(item, dict | list) else item for item in value]
    return value


def _nunjucks_text(value: Any) -> str:
    """What ``{{ value }}`` prints in nunjucks (no autoescape): nothing for null/undefined,
    ``String(value)`` otherwise (arrays joined with commas)."""
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join("" if item is None else _nunjucks_text(item) for item in value)
    if isinstance(value, dict):
        return "[object Object]"
    return js_string(value)


_SIMPLE_TAG = re.compile(r"\{\{\s*([A-Za-z_$][\w$]*)\s*\}\}")
_ANY_TAG = re.compile(r"\{[{%#]")


def _render_text(
    template: str, variables: Mapping[str, Any], render: Callable[[str, Mapping[str, Any]], str] | None
) -> str:
    if not _ANY_TAG.search(template):
        return template
    if render is not None and _ANY_TAG.search(_SIMPLE_TAG.sub("", template)):
        return render(template, variables)  # more than `{{ name }}`: the suite's nunjucks
    return _SIMPLE_TAG.sub(lambda m: _nunjucks_text(variables.get(m.group(1))), template)


def render_grading_prompt(
    template: str, variables: Mapping[str, Any], render: Callable[[str, Mapping[str, Any]], str] | None = None
) -> str:
    """promptfoo's ``renderLlmRubricPrompt``: a JSON template is parsed and each of its strings
    rendered (then written back as compact JSON); any other template is rendered as text."""
    context = {key: _template_value(value) for key, value in variables.items()}
    try:
        parsed = json.loads(template, parse_constant=_no_constant)
    except ValueError:
        return _render_text(template, context, render)
    return js_json(_render_strings(parsed, context, render))


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _render_strings(
    node: Any, context: Mapping[str, Any], render: Callable[[str, Mapping[str, Any]], str] | None
) -> Any:
    if isinstance(node, str):
        return _render_text(node, context, render)
    if isinstance(node, list):
        return [_render_strings(item, context, render) for item in node]
    if isinstance(node, dict):
        return {key: _render_strings(value, context, render) for key, value in node.items()}
    return node


def _looks_like_json(text: str) -> bool:
    trimmed = js_trim(text)
    if trimmed.startswith("{") and trimmed.endswith("}"):
        return True
    if trimmed.startswith("[") and trimmed.endswith("]"):
        after = trimmed[1:].lstrip()
        return after == "" or after[0] in '"{[-0123456789' or after.startswith(("true", "false", "null"))
    return False


def chat_messages(prompt: str) -> list[dict[str, Any]]:
    """promptfoo's ``parseChatPrompt`` as its chat providers apply it to a grading prompt: YAML
    when it starts with ``- role:``, else the JSON array, else the text as one user message.
    Raises ``ValueError`` for text that looks like JSON but is not."""
    if js_trim(prompt).startswith("- role:"):
        parsed = load_yaml_value(prompt)
    else:
        try:
            parsed = json.loads(prompt, parse_constant=_no_constant)
        except ValueError:
            if _looks_like_json(prompt):
                raise ValueError(f"Chat Completion prompt is not a valid JSON string:\n\n{prompt}") from None
            return [{"role": "user", "content": prompt}]
    if isinstance(parsed, list) and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in parsed):
        return [dict(m) for m in parsed]
    return [{"role": "user", "content": prompt}]


def _try_parse(text: str) -> Any:
    """promptfoo's ``tryParse``: the text as JSON when it is JSON, else the text."""
    try:
        return parse_json(text)
    except ValueError:
        return text


def _rubric_prompt(assertion: Assertion, ctx: AssertionContext) -> Any:
    """``assertion.rubricPrompt || test.options.rubricPrompt`` (an object is used as its JSON)."""
    value = assertion.rubric_prompt or ctx.test_options.get("rubricPrompt")
    return value or None


def _load_rubric_prompt(custom: Any, default: str) -> str:
    """promptfoo's ``loadRubricPrompt`` for prompts written in the suite (``file://`` ones are
    read by the caller into ``rubricPrompt`` before grading)."""
    if not custom or (isinstance(custom, dict) and not custom):
        return default
    if isinstance(custom, str):
        if custom.startswith("file://"):
            raise _RowError(
                f"rubricPrompt {custom}: prompts from files are not supported here; write the prompt inline"
            )
        return custom
    return js_json(custom)


# --- the state machine ----------------------------------------------------------------------------


Flow = Generator[Request, Any, ComponentResult]


class Grading:
    """Drives one model-graded assertion (or assert-set): requests out, replies in, then the
    result. A request is pending until ``take_reply`` or ``take_error`` answers it."""

    def __init__(self, assertion: Assertion, ctx: AssertionContext):
        self.assertion = assertion
        self.ctx = ctx
        self._flow = _grade(assertion, ctx)
        self._pending: Request | None = None
        self._result: ComponentResult | None = None
        self._advance(None)

    @property
    def provider(self) -> Any | None:
        """The grader for chat requests (see ``grader_provider``)."""
        return grader_provider(self.assertion, self.ctx)

    def next_request(self) -> Request | None:
        """The request waiting for its reply, or None when the grading is over."""
        return self._pending

    def take_reply(self, reply: str | list[float]) -> None:
        """The pending request's answer: the reply text, or the embedding vector."""
        self._answer(reply)

    def take_error(self, message: str) -> None:
        """The pending request failed (the grader errored, answered nothing): promptfoo then
        fails the assertion with this reason, it does not stop the row."""
        self._answer(_Failed(message))

    def result(self) -> ComponentResult:
        if self._result is None:
            raise RuntimeError("Grading.result(): a request is still waiting for its reply")
        return self._result

    def _answer(self, reply: Any) -> None:
        if self._pending is None:
            raise RuntimeError("Grading: no request is waiting for a reply")
        self._advance(reply)

    def _advance(self, reply: Any) -> None:
        try:
            self._pending = self._flow.send(reply)
        except StopIteration as done:
            self._pending = None
            self._result = done.value


def grading_for(assertion: Assertion, ctx: AssertionContext) -> Grading:
    return Grading(assertion, ctx)


def _grade(assertion: Assertion, ctx: AssertionContext) -> Flow:
    """One assertion (or an assert-set), with what ``runAssertion`` does around its handler."""
    if assertion.type == "assert-set":
        children = []
        for child in assertion.children:
            if is_model_graded(child):
                children.append((yield from _grade(child, ctx)))
            else:
                children.append(score_assertion(child, ctx))
        return score_assert_set(assertion, children, ctx)
    metric = rendered_metric(assertion, ctx)
    try:
        output = apply_assertion_transform(assertion, ctx)
        value = rendered_value(assertion, ctx)
        result = yield from _HANDLERS[assertion.type](assertion, ctx, output, value)
    except (_RowError, ScriptError, ValueFileError) as exc:
        message = exc.message if isinstance(exc, ScriptError) else str(exc)
        return ComponentResult(pass_=False, score=0.0, reason=message, assertion=assertion, metric=metric, error=True)
    return finish(result, assertion, metric)


def _ask(label: str, prompt: str, provider: Any | None) -> GraderRequest:
    try:
        messages = chat_messages(prompt)
    except ValueError as exc:
        raise _RowError(str(exc)) from None
    return GraderRequest(prompt=prompt, messages=messages, label=label, provider=provider)


def _fail(assertion: Assertion, reason: str, grader_error: bool = False) -> ComponentResult:
    return ComponentResult(
        pass_=False,
        score=0.0,
        reason=reason,
        assertion=assertion,
        metadata={"graderError": True} if grader_error else {},
    )


def _text_reply(reply: Any) -> str | None:
    """The reply's text, or None when the grader gave nothing (promptfoo: "No output")."""
    if isinstance(reply, str) and reply != "":
        return reply
    return None


def _output_text(output: Any) -> str:
    return output if isinstance(output, str) else js_json(output)


# --- llm-rubric -----------------------------------------------------------------------------------


def _js_to_number(value: Any) -> float:
    """``Number(value)`` of a JSON value (NaN when it is not a number)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if is_number(value):
        return float(value)
    if value is None:
        return 0.0
    if isinstance(value, str):
        text = js_trim(value)
        if text == "":
            return 0.0
        if re.fullmatch(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", text):
            return float(text)
        if re.fullmatch(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+", text):
            return float(int(text, 0))
        if text in {"Infinity", "+Infinity", "-Infinity"}:
            return float(text.replace("Infinity", "inf"))
        return math.nan
    if isinstance(value, list):
        if not value:
            return 0.0
        if len(value) == 1:
            return _js_to_number(_nunjucks_text(value[0]) if not isinstance(value[0], str) else value[0])
        return math.nan
    return math.nan


def _invert(score: float) -> float:
    return min(1.0, max(0.0, 1 - (score if math.isfinite(score) else 0.0)))


def _llm_rubric(assertion: Assertion, ctx: AssertionContext, output: Any, value: Any) -> Flow:
    rubric = value if value is not None else ""
    if not isinstance(rubric, str | dict | list):
        raise _RowError('"llm-rubric" assertion type must have a string or object value')
    template = _load_rubric_prompt(_rubric_prompt(assertion, ctx), prompts.LLM_RUBRIC_PROMPT)
    variables = {**ctx.vars, "output": _try_parse(_output_text(output)), "rubric": rubric}
    prompt = render_grading_prompt(template, variables, ctx.render)
    reply = yield _ask("llm-rubric", prompt, grader_provider(assertion, ctx))
    text = _text_reply(reply)
    if text is None:
        return _fail(assertion, reply.message if isinstance(reply, _Failed) else "No output", grader_error=True)
    found = extract_json_objects(text)
    if not found:
        return _fail(assertion, "Could not extract JSON from llm-rubric response", grader_error=True)
    parsed = found[0]
    if not isinstance(parsed, dict):
        return _fail(
            assertion,
            f"llm-rubric produced malformed response. We were not able to parse the response as JSON. Output: {js_json(text)}",
            grader_error=True,
        )
    passed: Any = parsed.get("pass", True)
    if passed is None:
        passed = True
    if not isinstance(passed, bool):
        passed = bool(re.fullmatch(r"(true|yes|pass|y)", _nunjucks_text(passed), re.IGNORECASE))
    raw_score = parsed.get("score")
    if is_number(raw_score) and not isinstance(raw_score, bool):
        score = float(raw_score)
    else:
        number = _js_to_number(raw_score) if "score" in parsed else math.nan
        score = number if math.isfinite(number) else (1.0 if passed else 0.0)
    threshold = assertion.threshold
    if threshold is not None and math.isfinite(threshold):
        passed = passed and score >= threshold
    reason = parsed.get("reason")
    if not truthy(reason):
        shown_threshold = "undefined" if threshold is None else js_number_str(threshold)
        reason = "Grading passed" if passed else f"Score {js_number_str(score)} below threshold {shown_threshold}"
    result = ComponentResult(
        pass_=passed != assertion.negate,
        score=_invert(score) if assertion.negate else score,
        reason=_nunjucks_text(reason) if not isinstance(reason, str) else reason,
        assertion=assertion,
        metadata={"renderedGradingPrompt": prompt},
    )
    return result


# --- model-graded-closedqa ------------------------------------------------------------------------


def _question(ctx: AssertionContext, kind: str) -> str:
    prompt = js_trim(ctx.prompt)
    if not prompt:
        raise _RowError(f"{kind} assertion type must have a prompt")
    return prompt


def _ask_about_answer(
    assertion: Assertion, ctx: AssertionContext, output: Any, value: Any, kind: str, key: str, default: str
) -> Generator[Request, Any, Any]:
    """Closed QA and factuality alike: the question, the written ``value`` (as ``key``) and the
    answer rendered into the grading prompt, asked of the grader; the reply as it came."""
    if not isinstance(value, str):
        raise _RowError(f"{kind} assertion type must have a string value")
    variables = {
        **ctx.vars,
        "input": _question(ctx, kind),
        key: value,
        "completion": _try_parse(_output_text(output)),
    }
    template = _load_rubric_prompt(_rubric_prompt(assertion, ctx), default)
    prompt = render_grading_prompt(template, variables, ctx.render)
    return (yield _ask(kind, prompt, grader_provider(assertion, ctx)))


def _closed_qa(assertion: Assertion, ctx: AssertionContext, output: Any, value: Any) -> Flow:
    reply = yield from _ask_about_answer(
        assertion, ctx, output, value, "model-graded-closedqa", "criteria", prompts.CLOSED_QA_PROMPT
    )
    text = _text_reply(reply)
    if text is None:
        return _fail(assertion, reply.message if isinstance(reply, _Failed) else "No output")
    # promptfoo ignores `not-` here: the verdict is the grader's.
    ending = js_trim_end(text)
    passed = ending.endswith("Y")
    if passed:
        reason = f"The submission meets the criterion:\n{text}"
    elif ending.endswith("N"):
        reason = f"The submission does not meet the criterion:\n{text}"
    else:
        reason = f"Model grader produced a malformed response:\n{text}"
    return ComponentResult(pass_=passed, score=1.0 if passed else 0.0, reason=reason, assertion=assertion)


# --- factuality -----------------------------------------------------------------------------------

_FACTUALITY_CATEGORIES = {
    "A": "The submitted answer is a subset of the expert answer and is fully consistent with it.",
    "B": "The submitted answer is a superset of the expert answer and is fully consistent with it.",
    "C": "The submitted answer contains all the same details as the expert answer.",
    "D": "There is a disagreement between the submitted answer and the expert answer.",
    "E": "The answers differ, but these differences don't matter from the perspective of factuality.",
}
_FACTUALITY_KEYS = {"A": "subset", "B": "superset", "C": "agree", "D": "disagree", "E": "differButFactual"}
_FACTUALITY_DEFAULTS = {"A": 1.0, "B": 1.0, "C": 1.0, "D": 0.0, "E": 1.0}


class _BadCategory(WevalError):
    pass


def _factuality_json(text: str) -> tuple[str, str] | None:
    found = extract_json_objects(text)
    if not found:
        return None
    data = found[0]
    category = data.get("category") if isinstance(data, dict) else None
    if not category or not isinstance(category, str):
        return None
    option = js_trim(category).upper()
    if not re.fullmatch(r"[A-E]", option):
        raise _BadCategory(f"Invalid category value: {option}")
    reason = data.get("reason")
    if reason is not None and not isinstance(reason, str):
        return None  # promptfoo's `reason?.trim()` throws on a non-string: it falls back
    reason_text = js_trim(reason) if isinstance(reason, str) else ""
    return option, reason_text or f"Category {option}: {_FACTUALITY_CATEGORIES[option]}"


def _factuality_legacy(text: str) -> tuple[str, str]:
    match = re.search(r"\s*\(?([a-eA-E])\)", text)
    if match is None:
        raise _BadCategory(f"Factuality checker output did not match expected format: {text}")
    reason = re.search(r"\)\s*(.*)", text, re.DOTALL)
    return match.group(1).upper(), js_trim(reason.group(1)) if reason and reason.group(1) else text


def _factuality(assertion: Assertion, ctx: AssertionContext, output: Any, value: Any) -> Flow:
    reply = yield from _ask_about_answer(
        assertion, ctx, output, value, "factuality", "ideal", prompts.FACTUALITY_PROMPT
    )
    text = _text_reply(reply)
    if text is None:
        return _fail(assertion, reply.message if isinstance(reply, _Failed) else "No output")
    try:
        verdict = _factuality_json(text) or _factuality_legacy(text)
    except _BadCategory as exc:
        return _fail(assertion, str(exc))
    option, reason = verdict
    custom = ctx.test_options.get("factuality")
    scores = dict(_FACTUALITY_DEFAULTS)
    if isinstance(custom, Mapping):
        for letter, key in _FACTUALITY_KEYS.items():
            if is_number(custom.get(key)):
                scores[letter] = float(custom[key])
    passed = scores[option] > 0
    return ComponentResult(pass_=passed, score=scores[option], reason=reason, assertion=assertion)


# --- g-eval ---------------------------------------------------------------------------------------

_LINE = r"[^\n\r\u2028\u2029]"


def _geval_prompts(assertion: Assertion, ctx: AssertionContext) -> tuple[str, str]:
    custom = _rubric_prompt(assertion, ctx)
    if isinstance(custom, dict):
        return (
            _load_rubric_prompt(custom.get("steps"), prompts.GEVAL_PROMPT_STEPS),
            _load_rubric_prompt(custom.get("evaluate"), prompts.GEVAL_PROMPT_EVALUATE),
        )
    return prompts.GEVAL_PROMPT_STEPS, prompts.GEVAL_PROMPT_EVALUATE


def _geval_one(
    assertion: Assertion, ctx: AssertionContext, criteria: str, output: str, threshold: float
) -> Generator[Request, Any, ComponentResult]:
    source = ctx.prompt
    if not source:
        raise _RowError("No source text to estimate reply")
    provider = grader_provider(assertion, ctx)
    steps_template, evaluate_template = _geval_prompts(assertion, ctx)
    shown = provider if isinstance(provider, str) else "the grader"

    def fail(reason: str) -> ComponentResult:
        return _fail(assertion, reason, grader_error=True)

    reply = yield _ask(
        "g-eval-steps", render_grading_prompt(steps_template, {"criteria": criteria}, ctx.render), provider
    )
    if isinstance(reply, _Failed):
        return fail(reply.message)
    text = _text_reply(reply)
    if text is None:
        return fail(f"G-Eval step-generation call to {shown} returned no output")
    match = re.search(r'\{"steps"' + _LINE + r"+\}", text)
    if match is None:
        return fail(f"LLM-proposed evaluation steps are not in JSON format: {text}")
    try:
        steps = json.loads(match.group(0)).get("steps")
    except (ValueError, AttributeError) as exc:
        return fail(f"LLM-proposed evaluation steps are not in JSON format: {exc}\n\n{text}")
    if not isinstance(steps, list):
        return fail(
            f"G-Eval steps response has invalid or missing steps: {js_json(steps) if steps is not None else 'undefined'}"
        )
    if not steps:
        return fail("LLM does not propose any evaluation step")
    if not all(isinstance(step, str) and js_trim(step) != "" for step in steps):
        return fail(f"G-Eval steps response contains invalid steps: {js_json(steps)}")
    variables = {
        "criteria": criteria,
        "steps": "\n- ".join(steps),
        "maxScore": str(GEVAL_MAX_SCORE),
        "input": _try_parse(source),
        "output": _try_parse(output),
    }
    reply = yield _ask("g-eval", render_grading_prompt(evaluate_template, variables, ctx.render), provider)
    if isinstance(reply, _Failed):
        return fail(reply.message)
    text = _text_reply(reply)
    if text is None:
        return fail(f"G-Eval evaluation call to {shown} returned no output")
    match = re.search(r"\{" + _LINE + r"+\}", text)
    if match is None:
        return fail(f"LLM-proposed evaluation result is not in JSON format: {text}")
    try:
        result = json.loads(match.group(0))
    except ValueError as exc:
        return fail(f"LLM-proposed evaluation result is not in JSON format: {exc}\n\n{text}")
    raw = result.get("score") if isinstance(result, dict) else None
    if is_number(raw) and not isinstance(raw, bool):
        score = float(raw)
    elif isinstance(raw, str) and js_trim(raw) != "":
        score = _js_to_number(raw)
    else:
        score = math.nan
    if not math.isfinite(score):
        return fail(
            f"G-Eval result has invalid or missing score: {js_json(raw) if raw is not None or 'score' in result else 'undefined'}"
        )
    if score < 0 or score > GEVAL_MAX_SCORE:
        return fail(f"G-Eval result score {js_number_str(score)} is outside the expected 0-{GEVAL_MAX_SCORE} range")
    reason = result.get("reason")
    if not isinstance(reason, str) or js_trim(reason) == "":
        return fail(
            f"G-Eval result has invalid or missing reason: {js_json(reason) if 'reason' in result else 'undefined'}"
        )
    normalized = score / GEVAL_MAX_SCORE
    return ComponentResult(pass_=normalized >= threshold, score=normalized, reason=reason, assertion=assertion)


def _geval(assertion: Assertion, ctx: AssertionContext, output: Any, value: Any) -> Flow:
    if not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
        raise _RowError("G-Eval assertion type must have a string or array of strings value")
    threshold = 0.7 if assertion.threshold is None else assertion.threshold
    text = _output_text(output)
    if isinstance(value, str):
        one = yield from _geval_one(assertion, ctx, value, text, threshold)
        if one.metadata.get("graderError"):
            return one
        return one.model_copy(
            update={
                "pass_": (one.score >= threshold) != assertion.negate,
                "score": 1 - one.score if assertion.negate else one.score,
            }
        )
    if not value:
        return _fail(assertion, "G-Eval assertion requires at least one criterion string in the value array.")
    results = []
    for index, criterion in enumerate(value):
        one = yield from _geval_one(assertion, ctx, criterion, text, threshold)
        if one.metadata.get("graderError"):
            return _fail(
                assertion, f"G-Eval criterion {index + 1}/{len(value)} ({js_json(criterion)}) failed: {one.reason}"
            )
        results.append(one)
    average = sum(r.score for r in results) / len(results)
    return ComponentResult(
        pass_=(average >= threshold) != assertion.negate,
        score=1 - average if assertion.negate else average,
        reason="\n\n".join(r.reason for r in results),
        assertion=assertion,
    )


# --- answer-relevance -----------------------------------------------------------------------------


def _cosine(a: list[float], b: list[float]) -> float:
    if len(a) != len(b):
        raise _RowError("Vectors must be of equal length")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm_a = math.sqrt(sum(x * x for x in a))
    norm_b = math.sqrt(sum(y * y for y in b))
    if norm_a == 0 or norm_b == 0:
        return 0.0
    return dot / (norm_a * norm_b)


def _vector(reply: Any) -> list[float] | None:
    if isinstance(reply, list) and reply and all(is_number(x) for x in reply):
        return [float(x) for x in reply]
    return None


def _answer_relevance(assertion: Assertion, ctx: AssertionContext, output: Any, value: Any) -> Flow:
    if not isinstance(output, str):
        raise _RowError("answer-relevance assertion type must evaluate a string output")
    if not ctx.prompt:
        raise _RowError("answer-relevance assertion type must have a prompt")
    query = ctx.vars.get("query")
    question_source = query if isinstance(query, str) else ctx.prompt
    threshold = 0.5 if assertion.threshold is None else assertion.threshold
    text_provider = grader_provider(assertion, ctx, "text")
    embedding_provider = grader_provider(assertion, ctx, "embedding")

    def fail(reason: str) -> ComponentResult:
        return _fail(assertion, reason, grader_error=True)

    template = _load_rubric_prompt(_rubric_prompt(assertion, ctx), prompts.ANSWER_RELEVANCY_GENERATE)
    prompt = render_grading_prompt(template, {"answer": _try_parse(output)}, ctx.render)
    questions: list[str] = []
    for _ in range(3):
        reply = yield _ask("answer-relevance", prompt, text_provider)
        text = _text_reply(reply)
        if text is None:
            return fail(reply.message if isinstance(reply, _Failed) else "No output")
        questions.append(text)
    reply = yield EmbeddingRequest(question_source, embedding_provider)
    source_vector = _vector(reply)
    if source_vector is None:
        return fail(reply.message if isinstance(reply, _Failed) else "No embedding")
    similarities = []
    for question in questions:
        reply = yield EmbeddingRequest(question, embedding_provider)
        vector = _vector(reply)
        if vector is None:
            return fail(reply.message if isinstance(reply, _Failed) else "No embedding")
        similarities.append(_cosine(source_vector, vector))
    similarity = sum(similarities) / len(similarities)
    passed = similarity >= threshold - 2.220446049250313e-16
    relation = "greater" if passed else "less"
    reason = f"Relevance {to_fixed(similarity, 2)} is {relation} than threshold {js_number_str(threshold)}"
    if assertion.negate:
        passed, similarity = not passed, 1 - similarity
    return ComponentResult(
        pass_=passed,
        score=similarity,
        reason=reason,
        assertion=assertion,
        metadata={
            "generatedQuestions": [
                {"question": q, "similarity": s} for q, s in zip(questions, similarities, strict=True)
            ]
        },
    )


# --- similar ----------------------------------------------------------------------------------

_SIMILARITY_METRICS = {
    "similar": "cosine",
    "similar:cosine": "cosine",
    "similar:dot": "dot",
    "similar:euclidean": "euclidean",
}
_EPSILON = 2.220446049250313e-16


def _similarity_one(
    assertion: Assertion, provider: Any | None, expected: str, output: str, threshold: float, metric: str
) -> Flow:
    """promptfoo's ``matchesSimilarity`` on embeddings: the expected text's, then the output's."""
    reply_expected = yield EmbeddingRequest(expected, provider)
    reply_output = yield EmbeddingRequest(output, provider)
    for reply in (reply_expected, reply_output):
        if isinstance(reply, _Failed):
            return _fail(assertion, reply.message)
    a, b = _vector(reply_expected), _vector(reply_output)
    if a is None or b is None:
        return _fail(assertion, "Embedding not found")
    if len(a) != len(b):
        raise _RowError("Vectors must be of equal length")
    inverse = assertion.negate
    if metric == "euclidean":
        distance = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=True)))
        passed = distance >= threshold - _EPSILON if inverse else distance <= threshold + _EPSILON
        normalized = 1 / (1 + distance)
        below = f"Distance {to_fixed(distance, 2)} is less than or equal to threshold {js_number_str(threshold)}"
        above = f"Distance {to_fixed(distance, 2)} is greater than threshold {js_number_str(threshold)}"
        reason = (above if inverse else below) if passed else (below if inverse else above)
        return ComponentResult(
            pass_=passed, score=1 - normalized if inverse else normalized, reason=reason, assertion=assertion
        )
    similarity = _cosine(a, b) if metric == "cosine" else sum(x * y for x, y in zip(a, b, strict=True))
    passed = similarity <= threshold + _EPSILON if inverse else similarity >= threshold - _EPSILON
    greater = f"Similarity {to_fixed(similarity, 2)} is greater than or equal to threshold {js_number_str(threshold)}"
    less = f"Similarity {to_fixed(similarity, 2)} is less than threshold {js_number_str(threshold)}"
    reason = (less if inverse else greater) if passed else (greater if inverse else less)
    return ComponentResult(
        pass_=passed, score=1 - similarity if inverse else similarity, reason=reason, assertion=assertion
    )


def _similar(assertion: Assertion, ctx: AssertionContext, output: Any, value: Any) -> Flow:
    if not isinstance(value, str | list):
        raise _RowError("Similarity assertion type must have a string or array of strings value")
    if isinstance(value, list) and not value:
        raise _RowError("Similarity assertion must have at least one value to compare against")
    threshold = 0.75 if assertion.threshold is None else assertion.threshold
    metric = _SIMILARITY_METRICS[assertion.type]
    text = _output_text(output)
    provider = grader_provider(assertion, ctx, "embedding")
    if isinstance(value, str):
        return (yield from _similarity_one(assertion, provider, value, text, threshold, metric))
    if assertion.negate:
        closest: ComponentResult | None = None
        for expected in value:
            result = yield from _similarity_one(assertion, provider, js_string(expected), text, threshold, metric)
            if not result.pass_:
                return result
            if closest is None or result.score < closest.score:
                closest = result
        assert closest is not None
        return closest
    best = -math.inf
    for expected in value:
        result = yield from _similarity_one(assertion, provider, js_string(expected), text, threshold, metric)
        if result.pass_:
            return result
        best = max(best, result.score)
    return ComponentResult(
        pass_=False, score=best, reason="None of the provided values met the similarity threshold", assertion=assertion
    )


_HANDLERS: dict[str, Callable[[Assertion, AssertionContext, Any, Any], Flow]] = {
    "llm-rubric": _llm_rubric,
    "model-graded-closedqa": _closed_qa,
    "factuality": _factuality,
    "model-graded-factuality": _factuality,
    "g-eval": _geval,
    "answer-relevance": _answer_relevance,
    "similar": _similar,
    "similar:cosine": _similar,
    "similar:dot": _similar,
    "similar:euclidean": _similar,
}
