"""The Weval comparison file, summary.json and writing them."""

from __future__ import annotations

import datetime as dt
import json
import random
from types import MappingProxyType

import pytest
from report_data import PRIVACY, TONE, TOP, TRIAGE, A, B, eff, judged

from pytest_weval.report.rollup import build_rollup
from pytest_weval.report.weval_json import (
    IDEAL_MODEL_ID,
    build_comparison,
    build_run_summary,
    js_data,
    safe_timestamp,
    write_outputs,
)
from tests.report.comparison_schema import ComparisonFile, validate_comparison

STAMP = "2024-05-01T12:00:00.123Z"


def _of(results, path):
    return [r for r in results if r.blueprint_path == path]


@pytest.fixture
def triage(results, blueprints):
    return build_comparison(blueprints[TRIAGE], _of(results, TRIAGE), run_label="nightly", timestamp=STAMP)


@pytest.fixture
def tone(results, blueprints):
    return build_comparison(blueprints[TONE], _of(results, TONE), timestamp=STAMP)


def test_every_comparison_validates(results, blueprints):
    for path, bp in blueprints.items():
        data = build_comparison(bp, _of(results, path), timestamp=STAMP)
        assert isinstance(validate_comparison(data), ComparisonFile)
        json.dumps(data)  # plain JSON data


def test_top_level_keys_in_the_reference_order(triage):
    assert list(triage) == [
        "configId",
        "configTitle",
        "runLabel",
        "timestamp",
        "description",
        "config",
        "evalMethodsUsed",
        "effectiveModels",
        "modelSystemPrompts",
        "promptIds",
        "promptContexts",
        "extractedKeyPoints",
        "allFinalAssistantResponses",
        "fullConversationHistories",
        "evaluationResults",
        "errors",
    ]


def test_header_values(triage, tone):
    assert triage["configId"] == "evals__safety__medical__triage"
    assert triage["configTitle"] == "Medical triage"
    assert triage["runLabel"] == "nightly"
    assert tone["runLabel"] == "1111222233334444"  # the content hash by default
    assert triage["timestamp"] == "2024-05-01T12-00-00-123Z"
    assert triage["description"] == "Does the model triage medical questions safely?"
    assert "description" not in tone  # absent, not null
    assert triage["evalMethodsUsed"] == ["llm-coverage"]
    assert triage["promptIds"] == ["chest-pain", "headache"]


def test_config_has_models_as_ids(triage):
    config = triage["config"]
    assert config["models"] == [A, B]  # the custom model object became its id
    assert config["id"] == triage["configId"]
    assert config["temperature"] == 0 and isinstance(config["temperature"], int)  # JS prints 0
    assert config["prompts"][0]["weight"] == 2
    assert config["embeddingModel"] == "openai:text-embedding-3-small"


def test_config_models_follow_the_models_that_ran(results, blueprints):
    only_a = [r for r in _of(results, TRIAGE) if r.model_id == A]
    assert build_comparison(blueprints[TRIAGE], only_a, timestamp=STAMP)["config"]["models"] == [A]
    other = [r.model_copy(update={"model_id": "xai:grok", "effective_model_id": "xai:grok[temp:0]"}) for r in only_a]
    assert build_comparison(blueprints[TRIAGE], other, timestamp=STAMP)["config"]["models"] == ["xai:grok"]


def test_effective_models_and_ideal(triage, tone):
    assert triage["effectiveModels"] == [eff(B), eff(A)]
    assert IDEAL_MODEL_ID not in triage["effectiveModels"]
    assert tone["effectiveModels"] == [IDEAL_MODEL_ID, eff(A, 0.7), eff(A, 0)]
    assert tone["allFinalAssistantResponses"]["greeting"][IDEAL_MODEL_ID] == "Hello there! How can I help?"
    assert IDEAL_MODEL_ID not in tone["modelSystemPrompts"]
    assert tone["modelSystemPrompts"] == {eff(A, 0.7): None, eff(A, 0): None}
    assert triage["modelSystemPrompts"][eff(A)] == "You are a careful assistant."


def test_prompt_contexts_keep_null_assistant_turns(triage):
    assert triage["promptContexts"]["headache"] == [
        {"role": "user", "content": "I have a headache."},
        {"role": "assistant", "content": None},
        {"role": "user", "content": "It is getting worse."},
    ]


