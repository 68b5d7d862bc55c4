"""What a point function returns, before it becomes a ``PointAssessment`` (docs/functions.md, 'Contract').

A function returns ``bool``, a number, a :class:`FnScore` (the reference's ``{score, explain}``)
or a :class:`FnError` (its ``{error}``). Raising :class:`PointFunctionThrew` reproduces a JS
function that threw; the evaluator turns it into "Error executing point function ...".
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_weval.errors import WevalError


@dataclass(frozen=True)
class FnScore:
    """``{score, explain}``: ``score`` is a bool or a number; ``explain`` becomes the reflection
    when it is a non-empty string."""

    score: bool | float
    explain: str | None = None


@dataclass(frozen=True)
class FnError:
    """An unscored point.

    ``reflect``: the reference writes ``reflection: "Error: <message>"`` for exceptions and
    unknown functions, but none for a returned ``{error}`` (docs/functions.md, 'Contract').
    ``authoring``: the blueprint's fault, not the response's (unknown function, invalid regex
    syntax): the item errors (docs/rulings.md, ruling 9).
    """

    message: str
    reflect: bool = False
    authoring: bool = False


RawResult = bool | int | float | FnScore | FnError


class PointFunctionThrew(WevalError):
    """A point function "threw" (as its JS original would have); the message is JS's."""
