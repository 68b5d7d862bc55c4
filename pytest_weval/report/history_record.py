"""The history's records, typed (docs/history.md): a run (``RunRecord``, its per model
``ModelFigures``) and its items (``ItemRecord``, its ``ItemDetail`` and each ``PointRecord``).

The store (``engine/store/history.py``) keeps and hands plain JSON dicts, and checks only what it
needs to keep them (ids, times, the figures' numbers); what the report reads of them is read here,
once: ``read_run`` and ``read_item`` turn a stored dict into a record or say, located, why they
cannot (``DamagedRecord``), and ``RecordedHistory`` reads a store through them, skipping what does
not read and naming it, as the store does its own damage.

The stored keys are the ones every version wrote (``detail``'s are camelCase: field aliases); a
record written before a field existed reads with the default the readers always gave it
(``selection``, ``digest`` and ``samples`` came later). ``stored_run`` and ``stored_item`` give
the store the very dict the untyped record was: numbers keep their type (a mean of 1 stays 1, a
score of 1.0 stays 1.0), and a model's ``selection`` is left out when unknown, as it always was.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictFloat, StrictInt, ValidationError

import pytest_weval.defaults as defaults
from pytest_weval.errors import WevalError
from pytest_weval.report.spool import SharedTexts
from pytest_weval.results import Outcome, Source

# A number as it was recorded: 1 stays 1 and 1.0 stays 1.0 (json writes them differently), and
# neither a bool nor a numeric string is one.
Number = StrictInt | StrictFloat
REPAIR_HINT = "`python -m pytest_weval cache repair` removes it"
UNREAD_HINT = "left in the store: this pytest-weval reads past it"


def _none_as(default: Any) -> BeforeValidator:
    """A recorded null read as ``default``, as the readers always took it (``or default``)."""
    return BeforeValidator(lambda value: default if value is None else value)


def _key(name: str, default: Any) -> Any:
    """A field stored under the camelCase ``name`` the record always had."""
    return Field(default=default, validation_alias=name, serialization_alias=name)


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, validate_by_name=True, validate_by_alias=True, extra="ignore")


class ModelFigures(_Record):
    """A model's figures in a run, those of ``summary.json``, and which items they are over."""

    mean: Number | None = None
    ci95: Annotated[list[Number | None], Field(min_length=2, max_length=2)] | None = None
    items: Number | None = None
    # A digest of the model's node ids (report/history.py, selection_digest); a run recorded
    # before it was said, or a model with no item of a node id, has none and writes none.
    selection: str | None = Field(default=None, exclude_if=lambda selection: selection is None)


class PointRecord(_Record):
    text: str
    score: Number | None = None
    inverted: bool = False
    error: str | None = None
    kind: str = "function"


class ItemDetail(_Record):
    """What comparing an item with a later run, and rebuilding its result, needs."""

    blueprint_path: Annotated[str, _none_as("")] = _key("blueprintPath", "")
    effective_model: str | None = _key("effectiveModel", None)
    system_prompt: str | None = _key("systemPrompt", None)
    threshold: Number = defaults.THRESHOLD
    prompt_weight: Number | None = _key("promptWeight", None)
    prompt_line: StrictInt | None = _key("promptLine", None)
    source: Annotated[Source, _none_as("blueprint")] = "blueprint"
    points: Annotated[list[PointRecord], _none_as([])] = Field(default_factory=list)
    digest: str | None = None  # with the samples, read by --weval-repeat=auto
    samples: list[Number] | None = None


class ItemRecord(_Record):
    nodeid: str = Field(min_length=1)
    blueprint: str
    prompt: str
    model: str
    score: Number | None = None
    outcome: Outcome
    answer: str | None = None
    detail: Annotated[ItemDetail, _none_as({})] = Field(default_factory=ItemDetail)

    @property
    def scored(self) -> bool:
        """Passed or failed with a score: what compares with another run's score."""
        return self.outcome in ("passed", "failed") and self.score is not None

    @property
    def effective_model(self) -> str:
        return self.detail.effective_model or self.model


class RunRecord(_Record):
    id: str = Field(min_length=1)
    started: float
    ended: float
    commit: str | None = None
    branch: str | None = None
    host: str | None = None
    models: list[str] = Field(default_factory=list)
    judges: list[str] = Field(default_factory=list)
    figures: dict[str, ModelFigures] = Field(default_factory=dict)


class DamagedRecord(WevalError, ValueError):
    """A stored record the report cannot read: which field, and why."""


def _where(raw: Any, loc: Sequence[int | str]) -> str:
    """The field an error is of, as the stored record spells it (``detail.points.0.score``):
    pydantic's location, less the union branches it tried below the value."""
    parts: list[str] = []
    value = raw
    for part in loc:
        if isinstance(value, Mapping):
            parts.append(str(part))
            if part not in value:
                break
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            parts.append(str(part))
            value = value[part]
        else:
            break
    return ".".join(parts) or "the record"


def _why(raw: Mapping[str, Any], exc: ValidationError) -> str:
    errors = exc.errors()
    where = _where(raw, errors[0]["loc"])
    said = list(dict.fromkeys(e["msg"] for e in errors if _where(raw, e["loc"]) == where))
    others = len({_where(raw, e["loc"]) for e in errors} - {where})
    return f"{where}: {' or '.join(said)}" + (f" (and {others} more)" if others else "")


