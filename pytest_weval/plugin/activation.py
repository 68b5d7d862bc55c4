"""When the plugin loads the rest of itself (docs/engine.md, 'What the plugin costs a run
without blueprints').

pytest loads the plugin's entry module in every run of every project where it is installed.
That module, and this one, import nothing heavy (no pydantic, YAML, engine, report or HTTP
client): the plugin becomes active, and loads and registers its concerns
(``registration.activate``), only when the run uses it:

* at configure time, when a weval option, ini value or ``WEVAL_RUN_ID`` is given (in a serial
  run and every xdist worker; the xdist controller, which reads the same options, once xdist
  has started the workers), or for ``pytest --markers`` (which lists blueprint tags without
  collecting);
* else at the first file collection would make a blueprint or agent eval collector of (the
  rules of ``blueprint_paths.py`` and ``formats/discover.py``, by name and a capped read), in
  a serial run or an xdist worker alike;
* else once collection is over, when a collected test asks for ``weval_client`` or
  ``weval_judge`` (or when a test asks for one by name while it runs).

An xdist controller collects nothing: ``XdistController`` activates it when a worker's
collected ids name a file of those rules (before anything is scheduled), else at the first
report that carries a Weval result, else when a worker that used the plugin goes down (a run
whose only use is the fixtures), and hands the concerns the xdist events they missed.

Activated after the session started, the plugin does what the session's start would have done
for it: the cache line of the header, and the session's checks once collection is over.

This is the one module of the plugin that imports others where they are used (the rest of the
plugin, through ``registration.py``), so that the entry module stays light.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_weval.formats.discover import is_agent_eval_file, is_promptfoo_file
from pytest_weval.plugin.blueprint_paths import is_blueprint_path, named_files, uncollected_hints
from pytest_weval.plugin.options import _INI_ONLY, _OPTIONS, _raw
from pytest_weval.plugin.role import USAGE_OUTPUT

if TYPE_CHECKING:
    from pytest_weval.api import Weval

FIXTURES = ("weval_client", "weval_judge")
_PACKAGE = __name__.split(".", 1)[0]

_ACTIVE = pytest.StashKey[bool]()
_NAMED = pytest.StashKey[frozenset[Path]]()
_CHECKS_PENDING = pytest.StashKey[bool]()  # activated during collection: the session's checks wait for its end


@dataclasses.dataclass(frozen=True)
class _PathRules:
    rootdir: Path
    globs: tuple[str, ...] = ()  # ini weval_globs activates at configure time, so none here


def is_active(config: pytest.Config) -> bool:
    return config.stash.get(_ACTIVE, False)


def asked_for(config: pytest.Config) -> bool:
    """Whether the run asks for the plugin before anything is collected."""
    if os.environ.get("WEVAL_RUN_ID") or getattr(config.option, "markers", False):
        return True
    for _opt, ini, _help, _kind, _default in _OPTIONS:
        value = _raw(config, ini)
        if value is not None and value != "" and value is not False:
            return True
    for ini, _help, _kind, default in _INI_ONLY:
        value = config.getini(ini)
        if value is not None and value != "" and value != [] and value != default:
            return True
    return False


def activate(
    config: pytest.Config, session: pytest.Session | None = None, *, collecting: bool = False, checks: bool = True
) -> None:
    """Load and register the plugin's concerns, once. ``session``: the session has started
    without them, so they catch up with it (``collecting``: its checks once collection is over;
    ``checks=False``: neither checks nor the header's line, for an xdist controller activated
    once items were already sent, amid their progress)."""
    if is_active(config):
        return
    config.stash[_ACTIVE] = True
    _load_unrewritten(config)
    # Imported by its full name, never as an attribute of the package: what a run imports is
    # what pytest's in-process runs (pytester) forget afterwards, and an attribute would hand the
    # next run the module they forgot (with other stash keys than the ones it uses).
    from pytest_weval.plugin.registration import activate as register_concerns
    from pytest_weval.plugin.registration import say_header

    register_concerns(config)
    if session is not None and checks:
        say_header(config)
        config.stash[_CHECKS_PENDING] = True
        if not collecting:
            _run_pending_checks(config)


def _load_unrewritten(config: pytest.Config) -> None:
    """pytest rewrites the asserts of every module of an installed plugin's package as it is
    imported, in Python (``ast.parse``, a visitor, ``compile`` of the tree): for the plugin's
    ~200 modules ~0.8 s of CPU per process wherever bytecode is not cached
    (``PYTHONDONTWRITEBYTECODE``, a read-only install), in every xdist worker and the controller
    alike, against ~0.1 s for Python's own compiler. The plugin's asserts are internal checks
    that no user reads, so its modules imported from here on are left to Python's own import.
    pytest has no public way to unmark a package, so this reaches its hook's set of marked
    names, and does nothing if that set is not there."""
    marked = getattr(getattr(config.pluginmanager, "rewrite_hook", None), "_must_rewrite", None)
    if not isinstance(marked, set):
        return
    ours = {name for name in marked if name == _PACKAGE or name.startswith(_PACKAGE + ".")}
    if ours:
        marked.difference_update(ours)
        decided = getattr(config.pluginmanager.rewrite_hook, "_marked_for_rewrite_cache", None)
        if isinstance(decided, dict):
            decided.clear()


def _run_pending_checks(config: pytest.Config) -> None:
    if config.stash.get(_CHECKS_PENDING, False):
        config.stash[_CHECKS_PENDING] = False
        from pytest_weval.plugin.registration import check_session

        check_session(config)


def deactivate(config: pytest.Config) -> None:
    if is_active(config):
        from pytest_weval.plugin.registration import unregister

        unregister(config)
        config.stash[_ACTIVE] = False


def collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """The first blueprint or agent eval file of an inactive run activates the plugin, whose
    collection then makes this file's collector (and every later file's, itself)."""
    config = parent.config
    if is_active(config) or not _is_eval_file(config, file_path):
        return None
    activate(config, parent.session, collecting=True)
    collection = config.pluginmanager.get_plugin("weval-collection")
    if collection is None:  # not a process that collects (cannot happen: the xdist controller collects nothing)
        return None
    collector: pytest.Collector | None = collection.pytest_collect_file(file_path=file_path, parent=parent)
    return collector


def _is_eval_file(config: pytest.Config, file_path: Path) -> bool:
    """Whether collection makes a blueprint, agent eval or promptfoo collector of ``file_path``."""
    named = config.stash.get(_NAMED, None)
    if named is None:
        named = config.stash[_NAMED] = named_files(config.args)
    rules = _PathRules(config.rootpath)
    return (
        is_agent_eval_file(file_path, rootdir=rules.rootdir, named=file_path in named)
        or is_promptfoo_file(file_path, rootdir=rules.rootdir, named=file_path in named)
        or is_blueprint_path(file_path, rules, named)
    )


def _names_eval_file(config: pytest.Config, nodeids: Iterable[str]) -> bool:
    """Whether the collected ``nodeids`` (relative to the root, as a worker sends them) hold
    an item of a file ``_is_eval_file`` takes: each file is judged once."""
    seen: set[str] = set()
    for nodeid in nodeids:
        file = nodeid.split("::", 1)[0]
        if file in seen:
            continue
        seen.add(file)
        if _is_eval_file(config, (config.rootpath / file).resolve()):
            return True
    return False


def collection_done(session: pytest.Session, items: list[pytest.Item]) -> None:
    """Collection is over: a plugin activated by a blueprint runs the session's checks now (a
    usage error raised while a file is collected would be that file's collection error), and
    a collected test that asks for the plugin's fixtures activates it, before the run starts."""
    config = session.config
    if not is_active(config) and any(name in getattr(item, "fixturenames", ()) for item in items for name in FIXTURES):
        activate(config, session)
    _run_pending_checks(config)