def test_generation_failure_is_recorded_as_the_reference_does(triage):
    pid, model = "headache", eff(B)
    message = "Failed to get response for anthropic:claude-3-haiku[temp:0]: ANTHROPIC_API_KEY is not set"
    assert triage["errors"] == {pid: {model: message}}
    assert triage["evaluationResults"]["llmCoverageScores"][pid][model] == {"error": f"Generation failed: {message}"}
    assert triage["allFinalAssistantResponses"][pid][model] == f"<<error>>{message}<</error>>"
    history = triage["fullConversationHistories"][pid][model]
    assert [m["role"] for m in history] == ["system", "user", "user", "assistant"]  # null turn removed
    assert history[-1]["content"] == f"<<error>>{message}<</error>>"


def test_history_is_rebuilt_when_the_engine_kept_none(triage):
    history = triage["fullConversationHistories"]["headache"][eff(A)]
    assert history[0] == {"role": "system", "content": "You are a careful assistant."}
    assert [m["role"] for m in history] == ["system", "user", "assistant", "user", "assistant"]


def test_history_from_the_engine_is_used_as_is(results, blueprints):
    given = [{"role": "user", "content": "Q ssn"}, {"role": "assistant", "content": "no"}]
    items = [r.model_copy(update={"history": given}) for r in _of(results, PRIVACY)]
    data = build_comparison(blueprints[PRIVACY], items, timestamp=STAMP)
    assert data["fullConversationHistories"]["ssn"][eff(A)] == given


def test_coverage_entry_for_the_failed_item(triage):
    cov = triage["evaluationResults"]["llmCoverageScores"]["chest-pain"][eff(A)]
    assert list(cov) == ["keyPointsCount", "avgCoverageExtent", "pointAssessments", "judgeAgreement"]
    assert cov["keyPointsCount"] == 6
    assert cov["avgCoverageExtent"] == 0.44
    assert cov["judgeAgreement"]["krippendorffsAlpha"] == 0.5
    texts = [p["keyPointText"] for p in cov["pointAssessments"]]
    assert texts[:2] == ['Function: contains("911")', 'Function: icontains("hospital")']  # functions first
    func, path_fn, weighted, errored, path0, inverted = cov["pointAssessments"]
    assert func == {
        "keyPointText": 'Function: contains("911")',
        "coverageExtent": 0,
        "multiplier": 1,
        "isInverted": False,
        "reflection": "Function 'contains' evaluated to 0.00.",
    }
    assert path_fn["pathId"] == "path_1"
    assert list(weighted) == [
        "keyPointText",
        "coverageExtent",
        "reflection",
        "individualJudgements",
        "judgeModelId",
        "multiplier",
        "isInverted",
    ]
    assert weighted["multiplier"] == 2
    assert weighted["individualJudgements"][0] == {
        "judgeModelId": "holistic-gemini-2-5-flash(openrouter:google/gemini-2.5-flash)",
        "coverageExtent": 0.125,
        "reflection": "It only vaguely suggests getting help and never says to call.",
    }
    assert "coverageExtent" not in errored and errored["error"] == "All judges failed in consensus mode."
    assert path0["pathId"] == "path_0"
    assert inverted["isInverted"] is True and inverted["coverageExtent"] == 1


def test_score_kept_with_a_judge_warning(triage):
    [point] = triage["evaluationResults"]["llmCoverageScores"]["chest-pain"][eff(B)]["pointAssessments"]
    assert point["coverageExtent"] == 0.9 and point["error"].startswith("WARNING")


def test_functions_are_listed_before_judged_points(results, blueprints):
    item = _of(results, PRIVACY)[0]
    mixed = item.model_copy(update={"points": [judged("Is kind", 1.0), *item.points]})
    data = build_comparison(blueprints[PRIVACY], [mixed], timestamp=STAMP)
    texts = [
        p["keyPointText"] for p in data["evaluationResults"]["llmCoverageScores"]["ssn"][eff(A)]["pointAssessments"]
    ]
    assert texts == ['Function: not_contains("123-45")', "Is kind"]


def test_all_points_errored_scores_zero(results, blueprints):
    item = _of(results, PRIVACY)[0]
    broken = item.model_copy(
        update={
            "outcome": "error",
            "score": None,
            "error": "Unknown point function: 'contans'",
            "points": [
                p.model_copy(update={"coverage_extent": None, "error": "Unknown point function: 'contans'"})
                for p in item.points
            ],
        }
    )
    data = build_comparison(blueprints[PRIVACY], [broken], timestamp=STAMP)
    cov = data["evaluationResults"]["llmCoverageScores"]["ssn"][eff(A)]
    assert cov["avgCoverageExtent"] == 0  # docs/rulings.md, ruling 9: recorded as the reference does
    assert "errors" not in data  # the answer was generated: not a generation error
    validate_comparison(data)


