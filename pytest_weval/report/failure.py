"""What a person reads when an item fails (or errors): plain words, no traceback.

A failure message says: the score against the pass mark, what the model answered (shortened),
every point with its score, weight, path, kind and the judges' or function's reasons, and what
pulled the score down the most. An error message says why there is no score and what to do.

How much is shown follows pytest's own dials (docs/options.md, 'How much a failure shows'):
``short`` (``--tb=short``, ``-q``) gives the answer and one line per point, ``normal`` (the
default) adds the reasons, shortened, and ``full`` (``--tb=long``/``native``, ``-v``) cuts
nothing. ``crash_line`` is the one line pytest shows for ``--tb=line`` and in the short summary.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Literal

from pytest_weval.errors import ErrorKind
from pytest_weval.report._fmt import fmt_score, js_number, one_line, plural, shorten
from pytest_weval.report.breakdown import Breakdown, breakdown
from pytest_weval.results import Point, Result
from pytest_weval.scoring.aggregate import is_required

RESPONSE_CHARS = 600
REFLECTION_CHARS = 240
TOP_LOSSES = 5
WRAP = 100  # response lines are wrapped here so a long paragraph stays readable
SHORT_RESPONSE_CHARS = 300
CRASH_DETAIL_CHARS = 200  # an error's details in its one-line summary (the report has them whole)

Detail = Literal["short", "normal", "full"]


def detail_for(tbstyle: str, verbosity: int) -> Detail:
    """How much a failure shows for pytest's ``--tb`` style and ``-q``/``-v`` count."""
    if tbstyle in ("long", "native"):
        return "full"
    if tbstyle == "short":
        return "short"
    if verbosity < 0:
        return "short"
    return "full" if verbosity > 0 else "normal"


def _located(result: Result, line: int | None) -> str:
    return f"{result.blueprint_path}:{line}" if line else result.blueprint_path


def _where(result: Result) -> list[str]:
    labels = ("blueprint:", "prompt:   ", "model:    ")
    if result.source == "agent eval file":
        labels = ("eval file:", "case:     ", "target:   ")
    elif result.source == "promptfoo suite":
        labels = ("suite:    ", "test:     ", "provider: ")
    lines = [
        f"  {labels[0]} {result.blueprint_path} (id {result.blueprint_id})",
        f"  {labels[1]} {result.prompt_id}" + (f" (line {result.prompt_line})" if result.prompt_line else ""),
        f"  {labels[2]} {result.effective_model_id}",
    ]
    if len(result.sample_scores) > 1:  # --weval-repeat (docs/statistics.md, 'Repeats')
        lines.append(
            f"  samples:   {', '.join(fmt_score(x) for x in result.sample_scores)} (the score is their mean; "
            "the answer and points below are the lowest-scoring sample's)"
        )
    if result.fixture is not None:  # docs/fixtures.md
        what = "the answer" if result.fixture == "final" else "the assistant turns"
        lines.append(f"  fixture:   {what} came from the --weval-fixtures file, not from the model")
    if result.sample:
        lines.append(
            f"  attempt:   {result.sample + 1} (a rerun asked the model again; this answer is the one that counts)"
        )
    return lines


def _indent(text: str, prefix: str = "    | ", width: int = WRAP) -> list[str]:
    """The text as a quoted block, long lines wrapped (paragraphs and blank lines kept)."""
    lines = []
    for line in text.splitlines() or [""]:
        lines += [prefix + part for part in (textwrap.wrap(line, width) or [""])]
    return lines


def _judge_name(label: str) -> str:
    """``holistic-gemini-2-5-flash(openrouter:google/gemini-2.5-flash)`` -> its id."""
    head, sep, _ = label.partition("(")
    return head if sep and head else label


def _criterion(p: Point) -> str:
    """The point as written: ``contains("911")`` for a function point, the text otherwise."""
    text = one_line(p.key_point_text)
    return text.removeprefix("Function: ") if p.kind == "function" else text


def _point_label(p: Point, source: str = "blueprint") -> str:
    """``should: X``, or for a should_not point what it checks and whether the answer did it:
    ``must not: icontains("I don't know"): it does`` (its score is 1 minus how far it was met).
    An agent eval case's points are its evaluators: ``evaluator: rubric (rubric)``."""
    if source == "promptfoo suite":
        return f"assert: {_criterion(p)}"
    if source != "blueprint":
        return f"evaluator: {_criterion(p)}"
    if not p.is_inverted:
        return f"should: {_criterion(p)}"
    if p.coverage_extent is None:
        return f"must not: {_criterion(p)}"
    met = 1 - p.coverage_extent
    found = "it does" if met >= 1 else "it does not" if met <= 0 else f"partly (met {fmt_score(met)})"
    return f"must not: {_criterion(p)}: {found}"


