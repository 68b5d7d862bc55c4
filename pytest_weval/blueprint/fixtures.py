"""Response fixtures: canned answers per prompt and model, so a rubric can be checked without
calling the model under test (docs/fixtures.md).

The file format and the choice of an answer are the reference's (its `--fixtures` option):
``{version?, strategy?, seed?, responses: {<prompt id>: {default?, byModel?, notes?}}}``, where a
value is a string, a list of strings (one is picked) or ``{turns: [...]}``. Reading is strict
where the reference is lax: a file it would silently ignore is a located error here, because
a run that quietly calls the model instead of using the fixture costs money and proves nothing.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from .loader import RawSource, read_blueprint_file
from .model import BlueprintError, Location

STRATEGIES = ("seeded", "first", "round-robin")
ENTRY_KEYS = ("default", "byModel", "notes")  # the keys of one prompt's entry
FixtureSource = Literal["final", "turns"]


@dataclasses.dataclass(frozen=True)
class FixturePick:
    """What the fixture file gives one item: a whole answer, or the answers of its
    ``assistant: null`` turns in order."""

    final: str | None = None
    turns: tuple[str, ...] | None = None


@dataclasses.dataclass(frozen=True)
class ResponseFixtures:
    path: str  # as shown in messages
    strategy: str
    seed: str
    responses: Mapping[str, Mapping[str, Any]]  # prompt id -> {"default"?, "byModel"?}
    lines: Mapping[str, int]  # prompt id -> the line its entry starts on
    # --weval-fixtures-strict: an answer the file does not give is an error, never generated live
    strict: bool = False

    def pick(self, prompt_id: str, model_id: str, effective_model_id: str, run_label: str) -> FixturePick | None:
        """The fixture for one item; None when the file has none for it (generated live).
        ``byModel`` matches ``model_id`` exactly, else the first ``prefix*`` key it starts
        with, else ``default`` answers."""
        spec = self.responses.get(prompt_id)
        if spec is None:
            return None
        value = _by_model(spec.get("byModel"), model_id)
        if value is None:
            value = spec.get("default")
        if isinstance(value, str):
            return FixturePick(final=value) if value else None
        if isinstance(value, list):
            if not value:
                return None
            return FixturePick(final=self._choose(value, prompt_id, effective_model_id, run_label))
        if isinstance(value, Mapping):
            return FixturePick(turns=tuple(value["turns"]))
        return None

    def _choose(self, answers: list[str], prompt_id: str, effective_model_id: str, run_label: str) -> str:
        # The reference's round-robin keeps no state and takes the first answer, as `first` does.
        if self.strategy in ("first", "round-robin"):
            return answers[0]
        key = f"{self.seed}|{run_label}|{prompt_id}|{effective_model_id}"
        return answers[fnv1a_32(key) % len(answers)]

    def place(self, prompt_id: str) -> str:
        """Where a prompt's entry is (``file:line``), or the file when it has none."""
        line = self.lines.get(prompt_id)
        return f"{self.path}:{line}" if line else self.path


def fnv1a_32(text: str) -> int:
    """FNV-1a over UTF-16 code units, as the reference hashes a JavaScript string."""
    value = 2166136261
    data = text.encode("utf-16-le", "surrogatepass")
    for index in range(0, len(data), 2):
        value ^= data[index] | data[index + 1] << 8
        value = (value * 16777619) & 0xFFFFFFFF
    return value


def _by_model(by_model: Any, model_id: str) -> Any:
    if not isinstance(by_model, Mapping):
        return None
    if by_model.get(model_id) is not None:
        return by_model[model_id]
    for key, value in by_model.items():
        if key.endswith("*") and model_id.startswith(key[:-1]):
            return value
    return None


def load_fixtures(path: str | Path, *, display_path: str | None = None, strict: bool = False) -> ResponseFixtures:
    """Read and check a fixture file (YAML or JSON by its suffix); a BlueprintError names the
    file, the line and the field of the first problem. ``strict``: --weval-fixtures-strict."""
    shown = display_path or str(path)
    try:
        source = read_blueprint_file(path, display_path=shown, what="fixture file")
    except OSError as exc:
        raise BlueprintError(
            f"cannot read the fixture file: {exc.strerror or exc}",
            Location(path=shown),
            hint="check the path given to --weval-fixtures (ini weval_fixtures)",
        ) from None
    if len(source.documents) != 1 or not isinstance(source.documents[0], Mapping):
        raise _problem(source, None, None, "a fixture file is one mapping with a `responses` key")
    top = source.documents[0]
    strategy = top.get("strategy", "seeded")
    if strategy not in STRATEGIES:
        raise _problem(source, top, "strategy", f"strategy {strategy!r} is not one of {', '.join(STRATEGIES)}")
    seed = top.get("seed", "0")
    if isinstance(seed, bool) or not isinstance(seed, (str, int, float)):
        raise _problem(source, top, "seed", "seed is a number or a string")
    responses = top.get("responses")
    if not isinstance(responses, Mapping):
        raise _problem(source, top, "responses", "`responses` maps prompt ids to their answers")
    for prompt_id, spec in responses.items():
        _check_spec(source, responses, str(prompt_id), spec)
    return ResponseFixtures(
        path=shown,
        strategy=strategy,
        seed=_js_string(seed),
        responses={str(k): v for k, v in responses.items()},
        lines={str(k): source.key_position(responses, k)[0] for k in responses},
        strict=strict,
    )


def _check_spec(source: RawSource, responses: Mapping[str, Any], prompt_id: str, spec: Any) -> None:
    field = f"responses.{prompt_id}"
    if not isinstance(spec, Mapping):
        raise _problem(source, responses, prompt_id, f"{field} is a mapping with `default` and/or `byModel`")
    unknown = [key for key in spec if key not in ENTRY_KEYS]
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), ENTRY_KEYS, n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise _problem(
            source, spec, unknown[0], f"{field}: unknown key {unknown[0]!r} (expected {', '.join(ENTRY_KEYS)}){hint}"
        )
    if "default" in spec:
        _check_value(source, spec, "default", f"{field}.default")
    by_model = spec.get("byModel")
    if by_model is None:
        return
    if not isinstance(by_model, Mapping):
        raise _problem(source, spec, "byModel", f"{field}.byModel maps model ids (or `prefix*`) to answers")
    for model_id in by_model:
        _check_value(source, by_model, model_id, f"{field}.byModel.{model_id}")


def _check_value(source: RawSource, parent: Mapping[str, Any], key: str, field: str) -> None:
    value = parent[key]
    if isinstance(value, str):
        return
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return
    # `final` beside `turns` is read by nothing in the reference (its own example files have it): allowed, unused.
    if isinstance(value, Mapping) and set(value) - {"final"} == {"turns"}:
        turns = value["turns"]
        if isinstance(turns, list) and turns and all(isinstance(t, str) and t.strip() for t in turns):
            return
    raise _problem(source, parent, key, f"{field} is an answer (text), a list of answers, or {{turns: [answer, ...]}}")


def _problem(source: RawSource, parent: Any, key: str | None, message: str) -> BlueprintError:
    line, column = source.key_position(parent, key) if key is not None else (1, 1)
    return BlueprintError(
        message,
        Location(path=source.path, line=line, column=column, field=key),
        hint="see docs/fixtures.md for the fixture file's format",
    )


def _js_string(value: str | int | float) -> str:
    """The seed as JavaScript's ``String()`` writes it (``1`` for 1.0)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
