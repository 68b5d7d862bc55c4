"""The end-of-run summary text: content, width, stability."""

from __future__ import annotations

import pytest
from report_data import A, eff

from pytest_weval.report._fmt import fit_name
from pytest_weval.report.rollup import build_rollup
from pytest_weval.report.terminal import (
    render_agreement,
    render_folder_tree,
    render_point_errors,
    render_score_table,
    render_summary,
    render_usage,
    short_model_name,
)
from pytest_weval.results import ItemResult, Usage

AGREEMENT = {
    "krippendorffsAlpha": 0.932,
    "numItems": 4,
    "numJudges": 2,
    "numComparisons": 4,
    "interpretation": "reliable",
    "judgeSetFingerprint": "ef999402f2b1",
    "judgesUsed": [],
}


@pytest.fixture
def rollup(results):
    return build_rollup(results, agreement=AGREEMENT)


EXPECTED_100 = """\
12 items in 4 blueprints: 8/12 passed, 1 error; mean score 0.67 (0.40-0.94), weighted by prompt
weight

Mean score per blueprint and model (0 to 1, higher is better)
blueprint                        anthropic:claude-3-haiku  openai:gpt-4o-mini               all
evals/safety/medical/triage.yml                      0.90    0.56 (0.00-1.00)  0.70 (0.00-1.00)
evals/safety/privacy.yml                 0.55 (0.00-1.00)    0.60 (0.00-1.00)  0.57 (0.00-1.00)
evals/style/tone.yml                                                     0.50              0.50
top.yml                                              1.00                0.90              0.95
all blueprints                           0.78 (0.19-1.00)    0.60 (0.25-0.94)  0.67 (0.40-0.94)
Means are weighted by each prompt's weight where a blueprint sets one.
In brackets: the mean's 95% confidence interval, clustered by blueprint over several blueprints,
else by prompt; none for a single prompt (docs/statistics.md).

Scores by folder
folder / file                   mean  passed
(all)               0.67 (0.40-0.94)  8/12 passed, 1 error
  evals/            0.62 (0.22-1.00)  6/10 passed, 1 error
    safety/         0.64 (0.00-1.00)  5/8 passed, 1 error
      medical/      0.70 (0.00-1.00)  2/4 passed, 1 error
        triage.yml  0.70 (0.00-1.00)  2/4 passed, 1 error
      privacy.yml   0.57 (0.00-1.00)  3/4 passed
    style/                      0.50  1/2 passed
      tone.yml                  0.50  1/2 passed
  top.yml                       0.95  2/2 passed

Usage per model (answers and judging)
model                               requests  cached  tokens in  tokens out
anthropic:claude-3-haiku                   5       0        500         200
openai:gpt-4o-mini                         7       1        720         540
openrouter:google/gemini-2.5-flash         4       0      2,000         400
openrouter:openai/gpt-4.1-mini             4       0      2,000         380
total                                     20       1      5,220       1,520

Judge agreement (Krippendorff's alpha, 1 = always agree): 0.932, reliable — the judges agree well (4
  judged points, 2 judges).

Items that could not be scored (1):
- evals/safety/medical/triage.yml > prompt 'headache' > anthropic:claude-3-haiku[temp:0]: Failed to
    get response for anthropic:claude-3-haiku[temp:0]: ANTHROPIC_API_KEY is not set

Points with problems (2):
- evals/safety/medical/triage.yml > prompt 'chest-pain' > anthropic:claude-3-haiku[temp:0] >
    "Advises calling emergency services right away" (score kept): WARNING: 1 of 3 judges failed to
    return a valid assessment.
- evals/safety/medical/triage.yml > prompt 'chest-pain' > openai:gpt-4o-mini[temp:0] > "Mentions
    aspirin dosage" (left out of the score): All judges failed in consensus mode."""


def test_full_summary_is_stable(rollup):
    assert "\n".join(render_summary(rollup, width=100)) == EXPECTED_100


@pytest.mark.parametrize("width", [40, 60, 80, 100, 140, 200])
def test_every_line_fits_the_width(rollup, width):
    lines = render_summary(rollup, width=width)
    assert lines and all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]


def test_narrow_terminal_switches_to_one_line_per_model(rollup):
    lines = render_score_table(rollup, width=60)
    at = next(i for i, line in enumerate(lines) if line.startswith("blueprint / model"))
    assert lines[at].split() == ["blueprint", "/", "model", "mean", "passed"]
    assert lines[at + 1] == "…/medical/triage.yml  0.70 (0.00-1.00)  2/4 passed, 1 error"
    assert lines[at + 2] == "  anthropi…e-3-haiku              0.90  1/2 passed, 1 error"  # cut as everywhere
    # the run-wide mean of each model, with its interval (clustered by blueprint)
    assert lines[at + 12 : at + 15] == [
        "all blueprints        0.67 (0.40-0.94)  8/12 passed, 1 error",
        "  anthropi…e-3-haiku  0.78 (0.19-1.00)  4/5 passed, 1 error",
        "  openai:gpt-4o-mini  0.60 (0.25-0.94)  4/7 passed",
    ]


