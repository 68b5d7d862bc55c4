"""Command-line options and their ini twins: names, help and defaults, declared once.

Every option has an ini twin; the command line wins (docs/options.md). This module is what
pytest's entry point loads in every run, so it imports nothing but pytest: the typed settings
built from these options (``WevalSettings``, ``settings.py``) are loaded only by a run that uses
the plugin (docs/engine.md, 'What the plugin costs a run without blueprints').
"""

from __future__ import annotations

from typing import Any

import pytest

import pytest_weval.defaults as defaults

# (option, ini, help, kind, default). kind: "str", "list", "float", "int", "flag".
_OPTIONS: list[tuple[str, str, str, str, object]] = [
    (
        "--weval-models",
        "weval_models",
        "replace every blueprint's model list (comma separated ids, placeholders, built-ins ideal/echo)",
        "list",
        None,
    ),
    ("--weval-judges", "weval_judges", "judge models, comma separated (each a holistic judge)", "list", None),
    (
        "--weval-threshold",
        "weval_threshold",
        f"pass mark when neither prompt nor blueprint sets `threshold` (default {defaults.THRESHOLD:g})",
        "float",
        defaults.THRESHOLD,
    ),
    (
        "--weval-min-score",
        "weval_min_score",
        "fail the session when a blueprint's or folder's mean score is below this",
        "float",
        None,
    ),
    ("--weval-concurrency", "weval_concurrency", "global cap on model requests in flight", "int", None),
    (
        "--weval-cache",
        "weval_cache",
        f"response cache mode: rw, ro (offline replay), refresh, off (default {defaults.CACHE_MODE})",
        "str",
        defaults.CACHE_MODE,
    ),
    (
        "--weval-cache-dir",
        "weval_cache_dir",
        f"cache directory (default {defaults.CACHE_FOLDER}/ in the rootdir or a folder above it)",
        "str",
        None,
    ),
    (
        "--weval-cache-store",
        "weval_cache_store",
        "where the cache (and the claims of xdist workers and machines) live: sqlite, files "
        "(diff-friendly recordings) or postgresql://user@host:port/database, shared by several machines (the "
        f"password from PGPASSWORD or ~/.pgpass); default {defaults.CACHE_STORE}",
        "str",
        defaults.CACHE_STORE,
    ),
    (
        "--weval-run-id",
        "weval_run_id",
        "join the run of this id (also env WEVAL_RUN_ID): every machine giving the same id and "
        "--weval-cache-store shares the items out and reports them all",
        "str",
        None,
    ),
    (
        "--weval-out",
        "weval_out",
        "write Weval-shaped result JSON per blueprint plus summary.json into this directory",
        "str",
        None,
    ),
    (
        "--weval-html",
        "weval_html",
        "write the run as one self-contained HTML page (heatmaps, conversations, points) to this file",
        "str",
        None,
    ),
    (
        "--weval-allow-env",
        "weval_allow_env",
        "environment variables a blueprint may reference as ${VAR} (comma separated)",
        "list",
        None,
    ),
    (
        "--weval-timeout",
        "weval_timeout",
        f"per-request timeout in seconds (default {defaults.TIMEOUT_S:g})",
        "float",
        defaults.TIMEOUT_S,
    ),
    (
        "--weval-max-attempts",
        "weval_max_attempts",
        "attempts per model request for faults (5xx, malformed replies, resets, timeouts), retries "
        f"included (default {defaults.MAX_ATTEMPTS}); rate-limit refusals spend none",
        "int",
        defaults.MAX_ATTEMPTS,
    ),
    (
        "--weval-rate-limit-wait",
        "weval_rate_limit_wait",
        "longest a request waits on rate limits (refusals and pacing) before it is an error, in seconds "
        f"(default {defaults.RATE_LIMIT_WAIT_S:g})",
        "float",
        defaults.RATE_LIMIT_WAIT_S,
    ),
    (
        "--weval-max-reply-mb",
        "weval_max_reply_mb",
        "a model reply larger than this many MB is an item error, never read whole, stored or judged "
        f"(default {defaults.MAX_REPLY_MB:g})",
        "float",
        defaults.MAX_REPLY_MB,
    ),
    (
        "--weval-store-retry",
        "weval_store_retry",
        "how many seconds a cache store server that does not answer (PostgreSQL restarted or stopped) is "
        "waited for, sending paused, before the run gives it up and keeps its replies for the next run "
        f"(default {defaults.STORE_RETRY_S:g})",
        "float",
        defaults.STORE_RETRY_S,
    ),
    (
        "--weval-stop-grace",
        "weval_stop_grace",
        "after Ctrl-C or SIGTERM, how long replies already on the wire may take to arrive and be stored "
        f"before they are given up, in seconds (default {defaults.STOP_GRACE_S:g}); a second signal stops at once",
        "float",
        defaults.STOP_GRACE_S,
    ),
    (
        "--weval-batch",
        "weval_batch",
        "send requests to providers with a batch API (OpenAI, Anthropic) through it, at half the price: "
        "off, wait (until every batch ends) or submit (submit, then exit; items not answered "
        f"yet are skipped and a later run collects them); default {defaults.BATCH}",
        "str",
        defaults.BATCH,
    ),
    (
        "--weval-service-tier",
        "weval_service_tier",
        "the service tier asked of the providers: auto (none sent: the provider's default), default, "
        "flex (OpenAI's and Gemini's cheaper, slower tier, to the models that take it) or priority; "
        f"each reply is priced at the tier it reports; default {defaults.SERVICE_TIER}",
        "str",
        defaults.SERVICE_TIER,
    ),
    (
        "--weval-prompt-cache",
        "weval_prompt_cache",
        "auto: mark the prefix the judge calls of one answer share as cacheable where it pays "
        "(Anthropic cache_control, OpenAI prompt_cache_key); off: send the reference's request bodies "
        f"exactly; default {defaults.PROMPT_CACHE}",
        "str",
        defaults.PROMPT_CACHE,
    ),
    (
        "--weval-batch-poll",
        "weval_batch_poll",
        f"seconds between status checks of an open batch (default {defaults.BATCH_POLL_S:g})",
        "float",
        defaults.BATCH_POLL_S,
    ),
    (
        "--weval-missing-keys",
        "weval_missing_keys",
        "when a provider key the run needs is not set: stop (before any item runs), error or skip "
        f"the items that need it (default {defaults.MISSING_KEYS})",
        "str",
        defaults.MISSING_KEYS,
    ),
    (
        "--weval-check-models",
        "weval_check_models",
        "before anything is sent, check each model id against the list its provider publishes (OpenAI, "
        f"Anthropic, Gemini, OpenRouter; kept a day in the cache folder): on or off (default {defaults.CHECK_MODELS})",
        "str",
        defaults.CHECK_MODELS,
    ),
    (
        "--weval-budget",
        "weval_budget",
        "stop sending requests once the run's spend reaches this many US dollars (prices: genai-prices and "
        "ini weval_prices)",
        "float",
        None,
    ),
    (
        "--weval-lint",
        "weval_lint",
        "run the blueprint linter: findings are reported as warnings with file and line",
        "flag",
        False,
    ),
    ("--weval-lint-strict", "weval_lint_strict", "run the blueprint linter with findings as failures", "flag", False),
    (
        "--weval-allow-exec",
        "weval_allow_exec",
        "let code judges and cli targets named by agent eval files run (off by default: a file from a pull "
        "request must not start programs next to your API keys)",
        "flag",
        False,
    ),
    (
        "--weval-borderline",
        "weval_borderline",
        "what an agent eval case scoring 0.6 to 0.8 (AgentV's 'borderline') does: pass (with a warning) "
        f"or fail (default {defaults.BORDERLINE})",
        "str",
        defaults.BORDERLINE,
    ),
    (
        "--weval-fixtures",
        "weval_fixtures",
        "a YAML or JSON file of canned answers per prompt (and model), used instead of calling the model "
        "under test; judges still judge them (docs/fixtures.md)",
        "str",
        None,
    ),
    (
        "--weval-fixtures-strict",
        "weval_fixtures_strict",
        "an item whose prompt x model has no answer in the --weval-fixtures file errors instead of asking the "
        "model; nothing is sent for it (the reference's --fixtures-strict; docs/fixtures.md)",
        "flag",
        False,
    ),
    (
        "--weval-eval-methods",
        "weval_eval_methods",
        "evaluation methods, the reference's --eval-method: llm-coverage, embedding,llm-coverage "
        "or all (also each answer's similarity to the ideal, from the blueprint's embeddingModel), or none "
        f"(docs/options.md, 'Similarity to the ideal'; default {','.join(defaults.EVAL_METHODS)})",
        "str",
        ",".join(defaults.EVAL_METHODS),
    ),
    # the baseline gate and repeats (docs/statistics.md)
    (
        "--weval-baseline",
        "weval_baseline",
        "the --weval-out folder of an earlier run, or last (last:BRANCH) for each item's newest score in the store's "
        "history (of that branch's runs): compare each model's scores with it, on paired items, and fail the session when a "
        "model regressed",
        "str",
        None,
    ),
    (
        "--weval-alpha",
        "weval_alpha",
        f"significance level of the baseline regression test, Holm-corrected across models (default {defaults.ALPHA:g})",
        "float",
        defaults.ALPHA,
    ),
    (
        "--weval-max-drop",
        "weval_max_drop",
        f"a drop in a model's mean score no larger than this is not a regression (default {defaults.MAX_DROP:g})",
        "float",
        defaults.MAX_DROP,
    ),
    (
        "--weval-repeat",
        "weval_repeat",
        f"samples per item, each under its own cache key; the item's score is their mean (default {defaults.REPEAT}); "
        "auto: as many as the item's outcome needs, at most --weval-max-repeat (docs/sampling.md)",
        "str",
        defaults.REPEAT,
    ),
    (
        "--weval-max-repeat",
        "weval_max_repeat",
        f"most samples per item under --weval-repeat=auto (default {defaults.MAX_REPEAT})",
        "int",
        defaults.MAX_REPEAT,
    ),
    (
        "--weval-fail-flaky",
        "weval_fail_flaky",
        "a flaky item (its samples on both sides of its threshold) fails the session",
        "flag",
        False,
    ),
]

