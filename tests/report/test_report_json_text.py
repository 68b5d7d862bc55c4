"""report/json_text.py writes what ``json.dumps(value, indent=2)`` writes, character for character
(the Weval JSON files must not change by a byte), whatever the nesting, keys and scalars."""

from __future__ import annotations

import enum
import json
import math
import random
import struct
from pathlib import Path
from typing import Any

import pytest

from pytest_weval.report.json_text import indented_pieces
from pytest_weval.report.weval_json import js_data, write_json_atomic


class _Level(enum.IntEnum):
    HIGH = 3


class _Tag(str, enum.Enum):
    X = "x"


CASES: list[Any] = [
    {},
    [],
    (),
    0,
    -1.5,
    "é\u2028\ud800\"\\\n",
    None,
    True,
    {"a": [], "b": {}, "c": [[]], "d": [{}]},
    {2: 2, 1.5: 3, True: 4, False: 5, None: 6, "nan": float("nan"), "inf": float("inf"), "-inf": -float("inf")},
    {"deep": [{"x": [1, [2, [3, {"y": (4, 5)}]]]}]},
    [_Level.HIGH, {"tag": _Tag.X}],
    [10**30, -0.0, 1e16, 1e-7, 0.1 + 0.2],
]


def _floats(count: int) -> list[float]:
    """Floats of every magnitude, and any bit pattern: each spelled as ``float.__repr__`` does."""
    rnd = random.Random(7)
    values = [rnd.random() * 10.0**exponent for exponent in range(-320, 300, 3)]
    while len(values) < count:
        value = struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0]
        if math.isfinite(value):
            values.append(value)
    return values + [-v for v in values] + [1e-4, 1e-5, 2.5e-7, 1e22, 5e-324]


CASES.append(_floats(2000))


def _random_value(rnd: random.Random, depth: int) -> Any:
    roll = rnd.random()
    if depth > 4 or roll < 0.3:
        return rnd.choice([1, -2.25, 's\n"', None, False, True, 0.1, 3e300, "", "ü"])
    if roll < 0.6:
        return [_random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    return {
        rnd.choice(["a", "b", "ü", 1, 2.5, None, True]): _random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))
    }


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_the_text_is_json_dumps_indent_2(ensure_ascii: bool) -> None:
    rnd = random.Random(43)
    for value in CASES + [_random_value(rnd, 0) for _ in range(500)]:
        expected = json.dumps(value, indent=2, ensure_ascii=ensure_ascii)
        assert "".join(indented_pieces(value, ensure_ascii=ensure_ascii)) == expected


def test_a_large_value_comes_in_pieces() -> None:
    summary = {"items": [{"id": f"q{n}", "scores": [n, n / 3]} for n in range(200)], "total": 200}
    pieces = list(indented_pieces(summary, ensure_ascii=False))
    assert len(pieces) > 200  # one per item at least: the whole text is never built at once
    assert "".join(pieces) == json.dumps(summary, indent=2, ensure_ascii=False)


@pytest.mark.parametrize("value", [{object(): 1}, [object()], {"a": {1j: 1}}])
def test_what_json_refuses_is_refused(value: Any) -> None:
    with pytest.raises(TypeError):
        json.dumps(value, indent=2)
    with pytest.raises(TypeError):
        "".join(indented_pieces(value, ensure_ascii=True))


def test_a_file_with_a_lone_surrogate_is_written_escaped(tmp_path: Path) -> None:
    # UTF-8 cannot hold it: write_json_atomic writes the whole file escaped, as JSON.stringify does
    document = {"broken": "half \ud83d of an emoji", "fine": "é"}
    write_json_atomic(tmp_path / "out.json", document)
    assert (tmp_path / "out.json").read_bytes() == json.dumps(document, indent=2).encode("utf-8")


# Where ``js=True`` writes members whole by pydantic's serialiser (a level below the top's
# members), each kind of value it must spell as json.dumps does, or leave to the writer.
JS_CASES: list[Any] = [
    {"scores": _floats(500), "nested": {"all": _floats(500), "few": [1.0, -0.0, 2.0**53, 2.0**60, 1e16, 0.5]}},
    {"a": {"x": float("nan"), "y": float("inf"), "z": -float("inf"), "big": 10**30, "small": -(10**40)}},
    {"a": {1: "int key", "1": "its text, later: kept"}, "b": {"c": {2.5: 1.0, None: [True]}}},
    {"a": {"tag": _Tag.X, "level": _Level.HIGH, "tuple": (1.0, (2.0,))}},
    {"a": {"text": "é\u2028\ud800\"\\\n\x00\x1f\x7f<&>", "emoji": "😀"}},
    {"items": [{"nodeid": f"t::{n}", "score": n / 7, "weight": float(n % 3)} for n in range(700)]},
    {"a": [{}, [], [[]], {"q": {}}], "b": {}},
]


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_the_js_text_is_json_dumps_of_js_data(ensure_ascii: bool) -> None:
    rnd = random.Random(44)
    for value in CASES + JS_CASES + [_random_value(rnd, 0) for _ in range(500)]:
        expected = json.dumps(js_data(value), indent=2, ensure_ascii=ensure_ascii)
        assert "".join(indented_pieces(value, ensure_ascii=ensure_ascii, js=True)) == expected
