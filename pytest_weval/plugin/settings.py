"""The typed settings built from the options (``options.py``) and their ini twins.

Hooks read ``WevalSettings`` instead of calling ``config.getoption`` all over the plugin, and the
engine's and the pipeline's settings are made from it here, in one place (``engine_settings``,
``pipeline_settings``). Loaded only by a run that uses the plugin (``activation.py``). The
reports' code is imported where a setting reads or writes them (the baseline, the gates, the
output files), so that an xdist worker, which writes no report, never loads it; the run's
(the pipeline, the pre-flight, the model lists) where a process that runs items uses them, so
that the xdist controller, which runs none, never loads the engine.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

import pytest_weval.defaults as defaults
from pytest_weval.blueprint import load_blueprint, load_model_defs
from pytest_weval.blueprint.fixtures import ResponseFixtures, load_fixtures
from pytest_weval.blueprint.model import Blueprint, BlueprintError, Location
from pytest_weval.engine.prices import Price, PriceBook, parse_price_lines
from pytest_weval.engine.request import (
    BATCH_MODES,
    CACHE_MODES,
    CACHE_STORES,
    PROMPT_CACHE_MODES,
    SERVICE_TIERS,
    EngineSettings,
)
from pytest_weval.engine.store.backends import is_postgres, redact_url, state_file
from pytest_weval.engine.store.history import History, history_for
from pytest_weval.engine.store.sqlite_health import fix_command
from pytest_weval.files import unwritable
from pytest_weval.formats.discover import is_agent_eval_file, is_promptfoo_file
from pytest_weval.lint import RawSource, read_source
from pytest_weval.plugin.options import _DEFAULTS, _INI_ONLY, _OPTIONS, _raw, option_name
from pytest_weval.plugin.role import Role
from pytest_weval.results import Outcome
from pytest_weval.run import sampling
from pytest_weval.run.embedding import parse_eval_methods

if TYPE_CHECKING:
    from pytest_weval.api import Weval
    from pytest_weval.engine.transport.model_lists import ModelLists
    from pytest_weval.formats.model import AgentSuite
    from pytest_weval.formats.promptfoo.model import PromptfooSuite
    from pytest_weval.report.baseline import Baseline
    from pytest_weval.report.facts import RunFacts
    from pytest_weval.report.finish import FinishedRun, RunGates
    from pytest_weval.run.pipeline import PipelineSettings, Work
    from pytest_weval.run.plan import Plan
    from pytest_weval.run.preflight import Preflight

MISSING_KEYS = ("stop", "error", "skip")
ON_OFF = ("on", "off")
BORDERLINE = ("pass", "fail")

N = TypeVar("N", int, float)


@dataclasses.dataclass(frozen=True)
class WevalSettings:
    rootdir: Path
    models: tuple[str, ...] | None
    judges: tuple[str, ...] | None
    threshold: float
    min_score: float | None
    concurrency: int | None
    provider_concurrency: dict[str, int]
    cache_mode: str
    cache_dir: Path
    cache_store: str
    out_dir: Path | None
    allow_env: frozenset[str]
    timeout_s: float
    max_attempts: int
    rate_limit_wait_s: float
    stop_grace_s: float
    missing_keys: str  # stop | error | skip
    budget_usd: float | None
    prices: dict[str, Price]  # ini weval_prices, over genai-prices
    lint: bool
    lint_strict: bool
    collections_dir: Path | None
    globs: tuple[str, ...]
    model_defs: Path | None
    max_file_mb: float
    allow_exec: bool = False
    borderline_fails: bool = False
    html_path: Path | None = None  # --weval-html
    baseline: Path | str | None = None  # --weval-baseline: a folder, or 'last'/'last:<branch>' (the history's)
    alpha: float = defaults.ALPHA  # --weval-alpha
    max_drop: float = defaults.MAX_DROP  # --weval-max-drop
    repeat: int = defaults.REPEAT  # --weval-repeat=N (under auto: --weval-max-repeat)
    repeat_auto: bool = False  # --weval-repeat=auto (docs/sampling.md)
    fail_flaky: bool = False  # --weval-fail-flaky
    run_id: str | None = None  # --weval-run-id / WEVAL_RUN_ID: a run shared by several machines
    fixtures: Path | None = None  # --weval-fixtures
    fixtures_strict: bool = False  # --weval-fixtures-strict
    check_models: bool = True  # --weval-check-models
    max_reply_mb: float = defaults.MAX_REPLY_MB  # --weval-max-reply-mb
    store_retry_s: float = defaults.STORE_RETRY_S  # --weval-store-retry
    batch: str = defaults.BATCH  # --weval-batch (docs/batch.md)
    batch_poll_s: float = defaults.BATCH_POLL_S  # --weval-batch-poll
    service_tier: str = defaults.SERVICE_TIER  # --weval-service-tier
    prompt_cache: str = defaults.PROMPT_CACHE  # --weval-prompt-cache
    eval_methods: tuple[str, ...] = defaults.EVAL_METHODS  # --weval-eval-methods

    @property
    def embeds(self) -> bool:
        """The run embeds its answers and writes their similarities (``--weval-eval-methods``)."""
        return "embedding" in self.eval_methods

    def engine_settings(self, role: Role) -> EngineSettings:
        """How this process's engine sends, limits and caches, given what the process is in the
        run (a worker of several, the controller, or a run of its own)."""
        return EngineSettings(
            cache_mode=self.cache_mode,
            cache_dir=self.cache_dir,
            cache_store=self.cache_store,
            concurrency=self.concurrency,
            provider_concurrency=self.provider_concurrency,
            max_attempts=self.max_attempts,
            rate_limit_wait_s=self.rate_limit_wait_s,
            stop_grace_s=self.stop_grace_s,
            batch=self.batch,
            batch_poll_s=self.batch_poll_s,
            service_tier=self.service_tier,
            prompt_cache=self.prompt_cache,
            max_reply_mb=self.max_reply_mb,
            store_retry_s=self.store_retry_s,
            budget_usd=self.budget_usd,
            prices=self.prices,
            timeout_s=self.timeout_s,
            allowed_env=self.allow_env,
            worker_count=role.worker_count,
            worker_id=role.worker_id,
            # A run id given joins the machines that give it; else xdist's, one session's workers.
            run_id=self.run_id or role.session_id,
            session_id=role.session_id,
            coordinate=True if self.run_id else None,
            run_started=role.run_started,
        )

    def plan_engine_settings(self, *, has_cache: bool) -> EngineSettings:
        """The engine of a dry run's plan (--collect-only): it reads the cache, if there is
        one, and writes nothing (no cache folder is made), and no batch is opened."""
        return dataclasses.replace(
            self.engine_settings(Role("serial")), cache_mode="ro" if has_cache else "off", batch="off"
        )

    def pipeline_settings(
        self,
        custom_models: Mapping[str, dict[str, Any]],
        fixtures: ResponseFixtures | None = None,
        past: Mapping[str, tuple[sampling.Past, ...]] | None = None,
    ) -> PipelineSettings:
        from pytest_weval.run.pipeline import PipelineSettings

        return PipelineSettings(
            judges=self.judges,
            threshold=self.threshold,
            allowed_env=self.allow_env,
            custom_models=dict(custom_models),
            allow_exec=self.allow_exec,
            borderline_fails=self.borderline_fails,
            repeat=self.repeat,
            repeat_auto=self.repeat_auto,
            fixtures=fixtures,
            past=dict(past or {}),
        )

    def load_blueprint(
        self, path: Path, *, rel_path: str, display_path: str, custom_models: dict[str, dict[str, Any]]
    ) -> Blueprint:
        return load_blueprint(
            path,
            rel_path=rel_path,
            display_path=display_path,
            collections_dir=self.collections_dir,
            model_override=list(self.models) if self.models else None,
            custom_models=custom_models,
            max_file_mb=self.max_file_mb,
        )

    def read_source(self, path: Path, *, display_path: str | None = None) -> RawSource:
        """A blueprint file's raw documents (for the linter and ``pytest --markers``)."""
        return read_source(path, display_path=display_path, max_file_mb=self.max_file_mb)

    def is_agent_eval_file(self, path: Path, *, named: bool) -> bool:
        return is_agent_eval_file(path, rootdir=self.rootdir, named=named, max_file_mb=self.max_file_mb)

    # The formats' loaders are loaded at their first file: a run of blueprints alone never
    # loads them (docs/engine.md, 'A process's start').
    def load_agent_suite(self, path: Path) -> AgentSuite | None:
        from pytest_weval.formats.load import load_agent_suite
        from pytest_weval.scoring import check_pattern_syntax

        return load_agent_suite(
            path, rootdir=self.rootdir, max_file_mb=self.max_file_mb, check_regex=check_pattern_syntax
        )

    def is_promptfoo_file(self, path: Path, *, named: bool) -> bool:
        return is_promptfoo_file(path, rootdir=self.rootdir, named=named, max_file_mb=self.max_file_mb)

    def load_promptfoo_suite(self, path: Path) -> PromptfooSuite:
        from pytest_weval.formats.promptfoo.load import load_promptfoo_suite

        return load_promptfoo_suite(path, rootdir=self.rootdir, max_file_mb=self.max_file_mb)

    def preflight(
        self,
        works: Sequence[Work],
        *,
        custom_models: Mapping[str, dict[str, Any]],
        fixtures: ResponseFixtures | None,
        model_lists: ModelLists | None,
    ) -> Preflight:
        """The selection checked before anything is sent (``run/preflight.py``)."""
        from pytest_weval.run.preflight import preflight

        return preflight(
            works,
            judges=self.judges,
            env=os.environ,
            allowed_env=self.allow_env,
            custom_models=custom_models,
            keys_needed=self.cache_mode != "ro",
            prices=PriceBook(self.prices) if self.budget_usd is not None else None,
            model_lists=model_lists,
            fixtures=fixtures,
        )

    def model_lists(self, run_started: float) -> ModelLists | None:
        """The providers' model lists for the pre-flight's check of model ids: not on replay or
        with --weval-check-models=off. Kept beside a SQLite cache (not with --weval-cache=off),
        where every xdist worker of the run finds the list the first one fetched."""
        if not self.check_models or self.cache_mode == "ro":
            return None
        from pytest_weval.engine.transport.model_lists import FILE_NAME as MODEL_LISTS_FILE
        from pytest_weval.engine.transport.model_lists import ModelLists

        cache_file = None
        if self.cache_mode != "off":
            try:
                cache_file = state_file(self.cache_store, self.cache_dir, MODEL_LISTS_FILE)
            except OSError:  # a folder that cannot be made: the engine says so when it stores
                cache_file = None
        return ModelLists(
            os.environ, cache_file=cache_file, run_started=run_started, reuse=self.cache_mode != "refresh"
        )

    def make_plan(self, weval: Weval, works: Iterable[Work], checked: Preflight) -> Plan:
        # Made for --collect-only and -v only: other runs never load the plan's code.
        from pytest_weval.run.plan import make_plan

        return make_plan(
            weval.engine,
            weval.pipeline.settings,
            works,
            prices=PriceBook(self.prices),
            checked=checked,
            batch=self.batch != "off",
            embeddings=self.embeds,
        )

    def read_files(self) -> tuple[dict[str, dict[str, Any]], ResponseFixtures | None]:
        """The model definitions (weval_model_defs) and response fixtures (--weval-fixtures)
        the run's items use, read before anything is collected or sent: a bad file stops the run."""
        return _model_defs(self.model_defs), _fixtures(self.fixtures, strict=self.fixtures_strict)

    def baseline_folder(self) -> Baseline | None:
        """--weval-baseline's folder, read at the start (a bad one stops the run); None without
        one, or when the baseline is the history's run (read at the end, with the history)."""
        from pytest_weval.report.baseline import BaselineError, read_baseline
        from pytest_weval.report.history import is_history_baseline

        if self.baseline is None or is_history_baseline(self.baseline):
            return None
        try:
            return read_baseline(self.baseline)
        except BaselineError as exc:
            raise pytest.UsageError(f"--weval-baseline: {exc}") from None

    def history_baseline(self) -> str | None:
        """``last`` or ``last:<branch>`` when the baseline is the history's newest scores."""
        from pytest_weval.report.history import is_history_baseline

        return self.baseline if isinstance(self.baseline, str) and is_history_baseline(self.baseline) else None

    def run_id_or(self, own: str) -> str:
        """The run's id: --weval-run-id's when given (a run shared by machines), else ``own``."""
        return self.run_id or own

    def recorded_judges(self) -> tuple[str, ...]:
        """The judges the run names (--weval-judges), for its record and its page; none when
        the blueprints choose."""
        return self.judges or ()

    @property
    def blocked_outcome(self) -> Outcome:
        """What an item that needs a missing key becomes (--weval-missing-keys)."""
        return "skipped" if self.missing_keys == "skip" else "error"

    def run_gates(self) -> RunGates:
        from pytest_weval.report.finish import RunGates

        return RunGates(
            min_score=self.min_score,
            baseline=str(self.baseline) if self.baseline is not None else None,
            alpha=self.alpha,
            max_drop=self.max_drop,
            fail_flaky=self.fail_flaky,
        )

    def history(self) -> History:
        """The store's history of runs (docs/history.md)."""
        return history_for(self.cache_store, self.cache_dir)

    def store_fix_command(self) -> str:
        """The command that repairs this run's store, for the line that says it was damaged."""
        return fix_command(self.cache_dir)

    def unwritable_outputs(self) -> Iterator[tuple[str, str]]:
        """Each output file or folder asked for that cannot be written, as (option, why)."""
        for ini, path, folder in (("weval_out", self.out_dir, True), ("weval_html", self.html_path, False)):
            problem = unwritable(Path(path), folder=folder) if path is not None else None
            if problem is not None:
                yield option_name(ini), problem

    def write_plan(self, plan: Plan) -> None:
        """``plan.json`` in --weval-out, if given."""
        if self.out_dir is not None:
            from pytest_weval.report.weval_json import write_json_atomic

            write_json_atomic(Path(self.out_dir) / "plan.json", plan.to_dict())

    def write_run_files(self, run: FinishedRun, facts: RunFacts | None) -> None:
        from pytest_weval.report.finish import write_run_files

        write_run_files(run, out_dir=self.out_dir, html_path=self.html_path, facts=facts)


