"""Where each item's whole result waits for the files written at the run's end.

A run keeps one small record per finished item (``ItemResult.compact``: ids, outcome, score,
point scores, usage), which is all the roll-up, the gates, the terminal and junit read. The
whole result, with its answers, conversation and judges' reflections, is appended as one JSON
line to this process's spool, a file in the run's temporary folder, and only its place in that
file (a ``SpoolRef``) travels with the item's report: under xdist what crosses to the controller
per item is the compact record and this reference, whatever the answers' length. At the end the
writers (Weval JSON, HTML, the run's record, agent results) read the whole results back a
blueprint at a time (``FullResults``), so no more than one blueprint's texts are in memory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from json.encoder import encode_basestring
from pathlib import Path
from typing import IO

from pydantic import BaseModel

from pytest_weval.results import ItemResult, KeptPoint, KeptResult, Result, Usage, with_texts


@dataclasses.dataclass(frozen=True, slots=True)
class SpoolRef:
    """Where one whole result is: ``length`` bytes at ``offset`` of the spool file ``path``."""

    path: str
    offset: int
    length: int

    def text(self) -> str:
        """As it rides on a test report (a string: xdist carries it as it is)."""
        return f"{self.offset} {self.length} {self.path}"

    @classmethod
    def parse(cls, text: str, paths: dict[str, str] | None = None) -> SpoolRef:
        """``paths``: the spool paths seen so far, so that a run's references share them."""
        offset, length, path = text.split(" ", 2)
        return cls(paths.setdefault(path, path) if paths is not None else path, int(offset), int(length))


class SpoolWriter:
    """One process's spool file, made at its first result in ``folder()`` (called then, so a
    run without items makes no folder); each result is flushed as it is added, for the xdist
    controller reads a worker's spool while the worker is still running."""

    def __init__(self, folder: Callable[[], Path | None] | None = None):
        self._folder = folder
        self._file: IO[bytes] | None = None
        self.path: Path | None = None
        self._path_text = ""  # one string for every reference to this file
        self._end = 0  # where the next line starts

    def add(self, result: ItemResult) -> SpoolRef:
        """Appends ``result``; raises ``OSError`` when it cannot (the caller keeps it instead)."""
        if self._file is None:
            folder = self._folder() if self._folder is not None else None
            if folder is None:
                folder = Path(tempfile.mkdtemp(prefix="weval-spool-"))
            folder.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix="items-", suffix=".jsonl", dir=folder)
            self._file, self.path = os.fdopen(fd, "wb"), Path(name)
            self._path_text = str(self.path)
        line = result.model_dump_json().encode("utf-8", errors="backslashreplace") + b"\n"
        offset = self._end
        try:
            self._file.write(line)
            self._file.flush()
        except OSError:
            # a partial line stays unreferenced; the next result starts after it
            with contextlib.suppress(OSError):
                self._end = self._file.seek(0, os.SEEK_END)
            raise
        self._end = offset + len(line)
        return SpoolRef(self._path_text, offset, len(line))

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None


class SpoolReader:
    """Reads whole results back, keeping each spool file open until ``close``."""

    def __init__(self) -> None:
        self._files: dict[str, IO[bytes]] = {}

    def read(self, ref: SpoolRef) -> ItemResult:
        return ItemResult.model_validate_json(self.line(ref))

    def line(self, ref: SpoolRef) -> bytes:
        """The result's line as the spool holds it (its JSON and a newline)."""
        handle = self._files.get(ref.path)
        if handle is None:
            handle = self._files[ref.path] = open(ref.path, "rb")  # noqa: SIM115 - closed by close()
        handle.seek(ref.offset)
        return handle.read(ref.length)

    def close(self) -> None:
        for handle in self._files.values():
            with contextlib.suppress(OSError):
                handle.close()
        self._files.clear()


def read_spooled(ref: SpoolRef) -> ItemResult:
    reader = SpoolReader()
    try:
        return reader.read(ref)
    finally:
        reader.close()


