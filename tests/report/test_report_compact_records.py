"""``CompactRecords`` (report/spool.py) keeps the run's kept records small: equal usage tallies
are one object between records, and so is each record's {model: tally} made of them, while
every record still reads what it held."""

from __future__ import annotations

from pytest_weval.report.spool import CompactRecords
from pytest_weval.results import ItemResult, Usage


def _kept(n: int, tokens: int):
    return ItemResult(
        nodeid=f"b.yml::p{n}[m]",
        blueprint_id="b",
        blueprint_path="b.yml",
        prompt_id=f"p{n}",
        model_id="openai:m",
        effective_model_id="openai:m",
        outcome="passed",
        score=1.0,
        usage={
            "openai:m": Usage(requests=1, input_tokens=tokens, output_tokens=5),
            "openai:judge": Usage(requests=1, input_tokens=900, output_tokens=40),
        },
    ).compact()


def test_records_with_equal_tallies_share_one_usage_dict_and_others_keep_their_own():
    records = CompactRecords()
    same = [records.slim(_kept(n, tokens=10)) for n in range(3)]
    other = records.slim(_kept(3, tokens=11))
    assert same[0].usage is same[1].usage is same[2].usage
    assert other.usage is not same[0].usage
    assert other.usage["openai:judge"] is same[0].usage["openai:judge"]  # the equal tally is shared
    assert same[2].usage["openai:m"].input_tokens == 10 and other.usage["openai:m"].input_tokens == 11
    assert {model: u.model_dump() for model, u in same[1].usage.items()} == {
        "openai:m": Usage(requests=1, input_tokens=10, output_tokens=5).model_dump(),
        "openai:judge": Usage(requests=1, input_tokens=900, output_tokens=40).model_dump(),
    }
