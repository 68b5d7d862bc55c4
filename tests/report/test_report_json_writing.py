"""The Weval JSON files are written as ``json.dumps(data, indent=2)`` writes them, byte for byte,
(``report/weval_json.write_json_atomic``, through ``report/json_text.py``)."""

from __future__ import annotations

import json
import math
import random
import struct
from pathlib import Path

import pytest

from pytest_weval.report.weval_json import write_json_atomic


def _floats(count: int) -> list[float]:
    rng = random.Random(7)
    values = [rng.random() * 10.0**exponent for exponent in range(-320, 300, 3)]
    values += [float(rng.randint(1, 999)) * 10.0**exponent for exponent in range(-300, 300, 7)]
    while len(values) < count:
        value = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if math.isfinite(value):
            values.append(value)
    return values + [-v for v in values] + [0.0, -0.0, 1.0, 0.1, 1e-4, 1e-5, 2.5e-7, 1e16, 1e22, 5e-324]


DOCUMENTS = {
    "a comparison's shape": {
        "configId": "b",
        "evaluationResults": {
            "perPromptSimilarities": {},
            "llmCoverageScores": {"p": {"m": {"avgCoverageExtent": 0.83}}},
        },
        "models": ["openai:a", "openai:b"],
        "empty": [[], {}, [{}], {"x": []}],
        "text": "caf\u00e9 \u2028 \U0001f600 \x00\x1f\x7f \"quoted\" back\\slash\nnew line\ttab",
        "numbers": [0, -1, 2**63 - 1, -(2**63), True, False, None, 0.8333333333333334],
    },
    "floats of every magnitude": {"values": _floats(3000)},
    "NaN and infinities": {"a": math.nan, "b": [math.inf, -math.inf]},
    "an integer past 64 bits": {"n": 2**70},
    "keys that are not strings": {1: "one", 2.5: "two and a half", None: "none", False: "no"},
    "tuples": {"pair": (1, "two"), "nested": [(), ((1,),)]},
    "a lone surrogate": {"broken": "half \ud83d of an emoji"},
}


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_every_document_is_written_as_json_dumps_indent_2_writes_it(tmp_path: Path, name: str):
    document = DOCUMENTS[name]
    write_json_atomic(tmp_path / "out.json", document)
    try:
        expected = json.dumps(document, indent=2, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        expected = json.dumps(document, indent=2).encode("utf-8")
    assert (tmp_path / "out.json").read_bytes() == expected