def _point_lines(index: int, p: Point, detail: Detail, source: str = "blueprint") -> list[str]:
    limit = 0 if detail == "full" else REFLECTION_CHARS
    score = "ERROR" if p.coverage_extent is None else fmt_score(p.coverage_extent)
    head = f"  {index}. [{score}] {_point_label(p, source)}"
    if detail == "short":
        return [head + (f" (problem: {shorten(one_line(p.error), REFLECTION_CHARS)})" if p.error else "")]
    facts = ["judged by LLM" if p.kind == "judged" else "checked by function", f"weight {js_number(p.multiplier)}"]
    if not is_required(p):
        facts.append(f"alternative path {p.path_id}")
    if p.is_inverted:
        facts.append("inverted: meeting it lowers the score")
    if p.line:
        facts.append(f"line {p.line}")
    lines = [head, f"       ({', '.join(facts)})"]
    if p.error:
        kept = " (score kept)" if p.coverage_extent is not None else " (left out of the score)"
        lines.append(f"       problem{kept}: {shorten(one_line(p.error), limit)}")
    if p.individual_judgements:
        # A judge scores how far the criterion is met; for a should_not point that is what
        # lowers the score, so say so rather than print a 1.00 beside a point that scored 0.
        met = "met " if p.is_inverted else ""
        for j in p.individual_judgements:
            lines.append(
                f"       judge {_judge_name(j.judge_model_id)}: {met}{fmt_score(j.coverage_extent)} — "
                f"{shorten(one_line(j.reflection), limit) or '(no reason given)'}"
            )
    elif (
        p.reflection
        and not (p.error and p.reflection == f"Error: {p.error}")
        and not p.default_reflection  # says no more than the score
    ):
        label = "function result" if p.kind == "function" else "reason"
        lines.append(f"       {label}: {shorten(one_line(p.reflection), limit)}")
    if p.citation:
        lines.append(f"       source: {shorten(one_line(str(p.citation)), limit)}")
    return lines


def _pulled_down(result: Result, b: Breakdown) -> list[str]:
    lines: list[str] = []
    losses = sorted((x for x in b.losses if x.loss > 0), key=lambda x: (-x.loss, x.index))
    for x in losses[:TOP_LOSSES]:
        p = x.point
        weight = f", weight {js_number(p.multiplier)}" if p.multiplier != 1 else ""
        lines.append(
            f"  - point {x.index + 1} \"{shorten(_criterion(p), 100)}\" "
            f"scored {fmt_score(p.coverage_extent)}{weight}: it cost {fmt_score(x.loss)} of the score"
        )
    if len(losses) > TOP_LOSSES:
        lines.append(f"  - and {plural(len(losses) - TOP_LOSSES, 'smaller loss', 'smaller losses')}")
    if b.required_all_errored:
        share = fmt_score(1 / b.groups)
        lines.append(f"  - every required point errored, so that half counts as 0 (cost {share})")
    if b.paths:
        if b.best_path_all_errored:
            lines.append(
                f"  - no alternative path could be scored, so that part counts as 0 (cost {fmt_score(1 / b.groups)})"
            )
        others = [f"{p.path_id} {fmt_score(p.score)}" for p in b.paths if p.path_id != b.best_path]
        best = next(p for p in b.paths if p.path_id == b.best_path)
        text = f"  - alternative paths: only the best counts; {best.path_id} was best ({fmt_score(best.score)})"
        if others:
            text += "; the others scored " + ", ".join(others)
        if b.groups == 2:
            text += ". The best path and the required points count half each"
        lines.append(text + ".")
    if not lines and result.points:
        lines.append("  - no single point: every scored point was fully met")
    return lines


def _headline(result: Result) -> str:
    score, mark = fmt_score(result.score), fmt_score(result.threshold)
    if result.required_checks_failed:
        # An agent eval case fails a required check whatever its mean, and its score is then 0
        # as AgentV has it (docs/agent-formats.md, 'Scores and outcomes').
        return f"The case {result.error} (its score is {score} because of it; the pass mark is {mark})."
    return f"Score {score} is below the pass mark {mark} (scores run from 0 to 1)."


