"""One test row of a promptfoo-shaped suite under one prompt and one provider: render ->
generate -> transform -> assertions (graders through the engine) -> one ``ItemResult``.

The same record as a blueprint item's, so the roll-up, junit, JSON, HTML and the baseline read
it as they read prompts: the suite is the "blueprint", the row under a prompt the "prompt", the
provider the "model", and each top-level assertion one point (docs/promptfoo.md). Assertions
are scored by ``scoring/promptfoo`` and graded by ``judges/promptfoo``; this module only drives
them, sending every request (answers and graders alike) through the engine: the cache, the
limits, the budget and batching apply as for blueprints.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
import time
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import Any, Literal

from pytest_weval.blueprint.model import BlueprintError, ModelSpec
from pytest_weval.engine.errors import (
    BatchPending,
    CircuitOpenError,
    EmptyReplyError,
    ModelCallError,
    ProviderError,
    ReplyTooLargeError,
)
from pytest_weval.engine.request import ChatMessage, ModelClient, ModelRequest
from pytest_weval.engine.transport.providers.embeddings import vector_of
from pytest_weval.formats.promptfoo.model import PfPrompt, PfProvider, PfTest, PromptfooSuite
from pytest_weval.formats.promptfoo.providers import build_provider, map_embedding_provider
from pytest_weval.formats.promptfoo.template import TemplateError, render
from pytest_weval.judges import promptfoo as pf_judges
from pytest_weval.judges.config import DEFAULT_JUDGES
from pytest_weval.results import ItemResult, Outcome, PointAssessment, Usage
from pytest_weval.run.embedding import embedding_request
from pytest_weval.run.generation import generation_request
from pytest_weval.run.programs.runner import STDERR_TAIL, ProgramRunner
from pytest_weval.scoring import promptfoo as pf_scoring

DEFAULT_GRADER = DEFAULT_JUDGES[0].model
EMBEDDING_MODEL = "openai:text-embedding-3-large"  # promptfoo's default embedding provider (answer-relevance)
EXEC_REFUSED = (
    "this test runs a program named by its file (a python assertion, or a file:// JavaScript or Python "
    "assertion or transform), and programs from eval files run only when allowed: pass --weval-allow-exec "
    "(ini weval_allow_exec = true) if you trust this file; nothing was sent"
)

# promptfoo's python wrapper, ours: runs the script, calls main(output, context), prints the value.
PYTHON_HARNESS = (
    "import json, sys\n"
    "request = json.load(sys.stdin)\n"
    "namespace = {'__name__': 'promptfoo_assertion'}\n"
    "exec(compile(request['script'], '<python assertion>', 'exec'), namespace)\n"
    "sys.stdout.write(json.dumps({'value': namespace['main'](request['output'], request['context'])}))\n"
)
PYTHON_TIMEOUT_S = 60.0
_NO_CALL = pf_scoring.PythonCall(script="", output=None, context={}, code="", metric=None)

# What a grader's failure to answer fails the assertion of (promptfoo's rule), rather than the row.
GRADER_FAILURES = (ProviderError, EmptyReplyError, CircuitOpenError, ReplyTooLargeError)


PROMPTFOO_TEMPERATURE = 0.0
PROMPTFOO_MAX_TOKENS = 1024


@dataclasses.dataclass(frozen=True, slots=True)
class RunnableProvider:
    """A provider an item runs against: a model of ours with promptfoo's config applied, or why not."""

    label: str  # in the node id, and the result's model id
    written_id: str
    model: ModelSpec | None
    # promptfoo's OpenAI and Anthropic providers send temperature 0 and max_tokens 1024 unless
    # configured (OPENAI_TEMPERATURE / OPENAI_MAX_TOKENS unset): the same request as promptfoo's
    temperature: float | None = PROMPTFOO_TEMPERATURE
    max_tokens: int | None = PROMPTFOO_MAX_TOKENS
    system: str | None = None
    problem: str | None = None
    index: int = 0  # its place in the suite's providers (or in --weval-models)
    promptfoo_id: str | None = None  # promptfoo's provider.id(), where not the written id
    written_label: str | None = None  # the file's `label`, if it gives one

    @property
    def results_id(self) -> str:
        """The id promptfoo's results file (and a script's ``provider.id``) shows."""
        return self.promptfoo_id or self.written_id


