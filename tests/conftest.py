"""Shared by every test directory: the repository root on sys.path (for ``tests.fakeserver``)
and pytester for the plugin's end-to-end tests."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

pytest_plugins = ["pytester"]

# The suites the tests copy and run (promptfoo configs, AgentV files, recorded data) are test
# data, not this suite's tests: collected here, a promptfooconfig.yaml would be run as one.
collect_ignore_glob = ["*/data/*"]

# pytester's in-process runs drop from sys.modules what each run imported. psycopg's compiled
# core keeps the error classes of the first import, so a psycopg imported again afterwards no
# longer catches them (a refused connection escaped as OperationalError instead of StoreError
# when an in-process run had imported psycopg first). Imported once here, it is never dropped.
with contextlib.suppress(ImportError):
    import psycopg  # noqa: F401

# Likewise the plugin's concerns, which it loads (with pydantic, YAML and the engine) when a run
# first uses it: loaded again after an in-process run dropped them, the next run parsed every
# blueprint as empty. Imported once here, before any run, they stay loaded for all, as in a real
# process that imports them once.
import pytest_weval.plugin.registration  # noqa: E402, F401
