"""--weval-eval-methods with embedding (docs/options.md, 'Similarity to the ideal'), end to end
against the loopback fake whose embeddings are known vectors: every similarity in the
comparison file is the reference's rule over them (embedding-evaluator.ts, spec §3.5)."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from typing import Any
from urllib.parse import quote

import pytest
from plugin_helpers import MODEL_ID, Project, answer_rule
from test_plugin_html_report import _wait, browser  # noqa: F401 - the browser fixture

from tests.fakeserver import Rule
from tests.report.comparison_schema import validate_comparison

OTHER = "other-model"
OTHER_ID = f"openai:{OTHER}"
IDEAL = "IDEAL_BENCHMARK"
EMBEDDER = "text-embedding-3-small"

BLUEPRINT = f"""\
title: Similar
models: [{MODEL_ID}, {OTHER_ID}]
---
- id: capital
  prompt: What is the capital of France?
  ideal: Paris is the capital.
  should:
    - $icontains: paris
- id: colour
  prompt: Name a colour.
  should:
    - $icontains: red
- id: blank
  prompt: Say nothing.
  should:
    - $icontains: nothing
"""

# The answer texts' vectors (the fake server's embeddings), and who answered what.
VECTORS = {
    "Paris is the capital.": [1.0, 0.0, 0.0],
    "Paris.": [1.0, 1.0, 0.0],
    "It is Paris.": [0.0, 1.0, 1.0],
    "red": [2.0, 0.0, 1.0],
    "nothing": [0.5, 0.5, 0.5],
}
# The effective model ids (Weval's, with the temperature the items ran at).
MINI, OTHER_EFF = f"{MODEL_ID}[temp:0]", f"{OTHER_ID}[temp:0]"
ANSWERS = {
    ("capital", MINI): "Paris.",
    ("capital", OTHER_EFF): "It is Paris.",
    ("colour", MINI): "red",
    ("blank", MINI): "nothing",
}
IDEALS = {"capital": "Paris is the capital."}
PROMPTS = ["capital", "colour", "blank"]
IDS = [IDEAL, MINI, OTHER_EFF]  # as JavaScript sorts them


def reference_cosine(a: list[float], b: list[float]) -> float:
    """The reference's cosineSimilarity (src/lib/math.ts), written out again for the test."""
    dot = sum(x * y for x, y in zip(a, b))
    mag_a = math.sqrt(sum(x * x for x in a))
    mag_b = math.sqrt(sum(x * x for x in b))
    if not a:
        return 1.0
    if mag_a == 0 or mag_b == 0:
        return 0.0
    return max(-1.0, min(1.0, dot / (mag_a * mag_b)))


def expected() -> tuple[dict, dict]:
    """perPromptSimilarities and similarityMatrix by the reference's rule: every id in every
    prompt's matrix, 1 on the diagonal, null where a side has no embedding (the errored colour
    answer, the blank one, the prompts without an ideal), the mean of the known values."""
    per_prompt: dict = {}
    for pid in PROMPTS:
        texts = {IDEAL: IDEALS.get(pid), **{m: ANSWERS.get((pid, m)) for m in IDS[1:]}}
        per_prompt[pid] = {
            m1: {
                m2: 1.0
                if m1 == m2
                else reference_cosine(VECTORS[texts[m1]], VECTORS[texts[m2]])
                if texts[m1] and texts[m2]
                else None
                for m2 in IDS
            }
            for m1 in IDS
        }
    matrix = {}
    for m1 in IDS:
        matrix[m1] = {}
        for m2 in IDS:
            known = [per_prompt[p][m1][m2] for p in PROMPTS if per_prompt[p][m1][m2] is not None]
            matrix[m1][m2] = 1.0 if m1 == m2 else (sum(known) / len(known) if known else None)
    return per_prompt, matrix