def read_run(raw: Mapping[str, Any]) -> RunRecord:
    """A stored run as a record; ``DamagedRecord`` says which field does not read, and why."""
    try:
        return RunRecord.model_validate(raw)
    except ValidationError as exc:
        raise DamagedRecord(_why(raw, exc)) from None


def read_item(raw: Mapping[str, Any]) -> ItemRecord:
    """A stored item as a record; ``DamagedRecord`` says which field does not read, and why."""
    try:
        return ItemRecord.model_validate(raw)
    except ValidationError as exc:
        raise DamagedRecord(_why(raw, exc)) from None


def stored_run(run: RunRecord) -> dict[str, Any]:
    """The run as the store is handed it: the keys and values the untyped record had."""
    return run.model_dump(by_alias=True)


def stored_item(item: ItemRecord) -> dict[str, Any]:
    return item.model_dump(by_alias=True)


class Store(Protocol):
    """What is read of a store's history (``engine.store.history.History``)."""

    def exists(self) -> bool: ...

    def record(self, run: Mapping[str, Any], items: Iterable[Mapping[str, Any]]) -> bool: ...

    def runs(self) -> list[dict[str, Any]]: ...

    def items_of(self, run_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """The lists are the caller's: ``RecordedHistory`` empties them as it reads them."""

    def each_item(self, run_id: str) -> Iterator[dict[str, Any]]: ...

    def location(self, run_id: str) -> str: ...

    @property
    def damaged(self) -> list[str]: ...


def _emptied(raws: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``raws`` in order, each let go of by the list as it is given."""
    raws.reverse()
    while raws:
        yield raws.pop()


class RecordedHistory:
    """A store's history as records: each read through ``read_run`` and ``read_item``; what does
    not read is skipped and named in ``damaged`` (with the store's own damage), never raised."""

    def __init__(self, store: Store):
        self.store = store
        self._unread: list[str] = []
        self._texts = SharedTexts()

    def exists(self) -> bool:
        return self.store.exists()

    def record(self, run: RunRecord, items: Iterable[ItemRecord]) -> bool:
        """``items`` go to the store one at a time, as it writes them."""
        return self.store.record(stored_run(run), (stored_item(item) for item in items))

    def runs(self) -> list[RunRecord]:
        """Every recorded run that reads, oldest first."""
        found = []
        for raw in self.store.runs():
            try:
                found.append(read_run(raw))
            except DamagedRecord as exc:
                run_id = str(raw.get("id"))
                self._note(f"{self.store.location(run_id)}: run {run_id[:80]!r} skipped: {exc}")
        return found

    def items_of(self, run_ids: Sequence[str]) -> dict[str, list[ItemRecord]]:
        """One run's items (the usual read: the run before this one) come from the store one at
        a time, each read into its record as it comes; several runs' in one read of the store."""
        if len(run_ids) == 1:
            return {run_ids[0]: self._read_items(run_ids[0], self.store.each_item(run_ids[0]))}
        found = self.store.items_of(run_ids)
        return {run_id: self._read_items(run_id, _emptied(found[run_id])) for run_id in list(found)}

    def items(self, run_id: str) -> list[ItemRecord]:
        return self.items_of([run_id]).get(run_id, [])

    def each_item(self, run_id: str) -> Iterator[ItemRecord]:
        """One run's items one at a time, as the store reads them: a reader that keeps little
        of each never holds the run's items."""
        return self._each_read(run_id, self.store.each_item(run_id), slim=False)

    def _read_items(self, run_id: str, raws: Iterable[dict[str, Any]]) -> list[ItemRecord]:
        """``raws`` read into records, each raw dict let go as its record is made (a run's
        items are thousands: the two are never all in memory at once)."""
        return list(self._each_read(run_id, raws))

    def _each_read(self, run_id: str, raws: Iterable[dict[str, Any]], *, slim: bool = True) -> Iterator[ItemRecord]:
        """``slim``: each record kept small, for a reader that holds them all."""
        for raw in raws:
            try:
                item = self.slim(read_item(raw)) if slim else read_item(raw)
            except DamagedRecord as exc:
                where = self.store.location(run_id)
                self._note(f"{where}: run {run_id[:80]!r}: item {str(raw.get('nodeid'))[:120]!r} skipped: {exc}")
                continue
            yield item

    def slim(self, item: ItemRecord) -> ItemRecord:
        """The record kept small: a history read, or the page's analyses, hold a whole run's
        items (``SharedTexts``)."""
        share = self._texts.share
        share(item, ("blueprint", "prompt", "model", "outcome"))
        share(item.detail, ("blueprint_path", "effective_model", "system_prompt", "source"))
        for point in item.detail.points:
            share(point, ("text", "error", "kind"))
        return item

    def _note(self, line: str) -> None:
        if line not in self._unread:
            self._unread.append(line)

    @property
    def damaged(self) -> list[str]:
        """Each record skipped so far, one line each with what to do: the store's own damage
        (``cache repair`` removes it), then what the store kept but the report cannot read."""
        return [f"{line} ({REPAIR_HINT})" for line in self.store.damaged] + [
            f"{line} ({UNREAD_HINT})" for line in self._unread
        ]


__all__ = [
    "DamagedRecord",
    "ItemDetail",
    "ItemRecord",
    "ModelFigures",
    "PointRecord",
    "RecordedHistory",
    "RunRecord",
    "read_item",
    "read_run",
    "stored_item",
    "stored_run",
]
