"""One agent eval case under one target: answer -> evaluators -> one ``ItemResult``.

The same record as a blueprint item's, so the roll-up, junit, JSON, HTML and the baseline read
agent cases as they read prompts: the suite is the "blueprint", the case the "prompt", the
target the "model", and each top-level evaluator one point (docs/agent-formats.md).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.engine.errors import EmptyReplyError, ModelCallError
from pytest_weval.engine.request import ChatMessage, ModelClient, ModelReply, ModelRequest
from pytest_weval.errors import ErrorKind
from pytest_weval.formats.model import (
    PASS_AT,
    AgentCase,
    AgentMessage,
    AgentOutput,
    AgentSuite,
    Evaluator,
    EvaluatorResult,
    TargetDef,
)
from pytest_weval.judges import agent as agent_judges
from pytest_weval.judges.config import DEFAULT_JUDGES
from pytest_weval.results import REQUIRED_CHECK, ItemResult, Outcome, Usage
from pytest_weval.run.generation import generation_request
from pytest_weval.run.programs.cli_target import run_cli_target
from pytest_weval.run.programs.code_judge import case_needs_exec, run_code_judge
from pytest_weval.run.programs.runner import ExecNotAllowed, ProgramError, ProgramRunner
from pytest_weval.scoring import agent as agent_scoring

# Providers of .agentv/targets.yaml that are chat models the engine already speaks to.
TARGET_PROVIDERS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "gemini": "google",
    "google": "google",
    "google-gemini": "google",
    "mistral": "mistral",
    "together": "together",
    "xai": "xai",
    "openrouter": "openrouter",
}
PROGRAM_TIMEOUT_S = 300.0  # AgentEvals' default execution.timeout_seconds
EXEC_REFUSED = (
    "this case runs a program named by its eval file (a code judge or a cli target), and programs from "
    "eval files run only when allowed: pass --weval-allow-exec (ini weval_allow_exec = true) if you trust "
    "this file; nothing was started"
)


@dataclasses.dataclass(frozen=True, slots=True)
class ResolvedTarget:
    """What a case runs against: a chat model, a ``cli`` program, or a reason it cannot run."""

    label: str  # in the node id, and the result's model id
    model: ModelSpec | None = None
    program: TargetDef | None = None
    judge: str | None = None  # the target's judge_target, as a model id
    problem: str | None = None


def resolve_targets(
    suite: AgentSuite,
    case: AgentCase,
    *,
    models: Sequence[str],
    custom_models: Mapping[str, dict[str, Any]],
) -> list[ResolvedTarget]:
    """The case's targets (docs/rulings.md, ruling 22): ``--weval-models`` override any target
    the file names; else the case's, else the file's, else ``default``. A name is a named entry
    of ``.agentv/targets.yaml`` or a model id; ``default`` without either is the first of
    ``--weval-models`` (else a clear error)."""
    if models:
        return [ResolvedTarget(label=m, model=ModelSpec(id=m, custom=custom_models.get(m))) for m in models]
    names = case.targets or suite.targets or ("default",)
    return [_resolve(name, suite, custom_models) for name in names]


def _resolve(name: str, suite: AgentSuite, custom_models: Mapping[str, dict[str, Any]]) -> ResolvedTarget:
    named = suite.named_targets.get(name)
    if named is not None:
        judge = _judge_model(named.judge_target, suite)
        if named.provider == "cli":
            return ResolvedTarget(label=name, program=named, judge=judge)
        provider = TARGET_PROVIDERS.get(named.provider)
        if provider is None or not named.model:
            why = (
                f"its provider '{named.provider}' is not one this plugin speaks to"
                if provider is None
                else "it names no model"
            )
            return ResolvedTarget(
                label=name,
                problem=f"target '{name}' of .agentv/targets.yaml cannot be used: {why} (unsupported target "
                "provider); run with --weval-models=<provider:model> to test a model instead",
            )
        model_id = f"{provider}:{named.model}"
        return ResolvedTarget(label=name, model=ModelSpec(id=model_id, custom=custom_models.get(model_id)), judge=judge)
    if ":" in name or name in custom_models:
        return ResolvedTarget(label=name, model=ModelSpec(id=name, custom=custom_models.get(name)))
    return ResolvedTarget(
        label=name,
        problem=f"target '{name}' is not a model id and no .agentv/targets.yaml entry names it: "
        "choose the model with --weval-models=<provider:model>",
    )


def _judge_model(target_name: str | None, suite: AgentSuite) -> str | None:
    if not target_name:
        return None
    named = suite.named_targets.get(target_name)
    if named is None:
        return target_name if ":" in target_name else None
    provider = TARGET_PROVIDERS.get(named.provider)
    return f"{provider}:{named.model}" if provider and named.model else None


@dataclasses.dataclass(frozen=True, slots=True)
class AgentWork:
    """What one agent item asks for: a case of a suite against one target."""

    nodeid: str
    suite: AgentSuite
    case: AgentCase
    target: ResolvedTarget
    priority: int = 0
    blocked: str | None = None
    blocked_outcome: Outcome = "error"
    sample: int = 0


Ask = Callable[[Any, list[dict], float, int], Awaitable[str]]
DEFAULT_JUDGE = DEFAULT_JUDGES[0].model  # AgentV asks one judge; without --weval-judges, Weval's first


def judge_for(evaluator: Evaluator, work: AgentWork, judges: Sequence[str]) -> str:
    """An evaluator's own judge target, else ``--weval-judges``' first, else the target's
    ``judge_target``, else the first of the default judges."""
    own = _judge_model(evaluator.judge, work.suite) if evaluator.judge else None
    return own or (judges[0] if judges else None) or work.target.judge or DEFAULT_JUDGE


def judged_evaluators(case: AgentCase) -> list[Evaluator]:
    """The evaluators of a case that ask a judge (composites looked into); a case with no
    evaluator is judged freeform by one."""
    if not case.evaluators:
        return [FREEFORM]
    found: list[Evaluator] = []
    todo = list(case.evaluators)
    while todo:
        evaluator = todo.pop(0)
        if evaluator.type in ("llm_judge", "rubric"):
            found.append(evaluator)
        todo.extend(evaluator.evaluators)
    return found


def judge_models(work: AgentWork, judges: Sequence[str]) -> set[str]:
    return {judge_for(evaluator, work, judges) for evaluator in judged_evaluators(work.case)}


FREEFORM = Evaluator(name="llm_judge", type="llm_judge")  # AgentV's judge of a case with no evaluator


class AgentRunner:
    """Evaluates agent works on the engine (answers, judges) and the program runner (cli
    targets, code judges)."""

    def __init__(
        self,
        engine: ModelClient,
        programs: ProgramRunner,
        *,
        judges: Sequence[str] | None,
        borderline_fails: bool,
        asker: Callable[[int, dict[str, Usage], str], Ask],
    ):
        self.engine = engine
        self.programs = programs
        self.judges = tuple(judges or ())
        self.borderline_fails = borderline_fails
        self.asker = asker

    async def evaluate(self, work: AgentWork) -> ItemResult:
        started = time.monotonic()
        usage: dict[str, Usage] = {}
        case = work.case
        result = ItemResult(
            nodeid=work.nodeid,
            blueprint_id=work.suite.id,
            blueprint_path=work.suite.path,
            blueprint_title=work.suite.title,
            prompt_id=case.id,
            prompt_line=case.location.line,
            model_id=work.target.label,
            effective_model_id=work.target.label,
            outcome="error",
            threshold=PASS_AT,
            sample=work.sample,
            source="agent eval file",
        )
        try:
            await self._evaluate_into(work, result, usage)
        except ExecNotAllowed as exc:
            result.outcome, result.error, result.error_kind = "error", str(exc), "not_allowed"
        except ProgramError as exc:  # the cli target under test could not answer
            result.outcome, result.error, result.error_kind = "error", str(exc), "program"
        except ModelCallError as exc:
            result.outcome, result.error, result.error_kind = "error", str(exc), exc.error_kind
        except Exception as exc:  # noqa: BLE001 - one item's failure must never stop the run
            result.outcome = "error"
            result.error = result.error or f"{type(exc).__name__}: {exc}"
            result.error_kind = result.error_kind or "internal"
        result.usage = usage
        result.duration_s = time.monotonic() - started
        return result

    async def _evaluate_into(self, work: AgentWork, result: ItemResult, usage: dict[str, Usage]) -> None:
        if work.blocked is not None:
            result.outcome, result.error, result.not_run = work.blocked_outcome, work.blocked, True
            result.error_kind = "missing_key"
            return
        case, target = work.case, work.target
        problem = case.problem or target.problem
        if problem:
            result.error, result.error_kind = problem, "blueprint"
            where = case.problem_location if case.problem else None
            if where is not None and where.path == work.suite.path:
                result.error_line = where.line or None
            return
        if not self.programs.allow_exec and (target.program is not None or case_needs_exec(case)):
            # Known before anything is asked: the target is not called (or paid) for a case
            # whose code judge could not run anyway (docs/rulings.md, ruling 27).
            result.error, result.error_kind = EXEC_REFUSED, "not_allowed"
            return
        output = await self._answer(work, usage)
        result.response = output.answer
        result.generated_texts = [output.answer]
        result.history = [{"role": m.role, "content": m.text} for m in (*case.input, *output.messages)]
        evaluators = case.evaluators or (FREEFORM,)
        ask = self.asker(work.priority, usage, "judge")
        results = [await self._run(evaluator, work, output, ask) for evaluator in evaluators]
        scored = agent_scoring.aggregate_case(results)
        result.points = agent_scoring.to_point_assessments(results)
        if scored.error:
            result.error, result.error_kind = scored.error, _broken_kind(scored, results)
            return
        result.score = scored.score
        result.verdict = scored.verdict
        if scored.verdict == "pass" or (scored.verdict == "borderline" and not self.borderline_fails):
            result.outcome = "passed"
        else:
            result.outcome = "failed"
            if scored.gate_failures:
                result.required_checks_failed = list(scored.gate_failures)
                result.error = REQUIRED_CHECK + "; ".join(scored.gate_failures)

    async def _answer(self, work: AgentWork, usage: dict[str, Usage]) -> AgentOutput:
        case, target = work.case, work.target
        if target.program is not None:
            return await run_cli_target(
                self.programs,
                target.program,
                case,
                cwd=Path(target.program.cwd or work.suite.directory),
                timeout_s=target.program.timeout_s or case.timeout_s or PROGRAM_TIMEOUT_S,
                attempt=work.sample,
            )
        request = self.generation(work)
        reply = await self.engine.complete(request)
        extra = reply.usage()
        usage.setdefault(request.model.id, Usage()).add(extra)
        if not reply.text.strip():
            raise EmptyReplyError(request.model.id)
        return model_output(reply)

    def generation(self, work: AgentWork) -> ModelRequest:
        """The request for a model target's answer to the case (the plan builds it here too,
        run/plan_agent.py, so that it counts and looks up what the run sends)."""
        model = work.target.model
        assert model is not None
        return generation_request(
            model, [_chat_message(m) for m in work.case.input], priority=work.priority, sample=work.sample
        )

    async def _run(self, evaluator: Evaluator, work: AgentWork, output: AgentOutput, ask: Ask) -> EvaluatorResult:
        if evaluator.type == "composite":
            children = [await self._run(child, work, output, ask) for child in evaluator.evaluators]
            return agent_scoring.composite(evaluator, children)
        if evaluator.type in ("llm_judge", "rubric"):
            judge = judge_for(evaluator, work, self.judges)
            return await agent_judges.judge_agent_evaluator(work.case, evaluator, output, ask, judge)
        if evaluator.type == "code_judge":
            judged = await run_code_judge(
                self.programs,
                evaluator,
                work.case,
                output,
                cwd=Path(evaluator.cwd or work.suite.directory),
                timeout_s=evaluator.timeout_s or work.case.timeout_s or PROGRAM_TIMEOUT_S,
            )
            return agent_scoring.finalize_result(evaluator, judged)
        return agent_scoring.score_evaluator(evaluator, work.case, output)


def model_output(reply: ModelReply) -> AgentOutput:
    """A model target's reply as the evaluators read it."""
    return AgentOutput(
        messages=(AgentMessage(role="assistant", text=reply.text),),
        duration_ms=reply.latency_s * 1000 if reply.latency_s else None,
        input_tokens=reply.input_tokens,
        output_tokens=reply.output_tokens,
    )


def _chat_message(message: AgentMessage) -> ChatMessage:
    # A chat model takes system, user and assistant turns; a tool result in the input history
    # is given as a user turn that says what it is (docs/agent-formats.md, 'Inputs').
    if message.role == "tool":
        return ChatMessage("user", f"[tool result{f' {message.name}' if message.name else ''}]\n{message.text}")
    return ChatMessage(message.role, message.text)


def _broken_kind(scored: agent_scoring.CaseScore, results: Sequence[EvaluatorResult]) -> ErrorKind:
    """Why a case has no score: the file's mistake, a program it names, or its judges."""
    if scored.authoring_error:
        return "blueprint"
    broken = {r.type for r in results if r.error is not None}
    return "program" if broken <= {"code_judge"} else "judges"
