"""The HTML report's page, read as HTML (the browser tests are in tests/plugin/test_plugin_html_report.py):
self-contained, the overview's cells and their hooks, the per-blueprint data the script draws
from, and text from blueprints and models escaped, never markup."""

from __future__ import annotations

import datetime as dt
import html
import json
import os
import random
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from report_data import GEMINI, GPT, PRIVACY, TONE, TOP, TRIAGE, A, B, function, judged

from pytest_weval.blueprint.model import Blueprint, Location, Message, ModelSpec, Prompt
from pytest_weval.files import FILE_MODE
from pytest_weval.report._fmt import fmt_score, js_number, judge_label
from pytest_weval.report.baseline import BaselineItem, Comparison, ModelComparison, Pair, Unpaired
from pytest_weval.report.html import (
    BLOB_TYPE,
    RunFacts,
    build_html,
    score_colours,
    script_json,
    unpacked_json,
    write_html,
)
from pytest_weval.report.rollup import build_rollup
from pytest_weval.report.stats import MeanInterval
from pytest_weval.results import ItemResult, Usage

DATA_TYPES = ("application/json", BLOB_TYPE)  # script elements the browser never runs
EVIL = '</script><script>window.pwned = 1</script><img src=x onerror="alert(1)"><!-- & "quoted"'


class Page(HTMLParser):
    """Every start tag with its attributes, and the text of each <script>."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._script: dict[str, str | None] | None = None
        self._chunks: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._script, self._chunks = dict(attrs), []

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._chunks.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script, "".join(self._chunks)))
            self._script = None

    def with_attr(self, name: str) -> list[dict[str, str | None]]:
        return [attrs for _tag, attrs in self.tags if name in attrs]

    def blobs(self) -> dict[str, Any]:
        """Every data block, decoded as the page's script decodes it: the run's JSON as it is,
        each blueprint's inflated from its compressed block."""
        return {
            str(attrs["id"]): json.loads(text) if attrs.get("type") == "application/json" else unpacked_json(text)
            for attrs, text in self.scripts
            if attrs.get("type") in DATA_TYPES
        }

    def code(self) -> list[tuple[dict[str, str | None], str]]:
        """The scripts the browser runs (no data type)."""
        return [(attrs, text) for attrs, text in self.scripts if attrs.get("type") not in DATA_TYPES]


def _page(blueprints, results, **kw) -> tuple[str, Page]:
    text = build_html(blueprints, results, **kw)
    return text, Page(text)


def _blueprint_blob(page: Page, path: str) -> dict[str, Any]:
    blobs = page.blobs()
    return blobs[blobs["weval-run"]["blueprints"][path]]


def _turns(blob: dict[str, Any], item: dict[str, Any]) -> list[list[Any]]:
    """An item's conversation as the page's script reads it: a number is a turn written in the
    prompt (its index in the prompt's messages)."""
    messages = blob["prompts"][item["prompt"]]["messages"]
    return [[*messages[t], 0] if isinstance(t, int) else t for t in item["turns"]]