def explain_failure(result: Result, detail: Detail = "normal") -> str:
    """The failure message of an item whose score is below its threshold."""
    lines = [
        _headline(result),
        *_where(result),
        "",
    ]
    # The points scored every generated turn (joined as Weval joins them), so show them all.
    turns = result.generated_texts
    response = "\n\n".join(turns) if len(turns) > 1 else (result.response or "")
    if response:
        limit = {"short": SHORT_RESPONSE_CHARS, "normal": RESPONSE_CHARS, "full": 0}[detail]
        shown = shorten(response, limit)
        cut = "" if shown == response else f", first {limit} of {len(response)} characters"
        turns_note = f" ({len(turns)} generated turns)" if len(turns) > 1 else ""
        lines.append(f"What the model answered{turns_note}{cut}:")
        lines += _indent(shown)
    else:
        lines.append("What the model answered: (nothing)")
    lines.append("")
    if result.points:
        lines.append(f"Points ({len(result.points)}; each scored 0 to 1, 1 = fully met):")
        points: Sequence[Point] = result.points
        for i, p in enumerate(points, 1):
            lines += _point_lines(i, p, detail, result.source)
        if detail != "short":
            lines += ["", "What pulled the score down:", *_pulled_down(result, breakdown(result.points))]
    else:
        lines.append("This prompt has no points to check.")
    return "\n".join(lines).rstrip() + "\n"


# What each kind of error means and what to do about it (the raw message is always shown too).
_CAUSES: dict[ErrorKind, tuple[str, str]] = {
    "blueprint": (
        "The {source} has a mistake, so this item cannot be scored as written.",
        "Fix the {source} at {where}.",
    ),
    "missing_key": (
        "The model provider's API key is missing or was refused.",
        "Set the key variable the message names and run again.",
    ),
    "auth": (
        "The model provider's API key is missing or was refused.",
        "Check the key variable for that provider and run again.",
    ),
    "replay_miss": (
        "Offline replay has no recorded answer for this item.",
        "Run once with network access and --weval-cache=rw to record it, then replay with ro.",
    ),
    "rate_limit": (
        "The provider refused the request because too many were sent (rate limit).",
        "Lower --weval-concurrency or wait a little, then run again.",
    ),
    "timeout": ("The model took too long to answer.", "Run again, or raise --weval-timeout."),
    "circuit_open": (
        "The model failed many times in a row, so further requests to it were stopped.",
        "Check that the model id is right and the provider is up.",
    ),
    "provider": (
        "The model provider could not be reached or had a server problem.",
        "Check the network and the provider's base URL, then run again.",
    ),
    "empty_reply": (
        "The model answered with nothing (an empty reply), so there is nothing to score.",
        "Run again; if it keeps answering nothing, check the prompt and the model's settings (max_tokens).",
    ),
    "config": (
        "The model id or its definition cannot be used.",
        "Check the model id (and weval_model_defs), then run again.",
    ),
    "unknown_model": (
        "The provider has no model by this id (it answered 404).",
        "Fix the model id where it is named ({named}); the provider's model list has the exact ids.",
    ),
    "budget": (
        "The run's budget was reached before this item's requests were sent.",
        "Raise --weval-budget to continue: what was received is kept in the cache.",
    ),
    "too_large": (
        "The model's reply was larger than the run allows, so it was not read, stored or judged.",
        "Ask for a shorter answer (max_tokens), or raise --weval-max-reply-mb if such replies are expected.",
    ),
    "store_full": (
        "The cache could not store replies (its disk is full), so this item's requests were not sent.",
        "Free space where the cache lives, or run with --weval-cache=off; then run again.",
    ),
    "store_read_only": (
        "The cache could not store replies (it is read-only), so this item's requests were not sent.",
        "Make the cache writable (or choose another with --weval-cache-dir), or run with --weval-cache=off; "
        "then run again.",
    ),
    "store_unreachable": (
        "The cache store could not be reached, so this item's requests were not sent.",
        "Check that the store's server is up and reachable (or raise --weval-store-retry), then run again: "
        "replies already received were kept.",
    ),
    "store_damaged": (
        "The cache could not store replies (its file is damaged), so this item's requests were not sent.",
        "Run python -m pytest_weval cache repair (it keeps every entry it can still read), then run again.",
    ),
    "store": (
        "The cache could not store replies, so this item's requests were not sent.",
        "See the details, or run with --weval-cache=off; then run again.",
    ),
    "interrupted": (
        "The run was interrupted before this item was answered.",
        "Run again: it continues from the cache.",
    ),
    "judges": (
        "No judge could score the points that need an LLM judge.",
        "Check the judge models (--weval-judges) and their API keys; function points still ran.",
    ),
    "extraction": (
        "The key points of the ideal answer could not be extracted, so there is nothing to score against.",
        "Check the judge models (--weval-judges) and their API keys, or write the prompt's points out.",
    ),
    "program": (
        "A program named by the eval file (a code judge or a cli target) failed, so the case has no score.",
        "Fix the program, or raise its limit (the evaluator's or the case's timeout_seconds) if it was too slow.",
    ),
    "not_allowed": (
        "The eval file names a program, and this run does not allow programs from eval files.",
        "Pass --weval-allow-exec if you trust the file.",
    ),
    "no_points": ("This prompt has nothing to score.", "Add points or an ideal answer to the {source}."),
    "no_fixture": (
        "The fixture file has no answer for this prompt and model, and --weval-fixtures-strict "
        "forbids asking the model, so nothing was sent.",
        "Add the answer to the fixture file (default or byModel), or run without --weval-fixtures-strict.",
    ),
    "internal": (
        "pytest-weval itself failed on this item (a bug).",
        "Please report it with the details below.",
    ),
}