def samples_from_history(settings: WevalSettings) -> bool:
    """Whether items may start from their recorded samples (``--weval-repeat=auto`` with a
    store: docs/sampling.md, 'Starting from the history')."""
    return settings.repeat_auto and settings.cache_mode != "off"


def _model_defs(path: Path | None) -> dict[str, dict[str, Any]]:
    if path is None:
        return {}
    try:
        return load_model_defs(path)
    except BlueprintError as exc:
        raise pytest.UsageError(f"weval_model_defs: {exc}") from None
    except OSError as exc:
        raise pytest.UsageError(f"weval_model_defs: {Location(path=str(path))}: cannot read: {exc.strerror}") from None


def _fixtures(path: Path | None, *, strict: bool) -> ResponseFixtures | None:
    if path is None:
        if strict:  # strict about no file would error every item: say so once
            raise pytest.UsageError(
                f"{option_name('weval_fixtures_strict')} needs a fixture file: "
                f"give it with {option_name('weval_fixtures')}"
            )
        return None
    try:
        return load_fixtures(path, strict=strict)
    except BlueprintError as exc:
        raise pytest.UsageError(f"{option_name('weval_fixtures')}: {exc}") from None


def _split(value: object) -> tuple[str, ...] | None:
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    parts = tuple(p.strip() for p in str(value).replace("\n", ",").split(",") if p.strip())
    return parts or None


