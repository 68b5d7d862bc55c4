"""Shared by every test directory: the repository root on sys.path (for ``tests.fakeserver``)
and pytester for the plugin's end-to-end tests."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

pytest_plugins = ["pytester"]