def providers_for(
    suite: PromptfooSuite, *, models: Sequence[str], custom_models: Mapping[str, dict[str, Any]]
) -> list[RunnableProvider]:
    """``--weval-models`` replace the file's providers (as for agent eval files' targets);
    else the file's, each mapped onto our model ids (``formats/promptfoo/providers.py``)."""
    if models:
        return [
            RunnableProvider(label=m, written_id=m, model=ModelSpec(id=m, custom=custom_models.get(m)), index=i)
            for i, m in enumerate(models)
        ]
    return [runnable(p, custom_models) for p in suite.providers]


def runnable(provider: PfProvider, custom_models: Mapping[str, dict[str, Any]]) -> RunnableProvider:
    model = None
    if provider.model_id is not None and provider.problem is None:
        model = ModelSpec(id=provider.model_id, custom=provider.custom or custom_models.get(provider.model_id))
    return RunnableProvider(
        label=provider.node_label,
        written_id=provider.written_id,
        model=model,
        temperature=_first(provider.temperature, PROMPTFOO_TEMPERATURE),
        max_tokens=_first(provider.max_tokens, PROMPTFOO_MAX_TOKENS),
        system=provider.system,
        problem=provider.problem,
        index=provider.index,
        promptfoo_id=provider.promptfoo_id,
        written_label=provider.label,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class PreparedTest:
    """A row's assertions parsed once at collection (shared by its prompt x provider items)."""

    assertions: tuple[Any, ...]
    problem: str | None
    needs_exec: bool
    metrics: tuple[str, ...]
    problem_line: int | None = None  # where the problem is, when it is in the suite file itself


def prepare_test(test: PfTest, suite: PromptfooSuite) -> PreparedTest:
    """The row's assertions parsed by ``scoring/promptfoo``; the first that cannot be used (an
    unknown type, a bad value) is the row's located problem."""
    assertions = []
    problem = test.problem
    line = test.location.line if test.location.path == suite.path else None
    for written in test.asserts:
        try:
            assertions.append(pf_scoring.parse_assertion(written.raw, written.location))
        except pf_scoring.AssertionProblem as exc:
            if problem is None:
                problem = str(exc)
                line = written.location.line if written.location.path == suite.path else line
    transform = test.options.get("transform")
    if problem is None and transform is not None and not isinstance(transform, str):
        problem = str(BlueprintError("`options.transform` must be JavaScript (text)", test.location))
    if problem is None and isinstance(transform, str) and transform.startswith("file://"):
        problem = str(
            BlueprintError(
                f"`options.transform` from a file ({transform}) is not supported: it runs a program named by the "
                "eval file",
                test.location,
                "write the transform inline (JavaScript with `output` and `context`)",
            )
        )
    if problem is None:
        problem = _grader_problem(test, assertions)
    needs_exec = any(pf_scoring.needs_exec(a) for a in assertions)
    metrics = tuple(dict.fromkeys(m for a in assertions for m in pf_scoring.metric_names(a)))
    return PreparedTest(tuple(assertions), problem, needs_exec, metrics, line or None)


def _grader_problem(test: PfTest, assertions: Sequence[Any]) -> str | None:
    """A grader the row names (``options.provider``, an assertion's ``provider``; promptfoo's
    ``{text, embedding}`` mapping too) that maps onto no model of ours: a located error, not a
    silent fall back to the default judge."""
    if not any(pf_judges.is_model_graded(a) for a in assertions):
        return None
    written = [test.options.get("provider"), *(getattr(a, "provider", None) for a in assertions)]
    for entry in written:
        if entry is None:
            continue
        kinds = entry if isinstance(entry, dict) and ({"text", "embedding"} & set(entry)) else {"text": entry}
        for kind, value in kinds.items():
            if value is None:
                continue
            if kind == "embedding":
                why = map_embedding_provider(value)[1]
            else:
                mapped = build_provider(value, 0, test.location)
                why = mapped.problem or (None if mapped.model_id is not None else "it names no model")
            if why is not None:
                return str(BlueprintError(f"the grader provider cannot be used: {why}", test.location))
    return None


def needs_grader(prepared: PreparedTest) -> bool:
    """Whether the row asks a chat grader (``similar`` asks only for embeddings)."""
    return any(_asks_chat_grader(a) for a in prepared.assertions)


def _asks_chat_grader(assertion: Any) -> bool:
    if assertion.type == "assert-set":
        return any(_asks_chat_grader(child) for child in assertion.children)
    return pf_judges.is_model_graded(assertion) and not assertion.type.startswith("similar")


def metric_names(prepared: PreparedTest) -> tuple[str, ...]:
    return prepared.metrics


@dataclasses.dataclass(frozen=True, slots=True)
class PromptfooWork:
    """What one promptfoo item asks for."""

    nodeid: str
    suite: PromptfooSuite
    test: PfTest
    prompt: PfPrompt
    provider: RunnableProvider
    prepared: PreparedTest
    priority: int = 0
    blocked: str | None = None
    blocked_outcome: Outcome = "error"
    sample: int = 0

    @property
    def row_id(self) -> str:
        """The item's name without the provider: the "prompt" of the reports."""
        name = self.nodeid.rpartition("::")[2]
        head, _, _ = name.rpartition("][")
        return head + "]" if head else name


def grader_model(work: PromptfooWork, judges: Sequence[str], custom_models: Mapping[str, dict[str, Any]]) -> ModelSpec:
    return grader_for(work.test.options.get("provider"), work, judges, custom_models).model or ModelSpec(
        id=DEFAULT_GRADER
    )


def grader_for(
    written: Any, work: PromptfooWork, judges: Sequence[str], custom_models: Mapping[str, dict[str, Any]]
) -> RunnableProvider:
    """The grader: ``written`` (an assertion's ``provider``, else the test's ``options.provider``,
    a test's own or ``defaultTest``'s, merged by the loader) when it maps onto a model of ours,
    else the first of ``--weval-judges``, else our default judge."""
    if isinstance(written, dict) and ({"text", "embedding"} & set(written)):
        written = written.get("text")  # promptfoo's {text, embedding} grader mapping
    if written is not None:
        mapped = build_provider(written, 0, work.test.location)
        if mapped.model_id is not None and mapped.problem is None:
            return runnable(mapped, custom_models)
    model_id = judges[0] if judges else DEFAULT_GRADER
    return RunnableProvider(
        label=model_id, written_id=model_id, model=ModelSpec(id=model_id, custom=custom_models.get(model_id))
    )


def render_messages(work: PromptfooWork, env: Mapping[str, str]) -> tuple[str, list[ChatMessage]]:
    """The prompt as promptfoo sends it: rendered with the row's vars, ``options.prefix`` and
    ``suffix`` around it; a rendered JSON array of ``{role, content}`` is a chat, anything else
    one user message; a provider's ``config.systemPrompt`` goes first."""
    rendered = render(work.prompt.raw, work.test.vars, env)
    options = work.test.options
    rendered = f"{options.get('prefix') or ''}{rendered}{options.get('suffix') or ''}"
    messages: list[ChatMessage] = []
    if work.provider.system:
        messages.append(ChatMessage("system", work.provider.system))
    chat = _chat(rendered)
    if chat is not None:
        messages.extend(chat)
    else:
        messages.append(ChatMessage("user", rendered))
    return rendered, messages


def _chat(text: str) -> list[ChatMessage] | None:
    stripped = text.strip()
    if not stripped.startswith("["):
        return None
    try:
        parsed = json.loads(stripped)
    except ValueError:
        return None
    if not isinstance(parsed, list) or not parsed:
        return None
    out = []
    for entry in parsed:
        if not isinstance(entry, dict) or not isinstance(entry.get("role"), str):
            return None
        content = entry.get("content")
        out.append(ChatMessage(entry["role"], content if isinstance(content, str) else json.dumps(content)))
    return out


class PromptfooRunner:
    """Evaluates promptfoo works on the engine (answers and graders)."""

    def __init__(
        self,
        engine: ModelClient,
        *,
        judges: Sequence[str] | None,
        allow_exec: bool,
        allowed_env: frozenset[str],
        custom_models: Mapping[str, dict[str, Any]],
    ):
        self.engine = engine
        self.judges = tuple(judges or ())
        self.allow_exec = allow_exec
        self.env = {name: os.environ[name] for name in allowed_env if name in os.environ}
        self.programs = ProgramRunner(allow_exec, allowed_env)
        self.custom_models = custom_models

    async def evaluate(self, work: PromptfooWork) -> ItemResult:
        started = time.monotonic()
        usage: dict[str, Usage] = {}
        threshold = work.test.threshold
        result = ItemResult(
            nodeid=work.nodeid,
            blueprint_id=work.suite.id,
            blueprint_path=work.suite.path,
            blueprint_title=work.suite.title,
            prompt_id=work.row_id,
            prompt_line=work.test.location.line if work.test.location.path == work.suite.path else None,
            model_id=work.provider.label,
            effective_model_id=work.provider.label,
            outcome="error",
            threshold=threshold if threshold is not None else 1.0,
            sample=work.sample,
            source="promptfoo suite",
        )
        result.promptfoo = base_row(work)
        try:
            await self._evaluate_into(work, result, usage)
        except BatchPending as exc:  # --weval-batch=submit: skipped until a later run collects it
            result.outcome, result.error, result.error_kind, result.score = (
                "skipped",
                exc.message,
                "batch_pending",
                None,
            )
        except ModelCallError as exc:
            result.outcome, result.error, result.error_kind = "error", str(exc), exc.error_kind
        except pf_scoring.ScriptError as exc:  # promptfoo: a transform that throws is the row's error
            result.outcome, result.error_kind = "error", "blueprint"
            result.error = f"{work.test.location}: the test's transform failed: {exc.message}"
        except Exception as exc:  # noqa: BLE001 - one item's failure must never stop the run
            result.outcome = "error"
            result.error = result.error or f"{type(exc).__name__}: {exc}"
            result.error_kind = result.error_kind or "internal"
        result.usage = usage
        result.duration_s = time.monotonic() - started
        if result.outcome in ("error", "skipped"):
            result.promptfoo.update(error=result.error, failureReason=FAILURE_ERROR, success=False, score=0)
        return result

    async def _evaluate_into(self, work: PromptfooWork, result: ItemResult, usage: dict[str, Usage]) -> None:
        if work.blocked is not None:
            result.outcome, result.error, result.not_run = work.blocked_outcome, work.blocked, True
            result.error_kind = "missing_key"
            return
        problem = work.prepared.problem or work.prompt.problem or work.provider.problem
        if problem:
            result.error, result.error_kind = problem, "blueprint"
            if work.prepared.problem:
                result.error_line = work.prepared.problem_line
            elif work.prompt.problem:
                result.error_line = work.prompt.location.line or None
            else:
                result.error_line = _provider_line(work)
            return
        if work.prepared.needs_exec and not self.allow_exec:
            result.error, result.error_kind = EXEC_REFUSED, "not_allowed"
            return
        try:
            rendered, messages, request = self.generation(work)
        except TemplateError as exc:
            result.error, result.error_kind = f"{work.prompt.location}: {exc}", "blueprint"
            return
        model = request.model
        reply = await self.engine.complete(request)
        used = reply.usage()
        usage.setdefault(model.id, Usage()).add(used)
        if not reply.text.strip():
            raise EmptyReplyError(model.id)
        result.history = [{"role": m.role, "content": m.content} for m in messages]
        output: Any = reply.text
        context = self.assertion_context(work, rendered, output, reply.latency_s, used.cost_usd)
        transform = work.test.options.get("transform")
        if isinstance(transform, str):
            # kept should the transform throw: the answer it could not take is what to look at
            result.response, result.generated_texts = reply.text, [reply.text]
            output = pf_scoring.apply_transform(transform, context)
            context = dataclasses.replace(context, output=output)
        result.response = output if isinstance(output, str) else json.dumps(output)
        result.generated_texts = [reply.text]
        results = await _together(
            self._assess(assertion, context, work, usage) for assertion in work.prepared.assertions
        )
        grading = pf_scoring.grade_test(list(work.prepared.assertions), results, work.test.threshold)
        result.points = [_point(component, self._grader_id(component, work)) for component in results]
        if grading.error is not None:
            result.error, result.error_kind = grading.error, "judges" if needs_grader(work.prepared) else "blueprint"
        else:
            result.score = grading.score
            result.outcome = "passed" if grading.pass_ else "failed"
        assert result.promptfoo is not None
        result.promptfoo.update(
            prompt={"raw": rendered, "label": work.prompt.label},
            response={
                "output": output,
                "tokenUsage": {
                    "total": reply.input_tokens + reply.output_tokens,
                    "prompt": reply.input_tokens,
                    "completion": reply.output_tokens,
                    "cached": reply.input_tokens + reply.output_tokens if reply.cached else 0,
                },
                "cached": reply.cached,
                **({"cost": used.cost_usd} if used.cost_usd is not None else {}),
            },
            success=grading.pass_ and grading.error is None,
            score=grading.score,
            error=grading.error,
            failureReason=FAILURE_ERROR if grading.error else FAILURE_NONE if grading.pass_ else FAILURE_ASSERT,
            latencyMs=round(reply.latency_s * 1000) if reply.latency_s else 0,
            gradingResult=pf_scoring.grading_json(grading),
            namedScores=dict(grading.named_scores),
            cost=used.cost_usd or 0,
        )

    def generation(self, work: PromptfooWork) -> tuple[str, list[ChatMessage], ModelRequest]:
        """The row's prompt rendered, its messages, and the request for the provider's answer
        (the run sends it, the plan looks it up). Raises ``TemplateError``."""
        rendered, messages = render_messages(work, self.env)
        model = work.provider.model
        assert model is not None
        request = generation_request(
            model,
            messages,
            temperature=work.provider.temperature,
            max_tokens=work.provider.max_tokens,
            priority=work.priority,
            sample=work.sample,
        )
        return rendered, messages, request

    def assertion_context(
        self, work: PromptfooWork, rendered: str, output: Any, latency_s: float = 0.0, cost: float | None = None
    ) -> pf_scoring.AssertionContext:
        """What the row's assertions are scored (and their grading prompts rendered) against."""
        env = self.env
        return pf_scoring.AssertionContext(
            output=output,
            prompt=rendered,
            vars=dict(work.test.vars),
            test=_test_record(work.test),
            provider_id=work.provider.results_id,
            provider_label=work.provider.label,
            prompt_label=work.prompt.label,
            latency_ms=round(latency_s * 1000) if latency_s else 0,
            cost=cost,
            render=lambda text, variables: render(text, variables, env),
            base_dir=work.suite.directory,
        )

    def _grader(self, assertion: Any, work: PromptfooWork) -> RunnableProvider:
        own = getattr(assertion, "provider", None)
        return grader_for(
            own if own is not None else work.test.options.get("provider"), work, self.judges, self.custom_models
        )

    def _grader_id(self, component: Any, work: PromptfooWork) -> str | None:
        assertion = component.assertion
        if assertion is None or not pf_judges.is_model_graded(assertion):
            return None
        model = self._grader(assertion, work).model
        return model.id if model is not None else None

    async def _assess(self, assertion: Any, context: Any, work: PromptfooWork, usage: dict[str, Usage]) -> Any:
        """One top-level assertion's result: scored here, or graded through the engine (an
        assert-set holding a model-graded assertion: each child, then the set)."""
        if not (pf_judges.is_model_graded(assertion) or pf_scoring.needs_exec(assertion)):
            return pf_scoring.score_assertion(assertion, context)
        if assertion.type == "python":
            return await self._python(assertion, context, work)
        if assertion.type == "assert-set":
            children = await _together(self._assess(child, context, work, usage) for child in assertion.children)
            return pf_scoring.score_assert_set(assertion, children, context)
        grading = pf_judges.grading_for(assertion, context)
        asked = grading.next_request()
        while asked is not None:
            try:
                grading.take_reply(await self._ask(asked, work, usage))
            except GRADER_FAILURES as exc:
                # promptfoo fails the assertion with the grader's error as its reason; the row
                # goes on (a stop of the run, a missing key or a replay miss still ends the row)
                grading.take_error(str(exc))
            asked = grading.next_request()
        return grading.result()

    async def _python(self, assertion: Any, context: Any, work: PromptfooWork) -> Any:
        """A ``python`` assertion: promptfoo's script run by our Python in a stripped environment
        (the runner refuses unless --weval-allow-exec: ruling 27), its value read as promptfoo
        reads it."""
        try:
            call = pf_scoring.python_call(assertion, context)
        except pf_scoring.AssertionFailure as exc:
            return pf_scoring.python_result(assertion, _NO_CALL, error=str(exc))
        request = json.dumps({"script": call.script, "output": call.output, "context": call.context})
        ran = await self.programs.run(
            [sys.executable, "-c", PYTHON_HARNESS],
            cwd=work.suite.directory,
            stdin=request.encode("utf-8"),
            timeout_s=PYTHON_TIMEOUT_S,
            what="a python assertion",
        )
        if ran.timed_out:
            return pf_scoring.python_result(assertion, call, error=f"timed out after {PYTHON_TIMEOUT_S:g} s")
        if ran.returncode != 0:
            return pf_scoring.python_result(assertion, call, error=ran.stderr_text.strip()[-STDERR_TAIL:])
        try:
            value = json.loads(ran.stdout_text)["value"]
        except (ValueError, KeyError, TypeError) as exc:
            return pf_scoring.python_result(assertion, call, error=f"the program printed no result: {exc}")
        return pf_scoring.python_result(assertion, call, value)

    async def _ask(self, asked: Any, work: PromptfooWork, usage: dict[str, Usage]) -> Any:
        """One grader request through the engine: the reply's text, or an embedding's vector."""
        request = self.grader_request(asked, work)
        reply = await self.engine.complete(request)
        usage.setdefault(request.model.id, Usage()).add(reply.usage())
        return vector_of(reply) if isinstance(asked, pf_judges.EmbeddingRequest) else reply.text

    def grader_request(self, asked: Any, work: PromptfooWork) -> ModelRequest:
        """The engine's request for a grading step's ``asked`` (a chat grader's, or an
        embedding's): the run sends it, the plan looks it up (run/plan_promptfoo.py)."""
        if isinstance(asked, pf_judges.EmbeddingRequest):
            embedder = self.embedder(asked.provider)
            return dataclasses.replace(embedding_request(embedder, asked.text), priority=work.priority)
        grader = grader_for(asked.provider, work, self.judges, self.custom_models)
        model = grader.model
        assert model is not None
        return ModelRequest(
            model=model,
            messages=tuple(ChatMessage(m["role"], m["content"]) for m in asked.messages),
            temperature=_first(asked.temperature, grader.temperature, 0.0),
            max_tokens=_first(asked.max_tokens, grader.max_tokens),
            priority=work.priority,
            purpose="judge",
        )

    def embedder(self, provider: Any | None) -> ModelSpec:
        """The embedding model a grading step asks: its ``provider`` mapped, else promptfoo's default."""
        embedding_id = (map_embedding_provider(provider)[0] if provider else None) or EMBEDDING_MODEL
        return ModelSpec(id=embedding_id, custom=self.custom_models.get(embedding_id))


# promptfoo's ResultFailureReason
FAILURE_NONE, FAILURE_ASSERT, FAILURE_ERROR = 0, 1, 2


def base_row(work: PromptfooWork) -> dict[str, Any]:
    """The row of promptfoo's results file this item becomes, before anything is known of it."""
    test = _test_record(work.test)
    test["assert"] = [written.raw for written in work.test.asserts]
    return {
        # promptfoo numbers each provider x prompt pair, providers outer (its results' `prompts`)
        "promptIdx": work.provider.index * len(work.suite.prompts) + work.prompt.index,
        "testIdx": work.test.index,
        "testCase": test,
        # as promptfoo writes it: its label is empty unless the file gives one
        "provider": {"id": work.provider.results_id, "label": work.provider.written_label or ""},
        "prompt": {"raw": work.prompt.raw, "label": work.prompt.label},
        "vars": dict(work.test.vars),
        "response": None,
        "error": None,
        "failureReason": FAILURE_NONE,
        "success": False,
        "score": 0,
        "latencyMs": 0,
        "gradingResult": None,
        "namedScores": {},
        "cost": 0,
        "metadata": dict(work.test.metadata),
    }


def _provider_line(work: PromptfooWork) -> int | None:
    for provider in work.suite.providers:
        if provider.node_label == work.provider.label and provider.location.path == work.suite.path:
            return provider.location.line or None
    return None


def _test_record(test: PfTest) -> dict[str, Any]:
    out: dict[str, Any] = {"vars": dict(test.vars), "options": dict(test.options)}
    if test.description is not None:
        out["description"] = test.description
    if test.threshold is not None:
        out["threshold"] = test.threshold
    if test.metadata:
        out["metadata"] = dict(test.metadata)
    return out


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _point(component: Any, grader_id: str | None) -> PointAssessment:
    """A top-level assertion as one point of the reports (its metric named, when it has one)."""
    assertion = component.assertion
    text = pf_scoring.describe(assertion) if assertion is not None else "assertion"
    if component.metric:
        text = f"{text} (metric {component.metric})"
    kind: Literal["function", "judged"] = "judged" if grader_id is not None else "function"
    return PointAssessment(
        key_point_text=text,
        coverage_extent=None if component.error else component.score,
        reflection=component.reason,
        error=component.reason if component.error else None,
        multiplier=assertion.weight if assertion is not None else 1.0,
        kind=kind,
        judge_model_id=grader_id,
    )


async def _together(assessments: Iterable[Coroutine[Any, Any, Any]]) -> list[Any]:
    """A row's assertions assessed at once, their results in order, as promptfoo runs them
    (``runAssertions``: several at a time), so two graded assertions cost one grader's wait, not
    two; the first that raises stops the others."""
    tasks = [asyncio.ensure_future(assessment) for assessment in assessments]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        raise
