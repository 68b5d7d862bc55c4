"""The pytest items of eval files, and how their outcomes are said.

``WevalItem`` is any item evaluated by the run: a blueprint's prompt x model variant
(``BlueprintItem``), or an agent eval file's case x target (``AgentEvalItem``, in
``agent_items.py``). An item does not evaluate itself: it asks its ``ResultSource`` (the run's
``RunEngine``, which started every selected item's evaluation when collection was final) for its
``ItemResult`` and turns that record into pytest's terms: an error, a skip, a failure or a pass.
Each kind says what it asks for as a ``work`` record the run's pipeline knows how to evaluate.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import pytest
from _pytest import nodes as _nodes
from _pytest._code.code import ReprExceptionInfo, ReprFileLocation, ReprTracebackNative

from pytest_weval.blueprint.model import Blueprint, ModelSpec, Prompt
from pytest_weval.errors import WevalError
from pytest_weval.plugin.warning_types import WevalPointError, WevalWarning
from pytest_weval.report._fmt import fmt_score, visible
from pytest_weval.report.failure import crash_line, detail_for, explain_error, explain_failure
from pytest_weval.report.junit import JUNIT_NAMES, junit_properties
from pytest_weval.results import ItemResult, Outcome

if TYPE_CHECKING:
    from pytest_weval.run.pipeline import ItemWork, Work

_NodeId = getattr(_nodes, "NodeId", None)  # pytest 9; pytest 8's node ids are strings
# pytest 9's NodeId keeps its string once made (``NodeId.__str__``), in this slot
_STR_CACHED = "_str_cache" in getattr(_NodeId, "__slots__", ())


_PIPELINE = "pytest_weval.run.pipeline"


class ResultSource(Protocol):
    @property
    def dry_run(self) -> bool:
        """pytest runs no test (--setup-only, --setup-plan, ...): nothing may be sent."""
        ...

    def result_for(self, item: WevalItem, sample: int = 0) -> ItemResult: ...


class WevalItemError(WevalError):
    """The item could not be scored (provider, key, replay miss, judges, blueprint mistake)."""

    def __init__(self, result: ItemResult):
        self.result = result
        super().__init__(result.error or "error")


# An AssertionError too: pytest reports it as a test's failure, not as an error.
class WevalScoreFailure(AssertionError, WevalError):
    def __init__(self, result: ItemResult):
        self.result = result
        super().__init__(f"score {fmt_score(result.score)} < threshold {fmt_score(result.threshold)}")


def bracketed_id(parent: _nodes.Node, name: str) -> Any:
    """The id of item ``name`` (``prompt[model]``) under ``parent``.

    pytest 9 keeps node ids structured: from ``name`` alone it would make the bracket part of
    the name, while the ids it reads back (--lf, --ff, --sw) are parsed into name and params,
    so "p[model]" would never match itself. The id is made as pytest parses its string, from
    the parent's own path and the parts of ``name`` (their copies shared by the items of a
    file, which repeat them), instead of parsing a string that copies them all once per item
    (pytest 8 takes the string as is)."""
    parent_id = _file_id(parent)
    if parent_id is None:
        return f"{parent.nodeid}::{name}"
    assert _NodeId is not None  # a structured parent id means pytest 9
    name_part, bracket, params = name.partition("[")
    return _NodeId(
        path=parent_id.path,
        names=_id_names(name_part),
        params=sys.intern(params.removesuffix("]")) if bracket else None,
    )


def _file_id(parent: _nodes.Node) -> Any:
    """The parent's structured id if it is a file's (pytest 9), which bracketed_id builds on."""
    parent_id = getattr(parent, "_id", None)
    if (
        _NodeId is None
        or not isinstance(parent_id, _NodeId)
        or parent_id.names
        or parent_id.params is not None
        or "::" in parent_id.path
    ):
        return None
    return parent_id


def bracketed_ids(parent: _nodes.Node, base: str) -> Callable[[str], Any]:
    """``bracketed_id(parent, f"{base}[{label}]")`` for each label (interned by the caller),
    for the many items of one prompt: the parent checked and ``base`` split once, not per item."""
    parent_id = _file_id(parent)
    if parent_id is None or "[" in base:
        return lambda label: bracketed_id(parent, f"{base}[{label}]")
    assert _NodeId is not None  # a structured parent id means pytest 9
    make, path, names = _NodeId, parent_id.path, _id_names(base)
    if not _STR_CACHED:
        return lambda label: make(path=path, names=names, params=label)
    # Its string, which the run's works and pytest's reports read, made here from the prompt's
    # part shared by its items (pytest would join every part again for each item).
    head, keep = "::".join((path, *names)) + "[", object.__setattr__

    def item_id(label: str) -> Any:
        node_id = make(path=path, names=names, params=label)
        keep(node_id, "_str_cache", head + label + "]")
        return node_id

    return item_id


@functools.lru_cache(maxsize=256)  # a prompt's items are made one after another
def _id_names(name_part: str) -> tuple[str, ...]:
    return tuple(name_part.split("::"))


class WevalItem(pytest.Item):
    """An item the run evaluates; subclasses say what (``work``) and where it is written."""

    source: ResultSource
    weval_result: ItemResult | None
    setups: int  # how many times pytest has run this item: a rerun is a new sample

    def __init__(self, *, source: ResultSource, **kwargs: Any):
        if "nodeid" not in kwargs and "[" in kwargs.get("name", ""):
            kwargs["nodeid"] = bracketed_id(kwargs["parent"], kwargs["name"])
        super().__init__(**kwargs)
        self.source = source
        self.weval_result = None
        self.setups = 0

    def work(
        self, priority: int = 0, blocked: str | None = None, blocked_outcome: Outcome = "error", sample: int = 0
    ) -> Work:
        raise NotImplementedError

    @property
    def line(self) -> int | None:
        """The line of the eval file this item comes from (1-based), for reports."""
        return None

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, self.line - 1 if self.line else None, self.name

    def setup(self) -> None:
        if self.source.dry_run:  # --setup-only / --setup-plan set items up and run nothing
            return
        # Run again (pytest-rerunfailures, or any plugin that calls the item again), the item
        # asks the model again under the next sample index: repeating the first answer would
        # make a rerun pointless (docs/engine.md, 'Reruns').
        result = self.source.result_for(self, sample=self.setups)
        self.setups += 1
        self.weval_result = result
        # A new list for each attempt: its reports share it (``ItemResults``), while an earlier
        # attempt's reports keep theirs.
        properties: list[tuple[str, object]] = [p for p in self.user_properties if p[0] not in JUNIT_NAMES]
        properties.extend(junit_properties(result))
        self.user_properties = properties
        self.ihook.pytest_weval_result(item=self, result=result)
        if result.outcome == "error":
            raise WevalItemError(result)
        if result.outcome == "skipped":
            # reported at the prompt's line in the blueprint, not at this line of the plugin
            raise pytest.skip.Exception(result.error or "nothing to score", _use_item_location=True)

    def runtest(self) -> None:
        result = self.weval_result
        assert result is not None, "setup sets the result"
        for point in result.point_errors:
            # located at the prompt in the blueprint (not at this line of the plugin)
            warnings.warn_explicit(
                WevalPointError(
                    f"{result.blueprint_path}: prompt '{result.prompt_id}' [{result.effective_model_id}]: "
                    f"point '{point.key_point_text}' errored and was left out of the score: {point.error}"
                ),
                category=WevalPointError,
                filename=str(self.path),
                lineno=self.line or 1,
            )
        if result.verdict == "borderline" and result.outcome == "passed":
            # AgentV's middle verdict: passed here (--weval-borderline=fail fails it), said aloud.
            # An agent eval case's, so the formats' code is loaded already (and never for a blueprint).
            from pytest_weval.formats.model import BORDERLINE_AT, PASS_AT

            warnings.warn_explicit(
                WevalWarning(
                    f"{result.blueprint_path}: case '{result.prompt_id}' [{result.effective_model_id}] is borderline: "
                    f"score {fmt_score(result.score)} is at least {BORDERLINE_AT:g} but below the pass mark {PASS_AT:g} "
                    "(--weval-borderline=fail fails it)"
                ),
                category=WevalWarning,
                filename=str(self.path),
                lineno=self.line or 1,
            )
        if result.outcome == "failed":
            raise WevalScoreFailure(result)

    def describe(self, excinfo: pytest.ExceptionInfo[BaseException]) -> ReprExceptionInfo | None:
        """The item's failure or error in words; None for anything else (a bug: a traceback).

        Built as pytest's own exception representation, so pytest's dials work on it: its
        ``reprcrash`` is the one line ``--tb=line`` and the short summary show, located at the
        blueprint line it is about, and it survives the trip from an xdist worker intact."""
        error = excinfo.value
        if not isinstance(error, (WevalScoreFailure, WevalItemError)):
            return None
        result = error.result
        tbstyle = str(self.config.getoption("tbstyle", "auto"))
        detail = detail_for(tbstyle, self.config.get_verbosity())
        line, message = crash_line(result)
        message = visible(message)  # answers and ids are hostile text (report/_fmt.py, visible)
        where = os.path.relpath(self.path, self.config.invocation_params.dir)
        if tbstyle == "line":
            # One line per item, naming its model (two models' failures must not read alike).
            # pytest prints a failure's crash line itself, but for an error only this text.
            message = f"[{self.name.partition('[')[2].rstrip(']')}] {message}"
            crash = ReprFileLocation(where, line or 0, message)
            text = "" if isinstance(error, WevalScoreFailure) else f"{crash}\n"
        elif isinstance(error, WevalScoreFailure):
            text = explain_failure(result, detail)
        elif result.said_by_summary:
            text = (result.error or "") + "\n"
        else:
            text = explain_error(result, detail)
        return ReprExceptionInfo(
            reprtraceback=ReprTracebackNative(visible(text).splitlines(keepends=True)),
            reprcrash=ReprFileLocation(where, line or 0, message),
        )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        described = self.describe(excinfo)
        if described is not None:
            return described
        return super().repr_failure(excinfo, style=style)

    def _repr_failure_py(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        # pytest renders a *setup* error with this, not repr_failure. An item error is said in
        # words, so skip building a traceback that would be thrown away: it ast-parses every
        # frame's source, about 0.2 s per error, which made an offline `--weval-models=ideal`
        # corpus run (5,000+ errors) take 12 minutes.
        described = self.describe(excinfo)
        if described is not None:
            return described
        return super()._repr_failure_py(excinfo, style=style)


# A blueprint's model variant: the model, the temperature (the permutation's value, may be
# None), the system prompt's index and the variant's label in node ids.
Variant: TypeAlias = "tuple[ModelSpec, float | None, int, str]"


class BlueprintItem(WevalItem):
    """One prompt of a blueprint under one model variant (temperature, system prompt)."""

    def __init__(self, *, blueprint: Blueprint, prompt: Prompt, variant: Variant, **kwargs: Any):
        # The variant in one tuple: every keyword is passed down pytest's constructors, once per item.
        super().__init__(**kwargs)
        self.blueprint = blueprint
        self.prompt = prompt
        self.model, self.temperature, self.system_index = variant[:3]

    @property
    def line(self) -> int | None:
        return self.prompt.location.line

    def work(
        self, priority: int = 0, blocked: str | None = None, blocked_outcome: Outcome = "error", sample: int = 0
    ) -> ItemWork:
        # The pipeline's code, by a process that runs items (not the xdist controller, which
        # imports this module for its item class); looked up, as an import statement per item
        # costs more than the work it makes.
        pipeline = sys.modules.get(_PIPELINE) or importlib.import_module(_PIPELINE)
        made: ItemWork = pipeline.ItemWork(  # by position: keywords cost a fifth more, per item
            self.nodeid,
            self.blueprint,
            self.prompt,
            self.model,
            self.temperature,
            self.system_index,
            priority,
            blocked,
            blocked_outcome,
            sample,
        )
        return made