def _number(
    config: pytest.Config,
    ini: str,
    kind: Callable[[Any], N],
    *,
    minimum: float | None = None,
    positive: bool = False,
) -> Any:
    """A number setting, checked: a usage error names the setting and what it accepts; its
    default (``_DEFAULTS``) when not set."""
    value = _raw(config, ini)
    if value is None or value == "":
        default = _DEFAULTS[ini]
        return default if default is None else kind(default)
    what = "a whole number" if kind is int else "a number"
    if positive:
        what += " above 0"
    elif minimum is not None:
        what += f" of at least {minimum:g}"
    try:
        number = kind(str(value).strip())
    except ValueError:
        raise pytest.UsageError(f"{option_name(ini)} = {value!r}: expected {what}") from None
    if (positive and not number > 0) or (minimum is not None and not number >= minimum) or number != number:
        raise pytest.UsageError(f"{option_name(ini)} = {value!r}: expected {what}")
    return number


def _baseline(config: pytest.Config) -> Path | str | None:
    """--weval-baseline: ``last`` and ``last:<branch>`` name the history's previous run (a folder
    called ``last`` is ``./last``); anything else is a folder."""
    raw = _raw(config, "weval_baseline")
    if isinstance(raw, str) and (raw.strip() == "last" or raw.strip().startswith("last:")):
        return raw.strip()
    return _path(config, raw)


