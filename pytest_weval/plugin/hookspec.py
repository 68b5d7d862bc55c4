"""Hooks the plugin adds to pytest, for a conftest or another plugin to implement (the way
``xdist/newhooks.py`` declares xdist's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # pydantic's: this module is loaded in every pytest run
    from pytest_weval.results import ItemResult


def pytest_weval_result(item: pytest.Item, result: ItemResult) -> None:
    """A Weval item's typed result is known, before pytest reports the item.

    Called once per item, in the process that runs it (an xdist worker under ``-n``), whether
    the item passes, fails, errors or is skipped. ``result`` is the record every reporter
    reads (``pytest_weval.results.ItemResult``); treat it as read-only.
    """
