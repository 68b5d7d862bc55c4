"""The warnings the plugin emits, under one base class so a user can filter them all
(``-W ignore::pytest_weval.plugin.warning_types.PytestWevalWarning``), as pytest's own
``_pytest/warning_types.py`` does for ``PytestWarning``."""

from __future__ import annotations


class PytestWevalWarning(UserWarning):
    """Base class of every warning pytest-weval emits."""


class WevalWarning(PytestWevalWarning):
    """A finding about a blueprint: it runs, but probably not as its author meant. Located at
    the blueprint's file and line."""


class WevalPointError(PytestWevalWarning):
    """A point that errored on this response: excluded from the score, never silently."""