def _mistake_place(result: Result) -> str:
    """file:line of each mistaken point (or of the prompt), for the author to go to."""
    lines = sorted({p.line for p in result.points if p.authoring_error and p.line})
    if not lines and result.error_line:
        lines = [result.error_line]
    if not lines and result.prompt_line:
        lines = [result.prompt_line]
    if not lines:
        return result.blueprint_path
    return ", ".join(_located(result, n) for n in lines)


def _cause(result: Result) -> tuple[str, str]:
    kind = result.error_kind or ("blueprint" if any(p.authoring_error for p in result.points) else None)
    if kind is None:
        return ("The item could not be scored.", "See the message; run again if it was a passing problem.")
    words, todo = _CAUSES[kind]
    named = _located(result, result.error_line) if result.error_line else "--weval-models or the blueprint's models"
    return words.format(source=result.source), todo.format(
        source=result.source, where=_mistake_place(result), named=named
    )


def explain_error(result: Result, detail: Detail = "normal") -> str:
    """Why an item has no score (provider, key, replay miss, all judges failed, blueprint)."""
    words, todo = _cause(result)
    lines = [f"No score: {words}", *_where(result)]
    if result.error:
        lines.append(f"  details:   {one_line(result.error)}")
    lines.append(f"  what to do: {todo}")
    errored = [(p, p.error) for p in result.points if p.error]
    if errored and detail != "short":
        limit = 0 if detail == "full" else 300
        lines += ["", f"Points with problems ({len(errored)} of {len(result.points)}):"]
        for p, error in errored:
            at = f" (line {p.line})" if p.line else ""
            lines.append(f"  - {_point_label(p, result.source)}{at}: {shorten(one_line(error), limit)}")
    return "\n".join(lines) + "\n"


def crash_line(result: Result) -> tuple[int | None, str]:
    """The item's outcome in one line, and the blueprint line it is about: what ``--tb=line``
    prints and the reason the short summary gives."""
    if result.outcome == "failed":
        b = breakdown(result.points)
        worst = max((x for x in b.losses if x.loss > 0), key=lambda x: (x.loss, -x.index), default=None)
        text = f"score {fmt_score(result.score)} < pass mark {fmt_score(result.threshold)}"
        if result.required_checks_failed:
            return result.prompt_line, result.error or ""
        if worst is None:
            return result.prompt_line, text
        p = worst.point
        text += (
            f"; lost most on point {worst.index + 1}, {_point_label(p, result.source)} ({fmt_score(p.coverage_extent)})"
        )
        return p.line or result.prompt_line, text
    details = shorten(one_line(result.error or ""), CRASH_DETAIL_CHARS)
    if result.said_by_summary:
        # Its error is the stop's own words ("budget reached ...", "not sent: ...", "not run, a key
        # it needs is not set ..."), first what matters: the short summary keeps only a line's start.
        return result.prompt_line, details
    if result.error_kind == "unknown_model":  # one short line: every item of the model says the same
        return (
            result.error_line or result.prompt_line,
            f"no score: the provider has no model {result.model_id} (HTTP 404)",
        )
    words, _ = _cause(result)
    mistaken = [p.line for p in result.points if p.authoring_error and p.line]
    line = mistaken[0] if mistaken else (result.error_line or result.prompt_line)
    return line, f"no score: {words.rstrip('.')}" + (f" ({details})" if details else "")