def _project(project: Project) -> None:
    project.write("blueprints/similar.yml", BLUEPRINT)
    rules = [answer_rule("capital of France", ANSWERS["capital", MINI])]
    rules.append(answer_rule("capital of France", ANSWERS["capital", OTHER_EFF], model=OTHER))
    rules.append(answer_rule("Name a colour", "red"))
    rules.append(Rule(model=OTHER, contains="Name a colour", status=400))  # an errored answer: no embedding
    rules.append(answer_rule("Say nothing", "nothing"))
    rules.append(answer_rule("Say nothing", " ", model=OTHER))  # a blank answer: no embedding
    project.rules(*rules)
    project.server.embeddings = dict(VECTORS)


def _embeddings(project: Project) -> list:
    return [r for r in project.requests() if r.path.endswith("/embeddings")]


def _numbers(data):
    """JSON numbers as floats (1 and 1.0 alike), for comparing matrices."""
    if isinstance(data, dict):
        return {k: _numbers(v) for k, v in data.items()}
    return None if data is None else float(data)


def test_every_similarity_is_the_references_rule(project: Project):
    _project(project)
    result = project.run("--weval-eval-methods=embedding,llm-coverage", "--weval-out=out")
    assert result.ret == 1  # the errored and blank answers; the embedding step stops nothing
    data = project.json("out/similar.json")
    validate_comparison(data)  # the reference's OUTPUT_FORMAT, similarity matrices included
    assert data["evalMethodsUsed"] == ["embedding", "llm-coverage"]
    results = data["evaluationResults"]
    assert list(results) == ["similarityMatrix", "perPromptSimilarities", "llmCoverageScores"]
    per_prompt, matrix = expected()
    assert list(results["perPromptSimilarities"]) == PROMPTS
    assert all(list(row) == IDS for row in results["perPromptSimilarities"]["capital"].values())
    assert _numbers(results["perPromptSimilarities"]) == per_prompt
    assert _numbers(results["similarityMatrix"]) == matrix
    # by hand, for the reader: the model's answer against the ideal, and the two models
    assert per_prompt["capital"][MINI][IDEAL] == 1 / math.sqrt(2)
    assert matrix[MINI][OTHER_EFF] == pytest.approx(0.5) and matrix[OTHER_EFF][IDEAL] == 0.0
    # Each distinct text embedded once, with the blueprint's (default) embedding model.
    sent = sorted(r.body["input"] for r in _embeddings(project))
    assert sent == sorted(["Paris is the capital.", "Paris.", "It is Paris.", "red", "nothing"])
    assert {r.body["model"] for r in _embeddings(project)} == {EMBEDDER}


def test_no_embedding_request_without_the_option(project: Project):
    _project(project)
    project.run("--weval-out=out")
    assert _embeddings(project) == []
    data = project.json("out/similar.json")
    assert data["evalMethodsUsed"] == ["llm-coverage"]
    assert list(data["evaluationResults"]) == ["llmCoverageScores"]
    project.server.requests.clear()
    project.run("--weval-eval-methods=none", "--weval-out=out")
    assert _embeddings(project) == [] and project.json("out/similar.json")["evalMethodsUsed"] == ["llm-coverage"]


def test_ini_and_the_cache(project: Project):
    _project(project)
    project.ini("weval_eval_methods = all")
    project.run("--weval-out=out")
    first = len(_embeddings(project))
    assert first == 5
    project.server.requests.clear()
    project.run("--weval-out=again")
    assert _embeddings(project) == []  # replayed from the cache: never bought twice
    assert (
        project.json("again/similar.json")["evaluationResults"]["similarityMatrix"]
        == project.json("out/similar.json")["evaluationResults"]["similarityMatrix"]
    )


def test_no_embedding_at_all_is_a_warning_not_an_abort(project: Project):
    _project(project)
    project.server.rules.insert(0, Rule(path="/embeddings", status=401))
    result = project.run("--weval-eval-methods=all", "--weval-out=out", "-rA")
    result.stdout.fnmatch_lines(
        ["*similarity (openai:text-embedding-3-small): no similarity could be computed*no similarity matrix*"]
    )
    data = project.json("out/similar.json")
    assert data["evalMethodsUsed"] == ["llm-coverage"]
    assert "similarityMatrix" not in data["evaluationResults"]
    assert result.ret == 1  # as without the option: the errored and blank answers