def _path(config: pytest.Config, value: object) -> Path | None:
    if value is None or value == "":
        return None
    path = Path(str(value))
    if not path.is_absolute():
        base = config.inipath.parent if config.inipath else config.rootpath
        path = base / path
    return path


def _provider_caps(value: object) -> dict[str, int]:
    caps: dict[str, int] = {}
    for part in _split(value) or ():
        name, _, number = part.partition(":")
        name = name.strip().lower()
        try:
            cap = int(number)
        except ValueError:
            cap = 0
        if not name or cap < 1:
            raise pytest.UsageError(
                f"ini weval_provider_concurrency: {part!r} is not provider:number with a number of at least 1 "
                "(e.g. openai:20,anthropic:10)"
            )
        caps[name] = cap
    return caps


def _choice(config: pytest.Config, ini: str, choices: tuple[str, ...]) -> str:
    value = str(_raw(config, ini) or _DEFAULTS[ini]).strip().lower()
    if value not in choices:
        raise pytest.UsageError(f"{option_name(ini)} = {value!r}: choose one of {', '.join(choices)}")
    return value


def _prices(config: pytest.Config) -> dict[str, Price]:
    try:
        return parse_price_lines(config.getini("weval_prices") or [])
    except ValueError as exc:
        raise pytest.UsageError(f"ini weval_prices: {exc}") from None