class SharedTexts:
    """Records kept by the thousand, each as small as pydantic allows: the texts many records
    repeat (blueprint, model, judge and point names) are one string object between them, and
    every record shares one "fields set" per model class (pydantic keeps a set per instance,
    which only ``exclude_unset`` reads; with every field in it, setting a field changes nothing,
    and ``model_copy`` copies it)."""

    def __init__(self) -> None:
        self._strings: dict[str, str] = {}
        self._numbers: dict[float | str, float] = {}

    def string(self, text: str) -> str:
        return self._strings.setdefault(text, text)

    def share(self, model: BaseModel, names: tuple[str, ...]) -> None:
        """``model``'s fields ``names`` (those that are strings) and its floats (scores,
        thresholds, temperatures: a few values between thousands of records) shared, and its
        fields set."""
        values = model.__dict__
        for name in names:
            value = values.get(name)
            if isinstance(value, str):
                values[name] = self.string(value)
        for name, value in values.items():
            if type(value) is float:
                values[name] = self.number(value)
        object.__setattr__(model, "__pydantic_fields_set__", _every_field(type(model)))

    def number(self, value: float) -> float:
        # 0.0 and -0.0 are equal as keys but print apart: a zero is keyed by its text
        return self._numbers.setdefault(value if value else repr(value), value)


class CompactRecords:
    """The run's kept results, kept small: the texts many records repeat (blueprint, model,
    judge and point names) are one string object between them, and so are the floats that take
    few values (scores, thresholds, temperatures, multipliers) and equal usage tallies."""

    def __init__(self) -> None:
        self._texts = SharedTexts()
        self._usage: dict[tuple[object, ...], Usage] = {}
        # each item's {model: tally} made of shared tallies, shared too (keyed by the tallies'
        # identities, which the table above keeps alive)
        self._usages: dict[tuple[tuple[str, int], ...], dict[str, Usage]] = {}

    def slim(self, record: KeptResult) -> KeptResult:
        self._share(record, _ITEM_TEXTS, _ITEM_NUMBERS)
        for point in record.points:
            self._share(point, _POINT_TEXTS, _POINT_NUMBERS)
            for verdict in point.individual_judgements or ():
                verdict.judge_model_id = self._texts.string(verdict.judge_model_id)
        if record.usage:
            record.usage = self._shared_usages(record.usage)
        return record

    def _shared_usages(self, usage: dict[str, Usage]) -> dict[str, Usage]:
        """One dict for the records whose tallies are the same shared ones, never changed once
        kept either (184 bytes an item where the tallies repeat, as they do in a replay)."""
        tallies = {self._texts.string(model): self._shared_usage(used) for model, used in usage.items()}
        if len(self._usage) >= _USAGE_TABLE:  # the tallies are no longer all shared: nor these
            return tallies
        key = tuple((model, id(used)) for model, used in tallies.items())
        return self._usages.setdefault(key, tallies)

    def _share(self, record: KeptResult | KeptPoint, texts: tuple[str, ...], numbers: tuple[str, ...]) -> None:
        string, number = self._texts.string, self._texts.number
        for name in texts:
            value = getattr(record, name)
            if value is not None:
                setattr(record, name, string(value))
        for name in numbers:
            value = getattr(record, name)
            if type(value) is float:
                setattr(record, name, number(value))

    def _shared_usage(self, used: Usage) -> Usage:
        """One ``Usage`` for equal tallies: never changed once kept (the roll-up adds copies).
        The table stops growing at ``_USAGE_TABLE`` tallies: where every item's differs (tokens
        are an answer's length), it would only add its keys to what the run keeps."""
        key = tuple(used.__dict__.values())
        shared = self._usage.get(key)
        if shared is not None:
            return shared
        self._texts.share(used, ())
        if len(self._usage) < _USAGE_TABLE:
            self._usage[key] = used
        return used