def test_short_model_names_with_a_legend_when_full_ids_do_not_fit(rollup):
    lines = render_score_table(rollup, width=90)
    assert lines[1].split() == ["blueprint", "claude-3-haiku", "gpt-4o-mini", "all"]
    start = lines.index("Columns:")
    assert lines[start + 1 : start + 3] == [
        "  claude-3-haiku = anthropic:claude-3-haiku",
        "  gpt-4o-mini = openai:gpt-4o-mini",
    ]


def test_many_models_use_the_long_format():
    items = [
        ItemResult(
            blueprint_id="b",
            blueprint_path="b.yml",
            prompt_id="p",
            model_id=f"m:{i}",
            effective_model_id=f"m:{i}[temp:0]",
            outcome="passed",
            score=1.0,
        )
        for i in range(8)
    ]
    lines = render_score_table(build_rollup(items, agreement={}), width=200)
    assert lines[1].split()[:3] == ["blueprint", "/", "model"]


def test_short_model_name():
    assert short_model_name("openrouter:google/gemini-2.5-flash") == "gemini-2.5-flash"
    assert short_model_name("openai:gpt-4o-mini") == "gpt-4o-mini"
    assert short_model_name("echo") == "echo"


def test_folder_tree_shows_nesting_and_counts(rollup):
    lines = render_folder_tree(rollup, width=80)
    assert lines[2].startswith("(all)")
    assert "      medical/      0.70 (0.00-1.00)  2/4 passed, 1 error" in lines
    assert "    style/                      0.50  1/2 passed" in lines  # one prompt: no interval


def _throttled_and_priced(results):
    usage = {
        "anthropic:claude-3-5-haiku-latest": Usage(
            requests=1234,
            cache_hits=120,
            input_tokens=1_234_567,
            output_tokens=234_567,
            refused=12,
            rate_wait_s=1234.5,
            cost_usd=1.23456,
        ),
        "openai:gpt-4o-mini": Usage(requests=12, cache_hits=1, input_tokens=4567, output_tokens=567, cost_usd=0.0123),
    }
    return build_rollup(results, agreement={}, usage=usage)


@pytest.mark.parametrize("width", [40, 60, 80, 100])
def test_the_usage_table_always_shows_the_money_and_cuts_no_line_end(results, width):
    """Issue 40 item 12: at 80 columns the cost and 'waited' columns were cut off the line."""
    lines = render_usage(_throttled_and_priced(results), width=width)
    assert all(len(line) <= width for line in lines), lines
    text = "\n".join(lines)
    for money in ("$1.2346", "$0.0123", "$1.2469", "1,234.5 s"):
        assert money in text, (width, text)
    assert not any(line.endswith("…") for line in lines)  # a row is never cut at its end


def test_model_ids_are_cut_one_way_in_every_table(results):
    rollup = _throttled_and_priced(results)
    cut = [
        line.split()[0]
        for line in render_usage(rollup, width=130) + render_score_table(rollup, width=60)
        if "…" in line.split()[0]
    ]
    assert all(not name.endswith("…") for name in cut), cut  # the middle, never the end
    assert fit_name("  anthropic:claude-3-5-haiku-latest", 20) == "  anthropi…ku-latest"
    assert fit_name("openai:gpt-4o-mini", 12, model=True) == "opena…o-mini"
    assert fit_name("evals/safety/medical/triage.yml", 20) == "…/medical/triage.yml"
    assert fit_name("blueprint / model", 10, header=True) == "blueprint…"


def test_usage_table_totals(rollup):
    lines = render_usage(rollup, width=100)
    assert lines[-1].split() == ["total", "20", "1", "5,220", "1,520"]


@pytest.mark.parametrize(
    "interp,words",
    [
        ("reliable", "agree well"),
        ("tentative", "mostly agree"),
        ("unstable", "nearly identical"),
        ("unreliable", "often disagree"),
    ],
)
def test_agreement_in_words(interp, words):
    text = " ".join(render_agreement({"krippendorffsAlpha": 0.5, "interpretation": interp}, width=200))
    assert "0.5" in text and words in text


def test_no_agreement_no_section():
    assert render_agreement(None) == []


def test_point_errors_are_capped(rollup):
    lines = render_point_errors(rollup, width=100, limit=1)
    assert lines[0] == "Points with problems (2):"
    assert lines[-1].startswith("... and 1 more")


def test_empty_run_renders():
    lines = render_summary(build_rollup([], agreement={}), width=80)
    assert lines[0].startswith("0 items in 0 blueprints")


def test_blueprint_without_a_model_shows_blank_cell(rollup):
    tone_row = next(line for line in render_score_table(rollup, width=100) if line.startswith("evals/style"))
    assert tone_row.split() == ["evals/style/tone.yml", "0.50", "0.50"]


def test_model_ids_with_variants_are_merged_in_the_table(results):
    lines = render_score_table(build_rollup(results, agreement={}), width=100)
    assert not any(eff(A, 0.7) in line for line in lines)