def settings_from_config(config: pytest.Config) -> WevalSettings:
    """Every option and ini value, read and checked once: a bad value is a usage error naming
    the setting and what it accepts (docs/options.md)."""
    cache_mode = _choice(config, "weval_cache", CACHE_MODES)
    cache_store = _cache_store(config)
    threshold = _number(config, "weval_threshold", float, minimum=0)
    if threshold > 1:
        raise pytest.UsageError(
            f"{option_name('weval_threshold')} = {threshold:g}: a threshold is a score between 0 and 1"
        )
    rootdir = config.rootpath
    cache_dir = _path(config, _raw(config, "weval_cache_dir")) or find_cache_dir(rootdir)
    return WevalSettings(
        rootdir=rootdir,
        models=_split(_raw(config, "weval_models")),
        judges=_split(_raw(config, "weval_judges")),
        threshold=threshold,
        min_score=_number(config, "weval_min_score", float, minimum=0),
        concurrency=_number(config, "weval_concurrency", int, minimum=1),
        provider_concurrency=_provider_caps(config.getini("weval_provider_concurrency")),
        cache_mode=cache_mode,
        cache_dir=cache_dir,
        cache_store=cache_store,
        out_dir=_path(config, _raw(config, "weval_out")),
        allow_env=frozenset(_split(_raw(config, "weval_allow_env")) or ()),
        timeout_s=_number(config, "weval_timeout", float, positive=True),
        max_attempts=_number(config, "weval_max_attempts", int, minimum=1),
        rate_limit_wait_s=_number(config, "weval_rate_limit_wait", float, minimum=0),
        stop_grace_s=_number(config, "weval_stop_grace", float, minimum=0),
        missing_keys=_choice(config, "weval_missing_keys", MISSING_KEYS),
        budget_usd=_number(config, "weval_budget", float, minimum=0),
        prices=_prices(config),
        lint=bool(_raw(config, "weval_lint")),
        lint_strict=bool(_raw(config, "weval_lint_strict")),
        collections_dir=_path(config, config.getini("weval_collections_dir")),
        globs=tuple(config.getini("weval_globs") or ()),
        model_defs=_path(config, config.getini("weval_model_defs")),
        max_file_mb=_number(config, "weval_max_file_mb", float, positive=True),
        allow_exec=bool(_raw(config, "weval_allow_exec")),
        borderline_fails=_choice(config, "weval_borderline", BORDERLINE) == "fail",
        html_path=_path(config, _raw(config, "weval_html")),
        baseline=_baseline(config),
        alpha=_alpha(config),
        max_drop=_number(config, "weval_max_drop", float, minimum=0),
        **_repeat(config),
        fail_flaky=bool(_raw(config, "weval_fail_flaky")),
        run_id=_run_id(config),
        fixtures=_path(config, _raw(config, "weval_fixtures")),
        fixtures_strict=bool(_raw(config, "weval_fixtures_strict")),
        check_models=_choice(config, "weval_check_models", ON_OFF) == "on",
        max_reply_mb=_number(config, "weval_max_reply_mb", float, positive=True),
        store_retry_s=_number(config, "weval_store_retry", float, minimum=0),
        **_batch(config, cache_mode),
        service_tier=_choice(config, "weval_service_tier", SERVICE_TIERS),
        prompt_cache=_choice(config, "weval_prompt_cache", PROMPT_CACHE_MODES),
        eval_methods=_eval_methods(config),
    )


