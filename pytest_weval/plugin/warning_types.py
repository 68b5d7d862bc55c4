"""The warnings the plugin emits (defined with the package's errors, ``pytest_weval/errors.py``),
under the name users filter them by: ``-W ignore::pytest_weval.plugin.warning_types.PytestWevalWarning``
(or ``pytest_weval.PytestWevalWarning``)."""

from __future__ import annotations

from pytest_weval.errors import PytestWevalWarning, WevalPointError, WevalWarning

__all__ = ["PytestWevalWarning", "WevalPointError", "WevalWarning"]