def test_the_page_loads_nothing_and_runs_only_its_own_script(results, blueprints):
    text, page = _page(blueprints, results)
    assert text.startswith("<!DOCTYPE html>")
    [csp] = [a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp is not None and "default-src 'none'" in csp
    nonce = re.search(r"'nonce-([^']+)'", csp)
    assert nonce is not None
    executable = [a for a, _ in page.code()]
    assert executable == [{"nonce": nonce.group(1)}]  # one inline script, no src
    for tag, attrs in page.tags:
        assert "src" not in attrs, (tag, attrs)
        if "href" in attrs:
            assert str(attrs["href"]).startswith(("#", "data:")), (tag, attrs)  # in-page links and the empty icon only
        assert not (tag == "link" and attrs.get("rel") == "stylesheet")
    assert "@import" not in text and "url(" not in text and "//fonts." not in text


def test_every_overview_cell_has_its_hook_and_mean(results, blueprints):
    rollup = build_rollup(results)
    _, page = _page(blueprints, results, rollup=rollup)
    cells = {a["data-weval-cell"]: a for a in page.with_attr("data-weval-cell")}
    expected = {f"{path}|{model}" for path in rollup.blueprints for model in rollup.models}
    assert set(cells) == expected
    for path, bp in rollup.blueprints.items():
        for model in rollup.models:
            attrs = cells[f"{path}|{model}"]
            tally = bp.by_model.get(model)
            if tally is None or tally.mean is None:
                assert "data-score" not in attrs  # no item of that model there (tone.yml x B) or none scored
            else:
                assert attrs["data-score"] == js_number(tally.mean)
                assert 0 <= float(attrs["data-score"]) <= 1
                background, colour = score_colours(tally.mean)
                assert attrs["style"] == f"background:{background};color:{colour}"
    # chest-pain 0.44 weighs 2, headache 0.8 weighs 1: (0.88 + 0.8) / 3
    assert cells[f"{TRIAGE}|{A}"]["data-score"] == "0.56"
    assert "data-score" not in cells[f"{TONE}|{B}"]


def test_cells_show_the_number_and_the_pass_count(results, blueprints):
    text, _ = _page(blueprints, results)
    privacy_a = re.search(rf'<td [^>]*data-weval-cell="{re.escape(PRIVACY)}\|{re.escape(A)}"[^>]*>(.*?)</td>', text)
    assert privacy_a is not None
    assert privacy_a.group(1) == '<span class="n">0.60</span><span class="c">1/2</span>'
    # the pass mark column and the folder rows (each folder's roll-up)
    assert re.search(rf'<span class="path mono">{re.escape(TRIAGE)}</span>.*?<td class="num">0.50</td></tr>', text)
    folder = re.search(
        r'<tr class="folder-row" data-folder="evals/safety">(.*?)</tr>', text
    )  # privacy.yml + medical/triage.yml
    assert folder is not None and f'data-weval-folder-cell="evals/safety|{A}"' in folder.group(1)


def test_folders_are_grouped_depth_first_with_the_top_level_last(results, blueprints):
    _, page = _page(blueprints, results)
    bodies = [a["data-folder"] for t, a in page.tags if t == "tbody" and "data-folder" in a]
    assert bodies == ["evals", "evals/safety", "evals/safety/medical", "evals/style", ""]
    rows = [a["data-name"] for t, a in page.tags if t == "tr" and "data-name" in a]
    assert rows == [PRIVACY, TRIAGE, TONE, TOP]


def test_run_facts_usage_judges_and_options(results, blueprints):
    facts = RunFacts(
        started=dt.datetime(2025, 3, 4, 5, 6, 7, tzinfo=dt.timezone.utc),
        duration_s=75.2,
        options=(("--weval-models", f"{A},{B}"), ("-n", "2")),
        judges=("openrouter:google/gemini-2.5-flash",),
    )
    text, _ = _page(blueprints, results, facts=facts)
    assert "<dt>Date</dt><dd>2025-03-04 05:06:07 UTC</dd>" in text
    assert "<dt>Duration</dt><dd>1 min 15 s</dd>" in text
    assert f"--weval-models={A},{B}; -n=2" in text
    assert "asked for: openrouter:google/gemini-2.5-flash" in text
    # shown with a space, as people read it (issue 34); the Weval JSON keeps the reference's id
    assert "holistic-gpt-4-1-mini (openrouter:openai/gpt-4.1-mini) (3 assessments)" in text
    assert "Krippendorff&#x27;s alpha" in text
    usage = re.search(r'<table class="plain" id="weval-usage">.*?</table>', text)
    assert usage is not None
    assert f"<tr><td>{A}</td><td>7</td><td>1</td><td>720</td><td>540</td></tr>" in usage.group(0)
    assert "<tr><th>total</th><th>20</th><th>1</th>" in usage.group(0)


def test_blueprint_blobs_hold_every_item_for_the_lazy_grids(results, blueprints):
    _, page = _page(blueprints, results)
    run = page.blobs()["weval-run"]
    assert sorted(run["blueprints"]) == sorted({r.blueprint_path for r in results})
    assert len(run["scale"]) == 101 and run["scale"][0] == list(score_colours(0))
    triage = _blueprint_blob(page, TRIAGE)
    assert [p["id"] for p in triage["prompts"]] == ["chest-pain", "headache"]  # the blueprint's order
    assert [v["label"] for v in triage["variants"]] == [A, B]
    by_node = {item["nodeid"]: item for item in triage["items"]}
    chest = by_node[f"{TRIAGE}::chest-pain[{A}]"]
    assert (chest["outcome"], chest["score"], chest["threshold"]) == ("failed", 0.44, 0.5)
    assert [p["text"] for p in chest["points"]][:2] == ['Function: contains("911")', 'Function: icontains("hospital")']
    judged = chest["points"][2]
    assert judged["weight"] == "2" and judged["kind"] == "judged"
    # judges by index into the blueprint's list; the consensus sentence (the score says it) left out
    assert [triage["judges"][j] for j, _, _ in judged["judges"]] == [judge_label(GEMINI), judge_label(GPT)]
    assert judged["judges"][0][1:] == [0.125, "It only vaguely suggests getting help and never says to call."]
    assert "reflection" not in judged
    assert chest["points"][3]["error"] == "All judges failed in consensus mode."
    assert chest["agreement"]["krippendorffsAlpha"] == 0.5
    errored = by_node[f"{TRIAGE}::headache[{B}]"]
    assert errored["outcome"] == "error" and "ANTHROPIC_API_KEY is not set" in errored["error"]
    tone = _blueprint_blob(page, TONE)
    assert [v["label"] for v in tone["variants"]] == [A, A + ",temp=0.7"]  # as in the node ids


def _result(path: str, prompt_id: str, model: str, **kw: Any) -> ItemResult:
    base: dict[str, Any] = {
        "nodeid": f"{path}::{prompt_id}[{model}]",
        "blueprint_id": path.rsplit(".", 1)[0].replace("/", "__"),
        "blueprint_path": path,
        "prompt_id": prompt_id,
        "model_id": model,
        "effective_model_id": f"{model}[temp:0]",
        "outcome": "passed",
        "score": 1.0,
        "points": [function("contains", '"a"', 1.0)],
        "usage": {model: Usage(requests=1)},
    }
    base.update(kw)
    return ItemResult(**base)


def _chat_blueprint(path: str) -> Blueprint:
    loc = Location(path=path, line=3)
    return Blueprint(
        path=path,
        id="chat",
        title="<b>Chat</b> & co",
        models=(ModelSpec(id=A),),
        prompts=(
            Prompt(
                id="two-turns",
                index=0,
                location=loc,
                messages=(
                    Message(role="user", content="Name an animal."),
                    Message(role="assistant", content=None),
                    Message(role="user", content="Another?"),
                ),
            ),
            Prompt(id="evil", index=1, location=loc, messages=(Message(role="user", content=EVIL),)),
        ),
    )


def test_generated_turns_are_marked():
    path = "blueprints/chat.yml"
    result = _result(
        path,
        "two-turns",
        A,
        system_prompt="Be brief.",
        response="A horse.",
        generated_texts=["A cat.", "A horse."],
    )
    _, page = _page({path: _chat_blueprint(path)}, [result])
    blob = _blueprint_blob(page, path)
    [item] = blob["items"]
    assert item["turns"] == [["system", "Be brief.", 0], 0, ["assistant", "A cat.", 1], 2, ["assistant", "A horse.", 1]]
    assert _turns(blob, item) == [
        ["system", "Be brief.", 0],
        ["user", "Name an animal.", 0],
        ["assistant", "A cat.", 1],
        ["user", "Another?", 0],
        ["assistant", "A horse.", 1],
    ]
    assert "response" not in item  # the last generated turn is the answer


def test_a_failed_generation_is_marked_as_such():
    path = "blueprints/chat.yml"
    result = _result(path, "two-turns", A, outcome="error", score=None, points=[], error="provider said 500")
    _, page = _page({path: _chat_blueprint(path)}, [result])
    blob = _blueprint_blob(page, path)
    [item] = blob["items"]
    # the reference's error turn, its markers left out: the page shows the message
    assert _turns(blob, item)[-1] == ["assistant", "provider said 500", 2]
    assert item["error"] == "provider said 500"


def test_an_item_nothing_was_asked_for_has_no_answer_turn():
    path = "blueprints/chat.yml"
    result = _result(
        path,
        "two-turns",
        A,
        outcome="error",
        score=None,
        points=[],
        error="the blueprint's prompt 'two-turns' cannot run as written",
        error_kind="blueprint",
    )
    _, page = _page({path: _chat_blueprint(path)}, [result])
    blob = _blueprint_blob(page, path)
    [item] = blob["items"]
    assert _turns(blob, item) == [["user", "Name an animal.", 0], ["user", "Another?", 0]]


def test_text_from_blueprints_and_models_is_never_markup():
    path = "blueprints/chat.yml"
    evil_result = _result(
        path,
        "evil",
        A,
        response=EVIL,
        generated_texts=[EVIL],
        points=[function("contains", json.dumps(EVIL), 0.0, path_id="path_0")],
        score=0.0,
        outcome="failed",
        error=EVIL,
        blueprint_title="<b>Chat</b> & co",
    )
    text, page = _page({path: _chat_blueprint(path)}, [evil_result])
    # No element came from the text: the only scripts are the page's, no <img>, no handler.
    assert [t for t, _ in page.tags if t in ("img", "b")] == []
    assert len(page.scripts) == 3  # the run blob, the blueprint blob, the page's script
    assert "window.pwned" not in "".join(s for _a, s in page.code())
    assert "<b>Chat</b>" not in text and "&lt;b&gt;Chat&lt;/b&gt; &amp; co" in text
    for _attrs, blob in [s for s in page.scripts if s[0].get("type") in DATA_TYPES]:
        assert "<" not in blob and ">" not in blob and "&" not in blob
    [item] = _blueprint_blob(page, path)["items"]
    assert item["turns"][-1] == ["assistant", EVIL, 1]  # shown as written, once decoded
    assert item["error"] == EVIL and item["points"][0]["text"] == f"Function: contains({json.dumps(EVIL)})"
    assert _blueprint_blob(page, path)["prompts"] == [{"id": "evil", "messages": [["user", EVIL]], "line": 3}]


def test_script_json_escapes_what_could_end_the_element():
    data = {"a": "</script><!--<script>", "b": "\u2028\u2029", "c": "\ud800 lone"}
    text = script_json(data)
    assert "<" not in text and ">" not in text and "\u2028" not in text
    assert text.encode("utf-8")  # no lone surrogate left raw
    assert json.loads(text) == data


def test_agent_eval_cases_without_a_blueprint_are_drawn_from_their_results():
    path = "evals/EVAL.yaml"
    case = _result(
        path,
        "refund",
        "openai:gpt-4o-mini",
        source="agent eval file",
        verdict="borderline",
        score=0.7,
        response="We can refund you.",
        generated_texts=["We can refund you."],
        history=[
            {"role": "system", "content": "You are support."},
            {"role": "user", "content": "I want a refund."},
            {"role": "assistant", "content": "We can refund you."},
        ],
    )
    _, page = _page({}, [case])
    assert page.with_attr("data-weval-cell")[0]["data-weval-cell"] == f"{path}|openai:gpt-4o-mini"
    blob = _blueprint_blob(page, path)
    assert blob["source"] == "agent eval file"
    assert blob["prompts"] == [
        {"id": "refund", "messages": [["system", "You are support."], ["user", "I want a refund."]]}
    ]
    [item] = blob["items"]
    assert item["verdict"] == "borderline"
    assert _turns(blob, item) == [
        ["system", "You are support.", 0],
        ["user", "I want a refund.", 0],
        ["assistant", "We can refund you.", 1],
    ]


def test_colours_read_in_black_or_white_whichever_contrasts():
    assert score_colours(0) == ("#440154", "#ffffff")
    assert score_colours(1) == ("#fde725", "#000000")
    assert score_colours(0.5)[1] == "#000000"  # viridis' mid teal reads better in black
    assert score_colours(0.444) == score_colours(0.44)  # the colour of the number shown


def test_write_html_is_atomic_and_readable_by_others(tmp_path: Path, results, blueprints):
    target = tmp_path / "out" / "report.html"
    assert write_html(target, blueprints, results) == target
    assert [p.name for p in target.parent.iterdir()] == ["report.html"]  # no temporary file left
    assert target.stat().st_mode & 0o777 == FILE_MODE
    text = target.read_text(encoding="utf-8")
    assert f"{fmt_score(build_rollup(results).overall.mean)}" in text


@pytest.mark.skipif(os.name != "posix", reason="modes are POSIX")
def test_a_lone_surrogate_does_not_stop_the_report(tmp_path: Path):
    path = "blueprints/chat.yml"
    odd = _result(
        path, "two-turns", A, response="half \ud83d of a pair", generated_texts=["x", "half \ud83d of a pair"]
    )
    write_html(tmp_path / "r.html", {path: _chat_blueprint(path)}, [odd])
    (tmp_path / "r.html").read_bytes().decode("utf-8")  # valid UTF-8


def test_the_consensus_sentence_goes_but_what_follows_it_stays():
    path = "blueprints/chat.yml"
    point = judged("Is kind", 0.5, [(GEMINI, 0.5, "Somewhat.")])
    point.reflection = (
        "[INVERTED] Consensus from 1 judge(s). Average score: 0.50. See breakdown for individual reflections."
        "\n\nWARNING: 1 of 2 judges failed to return a valid assessment."
    )
    point.consensus_note = (
        "WARNING: 1 of 2 judges failed to return a valid assessment."  # as the judges' layer flags it
    )
    result = _result(path, "evil", A, points=[point], score=0.5)
    _, page = _page({path: _chat_blueprint(path)}, [result])
    [item] = _blueprint_blob(page, path)["items"]
    assert item["points"][0]["reflection"] == "WARNING: 1 of 2 judges failed to return a valid assessment."


def test_intervals_are_shown_beside_the_means_when_the_rollup_has_them(results, blueprints):
    rollup = build_rollup(results)
    ci = getattr(rollup.by_model[A], "ci95", None)
    if ci is None:
        pytest.skip("this roll-up gives no confidence intervals")
    text, page = _page(blueprints, results, rollup=rollup)
    assert f"run mean {fmt_score(rollup.by_model[A].mean)} ({fmt_score(ci[0])}\u2013{fmt_score(ci[1])})" in text
    assert _blueprint_blob(page, TRIAGE)["tally"]["ci95"] == list(rollup.blueprints[TRIAGE].overall.ci95 or []) or (
        rollup.blueprints[TRIAGE].overall.ci95 is None and _blueprint_blob(page, TRIAGE)["tally"]["ci95"] is None
    )


def _comparison(results: list[ItemResult]) -> Comparison:
    """A hand-built comparison: model A regressed, model B did not; one item only in the
    baseline (its prompt id holds markup), one errored in this run, one prompt that moved."""
    chest = next(r for r in results if r.nodeid == f"{TRIAGE}::chest-pain[{A}]")
    errored = next(r for r in results if r.nodeid == f"{TRIAGE}::headache[{B}]")
    was = BaselineItem(
        blueprint_id=chest.blueprint_id,
        blueprint_path=chest.blueprint_path,
        prompt_id=chest.prompt_id,
        model_id=A,
        effective_model_id=chest.effective_model_id,
        system_prompt=None,
        outcome="passed",
        score=1.0,
    )
    return Comparison(
        directory=f"base/{EVIL}",
        alpha=0.05,
        max_drop=0.0,
        models={
            A: ModelComparison(
                model=A,
                items=6,
                baseline_mean=0.8,
                current_mean=0.56,
                interval=MeanInterval(mean=-0.24, n=6, clusters=4, se=0.05, lo=-0.4, hi=-0.08),
                p=0.004,
                p_holm=0.008,
                regressed=True,
                verdict="REGRESSED",
            ),
            B: ModelComparison(
                model=B,
                items=3,
                baseline_mean=0.7,
                current_mean=0.75,
                interval=MeanInterval(mean=0.05, n=3, clusters=3, se=0.1, lo=-0.38, hi=0.48),
                p=0.68,
                p_holm=0.68,
                regressed=False,
                verdict="no drop",
            ),
        },
        unpaired=(
            Unpaired("only-baseline", "gone", EVIL, A, f"{A}[temp:0]", "not in this run"),
            Unpaired(
                "unscored",
                errored.blueprint_id,
                "headache",
                B,
                errored.effective_model_id,
                "errored in this run",
                errored.nodeid,
            ),
        ),
        moved=(Pair(chest, was),),
        paired=9,
    )


def _header(text: str, model: str) -> str:
    found = re.search(rf'<th scope="col"[^>]*data-model="{re.escape(model)}"[^>]*>(.*?)</th>', text)
    assert found is not None, model
    return found.group(0)


def test_the_baseline_comparison_is_shown_beside_each_mean(results, blueprints):
    comparison = _comparison(results)
    text, page = _page(blueprints, results, comparison=comparison)

    # Beside each model's run mean: the baseline mean, the difference with its interval, p, the verdict.
    hooks = {a["data-weval-baseline"]: a for a in page.with_attr("data-weval-baseline")}
    assert set(hooks) == {A, B}
    assert (hooks[A]["data-delta"], hooks[A]["data-verdict"], hooks[A]["class"]) == (
        "-0.24",
        "REGRESSED",
        "sub baseline regressed",
    )
    assert (hooks[B]["data-delta"], hooks[B]["data-verdict"], hooks[B]["class"]) == ("0.05", "no drop", "sub baseline")
    head_a, head_b = _header(text, A), _header(text, B)
    assert head_a.startswith('<th scope="col" class="regressed" ')
    assert "baseline 0.80, difference -0.24 (-0.40 to -0.08), p 0.008, " in head_a
    assert '<span class="verdict">REGRESSED</span>' in head_a
    assert "baseline 0.70, difference +0.05 (-0.38 to +0.48), p 0.680, " in head_b
    assert 'class="regressed"' not in head_b
    assert "on 6 paired items: baseline mean 0.80, this run 0.56" in str(hooks[A]["title"])

    # In the run's facts: the comparison in a line, then per model in a table, the unpaired items
    # and the prompts that moved, each a link to its item when it is on the page.
    assert "<dt>Baseline</dt><dd>base/&lt;/script&gt;&lt;script&gt;window.pwned = 1&lt;/script&gt;" in text
    assert (
        f"9 paired items, 1 model regressed ({A}); not paired: 0 only in this run, 1 only in the baseline, "
        "1 without a score in one of the runs</dd>"
    ) in text
    table = re.search(r'<table class="plain" id="weval-baseline-models">.*?</table>', text)
    assert table is not None
    assert (
        f'<tr class="regressed" data-model="{A}"><td>{A}</td><td>6</td><td>0.80</td><td>0.56</td>'
        '<td>-0.24 (-0.40 to -0.08)</td><td>0.008</td><td class="verdict">REGRESSED</td></tr>'
    ) in table.group(0)
    assert f'<tr data-model="{B}"><td>{B}</td><td>3</td>' in table.group(0)
    assert "Items not paired (2): 0 only in this run, 1 only in the baseline, 1 without a score" in text
    links = [a["href"] for a in page.with_attr("href")]
    assert f"#bp={quote(TRIAGE, safe='')}&item={quote(f'{TRIAGE}::headache[{B}]', safe='')}" in links
    chest = next(r for r in results if r.nodeid == f"{TRIAGE}::chest-pain[{A}]")
    assert f"<li>1.00 \u2192 {fmt_score(chest.score)} (-0.56) <a href=" in text

    # Escaped everywhere: the markup in the folder name and the prompt id is text, never a tag.
    assert EVIL not in text
    assert f"<li>gone \u203a {html.escape(EVIL)} \u203a {A}[temp:0]: not in this run</li>" in text
    assert [t for t, _ in page.tags].count("img") == 0
    assert len(page.code()) == 1


def test_without_a_baseline_nothing_of_it_is_shown(results, blueprints):
    text, page = _page(blueprints, results)
    assert page.with_attr("data-weval-baseline") == []
    assert 'id="weval-baseline"' not in text and "<dt>Baseline</dt>" not in text


def test_an_items_samples_and_flakiness_are_in_its_detail(results, blueprints):
    # --weval-repeat: one item's samples on both sides of its threshold, another's all above it
    sampled = dict(enumerate(results))
    first, second = [n for n, r in sampled.items() if r.outcome == "passed"][:2]
    t = results[first].threshold
    flaky = results[first].model_copy(update={"sample_scores": [1.0, max(0.0, t - 0.25), 1.0]})
    steady = results[second].model_copy(update={"sample_scores": [1.0, 1.0]})
    changed = [flaky if n == first else steady if n == second else r for n, r in sampled.items()]
    _, page = _page(blueprints, changed)
    items = {
        item["nodeid"]: item
        for path in {r.blueprint_path for r in changed}
        for item in _blueprint_blob(page, path)["items"]
    }
    assert items[flaky.nodeid]["samples"] == flaky.sample_scores and items[flaky.nodeid]["flaky"] is True
    assert items[steady.nodeid]["samples"] == [1.0, 1.0] and "flaky" not in items[steady.nodeid]
    assert not any("samples" in item for nodeid, item in items.items() if nodeid not in (flaky.nodeid, steady.nodeid))


def test_a_large_runs_page_stays_compact_and_its_blocks_decode_to_every_answer():
    # issue 43: each blueprint's items (answers, conversations, reflections: the bulk) are a
    # compressed block, so the page stays under 200 bytes per item; decoded, the blocks hold
    # every answer as it was given.
    words = [
        "the",
        "model",
        "answer",
        "should",
        "consider",
        "context",
        "safety",
        "patient",
        "law",
        "risk",
        "evidence",
        "guidance",
    ]
    rng = random.Random(43)
    results, answers = [], {}
    for b in range(10):
        path = f"blueprints/group{b % 3}/bulk{b}.yml"
        for n in range(50):
            for model in (A, B):
                answer = f"{model} on question {n}: " + " ".join(rng.choice(words) for _ in range(70))
                result = _result(
                    path,
                    f"q{n}",
                    model,
                    response=answer,
                    generated_texts=[answer],
                    points=[
                        judged(f"explains topic {n} clearly", 0.75, [("openai:judge", 0.75, "The text meets it.")])
                    ],
                    score=0.75,
                )
                results.append(result)
                answers[result.nodeid] = answer
    text, page = _page({}, results)
    assert len(text.encode("utf-8")) / len(results) <= 200
    assert not any(answer in text for answer in answers.values())  # no answer is stored as it is
    blobs = page.blobs()
    decoded = {
        item["nodeid"]: item["response"] if "response" in item else item["turns"][-1][1]
        for path, blob_id in blobs["weval-run"]["blueprints"].items()
        for item in blobs[blob_id]["items"]
    }
    assert decoded == answers
