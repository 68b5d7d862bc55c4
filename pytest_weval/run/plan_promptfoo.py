"""The plan of promptfoo-shaped suites' rows (docs/promptfoo.md, 'The plan'; docs/engine.md, 'The
plan'), on the blueprint items' ``PlanClient``: it reads the cache and sends nothing.

Each row's generation is the runner's own request (``PromptfooRunner.generation``), looked up
and counted by the client, once per sample under ``--weval-repeat=N``. When the cache holds the
answer, each model-graded assertion's grading runs on it as the run grades (promptfoo's steps,
``judges/promptfoo``), each grader request built by the runner (``grader_request``) and looked
up in turn; a step whose reply the cache lacks ends the walk, and the steps after it (built from
that reply) are foreseen. What cannot be built without running something (a ``transform``,
JavaScript, on the answer or before an assertion) or without an answer the cache lacks is
counted under stand-in keys made of what the requests will be made of: the answer's identity
(its request), the grader, the assertion, the rendered prompt; those a transform stands between
a cached answer and are noted (``RowPlanner.transformed``): the plan says the cache may hold
them. Nothing is run: no program, no JavaScript, no python assertion.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pytest_weval.engine.errors import ConfigError, ModelCallError
from pytest_weval.engine.request import ModelRequest
from pytest_weval.engine.transport.providers.embeddings import vector_of
from pytest_weval.formats.promptfoo.template import TemplateError
from pytest_weval.judges import promptfoo as pf_judges
from pytest_weval.run.plan import OUTPUT_HIGH_DEFAULT, CacheUnknown, PlanClient, asked_identity
from pytest_weval.run.promptfoo import PromptfooRunner, PromptfooWork, grader_for
from pytest_weval.scoring import promptfoo as pf_scoring
from pytest_weval.scoring.promptfoo.model import ValueFileError

# A grading prompt's own words (its template), in tokens, beside the row's prompt and the
# assertion's value: the answer being unknown, as run/plan.py takes a blueprint judge prompt.
GRADER_PROMPT_TOKENS = 400

# Why a transformed cached answer's grader requests are counted to send, unlooked-up: the plan
# says so under its table and in plan.json's ``cache_unknown`` (docs/promptfoo.md, 'The plan').
TRANSFORMED_WHY = (
    "promptfoo rows with a transform (JavaScript) on a cached answer: their grader requests are made "
    "of the transform's result, and a plan runs no JavaScript, so it cannot look them up; the run "
    "sends only those the cache lacks"
)


@dataclasses.dataclass(frozen=True)
class _Call:
    """One request a model-graded assertion will send, foreseen."""

    purpose: str  # "judge": the chat grader's; "embed": an embedding's
    label: str  # which step
    # A request not made of the answer: what it is made of besides its model (rows that differ
    # elsewhere share it); None: made of the answer, the assertion and the row's prompt.
    own: tuple[Any, ...] | None = None


class RowPlanner:
    """Counts promptfoo rows' requests into a ``PlanClient``: their generations, and their
    graders' calls."""

    def __init__(self, client: PlanClient, runner: PromptfooRunner):
        self.client = client
        self.runner = runner
        self.transformed = CacheUnknown(TRANSFORMED_WHY)  # requests foreseen on a transformed cached answer

    def sends_nothing(self, work: PromptfooWork) -> bool:
        """The run ends the row before any request (``PromptfooRunner._evaluate_into``'s checks).
        A row whose key is missing is counted, as a blueprint item is: the plan lists the key, and
        its figures are what the run sends once the key is set."""
        return (
            work.blocked is not None
            or bool(work.prepared.problem or work.prompt.problem or work.provider.problem)
            or work.provider.model is None
            or (work.prepared.needs_exec and not self.runner.allow_exec)
        )

    async def row(self, work: PromptfooWork) -> None:
        if self.sends_nothing(work):
            return
        try:
            rendered, _, request = self.runner.generation(work)
        except TemplateError:
            return  # the row's error, unsent
        try:
            reply = await self.client.complete(request)
        except ConfigError:
            return  # no provider takes the model: the row's error, unsent
        except ModelCallError:  # not in the cache: counted, to send
            reply = None
        graded = [a for a in work.prepared.assertions if pf_judges.is_model_graded(a)]
        if not graded or (reply is not None and not reply.text.strip()):
            return  # an empty answer is the row's error: no grader is asked
        output = reply.text if reply is not None else None
        context = self.runner.assertion_context(work, rendered, output)
        transform = work.test.options.get("transform")
        answer: tuple[Any, ...] | None = None  # None: the graders' requests are built from the answer
        if reply is None:  # what the answer's request is made of: rows equal here get one answer
            answer = asked_identity(request)
        elif isinstance(transform, str):  # JavaScript on the answer: not run while planning
            answer = ("transformed", reply.text, transform)
        for assertion in graded:
            await self.assertion(assertion, context, work, answer, transformed=reply is not None and answer is not None)

    async def assertion(
        self,
        assertion: Any,
        context: Any,
        work: PromptfooWork,
        answer: tuple[Any, ...] | None,
        *,
        transformed: bool = False,
    ) -> None:
        """One model-graded assertion (an assert-set: each model-graded child, as the run
        assesses them one by one). ``transformed``: the answer is cached, and a transform the
        plan does not run stands between it and the grader requests."""
        if assertion.type == "assert-set":
            for child in assertion.children:
                if pf_judges.is_model_graded(child):
                    await self.assertion(child, context, work, answer, transformed=transformed)
            return
        if answer is None and assertion.transform:  # the assertion's JavaScript: not run while planning
            answer, transformed = ("answer", context.output), True
        if answer is None:
            await self.grade(assertion, context, work)
        else:
            self.foresee(assertion, context, work, answer, 0, transformed=transformed)

    async def grade(self, assertion: Any, context: Any, work: PromptfooWork) -> None:
        """promptfoo's grading on the cached answer, each step's request looked up as the run
        would send it, until one the cache lacks: the steps after it are foreseen."""
        try:
            grading = pf_judges.grading_for(assertion, context)
        except TemplateError:
            return  # the row's error: nothing asked
        done: set[tuple[Any, ...]] = set()  # the distinct requests met (``_calls`` counts those)
        asked = grading.next_request()
        while asked is not None:
            request = self.runner.grader_request(asked, work)
            try:
                reply = await self.client.complete(request)
            except ConfigError:
                return
            except ModelCallError:
                made_of = ("after", context.output, request.model.id, request.messages)
                self.foresee(assertion, context, work, made_of, len(done | {(request.model.id, request.messages)}))
                return
            done.add((request.model.id, request.messages))
            try:
                grading.take_reply(vector_of(reply) if isinstance(asked, pf_judges.EmbeddingRequest) else reply.text)
            except TemplateError:
                return
            asked = grading.next_request()

    def foresee(
        self,
        assertion: Any,
        context: Any,
        work: PromptfooWork,
        answer: tuple[Any, ...],
        skip: int,
        *,
        transformed: bool = False,
    ) -> None:
        """The assertion's calls from the ``skip``-th on, under stand-in keys: ``answer`` (what
        the answer is made of), the grader, the call, and what the assertion asks. Those of a
        ``transformed`` cached answer are noted in ``self.transformed``: the cache may hold them."""
        try:
            value = pf_scoring.rendered_value(assertion, context)
        except (TemplateError, ValueFileError):
            return  # the assertion's (or the row's) error: nothing asked
        custom_prompt = assertion.rubric_prompt or context.test_options.get("rubricPrompt")
        # the vars reach a grading prompt through a custom prompt, or answer-relevance's `query`
        variables = dict(context.vars) if custom_prompt or assertion.type == "answer-relevance" else None
        asked = repr((assertion.type, value, custom_prompt, context.prompt, variables))
        value_tokens = len(value if isinstance(value, str) else repr(value)) / 4
        for call in _calls(assertion, value, context, custom_prompt)[skip:]:
            grader = self._grader(call, assertion, context, work)
            if grader is None:
                continue
            model, identity, max_output = grader
            if call.purpose == "judge":
                tokens = GRADER_PROMPT_TOKENS + len(context.prompt) / 4 + value_tokens
            elif call.own is None:  # the answer's embedding: its length unknown, the generation's cap
                tokens = work.provider.max_tokens or OUTPUT_HIGH_DEFAULT
            else:
                tokens = len(str(call.own[-1])) / 4
            stand_in = (identity, call.label, asked, answer) if call.own is None else (identity, call.own)
            if self.client.foresee(stand_in, model, call.purpose, tokens, max_output) and transformed:
                self.transformed.add(work.nodeid, model)

    def _grader(
        self, call: _Call, assertion: Any, context: Any, work: PromptfooWork
    ) -> tuple[str, tuple[Any, ...], int] | None:
        """The model a foreseen call asks, what of it the request is made of, and its output
        cap; None when no provider takes it (the run's error, unsent)."""
        runner = self.runner
        if call.purpose == "embed":
            embedder = runner.embedder(pf_judges.grader_provider(assertion, context, "embedding"))
            return embedder.id, (embedder.id, repr(embedder.custom)), 0
        written = pf_judges.grader_provider(assertion, context)
        grader = grader_for(written, work, runner.judges, runner.custom_models)
        model = grader.model
        assert model is not None
        shell = ModelRequest(
            model=model,
            messages=(),
            temperature=grader.temperature if grader.temperature is not None else 0.0,
            max_tokens=grader.max_tokens,
            purpose="judge",
        )
        try:
            max_output = self.client.max_output(shell)
        except ModelCallError:
            return None
        return model.id, (model.id, repr(model.custom), shell.temperature, shell.max_tokens), max_output


def _calls(assertion: Any, value: Any, context: Any, custom_prompt: Any) -> list[_Call]:
    """The distinct requests a model-graded assertion sends, in the order it first sends each
    (``judges/promptfoo``'s steps): answer-relevance asks the same question three times."""
    kind = assertion.type
    values = value if isinstance(value, list) else [value]
    if kind == "g-eval":  # per criterion: its evaluation steps (made of it alone), then the score
        return [
            call
            for criterion in values
            for call in (
                _Call("judge", "g-eval-steps", ("g-eval-steps", repr(custom_prompt), str(criterion))),
                _Call("judge", f"g-eval {criterion}"),
            )
        ]
    if kind == "answer-relevance":  # questions from the answer; the query's embedding, and theirs
        query = context.vars.get("query")
        source = query if isinstance(query, str) else context.prompt
        return [_Call("judge", kind), _Call("embed", "query", ("embed", source)), _Call("embed", "questions")]
    if kind.startswith("similar"):  # the first expected text's embedding, the answer's, the others'
        calls = [_Call("embed", "expected", ("embed", str(expected))) for expected in values]
        return calls[:1] + [_Call("embed", "answer")] + calls[1:]
    return [_Call("judge", kind)]
