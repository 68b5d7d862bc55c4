"""One item's whole evaluation: generate -> score functions -> judge -> one ItemResult.

Format-agnostic: anything that can be expressed as a ``Blueprint`` prompt x model variant runs
through here, so every reporter sees the same ``ItemResult`` records.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import math
import time
import traceback
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from pytest_weval import defaults, scoring
from pytest_weval import judges as judging
from pytest_weval.blueprint.fixtures import FixturePick, ResponseFixtures
from pytest_weval.blueprint.ids import effective_model_id
from pytest_weval.blueprint.model import Blueprint, EvalPoint, ModelSpec, Prompt
from pytest_weval.engine.errors import BatchPending, BudgetReached, ModelCallError, StoreStoppedError
from pytest_weval.engine.request import ChatMessage, HoldsBudget, ModelClient, ModelRequest
from pytest_weval.engine.store.cache import json_encoder
from pytest_weval.engine.transport.external import ExternalExecutor
from pytest_weval.judges.config import JudgePanel
from pytest_weval.results import ItemResult, Outcome, PointAssessment, Usage, passes
from pytest_weval.run import sampling
from pytest_weval.run.generation import (
    Conversation,
    answers_asked,
    asks_model,
    generate_conversation,
    generation_request,
    planned_answers,
)
from pytest_weval.run.outcome import decide, mistakes_message
from pytest_weval.run.programs.runner import ProgramRunner

if TYPE_CHECKING:
    from pytest_weval.run.agent import AgentRunner, AgentWork
    from pytest_weval.run.promptfoo import PromptfooRunner, PromptfooWork

BUILTIN_MODELS = frozenset({"ideal", "echo"})
NOTHING_TO_SCORE = "this prompt has no points and no ideal answer: nothing to score"


@dataclasses.dataclass(slots=True)  # not frozen: a frozen init costs 3x, paid by every item of a run
class ItemWork:
    """What one pytest item asks for: a prompt of a blueprint under one model variant."""

    nodeid: str
    blueprint: Blueprint
    prompt: Prompt
    model: ModelSpec
    temperature: float | None  # the permutation value (config temperature(s)), may be None
    system_index: int
    priority: int = 0
    # Set by the pre-flight: why this item cannot run (a key it needs is missing), and whether
    # it is then an error or a skip; nothing is sent for it.
    blocked: str | None = None
    blocked_outcome: Outcome = "error"
    sample: int = 0  # a rerun asks the model again under the next sample (docs/engine.md, 'Reruns')

    @property
    def sent_temperature(self) -> float:
        # docs/format.md, 'Temperatures and system prompts': tempValue ?? prompt.temperature ?? config.temperature ?? 0
        for value in (self.temperature, self.prompt.temperature):
            if value is not None:
                return value
        return 0

    @property
    def system_prompt(self) -> str | None:
        if self.blueprint.effective_config.get("systems"):
            return self.blueprint.systems[self.system_index]
        if self.prompt.has_system:
            return self.prompt.system
        return self.blueprint.systems[0] if self.blueprint.systems else None

    @property
    def effective_model_id(self) -> str:
        system_index = self.system_index if self.blueprint.multi_system else None
        return _effective_model_id(self.model.id, self.sent_temperature, system_index)

    @property
    def threshold_override(self) -> float | None:
        if self.prompt.threshold is not None:
            return self.prompt.threshold
        return self.blueprint.threshold


# An item asks for its effective model id four times, and a run's items share a few: each is
# formatted once (typed: 0 and 0.0 are two keys, though JavaScript writes both "0").
_effective_model_id = functools.lru_cache(maxsize=1024, typed=True)(effective_model_id)

Work: TypeAlias = "ItemWork | AgentWork | PromptfooWork"  # what an item asks the pipeline to evaluate


@dataclasses.dataclass
class PipelineSettings:
    judges: tuple[str, ...] | None = None
    threshold: float = defaults.THRESHOLD
    allowed_env: frozenset[str] = frozenset()
    custom_models: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    allow_exec: bool = False  # agent eval files: code judges and cli targets may run
    borderline_fails: bool = False  # agent eval files: a borderline verdict fails
    repeat: int = defaults.REPEAT  # --weval-repeat: samples per blueprint item, their mean its score (auto: the most)
    repeat_auto: bool = False  # --weval-repeat=auto: as many samples as the outcome needs (run/sampling.py)
    fixtures: ResponseFixtures | None = None  # --weval-fixtures: canned answers (docs/fixtures.md)
    # Under auto: each item's recorded runs, newest first, by node id (plugin/history.py)
    past: Mapping[str, tuple[sampling.Past, ...]] = dataclasses.field(default_factory=dict)


class FormatRunners:
    """The runners of agent eval cases and promptfoo rows, made (and their code loaded) for the
    first such item: a run of blueprints alone never loads them (docs/engine.md, 'A process's start')."""

    def __init__(self, engine: ModelClient, settings: PipelineSettings, asker: Callable[..., Any]):
        self.engine = engine
        self.settings = settings
        self._asker = asker
        self._agents: AgentRunner | None = None
        self._promptfoo: PromptfooRunner | None = None

    async def evaluate(self, work: AgentWork | PromptfooWork) -> ItemResult:
        from pytest_weval.run.agent import AgentWork

        if isinstance(work, AgentWork):
            return await self.agents.evaluate(work)
        return await self.promptfoo.evaluate(work)

    @property
    def agents(self) -> AgentRunner:
        if self._agents is None:
            from pytest_weval.run.agent import AgentRunner

            settings = self.settings
            self._agents = AgentRunner(
                self.engine,
                ProgramRunner(settings.allow_exec, settings.allowed_env),
                judges=settings.judges,
                borderline_fails=settings.borderline_fails,
                asker=lambda priority, usage, purpose: self._asker(priority, usage, purpose=purpose),
            )
        return self._agents

    @property
    def promptfoo(self) -> PromptfooRunner:
        if self._promptfoo is None:
            from pytest_weval.run.promptfoo import PromptfooRunner

            settings = self.settings
            self._promptfoo = PromptfooRunner(
                self.engine,
                judges=settings.judges,
                allow_exec=settings.allow_exec,
                allowed_env=settings.allowed_env,
                custom_models=settings.custom_models,
            )
        return self._promptfoo


class Pipeline:
    """Runs items on an engine. Create once per process; call ``evaluate`` on the engine loop."""

    def __init__(self, engine: ModelClient, settings: PipelineSettings):
        self.engine = engine
        self.settings = settings
        self.external = ExternalExecutor()
        self.formats = FormatRunners(engine, settings, self.asker)
        # id of a blueprint's evaluationConfig -> (it, the judges asked for, its judge panel)
        self._panels: dict[int, tuple[Any, Any, JudgePanel]] = {}
        self._specs: dict[str, ModelSpec] = {}

    def _panel(self, evaluation_config: Mapping[str, Any] | None) -> JudgePanel:
        """The judges of a blueprint's items, chosen once a blueprint (a mistake in its
        configuration is raised again for each item, as it was chosen for each)."""
        judges = self.settings.judges
        known = self._panels.get(id(evaluation_config))
        if known is not None and known[0] is evaluation_config and known[1] is judges:
            return known[2]
        panel = judging.select_judges(list(judges) if judges else None, evaluation_config)
        # The configuration is kept beside its panel, so its id is not another's while this lives.
        if len(self._panels) >= 4096:  # bounded, whatever builds blueprints on the way
            self._panels.clear()
        self._panels[id(evaluation_config)] = (evaluation_config, judges, panel)
        return panel

    def model_spec(self, model_id: str) -> ModelSpec:
        """The (frozen) spec of ``model_id``, made once a run: a judge's is asked for every call."""
        spec = self._specs.get(model_id)
        if spec is None:
            spec = self._specs[model_id] = ModelSpec(id=model_id, custom=self.settings.custom_models.get(model_id))
        return spec

    async def evaluate(self, work: Work) -> ItemResult:
        if (self.settings.repeat > 1 or self.settings.repeat_auto) and work.blocked is None:
            return await self._evaluate_repeated(work, self.settings.repeat)
        return await self._evaluate_sample(work)

    async def _evaluate_sample(self, work: Work) -> ItemResult:
        if isinstance(work, ItemWork):
            return await self._evaluate_once(work)
        return await self.formats.evaluate(work)

    async def _evaluate_repeated(self, work: Work, repeat: int) -> ItemResult:
        """--weval-repeat=N: the item's N samples (docs/statistics.md, 'Repeats'), for every
        format's items (a promptfoo row's or an agent eval case's samples alike). Attempt k of
        the item (k = 0 first, a rerun after) asks for samples kN .. kN+N-1, each a generation
        under its own cache key (sample 0 keeps the key it always had), so a cached run replays
        all N. The score is the mean of the samples' scores, the outcome that mean against the
        threshold; the response and points shown are the lowest-scoring sample's. A sample that
        could not be scored makes the item that sample's error (or skip): a mean over the
        samples that happened to work would hide it.

        Under auto (docs/sampling.md), ``repeat`` is the most samples: the first ones are asked
        at once, then one at a time until ``sampling.should_stop`` says the outcome is settled.
        Sample k keeps its key, so a cached run replays the same samples and stops where the
        first run stopped."""
        started = time.monotonic()
        try:
            async with self._hold(work, repeat):
                samples = await self._samples(work, repeat)
        except BudgetReached as exc:  # not started: no sample was asked for
            assert isinstance(work, ItemWork)  # only a blueprint item's samples are held (_hold)
            result = blank_result(work, self._threshold(work))
            result.error, result.error_kind = exc.message, "budget"
            result.duration_s = time.monotonic() - started
            return result
        auto = self.settings.repeat_auto
        usage: dict[str, Usage] = {}
        for sample in samples:
            for model, used in sample.usage.items():
                _add_usage(usage, model, used)
        unscored = next((s for s in samples if s.outcome not in ("passed", "failed") or s.score is None), None)
        if unscored is not None:
            number = samples.index(unscored)
            of = f"at most {repeat}" if auto else str(repeat)
            result = unscored.model_copy(
                update={"error": f"sample {number + 1} of {of}: {unscored.error or 'no score'}"}
            )
        else:
            scores = [s.score for s in samples if s.score is not None]
            result = min(samples, key=lambda s: s.score or 0.0).model_copy()  # the first lowest
            result.score = scoring.round2(math.fsum(scores) / len(scores))
            result.sample_scores = scores
            result.outcome = "passed" if passes(result.score, result.threshold) else "failed"
        result.sample = work.sample
        result.usage = usage
        result.duration_s = time.monotonic() - started
        if result.promptfoo is not None:  # the row of promptfoo's results file says the same
            result.promptfoo = {**result.promptfoo, "score": result.score, "success": result.outcome == "passed"}
        return result

    async def _samples(self, work: Work, repeat: int) -> list[ItemResult]:
        first = work.sample * repeat
        auto = self.settings.repeat_auto
        settled = self._settled(work) if auto else None
        count = sampling.first_samples(repeat, settled) if auto else repeat
        samples = list(
            await asyncio.gather(
                *(self._evaluate_sample(dataclasses.replace(work, sample=first + k)) for k in range(count))
            )
        )
        while auto and all(s.outcome in ("passed", "failed") and s.score is not None for s in samples):
            if sampling.should_stop([s.score or 0.0 for s in samples], samples[0].threshold, repeat, settled):
                break
            samples.append(await self._evaluate_sample(dataclasses.replace(work, sample=first + len(samples))))
        return samples

    def _settled(self, work: Work) -> bool | None:
        """--weval-repeat=auto: what the item's recorded runs already settle. Only a blueprint
        item's record says whether its content is still the same (``content_digest``)."""
        if not isinstance(work, ItemWork):
            return None
        threshold = self._threshold(work)
        return sampling.settled(self.settings.past.get(work.nodeid, ()), content_digest(work, threshold), threshold)

    def _hold(self, work: Work, samples: int) -> contextlib.AbstractAsyncContextManager[None]:
        """Under --weval-budget, room for the generations of a blueprint item's most samples,
        reserved before the first is sent, so the budget never stops an item halfway through its
        samples (docs/sampling.md, 'The plan and the budget'). Other formats' samples take the
        budget request by request, as their items do."""
        if not isinstance(work, ItemWork):
            return contextlib.nullcontext()
        prompt = work.prompt
        if not isinstance(self.engine, HoldsBudget) or not asks_tested_model(work, self.settings.fixtures):
            return contextlib.nullcontext()
        system = [ChatMessage("system", work.system_prompt)] if work.system_prompt is not None else []
        request = generation_request(
            work.model,
            system + [ChatMessage(m.role, m.content) for m in prompt.messages],
            temperature=work.sent_temperature,
            priority=work.priority,
        )
        return self.engine.holding(request, samples * answers_asked(prompt.messages))

    async def _evaluate_once(self, work: ItemWork) -> ItemResult:
        started = time.monotonic()
        usage: dict[str, Usage] = {}
        result = blank_result(work, self._threshold(work))
        try:
            await self._evaluate_into(work, result, usage)
        except judging.JudgeConfigError as exc:
            result.outcome, result.error, result.error_kind = "error", str(exc), "blueprint"
        except Exception as exc:  # noqa: BLE001 - one item's failure must never stop the run
            result.outcome = "error"
            # Our own fault, not the model's: keep where it happened, for the bug report.
            result.error = result.error or "internal error: " + "".join(traceback.format_exception(exc)).rstrip()
            result.error_kind = "internal"
        result.usage = usage
        result.duration_s = time.monotonic() - started
        return result

    def _context(self, work: ItemWork, history: list[dict[str, Any]]) -> scoring.PointContext:
        return scoring.PointContext(
            messages=history,
            model_id=work.effective_model_id,
            prompt_id=work.prompt.id,
            config=work.blueprint.config,
            generated_assistant_indices=[],
            allowed_env=self.settings.allowed_env,
        )

    def _threshold(self, work: ItemWork) -> float:
        override = work.threshold_override
        return self.settings.threshold if override is None else override

    async def _evaluate_into(self, work: ItemWork, result: ItemResult, usage: dict[str, Usage]) -> None:
        if _refused(work, result, lambda: self._context(work, []), self.settings.fixtures):
            return
        prompt = work.prompt
        conversation = await self.generate(work, usage)
        text = _answered(work, result, conversation)
        if text is None:
            return
        stops: list[ModelCallError] = []
        panel = self._panel(work.blueprint.evaluation_config)
        points = list(prompt.points) or await self._extracted(work, result, panel, usage, stops)
        if points is None:
            return
        if not points:
            _nothing_to_score(result)
            return
        assessments = await self.assess(
            points,
            text=text,
            history=result.history,
            generated_indices=list(conversation.generated_indices),
            model_id=result.effective_model_id,  # the work's, read once (blank_result)
            prompt_id=prompt.id,
            config=work.blueprint.config,
            description=work.blueprint.description,
            panel=panel,
            ask=self.asker(work.priority, usage, purpose="judge", stops=stops, shared_by=_judged_count(points)),
        )
        if not _pending(result, stops):
            _score_into(result, assessments, stops)

    async def _extracted(
        self,
        work: ItemWork,
        result: ItemResult,
        panel: judging.JudgePanel,
        usage: dict[str, Usage],
        stops: list[ModelCallError],
    ) -> list[EvalPoint] | None:
        """The key points extracted from the prompt's ideal answer, [] when it has none; None
        when extraction failed (``result`` says why)."""
        prompt = work.prompt
        if not prompt.ideal:
            return []
        failures: list[str] = []
        extracted = await judging.extract_key_points(
            prompt_text=judging.prompt_context_text(prompt.messages),
            ideal=prompt.ideal,
            panel=panel,
            ask=self.asker(work.priority, usage, purpose="extract", stops=stops),
            errors=failures,
        )
        if _pending(result, stops):
            return None
        if extracted is None:
            result.error = (
                "this prompt is scored on key points extracted from its ideal answer, and they could "
                "not be extracted: " + ("; ".join(failures) or "no model gave any key point")
            )
            result.error_kind = "extraction"
        return extracted

    async def assess(
        self,
        points: list[EvalPoint],
        *,
        text: str,
        history: list[dict[str, Any]],
        generated_indices: list[int],
        model_id: str,
        prompt_id: str,
        config: dict[str, Any],
        description: str | None,
        panel: JudgePanel,
        ask: judging.Ask,
    ) -> list[PointAssessment]:
        """Score ``text`` against ``points``: function points first, then judged ones (docs/scoring.md, 'Assessment order')."""
        function_points = [p for p in points if p.is_function or p.authoring_error]
        judge = functools.partial(
            judging.judge_points,
            subject_text=text,
            history=history,
            generated_indices=generated_indices,
            description=description,
            panel=panel,
            ask=ask,
        )
        if not function_points:
            # Nothing to score meanwhile: the judges are awaited here, in no task of their own
            # (a task, its first step a turn of the loop later, and its wake-up: an item's).
            return list(await judge(points))
        ctx = scoring.PointContext(
            messages=history,
            model_id=model_id,
            prompt_id=prompt_id,
            config=config,
            generated_assistant_indices=generated_indices,
            allowed_env=self.settings.allowed_env,
        )
        text_points = [p for p in points if not (p.is_function or p.authoring_error)]
        function_task = scoring.score_function_points(function_points, text, ctx, call_external=self.external.call)
        if not text_points:  # nothing to judge: no gather, whose two tasks cost more than the points here
            return list(await function_task)
        # The judges in a task of their own, the function points here meanwhile: what gather's
        # two tasks did, with one. The judges' requests start no later than under gather.
        judge_task = asyncio.ensure_future(judge(text_points))
        try:
            function_results = await function_task
        except asyncio.CancelledError:
            judge_task.cancel()  # the item was cancelled: its judges with it, as gather's children
            raise
        except BaseException:
            # As gather: the first error is the item's, the judges go on; theirs is retrieved.
            judge_task.add_done_callback(_retrieved)
            raise
        judged = await judge_task
        return list(function_results) + list(judged)

    async def generate(self, work: ItemWork, usage: dict[str, Usage]) -> Conversation:
        prompt = work.prompt
        if work.model.id in BUILTIN_MODELS and work.model.custom is None:
            return _builtin_conversation(work)
        fixtures = self.settings.fixtures
        conversation = await generate_conversation(
            self.engine,
            work.model,
            [dict(role=m.role, content=m.content) for m in prompt.messages],
            system=work.system_prompt,
            temperature=work.sent_temperature,
            no_cache=prompt.no_cache,
            priority=work.priority,
            sample=work.sample,
            fixture=fixture_pick(work, fixtures),
        )
        if work.model.id in usage:
            _add_usage(usage, work.model.id, conversation.usage)
        else:  # the first usage of the item (the usual case): the conversation's own record, made for it
            usage[work.model.id] = conversation.usage
        return conversation

    def asker(
        self,
        priority: int,
        usage: dict[str, Usage],
        *,
        purpose: str,
        stops: list[ModelCallError] | None = None,
        shared_by: int = 0,
    ):
        """How judges ask: through the engine, counted in ``usage``; a request the budget
        refused, or one waiting in a batch, is noted in ``stops`` (the item's judges then failed
        for that reason alone). ``shared_by``: how many criteria each judge is asked about this
        answer, every call sharing all of its prompt but the criterion (a provider's prompt cache
        may keep that prefix: ``ModelRequest.shared_prefix_chars``)."""

        async def ask(judge: Any, messages: list[dict], temperature: float, max_tokens: int) -> str:
            model = self.model_spec(judge.model)
            prefix = judging.shared_prefix_chars(messages[-1]["content"] or "") if shared_by > 1 and messages else 0
            request = ModelRequest(
                model=model,
                messages=tuple(ChatMessage(m["role"], m["content"]) for m in messages),
                temperature=temperature,
                max_tokens=max_tokens,
                priority=priority,
                purpose=purpose,
                shared_prefix_chars=prefix,
                shared_by=shared_by if prefix else 0,
            )
            try:
                reply = await self.engine.complete(request)
            except (BudgetReached, BatchPending, StoreStoppedError) as exc:
                if stops is not None:
                    stops.append(exc)
                raise
            if model.id in usage:
                _add_usage(usage, model.id, reply.usage())
            else:  # its first reply for the item (the usual case): the reply's own record, made for it
                usage[model.id] = reply.usage()
            return reply.text

        return ask


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _judged_count(points: list[EvalPoint]) -> int:
    """How many criteria a judge is asked about one answer: its text points."""
    return sum(1 for point in points if not (point.is_function or point.authoring_error))


# json.dumps(what, sort_keys=True, default=str), the encoder made once (it is asked for every item)
_digest_json = json_encoder(sort_keys=True, default=str)


def content_digest(work: ItemWork, threshold: float) -> str:
    """What the item's answers and scores depend on, as ``ItemResult.content_digest``: the
    sha256 of ``_digest_json([effective model id, system prompt, prompt as written, threshold,
    evaluation config])``. The list's JSON is put together from its items' (the C encoder's
    ``[a, b]``), the prompt's and the configuration's encoded once: each is shared by the
    items of every model of its prompt or blueprint."""
    return _content_digest(work, work.effective_model_id, work.system_prompt, threshold)


def _content_digest(work: ItemWork, model_id: str, system_prompt: str | None, threshold: float) -> str:
    """``content_digest``, given the work's effective model id and system prompt (properties
    that ``blank_result`` reads once for both)."""
    what = ", ".join(
        (
            _digest_json(model_id),
            _digest_json(system_prompt),
            _shared_json(work.prompt.raw),
            _digest_json(threshold),
            _shared_json(work.blueprint.evaluation_config),
        )
    )
    return hashlib.sha256(f"[{what}]".encode()).hexdigest()[:32]


# id of a blueprint's prompt or configuration -> (it, its ``_digest_json``); the object is kept
# beside its text, so its id is not another's while the entry lives.
_SHARED_JSON: dict[int, tuple[Any, str]] = {}


def _shared_json(value: Any) -> str:
    known = _SHARED_JSON.get(id(value))
    if known is not None and known[0] is value:
        return known[1]
    if len(_SHARED_JSON) >= 4096:  # bounded, whatever builds blueprints on the way
        _SHARED_JSON.clear()
    text = _digest_json(value)
    _SHARED_JSON[id(value)] = (value, text)
    return text


def blank_result(work: ItemWork, threshold: float) -> ItemResult:
    """The item's result before anything is known of it: an error until it is scored."""
    blueprint, prompt = work.blueprint, work.prompt
    model_id, system_prompt = work.effective_model_id, work.system_prompt
    return ItemResult(
        nodeid=work.nodeid,
        blueprint_id=blueprint.id,
        blueprint_path=blueprint.path,
        blueprint_title=blueprint.title,
        prompt_id=prompt.id,
        prompt_line=prompt.location.line,
        prompt_weight=prompt.weight,
        model_id=work.model.id,
        effective_model_id=model_id,
        temperature=work.sent_temperature,
        system_index=work.system_index if blueprint.multi_system else None,
        system_prompt=system_prompt,
        outcome="error",
        threshold=threshold,
        sample=work.sample,
        content_digest=_content_digest(work, model_id, system_prompt, threshold),
    )


def _refused(
    work: ItemWork,
    result: ItemResult,
    context: Callable[[], scoring.PointContext],
    fixtures: ResponseFixtures | None,
) -> bool:
    """Decide the items known before any answer is paid for (not run for a missing key, a prompt
    that cannot run, mistaken points, nothing to score, no fixture under
    --weval-fixtures-strict); True when ``result`` is decided."""
    if work.blocked is not None:
        result.outcome, result.error, result.not_run = work.blocked_outcome, work.blocked, True
        result.error_kind = "missing_key"
        return True
    prompt = work.prompt
    if prompt.validation_error:
        result.error = f"the blueprint's prompt '{prompt.id}' cannot run as written: {prompt.validation_error}"
        result.error_kind, result.error_line = "blueprint", prompt.location.line
        return True
    mistakes = mistaken_points(prompt)
    if mistakes:  # known before any answer: the item errors without spending a generation
        result.error = mistakes_message(
            [(p.display_text, error, p.location.line if p.location else None) for p, error in mistakes]
        )
        # The Weval JSON records these points' errors as the reference does (ruling 9); the
        # other points are not scored, since no answer was paid for.
        result.points = scoring.mistake_assessments([p for p, _ in mistakes], context())
        result.error_kind = "blueprint"
        return True
    if not prompt.points and not prompt.ideal:  # nothing to score: nothing is paid for
        _nothing_to_score(result)
        return True
    missing = missing_fixture(work, fixtures)
    if missing is not None:
        result.error, result.error_kind = missing, "no_fixture"
        return True
    return False


def _nothing_to_score(result: ItemResult) -> None:
    result.outcome = "skipped"
    result.error = NOTHING_TO_SCORE
    result.error_kind = "no_points"


def _answered(work: ItemWork, result: ItemResult, conversation: Conversation) -> str | None:
    """Record the conversation on ``result`` and return what its points are scored on; None
    when it failed (``result`` says why)."""
    text, result.history = judged_subject(conversation)
    result.generated_texts = list(conversation.generated_texts)
    result.response = conversation.final_text
    result.fixture = conversation.fixture
    if conversation.error_kind == "batch_pending":  # --weval-batch=submit: a later run collects it
        result.outcome, result.error, result.error_kind = "skipped", conversation.error, "batch_pending"
        return None
    if conversation.error:
        result.error_kind = conversation.error_kind or "provider"
        # A stop (the budget, a store that keeps no reply) is no failure of the model's: the
        # item says the stop's own words, as an item stopped at its judging does.
        stopped = result.stopped
        result.error = conversation.error if stopped else f"generation failed for {work.model.id}: {conversation.error}"
        named = work.blueprint.model_locations.get(work.model.id)
        if result.error_kind == "unknown_model" and named is not None and named.line:
            result.error_line = named.line  # the mistake is where the id is written
        return None
    return text


def _score_into(result: ItemResult, assessments: list[PointAssessment], stops: list[ModelCallError]) -> None:
    """The item's score and outcome from its assessed points (``decide``: the pass rule)."""
    result.points = assessments
    if any(p.kind == "judged" for p in assessments):
        result.judge_agreement = judging.judge_agreement(assessments)
    result.score = scoring.round2(scoring.aggregate(assessments))
    verdict = decide(assessments, result.score, result.threshold)
    result.outcome, result.error, result.error_kind = verdict.outcome, verdict.error, verdict.kind
    halts = [stop for stop in stops if isinstance(stop, (BudgetReached, StoreStoppedError))]
    if verdict.kind == "judges" and halts:  # no judge was asked: the budget ran out, or the store keeps no reply
        result.error, result.error_kind = halts[-1].message, halts[-1].error_kind
    if verdict.outcome == "error":
        # No score says anything about the model (the terminal says "No score", junit
        # carries no weval_score); the points keep what could be scored.
        result.score = None


def _pending(result: ItemResult, stops: list[ModelCallError]) -> bool:
    """A judge or extraction request waits in a provider's batch (``--weval-batch=submit``): the
    item is skipped until a later run collects it, whatever the other requests said."""
    pending = next((stop for stop in stops if isinstance(stop, BatchPending)), None)
    if pending is None:
        return False
    result.outcome, result.error, result.error_kind, result.score = "skipped", pending.message, "batch_pending", None
    return True


def sends_nothing(prompt: Prompt) -> bool:
    """The prompt's items end before anything is sent (``_evaluate_into``): it cannot run as
    written, a point has an authoring mistake, or there is nothing to score."""
    return bool(prompt.validation_error or mistaken_points(prompt) or not (prompt.points or prompt.ideal))


def fixture_pick(work: ItemWork, fixtures: ResponseFixtures | None) -> FixturePick | None:
    """The item's canned answer from --weval-fixtures, if any (docs/fixtures.md)."""
    if fixtures is None:
        return None
    # The run label the reference seeds its pick with: the blueprint's content hash.
    return fixtures.pick(work.prompt.id, work.model.id, work.effective_model_id, work.blueprint.content_hash)


def asks_tested_model(work: ItemWork, fixtures: ResponseFixtures | None) -> bool:
    """The item sends its tested model a request: it is not a built-in, it gets as far as
    generating, and some answer is not the fixture file's (under --weval-fixtures-strict such an
    answer is the item's error instead: nothing is sent). The pre-flight asks for the model's
    key and price, and the budget holds room for it, only then."""
    if _is_builtin(work) or sends_nothing(work.prompt) or (fixtures is not None and fixtures.strict):
        return False
    return asks_model([(m.role, m.content) for m in work.prompt.messages], fixture_pick(work, fixtures))


def missing_fixture(work: ItemWork, fixtures: ResponseFixtures | None) -> str | None:
    """Under --weval-fixtures-strict, the item's error when some answer of its conversation is
    not in the fixture file (the reference's documented ``--fixtures-strict``: an error instead
    of a live generation); None when the file gives every answer, or the run is not strict.
    The item errors before anything is sent, its judges included; the pre-flight and the plan
    count nothing for it (docs/fixtures.md, 'Strict fixtures')."""
    if fixtures is None or not fixtures.strict or _is_builtin(work):
        return None
    pick = fixture_pick(work, fixtures)
    answers = planned_answers([(m.role, m.content) for m in work.prompt.messages], pick)
    if all(answer is not None for answer in answers):
        return None
    where = fixtures.place(work.prompt.id)
    item = f"{work.prompt.id} x {work.model.id}"
    if pick is None:
        return f"{where}: no fixture for {item} (--weval-fixtures-strict: nothing is generated live)"
    first = next(i for i, answer in enumerate(answers) if answer is None)
    return (
        f"{where}: no fixture for {item}: its answers cover {first} of the {len(answers)} assistant turns "
        "(--weval-fixtures-strict: nothing is generated live)"
    )


def _is_builtin(work: ItemWork) -> bool:
    """``ideal`` and ``echo`` answer as always: fixtures apply to real models."""
    return work.model.id in BUILTIN_MODELS and work.model.custom is None


def mistaken_points(prompt: Prompt) -> list[tuple[EvalPoint, str]]:
    """The prompt's points with an authoring mistake, and what it is (docs/rulings.md, ruling 9):
    such a point errors on every answer, so its item errors before anything is sent."""
    found = []
    for point in prompt.points:
        error = point.authoring_error or scoring.pattern_error(point)
        if error:
            found.append((point, error))
    return found


def judged_subject(conversation: Conversation) -> tuple[str, list[dict[str, Any]]]:
    """What the points are scored on: the generated text (every generated turn of a
    multi-turn prompt) and the conversation as the judges' transcript shows it."""
    text = scoring.subject_text(conversation.generated_texts, conversation.final_text or "")
    return text, [dict(role=m["role"], content=m["content"]) for m in conversation.history]


def _add_usage(usage: dict[str, Usage], model_id: str, extra: Usage | None) -> None:
    if extra is None:
        return
    total = usage.get(model_id)
    if total is None:
        total = usage[model_id] = Usage()
    total.add(extra)


def _builtin_conversation(work: ItemWork) -> Conversation:
    """`ideal` answers with the prompt's ideal text, `echo` with the last user message."""
    prompt = work.prompt
    history: list[dict[str, Any]] = []
    if work.system_prompt is not None:
        history.append(dict(role="system", content=work.system_prompt))
    if work.model.id == "ideal" and not prompt.ideal:
        return Conversation(
            history=history + [dict(role=m.role, content=m.content) for m in prompt.messages],
            generated_indices=[],
            generated_texts=[],
            final_text=None,
            error="model 'ideal' needs an `ideal` answer, and this prompt has none",
            error_kind="config",
        )
    generated_indices: list[int] = []
    generated_texts: list[str] = []
    assistant_index = 0
    last_user = ""

    def answer() -> str:
        return prompt.ideal if work.model.id == "ideal" else last_user  # type: ignore[return-value]

    for message in prompt.messages:
        if message.role == "assistant":
            content = message.content
            if content is None:
                content = answer()
                generated_indices.append(assistant_index)
                generated_texts.append(content)
            history.append(dict(role="assistant", content=content))
            assistant_index += 1
            continue
        if message.role == "user":
            last_user = message.content or ""
        history.append(dict(role=message.role, content=message.content))
    if prompt.messages and prompt.messages[-1].role == "user":
        content = answer()
        history.append(dict(role="assistant", content=content))
        generated_indices.append(assistant_index)
        generated_texts.append(content)
    final = generated_texts[-1] if generated_texts else None
    return Conversation(
        history=history,
        generated_indices=generated_indices,
        generated_texts=generated_texts,
        final_text=final,
        error=None if final else "nothing was generated",
    )