def say_hints(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """A run that collected nothing, with the plugin inactive: how blueprints are found, when
    a folder it was given holds YAML or JSON files (an active plugin says it in its summary)."""
    if not is_active(config) and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        for line in uncollected_hints(config.args, config.invocation_params.dir):
            terminalreporter.write_line(line, yellow=True)


def engine_for(request: pytest.FixtureRequest) -> Weval:
    """The run's engine, for the ``weval_client`` and ``weval_judge`` fixtures. Active already
    when a collected test named the fixture; not when a test asks for it by name."""
    activate(request.config, request.session)
    from pytest_weval.plugin.registration import engine_of

    return engine_of(request.config).weval()


class XdistController:
    """Registered on every xdist controller. One whose run asks for the plugin activates it once
    xdist has started the workers; otherwise, collecting nothing, it learns from its workers
    whether the run uses the plugin, and stays light if not. Activated late, the concerns are
    handed the xdist events they missed (each worker's configuration, and the event that
    activated them)."""

    def __init__(self, config: pytest.Config, *, asked: bool = False):
        self._config = config
        self._asked = asked  # a weval option or ini value: active from the session's start
        self._session: pytest.Session | None = None
        self._nodes: list[Any] = []  # every worker configured so far

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionstart(self, session: pytest.Session) -> Generator[None, None, None]:
        """A run that asks for the plugin activates it here, after xdist has started its
        workers (in its own ``pytest_sessionstart``), not at configure time: the workers start
        while the controller loads the plugin (~0.4 s of CPU), not after."""
        self._session = session
        result = yield
        if self._asked:
            self._activate(checks=True)
        return result

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Every worker learns when the run began, whether or not the controller is active (a
        worker that activates reads it then)."""
        node.workerinput.setdefault("weval_run_started", time.time())
        self._nodes.append(node)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Before anything is scheduled: as a serial run activates at its first blueprint, with
        the header's cache line and the session's checks (a usage error ends the session)."""
        if not is_active(self._config) and _names_eval_file(self._config, ids):
            self._activate(checks=True)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if is_active(self._config) or not (
            getattr(report, "weval_result", None) or getattr(report, "weval_spool", None)
        ):
            return
        self._activate(checks=False).pytest_runtest_logreport(report=report)

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """A worker that used the plugin (its fixtures only, say) hands over what its engine did."""
        if is_active(self._config) or USAGE_OUTPUT not in (getattr(node, "workeroutput", None) or {}):
            return
        self._activate(checks=False).pytest_testnodedown(node=node, error=error)

    def _activate(self, *, checks: bool) -> Any:
        """The concerns, handed each worker's configuration; returns the hook relay that calls
        them alone (pluggy's current call does not reach a plugin registered during it)."""
        pluginmanager = self._config.pluginmanager
        before = pluginmanager.get_plugins()
        activate(self._config, self._session, checks=checks)
        for node in self._nodes:
            pluginmanager.subset_hook_caller("pytest_configure_node", before)(node=node)
        return _Subset(pluginmanager, before)


class _Subset:
    """``hook.<name>(...)`` for the plugins registered since ``before`` only."""

    def __init__(self, pluginmanager: pytest.PytestPluginManager, before: Iterable[object]):
        self._pluginmanager = pluginmanager
        self._before = before

    def __getattr__(self, name: str) -> Any:
        return self._pluginmanager.subset_hook_caller(name, self._before)


class TagMarkers:
    """Registered when pytest adds the plugin's hooks, so that its ``pytest_configure`` runs
    last, for `pytest --markers` only (and `-p no:weval` drops it too)."""

    @pytest.hookimpl(trylast=True)  # after every plugin has registered its markers: a tag never shadows one
    def pytest_configure(self, config: pytest.Config) -> None:
        if getattr(config.option, "markers", False):  # which activated the plugin at configure time
            from pytest_weval.plugin.tag_markers import register_run_tags

            register_run_tags(config)
