"""The judge's messages are the same text, byte for byte, whatever is remembered between calls:
a changed prompt is a new cache key for every judged point of every recorded run.

``data/judge_prompt_digests.json`` holds, per (scale, approach, description), the sha256 of the
messages ``build_judge_messages`` wrote (recorded at d7c2ade, before the prompts were written once
per scale and approach) for every criterion, answer and transcript below, in order.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path

from pytest_weval.judges.parse import SCALE_5, SCALE_9
from pytest_weval.judges.prompts import build_judge_messages

DIGESTS = Path(__file__).parent / "data" / "judge_prompt_digests.json"
SCALES = ["9", "5", 9, 5, "SCALE_9", "SCALE_5"]
APPROACHES = ["holistic", "prompt-aware", "standard", "something-else"]
DESCRIPTIONS = [None, "", "   \n\t", "A suite about bakeries.", "Braces {x} {} %s %(y)s and ünï 🙂", "\u00a0\ufeff"]
CRITERIA = ["explains topic 1400 clearly", "", '{criterion} %s \\n\n"q"', "日本語 🙂"]
SUBJECTS = ["scale-model-a says: Question 1400", "", "{subject_text} {0} %d"]
TRANSCRIPTS = ["user: hi\n--------------------\nassistant (generated): yo", "", "{transcript}}"]


def digests() -> dict[str, str]:
    out = {}
    for scale, approach, description in itertools.product(SCALES, APPROACHES, DESCRIPTIONS):
        table = {"SCALE_9": SCALE_9, "SCALE_5": SCALE_5}.get(str(scale), scale)
        digest = hashlib.sha256()
        for criterion, subject, transcript in itertools.product(CRITERIA, SUBJECTS, TRANSCRIPTS):
            messages = build_judge_messages(
                criterion,
                subject_text=subject,
                transcript=transcript,
                approach=approach,
                scale=table,
                description=description,
            )
            digest.update(json.dumps(messages, ensure_ascii=False).encode())
        out[json.dumps([scale, approach, description], ensure_ascii=False)] = digest.hexdigest()
    return out


def test_judge_messages_are_the_recorded_texts():
    expected = json.loads(DIGESTS.read_text(encoding="utf-8"))
    assert len(expected) == len(SCALES) * len(APPROACHES) * len(DESCRIPTIONS)
    assert digests() == expected
    assert digests() == expected  # asked again: the texts remembered are the same