def _eval_methods(config: pytest.Config) -> tuple[str, ...]:
    value = _raw(config, "weval_eval_methods")
    try:
        return parse_eval_methods(None if value is None else str(value))
    except ValueError as exc:
        raise pytest.UsageError(f"{option_name('weval_eval_methods')} = {value!r}: {exc}") from None


def _batch(config: pytest.Config, cache_mode: str) -> dict[str, Any]:
    batch = _choice(config, "weval_batch", BATCH_MODES)
    if batch != "off" and cache_mode not in ("rw", "refresh"):
        raise pytest.UsageError(
            f"--weval-batch={batch} collects replies into the cache, so it needs --weval-cache=rw or refresh "
            f"(not {cache_mode})"
        )
    return {"batch": batch, "batch_poll_s": _number(config, "weval_batch_poll", float, positive=True)}


CACHE_FOLDER = defaults.CACHE_FOLDER


def find_cache_dir(rootdir: Path) -> Path:
    """The default cache: an existing ``.weval_cache`` in the rootdir or a folder above it, up to
    the repository's top (as git finds ``.git``), so that ``cd blueprints && pytest`` (which moves
    the rootdir) replays the project's cache instead of starting an empty one; else a new one in
    the rootdir."""
    for folder in (rootdir, *rootdir.parents):
        if (folder / CACHE_FOLDER).is_dir():
            return folder / CACHE_FOLDER
        if (folder / ".git").exists():
            break
    return rootdir / CACHE_FOLDER


def _cache_store(config: pytest.Config) -> str:
    """sqlite, files or a PostgreSQL URL (kept as written; shown only with its password masked)."""
    value = str(_raw(config, "weval_cache_store") or _DEFAULTS["weval_cache_store"]).strip()
    if value.lower() in CACHE_STORES:
        return value.lower()
    if is_postgres(value):
        return value
    raise pytest.UsageError(
        f"{option_name('weval_cache_store')} = {redact_url(value)!r}: choose one of {', '.join(CACHE_STORES)} "
        "or a postgresql://user@host:port/database URL"
    )


def _run_id(config: pytest.Config) -> str | None:
    """--weval-run-id, else the environment's WEVAL_RUN_ID, else ini weval_run_id."""
    value = (
        config.getoption("weval_run_id", default=None)
        or os.environ.get("WEVAL_RUN_ID")
        or config.getini("weval_run_id")
    )
    value = str(value or "").strip()
    if not value:
        return None
    if len(value) > 200 or not value.isprintable():
        raise pytest.UsageError(f"{option_name('weval_run_id')}: a run id is at most 200 printable characters")
    return value


def _repeat(config: pytest.Config) -> dict[str, Any]:
    """--weval-repeat=N, or auto with --weval-max-repeat as its most samples."""
    value = _raw(config, "weval_repeat")
    if str(value).strip().lower() == "auto":
        return {"repeat": _number(config, "weval_max_repeat", int, minimum=1), "repeat_auto": True}
    try:
        return {"repeat": _number(config, "weval_repeat", int, minimum=1), "repeat_auto": False}
    except pytest.UsageError:
        raise pytest.UsageError(
            f"{option_name('weval_repeat')} = {value!r}: expected a whole number of at least 1, or auto"
        ) from None


def _alpha(config: pytest.Config) -> float:
    alpha = _number(config, "weval_alpha", float, positive=True)
    if alpha >= 1:
        raise pytest.UsageError(f"{option_name('weval_alpha')} = {alpha:g}: a significance level is between 0 and 1")
    return alpha


def options_in_effect(config: pytest.Config) -> list[tuple[str, str]]:
    """The weval settings this run was given (command line or ini file), as (name, value) for
    the HTML report's facts: options by their option name, ini-only settings by their ini name."""
    shown: list[tuple[str, str]] = []
    for opt, ini, _help, kind, _default in _OPTIONS:
        value = _raw(config, ini)
        if value is None or value == "" or value is False:
            continue
        shown.append((opt, "on" if kind == "flag" else redact_url(str(value))))
    for ini, _help, _kind, default in _INI_ONLY:
        value = config.getini(ini)
        if value is None or value == "" or value == [] or value == default:
            continue
        shown.append((ini, "; ".join(value) if isinstance(value, list) else str(value)))
    return shown
