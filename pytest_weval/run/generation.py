"""Turn-by-turn generation of one conversation (docs/format.md, 'Multi-turn generation')."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from pytest_weval.blueprint.fixtures import FixturePick, FixtureSource
from pytest_weval.blueprint.model import ModelSpec
from pytest_weval.engine.errors import EmptyReplyError, ModelCallError
from pytest_weval.engine.request import ChatMessage, ModelClient, ModelRequest
from pytest_weval.errors import ErrorKind
from pytest_weval.results import Usage


@dataclasses.dataclass
class Conversation:
    history: list[dict[str, Any]]  # the working history, system message included
    generated_indices: list[int]  # indices among the assistant turns that were generated
    generated_texts: list[str]
    final_text: str | None  # the last generated turn; None when generation failed
    error: str | None = None
    usage: Usage = dataclasses.field(default_factory=Usage)
    fixture: FixtureSource | None = None  # some answer came from the fixture file (docs/fixtures.md)
    error_kind: ErrorKind | None = None
    failure: ModelCallError | None = None  # the error itself, for a caller that raises it (``Weval.generate``)


def _role_content(message: Any) -> tuple[str, str | None]:
    if isinstance(message, tuple):
        return message
    if isinstance(message, dict):
        return message["role"], message.get("content")
    return message.role, message.content


def planned_answers(messages: Iterable[Any], fixture: FixturePick | None) -> list[tuple[FixtureSource, str] | None]:
    """The answers a conversation takes, in the order ``generate_conversation`` meets them (each
    ``assistant: null`` turn, then the trailing one when there is one): the fixture's source and
    text where the fixture answers, None where the model is asked. The pre-flight and the plan
    read it to know whether the tested model is sent anything (docs/fixtures.md)."""
    authored = [_role_content(m) for m in messages]
    nulls = sum(1 for role, content in authored if role == "assistant" and content is None)
    turns = fixture.turns if fixture is not None and fixture.turns is not None else ()
    answers: list[tuple[FixtureSource, str] | None] = [
        ("turns", turns[index]) if index < len(turns) and turns[index] else None for index in range(nulls)
    ]
    if authored and authored[-1][0] == "user":
        trailing = True
    else:
        # docs/format.md, 'Multi-turn generation': with no null turn, the last fixed assistant
        # text is the answer (nothing is asked); with none either, one answer is.
        trailing = nulls == 0 and not any(role == "assistant" and content is not None for role, content in authored)
    if trailing:
        final = fixture.final if fixture is not None and nulls == 0 else None
        answers.append(("final", final) if final else None)
    return answers


def answers_asked(messages: Iterable[Any]) -> int:
    """How many answers a conversation asks of the model with no fixture: one per ``assistant:
    null`` turn, and one more at the end when the last message is a user's (at least one). The
    budget's hold and the plan's foreseen turns count with it."""
    return max(1, len(planned_answers(messages, None)))


def first_generation(messages: Iterable[Any], system: str | None) -> tuple[tuple[str, str | None], ...] | None:
    """The messages of the conversation's first generation request, as ``generate_conversation``
    builds it: the system prompt and the messages before the first ``assistant: null`` (all of
    them when there is none); None when it asks for no generation (its last assistant turn is
    written out)."""
    authored = [_role_content(m) for m in messages]
    history: list[tuple[str, str | None]] = [("system", system)] if system else []
    for role, content in authored:
        if role == "assistant" and content is None:
            return tuple(history)
        history.append((role, content))
    if authored and authored[-1][0] == "user":
        return tuple(history)
    if any(role == "assistant" and content is not None for role, content in authored):
        return None
    return tuple(history)


def generation_request(
    model: ModelSpec,
    messages: Iterable[ChatMessage | Mapping[str, Any]],
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
    no_cache: bool = False,
    priority: int = 0,
    sample: int = 0,
) -> ModelRequest:
    """The request that asks a tested model for an answer (blueprint prompts, the budget's hold
    for them, agent eval cases): every generation is built here."""
    return ModelRequest(
        model=model,
        messages=tuple(m if isinstance(m, ChatMessage) else ChatMessage(m["role"], m.get("content")) for m in messages),
        temperature=temperature,
        max_tokens=max_tokens,
        no_cache=no_cache,
        priority=priority,
        purpose="generate",
        sample=sample,
    )


def asks_model(messages: Iterable[Any], fixture: FixturePick | None) -> bool:
    """The conversation sends the tested model a request: some answer is not the fixture's."""
    return any(answer is None for answer in planned_answers(messages, fixture))


