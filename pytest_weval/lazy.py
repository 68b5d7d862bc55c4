"""A package's names loaded when first asked for (PEP 562): a process that never uses a name
never imports its module (docs/engine.md, 'A process's start')."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def names_on_first_use(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each name of ``where`` (name -> the dotted
    module that defines it) imported at its first use, then kept in the package's namespace so
    later uses do not come back here."""
    namespace = sys.modules[package].__dict__

    def load(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    return load