_INI_ONLY: list[tuple[str, str, str, object]] = [
    ("weval_collections_dir", "where models/NAME.json collections live", "str", None),
    ("weval_globs", "extra file globs collected as blueprints", "linelist", None),
    ("weval_model_defs", "a YAML file of custom model objects usable anywhere a model id is", "str", None),
    (
        "weval_max_file_mb",
        f"largest blueprint file read, in MB (default {defaults.MAX_FILE_MB:g})",
        "str",
        f"{defaults.MAX_FILE_MB:g}",
    ),
    ("weval_provider_concurrency", "per-provider caps, e.g. openai:20,anthropic:10", "str", None),
    (
        "weval_prices",
        "lines of '<model id> <USD per 1M input tokens> <USD per 1M output tokens>', over genai-prices",
        "linelist",
        None,
    ),
    ("weval_lint_ignore", "lint rule codes to ignore in every file (space separated)", "str", None),
    (
        "weval_lint_per_file_ignores",
        "lines of '<glob>: code code': lint codes ignored in the files matching the glob (relative to the rootdir)",
        "linelist",
        None,
    ),
]


# Every setting's default, as the tables above read it from ``pytest_weval.defaults``, its one home.
_DEFAULTS: dict[str, Any] = {ini: default for _opt, ini, _help, _kind, default in _OPTIONS} | {
    ini: default for ini, _help, _kind, default in _INI_ONLY
}


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("weval", "Weval blueprints as tests")
    for opt, ini, help_text, kind, _default in _OPTIONS:
        if kind == "flag":
            group.addoption(opt, action="store_true", default=None, dest=ini, help=help_text)
            parser.addini(ini, help_text, type="bool", default=False)
        else:
            group.addoption(opt, action="store", default=None, dest=ini, metavar=kind.upper(), help=help_text)
            parser.addini(ini, help_text, default=None)
    for ini, help_text, kind, default in _INI_ONLY:
        if kind == "linelist":
            parser.addini(ini, help_text, type="linelist", default=default)
        else:
            parser.addini(ini, help_text, default=default)


def _raw(config: pytest.Config, ini: str) -> object:
    value = config.getoption(ini, default=None)
    if value is None:
        value = config.getini(ini)
    return value


_COMMAND_LINE = {ini for _opt, ini, _help, _kind, _default in _OPTIONS}


def option_name(ini: str) -> str:
    """How a setting is named in a message: its option and ini twin, or its ini name alone."""
    return f"--{ini.replace('_', '-')} (ini {ini})" if ini in _COMMAND_LINE else f"ini {ini}"
