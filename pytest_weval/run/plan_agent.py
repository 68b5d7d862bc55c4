"""The plan of agent eval cases (docs/agent-formats.md, 'The plan'; docs/engine.md, 'The plan'),
on the blueprint items' ``PlanClient``: it reads the cache and sends nothing.

A case under a model target asks for its answer with the runner's own request
(``AgentRunner.generation``), looked up and counted by the client, once per sample under
``--weval-repeat=N``. When the cache holds the answer, each judged evaluator (llm_judge, rubric, a
case with no evaluator judged freeform: ``judged_evaluators``) is judged on it as the run judges
it, through the runner's own asker, so the judge requests are the run's and are looked up in
turn. When it does not, or the target is a ``cli`` program (run only by the run), each judge
call is counted under a stand-in key made of the answer's identity, the judge model and the
judge prompt built around an unknown answer (its input counting the answer at its output cap):
cases that will get the same answer and ask the same judge the same thing count once. Nothing
is run: no cli target, no code judge (a code judge sends no model request, so it counts nothing).
"""

from __future__ import annotations

from typing import Any

from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.engine.errors import ConfigError, ModelCallError
from pytest_weval.engine.request import ModelRequest
from pytest_weval.formats.model import AgentMessage, AgentOutput, Evaluator
from pytest_weval.judges import agent as agent_judges
from pytest_weval.judges.agent_prompts import judge_messages
from pytest_weval.judges.config import JUDGE_TEMPERATURE
from pytest_weval.run.agent import AgentRunner, AgentWork, judge_for, judged_evaluators, model_output
from pytest_weval.run.plan import OUTPUT_HIGH_DEFAULT, PlanClient, asked_identity
from pytest_weval.run.programs.code_judge import case_needs_exec

# Where the answer goes in a foreseen judge prompt: its length counted apart (``CasePlanner.foresee``).
_UNKNOWN_ANSWER = "(the answer, not known yet)"


class CasePlanner:
    """Counts agent eval cases' requests into a ``PlanClient``: their answers, and their judges'
    calls."""

    def __init__(self, client: PlanClient, runner: AgentRunner, custom_models: dict[str, dict[str, Any]]):
        self.client = client
        self.runner = runner
        self.custom_models = custom_models
        self._ask = runner.asker(0, {}, "judge")  # the run's judge requests, on the plan's client

    def sends_nothing(self, work: AgentWork) -> bool:
        """The run ends the case before any request (``AgentRunner._evaluate_into``'s checks).
        A case whose key is missing is counted, as a blueprint item is: the plan lists the key,
        and its figures are what the run sends once the key is set."""
        target = work.target
        needs_exec = target.program is not None or case_needs_exec(work.case)
        return (
            work.blocked is not None
            or bool(work.case.problem or target.problem)
            or (needs_exec and not self.runner.programs.allow_exec)
            or (target.model is None and target.program is None)
        )

    async def case(self, work: AgentWork) -> None:
        if self.sends_nothing(work):
            return
        judged = judged_evaluators(work.case)
        if work.target.program is not None:  # a program's answer: known only once the run runs it
            answer = ("cli", repr(work.target.program), str(work.suite.directory), repr(work.case.input))
            # no output cap: its length taken as an unknown answer's is for an embedding (run/plan.py)
            self.foresee(work, judged, answer, OUTPUT_HIGH_DEFAULT)
            return
        request = self.runner.generation(work)
        try:
            reply = await self.client.complete(request)
        except ConfigError:
            return  # no provider takes the model: the case's error, unsent
        except ModelCallError:  # not in the cache: counted, to send
            # the answer at most its request's output cap, as the plan counts that request
            self.foresee(work, judged, asked_identity(request), self.client.max_output(request))
            return
        if not reply.text.strip():
            return  # an empty answer is the case's error: no judge is asked
        output = model_output(reply)
        for evaluator in judged:
            # Each call looked up (and counted) by the client; one it lacks ends the evaluator's
            # judging as a failed call ends it in the run.
            judge = judge_for(evaluator, work, self.runner.judges)
            await agent_judges.judge_agent_evaluator(work.case, evaluator, output, self._ask, judge)

    def foresee(self, work: AgentWork, judged: list[Evaluator], answer: tuple[Any, ...], answer_tokens: int) -> None:
        """The judge calls of an answer not known yet, under stand-in keys: the answer's
        identity, the judge, and the judge prompt around an unknown answer (the question, the
        criteria, the evaluator's rubrics or template). Their input is that prompt's and, where
        the prompt holds the answer, ``answer_tokens`` each time (at most the answer's output
        cap; ``ModelPlan.request_costs`` takes it at both ends of the cost range). A judge asked
        again after a reply that does not parse is not counted: whether one will not parse is
        known only once it comes, as the blueprint path leaves out the backup judge asked when a
        primary fails (docs/agent-formats.md, 'The plan')."""
        unknown = AgentOutput(messages=(AgentMessage(role="assistant", text=_UNKNOWN_ANSWER),))
        for evaluator in judged:
            judge = judge_for(evaluator, work, self.runner.judges)
            max_output = self._max_output(judge)
            if max_output is None:
                continue
            messages = tuple((m["role"], m["content"]) for m in judge_messages(work.case, evaluator, unknown))
            held = sum(content.count(_UNKNOWN_ANSWER) for _, content in messages)  # a template may hold it twice
            chars = sum(len(content) for _, content in messages) - held * len(_UNKNOWN_ANSWER)
            self.client.foresee(
                ("agent judge", answer, judge, messages), judge, "judge", chars / 4, max_output, held * answer_tokens
            )

    def _max_output(self, judge: str) -> int | None:
        """A judge request's output cap, as its adapter reads it; None when no provider takes
        the judge (the run's error, unsent)."""
        shell = ModelRequest(
            model=ModelSpec(id=judge, custom=self.custom_models.get(judge)),
            messages=(),
            temperature=JUDGE_TEMPERATURE,
            max_tokens=agent_judges.AGENT_JUDGE_MAX_TOKENS,
            purpose="judge",
        )
        try:
            return self.client.max_output(shell)
        except ModelCallError:
            return None
