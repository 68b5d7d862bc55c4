"""Custom model objects from a `weval_model_defs` file (docs/rulings.md, ruling 14).

The file is YAML (or JSON): a list of custom model objects in blueprint syntax, or a mapping
whose `models:` holds that list. Each object is validated as a blueprint's `models` entry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .header import model_definition_problem
from .loader import read_blueprint_file, room_for_depth
from .locate import Locator
from .model import BlueprintError

_HINT = "each entry needs id, url, modelName and inherit (see the blueprint format's custom models)"


def load_model_defs(path: str | Path) -> dict[str, dict[str, Any]]:
    """Custom model objects by id. Raises BlueprintError (located) for a bad file or entry."""
    with room_for_depth():
        source = read_blueprint_file(path)
    loc = Locator(source)
    document = source.documents[0]
    if isinstance(document, dict) and isinstance(document.get("models"), list):
        entries = document["models"]
    elif isinstance(document, list):
        entries = document
    else:
        raise BlueprintError(
            "a model definitions file is a list of custom model objects, or a mapping with a `models:` list",
            loc.at(document),
            hint=_HINT,
        )
    models: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(entries):
        where = loc.item(entries, index, f"models[{index}]")
        if not isinstance(entry, dict):
            raise BlueprintError("a model definition must be a custom model object, not a plain id", where, hint=_HINT)
        problem = model_definition_problem(entry)
        if problem:
            raise BlueprintError(problem, where, hint=_HINT)
        if entry["id"] in models:
            raise BlueprintError(f"model id '{entry['id']}' is defined twice", where, hint="keep one definition per id")
        models[entry["id"]] = entry
    return models