_USAGE_TABLE = 4096
_ITEM_TEXTS = (
    "blueprint_id",
    "blueprint_path",
    "blueprint_title",
    "prompt_id",
    "model_id",
    "effective_model_id",
    "system_prompt",
    "outcome",
    "source",
    "error_kind",
    "verdict",
)
# The floats that take few values between records (not an item's duration, its own).
_ITEM_NUMBERS = ("prompt_weight", "temperature", "score", "threshold")
_POINT_TEXTS = ("key_point_text", "judge_model_id", "kind", "path_id")
_POINT_NUMBERS = ("coverage_extent", "multiplier")
_EVERY_FIELD: dict[type[BaseModel], set[str]] = {}


def _every_field(cls: type[BaseModel]) -> set[str]:
    if cls not in _EVERY_FIELD:
        _EVERY_FIELD[cls] = set(cls.model_fields)
    return _EVERY_FIELD[cls]


class FullResults:
    """The whole results of a run's compact records: each record whose node id has a spooled
    result gets its texts back from the spool (the record stays the truth for everything else:
    the similarity rows are added to it after the items ran); any other record is whole already
    (``merge`` reads whole results from the folders' records)."""

    def __init__(self, spooled: Mapping[str, SpoolRef] | None = None):
        self._spooled = dict(spooled or {})
        self._reader = SpoolReader()

    def of(self, results: Iterable[Result]) -> list[ItemResult]:
        """``results`` whole, in their order: call it with one blueprint's at a time."""
        return list(self.each(results))

    def each(self, results: Iterable[Result]) -> Iterator[ItemResult]:
        for result in results:
            if isinstance(result, ItemResult):  # whole already
                yield result
                continue
            whole = self._reader.read(self._spooled[result.nodeid])
            # a record that gained nothing since it was spooled: the whole result is the spool's
            yield whole if _unchanged(result, whole.nodeid) else with_texts(result, whole)

    def lines(self, results: Iterable[Result]) -> Iterator[bytes]:
        """Each of ``results`` whole, as ``model_dump_json`` and a newline encoded (what the
        run's record holds): a spooled result's own line when the record gained nothing since
        it was spooled (no similarity rows, the same node id), so it is neither read back nor
        written again; else read back and written."""
        for result in results:
            if isinstance(result, ItemResult):
                whole = result
            else:
                ref = self._spooled[result.nodeid]
                if result.similarities is None:
                    line = self._reader.line(ref)
                    # the spool's line starts with its node id (ItemResult's first field)
                    if line.startswith(_line_start(result.nodeid)) and line.endswith(b"\n"):
                        yield line  # _unchanged, without reading the line
                        continue
                whole = with_texts(result, self._reader.read(ref))
            yield (whole.model_dump_json() + "\n").encode("utf-8", errors="backslashreplace")

    def close(self) -> None:
        self._reader.close()


def _unchanged(record: KeptResult, spooled_nodeid: str) -> bool:
    """The kept ``record`` gained nothing since its whole result (of ``spooled_nodeid``) was
    spooled: what a run adds to a kept record is the similarity rows (``embed_answers``) and a
    node id its result had none of (``ItemResults``; ``with_texts`` takes the same two)."""
    return record.similarities is None and record.nodeid == spooled_nodeid


def _line_start(nodeid: str) -> bytes:
    """How a line whose result has the node id ``nodeid`` begins, as ``model_dump_json`` writes
    it (a node id JSON writes otherwise than pydantic only misses: the result is written again)."""
    return b'{"nodeid":' + encode_basestring(nodeid).encode("utf-8", errors="backslashreplace") + b","


def whole_results(results: Iterable[Result], full: FullResults | None) -> Iterator[ItemResult]:
    """``results`` whole, one at a time: read back through ``full``, or whole already (a merge's)."""
    return (full if full is not None else FullResults()).each(results)


def remove_spools(paths: Iterable[str | os.PathLike[str]]) -> None:
    """The spool files once the run's files are written (never an error: the run's temporary
    folder is pytest's, which removes old ones itself)."""
    for path in paths:
        with contextlib.suppress(OSError):
            os.unlink(path)
