"""The plugin's per-session state, kept on the pytest config (one per process)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_weval.plugin.options import WevalSettings, settings_from_config

if TYPE_CHECKING:
    from pytest_weval.blueprint.model import Blueprint
    from pytest_weval.results import ItemResult

_KEY = pytest.StashKey["WevalState"]()


@dataclasses.dataclass
class WevalState:
    config: pytest.Config
    settings: WevalSettings
    named_files: frozenset[Path]
    custom_models: dict[str, dict[str, Any]]
    blueprints: dict[Path, Blueprint] = dataclasses.field(default_factory=dict)
    results: list[ItemResult] = dataclasses.field(default_factory=list)
    runner: Any = None  # plugin.running.Runner, created when collection is final
    markers: set[str] = dataclasses.field(default_factory=set)
    _weval: Any = None  # api.Weval: one engine per process, shared by items and fixtures

    def weval(self):
        """The process's engine and pipeline, started on first use (never during collection)."""
        if self._weval is None:
            from pytest_weval.api import Weval
            from pytest_weval.engine import EngineSettings

            settings = self.settings
            worker = getattr(self.config, "workerinput", None)
            self._weval = Weval(
                judges=settings.judges,
                threshold=settings.threshold,
                custom_models=self.custom_models,
                allowed_env=settings.allow_env,
                engine_settings=EngineSettings(
                    cache_mode=settings.cache_mode,
                    cache_dir=settings.cache_dir,
                    cache_store=settings.cache_store,
                    concurrency=settings.concurrency,
                    provider_concurrency=settings.provider_concurrency,
                    max_attempts=settings.max_attempts,
                    timeout_s=settings.timeout_s,
                    allowed_env=settings.allow_env,
                    worker_count=int(worker["workercount"]) if worker else 1,
                    worker_id=str(worker["workerid"]) if worker else "main",
                    run_id=str(worker["testrunuid"]) if worker else None,
                    run_started=worker.get("weval_run_started") if worker else None,
                ),
            )
        return self._weval

    def close(self, *, drain: bool = False) -> None:
        """``drain``: the run ended normally, so evaluations another xdist worker may be
        waiting for are finished first."""
        if self.runner is not None:
            runner, self.runner = self.runner, None
            runner.close(drain=drain)
        if self._weval is not None:
            weval, self._weval = self._weval, None
            weval.close()

    def load(self, path: Path) -> Blueprint:
        from pytest_weval.blueprint import load_blueprint
        from pytest_weval.plugin.collect import blueprint_rel_path

        if path not in self.blueprints:
            root = self.settings.rootdir
            try:
                shown = path.relative_to(root).as_posix()
            except ValueError:
                shown = path.as_posix()
            self.blueprints[path] = load_blueprint(
                path,
                rel_path=blueprint_rel_path(path, root),
                display_path=shown,
                collections_dir=self.settings.collections_dir,
                model_override=list(self.settings.models) if self.settings.models else None,
                custom_models=self.custom_models,
                max_file_mb=self.settings.max_file_mb,
            )
        return self.blueprints[path]

    def register_marker(self, tag: str) -> str:
        if tag not in self.markers:
            self.markers.add(tag)
            self.config.addinivalue_line("markers", f"{tag}: blueprint tag")
        return tag


def create_state(config: pytest.Config) -> WevalState:
    settings = settings_from_config(config)
    custom_models: dict[str, dict[str, Any]] = {}
    if settings.model_defs is not None:
        from pytest_weval.blueprint import load_model_defs
        from pytest_weval.blueprint.model import BlueprintError, Location

        try:
            custom_models = load_model_defs(settings.model_defs)
        except BlueprintError as exc:
            raise pytest.UsageError(f"weval_model_defs: {exc}") from None
        except OSError as exc:
            location = Location(path=str(settings.model_defs))
            raise pytest.UsageError(f"weval_model_defs: {location}: cannot read: {exc.strerror}") from None
    named = frozenset(
        Path(arg.split("::")[0]).resolve()
        for arg in config.args
        if Path(arg.split("::")[0]).suffix.lower() in (".yml", ".yaml", ".json")
    )
    state = WevalState(config=config, settings=settings, named_files=named, custom_models=custom_models)
    config.stash[_KEY] = state
    return state


def state_of(config: pytest.Config) -> WevalState:
    return config.stash[_KEY]