def test_a_bad_method_is_a_usage_error(project: Project):
    _project(project)
    result = project.run("--weval-eval-methods=embeddings")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--weval-eval-methods (ini weval_eval_methods)*unknown evaluation method*"])
    assert project.requests() == []


def test_the_html_report_shows_the_similarity_to_the_ideal(project: Project, browser: Any):  # noqa: F811
    """Beside each model's scores, a column of its answers' similarity to the ideal; its header
    holds the mean over prompts (the comparison file's similarityMatrix value)."""
    from selenium.webdriver.common.by import By

    _project(project)
    project.run("--weval-eval-methods=all", "--weval-html=report.html")
    per_prompt, matrix = expected()
    url = (project.path / "report.html").resolve().as_uri()
    browser.get(url + "#bp=" + quote("blueprints/similar.yml", safe=""))
    table = _wait(lambda: browser.find_elements(By.CSS_SELECTOR, "#weval-prompts"))[0]
    heads = table.find_elements(By.CSS_SELECTOR, "thead th.sim")
    assert [h.get_attribute("data-sim") for h in heads] == ["0", "1"]
    assert heads[0].text.split() == ["\u2248", "ideal", "mean", f"{matrix[MINI][IDEAL]:.2f}"]
    assert heads[1].text.split()[-1] == f"{matrix[OTHER_EFF][IDEAL]:.2f}"
    rows = {row.get_attribute("data-name"): row for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")}
    capital = [cell.text for cell in rows["capital"].find_elements(By.CSS_SELECTOR, "td.sim")]
    assert capital == [f"{per_prompt['capital'][MINI][IDEAL]:.2f}", f"{per_prompt['capital'][OTHER_EFF][IDEAL]:.2f}"]
    assert [cell.text for cell in rows["colour"].find_elements(By.CSS_SELECTOR, "td.sim")] == ["\u2014", "\u2014"]
    # the score column sits just before its similarity column
    cells = rows["capital"].find_elements(By.CSS_SELECTOR, "td")
    assert [c.get_attribute("class").split()[0] for c in cells] == ["cell", "sim", "cell", "sim"]
    logs = browser.get_log("browser")
    assert [e for e in logs if e["level"] in ("SEVERE", "WARNING")] == [], logs


def test_under_xdist_the_controller_embeds_every_answer(project: Project):
    """Two workers answer; the controller, which holds every answer, embeds them (each text once)
    on the run's store and writes the same matrices."""
    _project(project)
    result = project.run("-n", "2", "--weval-eval-methods=all", "--weval-out=out", sub=True)
    assert result.ret == 1, result.stdout.str()[-3000:]
    per_prompt, matrix = expected()
    results = project.json("out/similar.json")["evaluationResults"]
    assert _numbers(results["perPromptSimilarities"]) == per_prompt
    assert _numbers(results["similarityMatrix"]) == matrix
    assert len(_embeddings(project)) == 5
    usage = project.json("out/summary.json")["usage"]
    assert usage[f"openai:{EMBEDDER}"]["requests"] == 5


def test_the_plan_counts_the_embeddings(project: Project):
    """--collect-only's plan: the ideal's embedding and one per answer, under the blueprint's
    embedding model; after a run, those the cache holds are counted as cached."""
    _project(project)
    project.run("--collect-only", "--weval-eval-methods=all", "--weval-out=out")
    row = project.json("out/plan.json")["requests"]["by_model"][f"openai:{EMBEDDER}"]
    assert (row["total"], row["cached"], row["by_purpose"]) == (7, 0, {"embed": 7})  # 1 ideal + 6 answers
    # repeated items' samples are planned first; the embeddings are still counted after them
    project.run("--collect-only", "--weval-eval-methods=all", "--weval-repeat=2", "--weval-out=repeated")
    assert project.json("repeated/plan.json")["requests"]["by_model"][f"openai:{EMBEDDER}"]["total"] == 7
    project.run("--weval-eval-methods=all")
    project.run("--collect-only", "--weval-eval-methods=all", "--weval-out=again")
    row = project.json("again/plan.json")["requests"]["by_model"][f"openai:{EMBEDDER}"]
    # the two answers that failed are foreseen again; the five texts embedded are in the cache
    assert (row["total"], row["cached"]) == (7, 5)
    project.run("--collect-only", "--weval-out=none")
    assert f"openai:{EMBEDDER}" not in project.json("none/plan.json")["requests"]["by_model"]


def test_a_missing_embedding_key_is_said_before_anything_is_sent(project: Project):
    """The pre-flight names what keeps the answers from being embedded; the items still run and
    score, and the end says that no similarity could be computed."""
    _project(project)
    project.write(
        "blueprints/similar.yml", BLUEPRINT.replace("title: Similar\n", "title: Similar\nembeddingModel: together:m2\n")
    )
    result = project.run("--weval-eval-methods=all", "--weval-out=out")
    result.stdout.fnmatch_lines(
        [
            "*--weval-eval-methods=embedding: TOGETHER_API_KEY is not set*blueprints/similar.yml will be missing*",
            "*similarity (together:m2): 5 of 5 texts were not embedded*",
            "*no similarity could be computed*",
        ]
    )
    assert _embeddings(project) == []
    assert project.json("out/similar.json")["evalMethodsUsed"] == ["llm-coverage"]
    assert result.ret == 1  # the two errored answers, as without the option


def test_under_a_budget_the_embeddings_are_priced_and_admitted(project: Project):
    """--weval-budget admits an embedding as any request, at its price (genai-prices'), and the
    run's spend counts it."""
    _project(project)
    project.ini("weval_prices =", f"    {OTHER_ID} 1 1")
    project.run("--weval-budget=5", "--weval-eval-methods=all", "--weval-out=out")
    _per_prompt, matrix = expected()
    assert _numbers(project.json("out/similar.json")["evaluationResults"]["similarityMatrix"]) == matrix
    used = project.json("out/summary.json")["usage"][f"openai:{EMBEDDER}"]
    # priced (an unknown price would be null), at $0.02 per 1M input tokens, written to 6 decimals
    assert used["requests"] == 5 and used["costUsd"] == round(used["inputTokens"] * 0.02 / 1e6, 6)


def test_ctrl_c_while_embedding_writes_the_reports_without_similarities(project: Project):
    """Ctrl-C during the embedding step: the run ends soon, its comparison file is written (its
    items' scores, no matrices), and what was already received stays in the cache."""
    _project(project)
    project.server.rules.insert(0, Rule(path="/embeddings", latency_ms=600_000, contains="Paris is the capital"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly"]
    process = subprocess.Popen(
        [*cmd, "--weval-eval-methods=all", "--weval-out=out", "--weval-stop-grace=1"],
        cwd=project.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(_embeddings(project)) < 5:  # the ideal's is held; the answers' came back
            assert time.monotonic() < deadline and process.poll() is None, "the embeddings never started"
            time.sleep(0.05)
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert "interrupted while embedding the answers" in output, output[-3000:]
    data = project.json("out/similar.json")
    assert data["evalMethodsUsed"] == ["llm-coverage"] and "similarityMatrix" not in data["evaluationResults"]
    # the next run buys only the embedding that never came back
    project.server.rules.pop(0)
    project.server.requests.clear()
    project.run("--weval-eval-methods=all", "--weval-out=again")
    assert [r.body["input"] for r in _embeddings(project)] == ["Paris is the capital."]
    assert "similarityMatrix" in project.json("again/similar.json")["evaluationResults"]