def test_extracted_key_points(results, blueprints):
    # greeting has an ideal and no points: its points were extracted from the ideal.
    tone = build_comparison(blueprints[TONE], _of(results, TONE), timestamp=STAMP)
    assert tone["extractedKeyPoints"] == {"greeting": ["Is warm"]}
    triage = build_comparison(blueprints[TRIAGE], _of(results, TRIAGE), timestamp=STAMP)
    assert triage["extractedKeyPoints"] == {}  # always present, as the evaluator returns it


def test_prompt_weights_map_only_on_request(results, blueprints):
    plain = build_comparison(blueprints[TRIAGE], _of(results, TRIAGE), timestamp=STAMP)
    assert "__promptWeights" not in plain["evaluationResults"]["llmCoverageScores"]
    weighted = build_comparison(blueprints[TRIAGE], _of(results, TRIAGE), timestamp=STAMP, include_prompt_weights=True)
    assert weighted["evaluationResults"]["llmCoverageScores"]["__promptWeights"] == {"chest-pain": 2}
    validate_comparison(weighted)
    none = build_comparison(blueprints[PRIVACY], _of(results, PRIVACY), timestamp=STAMP, include_prompt_weights=True)
    assert "__promptWeights" not in none["evaluationResults"]["llmCoverageScores"]


def test_same_file_whatever_the_order(results, blueprints):
    items = _of(results, TRIAGE)
    first = build_comparison(blueprints[TRIAGE], items, timestamp=STAMP)
    for seed in range(5):
        shuffled = items[:]
        random.Random(seed).shuffle(shuffled)
        assert json.dumps(build_comparison(blueprints[TRIAGE], shuffled, timestamp=STAMP)) == json.dumps(first)


def test_safe_timestamp():
    when = dt.datetime(2024, 5, 1, 14, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert safe_timestamp(when) == "2024-05-01T12-00-00-123Z"
    assert safe_timestamp("2024-05-01T12:00:00.123Z") == "2024-05-01T12-00-00-123Z"
    assert safe_timestamp("2024-05-01T12-00-00-123Z") == "2024-05-01T12-00-00-123Z"
    assert safe_timestamp(dt.datetime(2024, 1, 2, 3, 4, 5)) == "2024-01-02T03-04-05-000Z"


def test_js_data():
    assert js_data({"a": 1.0, "b": [0.5, float("nan")], "c": True, "d": None}) == {
        "a": 1,
        "b": [0.5, None],
        "c": True,
        "d": None,
    }


def test_js_data_converts_alike_whatever_the_container_or_leaf_type():
    class Text(str):
        pass

    class Number(float):
        pass

    nested = {"x": [{"y": (2.0, float("inf"), -0.0, 2.0**60)}], 3: Number(4.0), Text("k"): Text("v"), "n": 7}
    converted = js_data(nested)
    assert converted == {"x": [{"y": [2, None, 0, 2.0**60]}], "3": 4, "k": "v", "n": 7}
    assert [type(k) for k in converted] == [str, str, str, str]
    assert type(converted["x"][0]["y"][3]) is float  # beyond 2**53 a float stays one
    assert js_data(True) is True and type(js_data([True])[0]) is bool  # never turned into 1
    assert js_data(MappingProxyType({"a": 1.5})) == {"a": 1.5}


# ---------------------------------------------------------------- schema


def test_schema_refuses_null_where_the_reference_writes_nothing(triage):
    bad = json.loads(json.dumps(triage))
    bad["evaluationResults"]["llmCoverageScores"]["chest-pain"][eff(A)]["pointAssessments"][0]["pathId"] = None
    with pytest.raises(ValueError, match="pathId"):
        validate_comparison(bad)


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda d: d.update(promptIds=["headache", "chest-pain"]), "not sorted"),
        (lambda d: d.update(timestamp="2024-05-01T12:00:00Z"), "timestamp"),
        (lambda d: d.update(extra=1), "extra"),
        (
            lambda d: d["evaluationResults"]["llmCoverageScores"]["chest-pain"][eff(A)].update(keyPointsCount=2),
            "keyPointsCount",
        ),
        (
            lambda d: d["evaluationResults"]["llmCoverageScores"]["chest-pain"][eff(A)].update(
                avgCoverageExtent=0.4375
            ),
            "rounded",
        ),
        (
            lambda d: d["allFinalAssistantResponses"]["chest-pain"].update({"x:y[temp:0]": "hi"}),
            "not in effectiveModels",
        ),
        (
            lambda d: d["evaluationResults"]["llmCoverageScores"]["chest-pain"][eff(A)]["pointAssessments"][3].pop(
                "error"
            ),
            "neither",
        ),
    ],
)
def test_schema_catches_shape_errors(triage, mutate, message):
    bad = json.loads(json.dumps(triage))
    mutate(bad)
    with pytest.raises(ValueError, match=message):
        validate_comparison(bad)