async def generate_conversation(
    engine: ModelClient,
    model: ModelSpec,
    messages: Iterable[Any],
    system: str | None,
    temperature: float,
    no_cache: bool,
    priority: int = 0,
    max_tokens: int | None = None,
    sample: int = 0,
    fixture: FixturePick | None = None,
) -> Conversation:
    """Walk the authored messages, generating at each ``assistant: null`` and once more at the
    end when the last authored message is a user turn. An empty or blank reply is an error.

    A ``fixture`` answers instead of the model where it can, as the reference's fixtures do:
    its ``turns`` fill the ``assistant: null`` turns in order (the trailing answer is still
    generated), its ``final`` answers the trailing turn when no turn was generated before.

    On a ``ModelCallError`` the conversation carries ``error`` (the message), and its history
    is the reference's: the authored messages with the null turns removed, then the error as
    an ``<<error>>…<</error>>`` assistant turn.
    """
    authored = [_role_content(m) for m in messages]
    history: list[dict[str, Any]] = []
    if system:
        history.append({"role": "system", "content": system})
    start = list(history)
    generated_indices: list[int] = []
    generated_texts: list[str] = []
    usages: list[Usage] = []  # each reply's, summed once at the end (a conversation has one, mostly)
    assistant_index = 0
    used: list[FixtureSource] = []
    planned = planned_answers(authored, fixture)

    async def turn() -> str:
        """The next answer (the fixture's, or the model's), generated at ``assistant_index``."""
        canned = planned[len(generated_texts)]
        if canned is None:
            text = await _generate(engine, model, history, usages, temperature, max_tokens, no_cache, priority, sample)
        else:
            used.append(canned[0])
            text = canned[1]
        generated_indices.append(assistant_index)
        generated_texts.append(text)
        return text

    try:
        for role, content in authored:
            if role == "assistant":
                if content is None:
                    content = await turn()
                assistant_index += 1
            history.append({"role": role, "content": content})
        if authored and authored[-1][0] == "user":
            history.append({"role": "assistant", "content": await turn()})
        elif not generated_texts:
            # docs/format.md, 'Multi-turn generation': reachable only past the CLI's validation: the last fixed assistant text,
            # or else one generation from what there is.
            fixed = [c for r, c in authored if r == "assistant" and c is not None]
            if fixed:
                return Conversation(
                    history=history,
                    generated_indices=[],
                    generated_texts=[],
                    final_text=fixed[-1],
                    usage=_total(usages),
                )
            history.append({"role": "assistant", "content": await turn()})
    except ModelCallError as exc:
        return Conversation(
            history=_error_history(start, authored, exc),
            generated_indices=generated_indices,
            generated_texts=generated_texts,
            final_text=None,
            error=exc.message,
            error_kind=exc.error_kind,
            failure=exc,
            usage=_total(usages),
            fixture=used[-1] if used else None,
        )
    final = generated_texts[-1] if generated_texts else None
    return Conversation(
        history=history,
        generated_indices=generated_indices,
        generated_texts=generated_texts,
        final_text=final,
        error=None if final is not None else "nothing was generated",
        usage=_total(usages),
        fixture=used[-1] if used else None,
    )


async def _generate(
    engine: ModelClient,
    model: ModelSpec,
    history: list[dict[str, Any]],
    usages: list[Usage],
    temperature: float,
    max_tokens: int | None,
    no_cache: bool,
    priority: int,
    sample: int,
) -> str:
    """The model's answer to ``history``; an empty or blank reply is an error."""
    request = generation_request(
        model,
        history,
        temperature=temperature,
        max_tokens=max_tokens,
        no_cache=no_cache,
        priority=priority,
        sample=sample,
    )
    reply = await engine.complete(request)
    usages.append(reply.usage())
    if not reply.text or not reply.text.strip():
        raise EmptyReplyError(model.id)
    return reply.text


def _total(usages: list[Usage]) -> Usage:
    """The conversation's usage: its replies' summed (the first reply's record, made for it, holds the sum)."""
    if not usages:
        return Usage()
    total = usages[0]
    for usage in usages[1:]:
        total.add(usage)
    return total


def _error_history(
    start: list[dict[str, Any]], authored: list[tuple[str, str | None]], exc: ModelCallError
) -> list[dict[str, Any]]:
    """The reference's history of a failed generation: the authored messages with the null
    turns removed, then the error as an ``<<error>>…<</error>>`` assistant turn."""
    failed = start + [
        {"role": role, "content": content}
        for role, content in authored
        if not (role == "assistant" and content is None)
    ]
    failed.append({"role": "assistant", "content": f"<<error>>{exc.message}<</error>>"})
    return failed
