"""The fake server itself: seeded fault rates, the subprocess mode and its /__log."""

from __future__ import annotations

import json

from engine_helpers import complete_sync, request

from tests.fakeserver import FakeServer, FakeServerProcess, Rule


def test_seeded_fault_rate_is_reproducible_and_retries_recover(make_engine, tmp_path):
    outcomes = []
    for _ in range(2):
        with FakeServer(fault_rate=0.4, fault_kinds=("500", "429", "malformed", "drop"), seed=7) as server:
            from pytest_weval.engine import Engine, EngineSettings

            settings = EngineSettings(
                cache_mode="off",
                env=server.env(),
                backoff_base_s=0.001,
                backoff_max_s=0.01,
                max_attempts=10,
                breaker_threshold=0,
            )
            with Engine(settings) as engine:
                for index in range(15):
                    assert complete_sync(engine, request("openai:m", f"q{index}")).text == f"echo: q{index}"
            outcomes.append([r.outcome for r in server.requests])
    assert outcomes[0] == outcomes[1]
    assert {"500", "429", "malformed", "drop"} & set(outcomes[0])
    assert outcomes[0].count("200") == 15


def test_subprocess_server_cli_and_log(make_engine, tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"contains": "capital", "reply": "Paris"}]))
    with FakeServerProcess("--latency-ms", "5", "--rules", str(rules)) as fake:
        engine = make_engine(env=fake.env())
        assert complete_sync(engine, request("anthropic:c", "the capital of France?")).text == "Paris"
        assert complete_sync(engine, request("google:g", "other")).text == "echo: other"
        fake.set_rules([Rule(fault="500", times=1)])
        assert complete_sync(engine, request("xai:x", "again")).text == "echo: again"
        log = fake.log()
    assert log["count"] == 4 and log["distinct"] == 3
    assert [r["outcome"] for r in log["requests"]] == ["200", "200", "500", "200"]
    assert log["requests"][0]["path"] == "/anthropic/v1/messages"


def test_rules_match_on_model_and_path(server, make_engine):
    server.rules.extend(
        [Rule(model="special", reply="for {model}"), Rule(path="/mistral/", reply="mistral says {last}")]
    )
    engine = make_engine()
    assert complete_sync(engine, request("openai:special")).text == "for special"
    assert complete_sync(engine, request("mistral:x", "yo")).text == "mistral says yo"
    assert complete_sync(engine, request("openai:other", "yo")).text == "echo: yo"