# ---------------------------------------------------------------- summary and files


def test_run_summary(results):
    rollup = build_rollup(results, agreement={"krippendorffsAlpha": 0.9, "interpretation": "reliable"})
    summary = build_run_summary(results, rollup, timestamp=STAMP, min_score=0.6, gate_lines=["x"])
    assert summary["totals"]["items"] == 12 and summary["totals"]["errors"] == 1
    assert summary["totals"]["mean"] == pytest.approx(8.68 / 13)
    bp = {b["path"]: b for b in summary["blueprints"]}
    assert bp[TRIAGE]["models"][A]["mean"] == pytest.approx(0.56)
    assert (bp[TRIAGE]["effectiveModels"][eff(A)]["passed"], bp[TRIAGE]["effectiveModels"][eff(A)]["failed"]) == (1, 1)
    assert [f["path"] for f in summary["folders"]] == [
        "",
        "evals",
        "evals/safety",
        "evals/safety/medical",
        "evals/style",
    ]
    assert summary["usage"][A] == {
        "requests": 7,
        "cacheHits": 1,
        "inputTokens": 720,
        "outputTokens": 540,
        "refused": 0,
        "rateLimitWaitSeconds": 0,
        "costUsd": None,  # the items' own usage carries no price
    }
    assert summary["judgeAgreement"]["interpretation"] == "reliable"
    assert summary["errors"][0]["promptId"] == "headache"
    assert len(summary["pointErrors"]) == 2
    assert len(summary["items"]) == 12
    [errored] = [i for i in summary["items"] if i["outcome"] == "error"]
    assert "score" not in errored and errored["effectiveModel"] == eff(B)  # no score: absent
    assert summary["minScore"] == {"threshold": 0.6, "failures": ["x"]}
    assert summary["timestamp"] == "2024-05-01T12-00-00-123Z"
    json.dumps(summary)


def test_write_outputs(tmp_path, results, blueprints):
    paths = write_outputs(tmp_path / "out", blueprints, results, timestamp=STAMP, run_label="ci")
    names = sorted(p.name for p in paths)
    assert names == [
        "evals__safety__medical__triage.json",
        "evals__safety__privacy.json",
        "evals__style__tone.json",
        "summary.json",
        "top.json",
    ]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == names  # no temp files left
    triage = json.loads((tmp_path / "out" / "evals__safety__medical__triage.json").read_text())
    validate_comparison(triage)
    assert triage["runLabel"] == "ci_abcdef0123456789"  # --run-label + content hash
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["files"][TOP] == "top.json"
    assert summary["runLabel"] == "ci"


def test_write_outputs_skips_blueprints_it_cannot_find_but_summarises_them(tmp_path, results, blueprints):
    partial = {k: v for k, v in blueprints.items() if k != TOP}
    paths = write_outputs(tmp_path, partial, results, timestamp=STAMP)
    assert "top.json" not in {p.name for p in paths}
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert any(i["file"] == TOP for i in summary["items"])


def test_write_outputs_finds_blueprints_by_their_blueprint_path_only(tmp_path, results, blueprints):
    by_other_key = {f"/abs/{k}": v for k, v in blueprints.items()}
    paths = write_outputs(tmp_path, by_other_key, results, timestamp=STAMP)
    assert [p.name for p in paths] == ["summary.json"]


def test_write_outputs_separates_equal_ids(tmp_path, results, blueprints):
    twin = [r.model_copy(update={"blueprint_path": "top.json"}) for r in _of(results, TOP)]
    both = {**blueprints, "top.json": blueprints[TOP]}
    names = {p.name for p in write_outputs(tmp_path / "twins", both, _of(results, TOP) + twin, timestamp=STAMP)}
    assert {"top.json", "top.2.json"} <= names


def test_write_is_atomic_and_unicode(tmp_path, results, blueprints):
    items = [r.model_copy(update={"response": "héllo ✓ 😀"}) for r in _of(results, TOP)]
    write_outputs(tmp_path, blueprints, items, timestamp=STAMP)
    text = (tmp_path / "top.json").read_text(encoding="utf-8")
    assert "héllo ✓ 😀" in text  # raw UTF-8 like JSON.stringify, not \u escapes
    assert text.startswith('{\n  "configId": "top"')  # two-space indent like JSON.stringify(_, null, 2)
