"""The pytest item of one prompt x model variant, and how its outcome is said.

An item does not evaluate itself: it asks its ``ResultSource`` (the plugin object, which
started every selected item's evaluation when collection was final) for its ``ItemResult`` and
turns that record into pytest's terms: an error, a skip, a failure or a pass.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Protocol

import pytest
from _pytest._code.code import ReprExceptionInfo, ReprFileLocation, ReprTracebackNative

from pytest_weval.blueprint.model import Blueprint, ModelSpec, Prompt
from pytest_weval.plugin.warning_types import WevalPointError
from pytest_weval.report.failure import crash_line, detail_for, explain_error, explain_failure
from pytest_weval.report.junit import JUNIT_NAMES, junit_properties
from pytest_weval.results import ItemResult


class ResultSource(Protocol):
    dry_run: bool  # pytest runs no test (--setup-only, --setup-plan, ...): nothing may be sent

    def result_for(self, item: WevalItem, sample: int = 0) -> ItemResult: ...


class WevalItemError(Exception):
    """The item could not be scored (provider, key, replay miss, judges, blueprint mistake)."""

    def __init__(self, result: ItemResult):
        self.result = result
        super().__init__(result.error or "error")


class WevalScoreFailure(AssertionError):
    def __init__(self, result: ItemResult):
        self.result = result
        super().__init__(f"score {result.score} < threshold {result.threshold}")


class WevalItem(pytest.Item):
    def __init__(
        self,
        *,
        blueprint: Blueprint,
        prompt: Prompt,
        model: ModelSpec,
        temperature: float | None,
        system_index: int,
        source: ResultSource,
        **kwargs: Any,
    ):
        if "nodeid" not in kwargs and "[" in kwargs.get("name", ""):
            # pytest 9 keeps node ids structured: from `name` alone it would make the bracket
            # part of the name, while the ids it reads back (--lf, --ff, --sw) are parsed into
            # name and params, so "p[model]" would never match itself. Built from the string,
            # the id is parsed the same way both times (and pytest 8 takes the string as is).
            kwargs["nodeid"] = f"{kwargs['parent'].nodeid}::{kwargs['name']}"
        super().__init__(**kwargs)
        self.blueprint = blueprint
        self.prompt = prompt
        self.model = model
        self.temperature = temperature
        self.system_index = system_index
        self.source = source
        self.weval_result: ItemResult | None = None
        self.setups = 0  # how many times pytest has run this item: a rerun is a new sample

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, self.prompt.location.line - 1 if self.prompt.location.line else None, self.name

    def setup(self) -> None:
        if self.source.dry_run:  # --setup-only / --setup-plan set items up and run nothing
            return
        # Run again (pytest-rerunfailures, or any plugin that calls the item again), the item
        # asks the model again under the next sample index: repeating the first answer would
        # make a rerun pointless (docs/engine.md, 'Reruns').
        result = self.source.result_for(self, sample=self.setups)
        self.setups += 1
        self.weval_result = result
        self.user_properties[:] = [p for p in self.user_properties if p[0] not in JUNIT_NAMES]
        self.user_properties.extend(junit_properties(result))
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
                lineno=self.prompt.location.line or 1,
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
        if tbstyle == "line":  # pytest prints the crash line below, and only that is wanted
            text = ""
        elif isinstance(error, WevalScoreFailure):
            text = explain_failure(result, detail)
        elif result.not_run:  # said once, in full, by the pre-flight
            text = (result.error or "") + "\n"
        else:
            text = explain_error(result, detail)
        line, message = crash_line(result)
        where = os.path.relpath(self.path, self.config.invocation_params.dir)
        return ReprExceptionInfo(
            reprtraceback=ReprTracebackNative(text.splitlines(keepends=True)),
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
