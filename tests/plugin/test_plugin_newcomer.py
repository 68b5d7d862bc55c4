"""What a newcomer hit on a fresh clone: one test per finding of that trial (the numbers are the
trial's), each about what the docs promise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from plugin_helpers import JUDGE_ID, MODEL, MODEL_ID, Project, answer_rule, judge_rule, section

from tests.fakeserver import Rule


# 1. An item with an invalid regex sends nothing; its error says what the author meant.
def test_1_an_invalid_regex_sends_nothing_and_says_what_was_meant(project: Project) -> None:
    project.write(
        "blueprints/re.yml",
        f"""\
        models: [{MODEL_ID}]
        ---
        - id: unclosed
          prompt: Say one.
          should: [$matches: "(unclosed"]
        - id: inline-flag
          prompt: Say two.
          should: [$matches: "(?i)two"]
        """,
    )
    result = project.run("-rA")
    result.assert_outcomes(errors=2)
    assert project.requests() == []
    assert "for case-insensitive matching use $imatches" in result.stdout.str()


# 2. A misspelt key warns in every run, and an item with nothing to score sends nothing.
def test_2_a_misspelt_key_warns_and_pays_nothing(project: Project) -> None:
    project.write(
        "blueprints/typo.yml",
        f"""\
        models: [{MODEL_ID}]
        ---
        - id: p
          prompt: Say hello.
          shuold:
            - $contains: hello
        """,
    )
    result = project.run()
    result.assert_outcomes(skipped=1)
    out = result.stdout.str()
    assert "typo.yml:5" in out and "prompt key 'shuold' is ignored (did you mean 'should'?)" in out
    assert project.requests() == []


# 3. --tb=line gives every errored and failed item its line, naming its model.
def test_3_tb_line_shows_errors_and_names_the_model(project: Project) -> None:
    project.write(
        "blueprints/two.yml",
        f"""\
        models: [{MODEL_ID}, openai:other-model]
        ---
        - id: letters
          prompt: Say alpha.
          should: [$contains: beta]
        - id: broken
          prompt: Say x.
          should: [$contians: x]
        """,
    )
    project.rules(Rule(reply="alpha"))
    result = project.run("--tb=line")
    lines = [line for line in result.outlines if line.startswith("blueprints/two.yml:") and ": [" in line]
    assert sorted(lines) == sorted(
        [
            f"blueprints/two.yml:5: [{MODEL_ID}] score 0.00 < pass mark 0.50; lost most on point 1, "
            'should: contains("beta") (0.00)',
            "blueprints/two.yml:5: [openai:other-model] score 0.00 < pass mark 0.50; lost most on point 1, "
            'should: contains("beta") (0.00)',
            *(
                f"blueprints/two.yml:8: [{model}] no score: The blueprint has a mistake, so this item cannot be "
                "scored as written (the blueprint has a mistake in this prompt's points: Function: "
                "contians(\"x\") (line 8): Unknown point function: 'contians' (did you mean 'contains'?))"
                for model in (MODEL_ID, "openai:other-model")
            ),
        ]
    ), lines


# 4. A budget stop is one stop, one message: what was spent and how to continue.
def test_4_a_budget_stop_says_so_once(project: Project) -> None:
    lines = [f"models: [{MODEL_ID}]", "---"]
    for n in range(14):
        lines += [f"- id: p{n}", f"  prompt: Question {n} please", "  should:", f"    - is an answer to {n}"]
    project.write("blueprints/priced.yml", "\n".join(lines) + "\n")
    project.ini("weval_prices =", f"    {MODEL_ID} 10000 10000", f"    {JUDGE_ID} 10 10")
    project.rules(*(judge_rule(f"is an answer to {n}", "CLASS_EXACT") for n in range(14)))
    result = project.run(
        f"--weval-judges={JUDGE_ID}", "--weval-budget=0.35", "--weval-concurrency=1", "--weval-cache=off"
    )
    out = result.stdout.str()
    summary = "\n".join(section(result.outlines, "weval scores"))
    assert summary.count("stopped by --weval-budget") == 1, summary
    stop = summary[summary.index("stopped by --weval-budget") :].replace("\n    ", " ")
    assert "budget reached ($" in stop and "with --weval-cache=off the replies received are not kept" in stop
    assert "in the cache" not in stop
    assert "Client/Network error" not in out and "All judges failed" not in out
    assert "Check the judge models" not in out


# 5. The plan counts every turn of a multi-turn prompt, and says which models cannot run.
def test_5_the_plan_counts_every_turn_and_unusable_models(project: Project) -> None:
    project.write(
        "blueprints/chat.yml",
        f"""\
        models: [{MODEL_ID}, consumer:chatgpt_client]
        ---
        - id: chat
          messages:
            - user: Hello.
            - assistant: null
            - user: And then?
          should: [$contains: then]
        """,
    )
    result = project.run("--collect-only", "--weval-out=plan")
    planned = project.json("plan/plan.json")
    assert planned["requests"]["by_model"][MODEL_ID]["by_purpose"] == {"generate": 2}
    assert planned["unusable_models"] and "consumer:chatgpt_client" in planned["unusable_models"][0]
    assert any(line.startswith("cannot run:") and "consumer:chatgpt_client" in line for line in result.outlines)
    project.rules(Rule(model=MODEL, reply="and then"))
    project.run(f"--weval-models={MODEL_ID}")
    assert len(project.requests(MODEL)) == 2  # as planned


# 6. Notices start on their own line, even at -q; counts are in the right number.
def test_6_notices_are_not_glued_to_the_progress_line(project: Project) -> None:
    project.write(
        "blueprints/keys.yml",
        """\
        models: [anthropic:claude-3-haiku, ideal]
        ---
        - id: p
          prompt: say beta
          ideal: beta
          should: [$contains: beta]
        """,
    )
    result = project.run("-q", "--weval-missing-keys=error")
    assert any(line.startswith("weval pre-flight:") for line in result.outlines), result.outlines
    assert "the item that needs them errors" in result.stdout.str()
    assert "the 1 items" not in result.stdout.str()


# 7. pytest from a subfolder finds the project's cache.
def test_7_a_run_from_a_subfolder_finds_the_existing_cache(tmp_path: Path, fake) -> None:
    project = tmp_path / "project"
    (project / "blueprints").mkdir(parents=True)
    (project / "blueprints" / "b.yml").write_text(
        f"models: [{MODEL_ID}]\n---\n- id: p\n  prompt: Say hello.\n  should: [$contains: hello]\n"
    )
    fake.rules = [answer_rule("Say hello.", "hello")]
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL")) and k != "PYTEST_ADDOPTS"}
    env.update(fake.env())

    def pytest_in(folder: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    first = pytest_in(project)  # no ini file: the rootdir is where pytest runs
    assert first.returncode == 0, first.stdout + first.stderr
    assert fake.count == 1 and (project / ".weval_cache").is_dir()
    again = pytest_in(project / "blueprints")
    assert again.returncode == 0, again.stdout + again.stderr
    assert fake.count == 1, "the second run re-sent instead of reading the cache"
    assert not (project / "blueprints" / ".weval_cache").exists()
    assert f"weval: cache {project / '.weval_cache'}" in again.stdout


# 8. The README's bench commands run on a clone without the corpus beside it.
def test_8_the_readme_bench_commands_run_in_a_plain_clone(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True, timeout=120)
    for name in ("points.py", "collect.py"):  # the working tree's, as this change has them
        (clone / "bench" / name).write_text((root / "bench" / name).read_text())
    points = subprocess.run(
        [sys.executable, "bench/points.py", "--passes", "1"], cwd=clone, capture_output=True, text=True, timeout=300
    )
    assert points.returncode == 0, points.stdout + points.stderr
    assert "measuring the example suite" in points.stdout and "points/s" in points.stdout


# 9. -vv's short summary has one line per item, as pytest's own does.
def test_9_vv_short_summary_is_one_line_per_item(project: Project) -> None:
    project.write(
        "blueprints/f.yml",
        f"""\
        models: [{MODEL_ID}]
        ---
        - id: p
          prompt: Say alpha.
          should: [$contains: beta]
        - id: q
          prompt: Say x.
          should: [$contians: x]
        """,
    )
    project.write("test_plain.py", "def test_plain():\n    assert 1 == 2\n")
    project.rules(Rule(reply="alpha"))
    result = project.run("-vv", "blueprints", "test_plain.py")
    summary = section(result.outlines, "short test summary info")
    assert len(summary) == 3, summary
    assert [line.split(" ", 1)[0] for line in summary] == ["FAILED", "FAILED", "ERROR"]


def test_the_usage_table_keeps_a_long_model_ids_provider(project: Project) -> None:
    long_id = "openai:" + "a-rather-long-model-name-" * 3 + "latest"
    project.write("blueprints/u.yml", f"models: [{long_id}]\n---\n- id: p\n  prompt: hi\n  should: [$contains: hi]\n")
    project.rules(Rule(reply="hi"))
    result = project.run()
    usage = [line for line in section(result.outlines, "weval scores") if line.startswith("openai:")]
    assert usage and usage[0].startswith("openai:a-rather"), usage


def test_no_asyncio_deprecation_warning_in_a_project_without_the_setting(tmp_path: Path) -> None:
    (tmp_path / "blueprints").mkdir()
    (tmp_path / "blueprints" / "b.yml").write_text(
        "models: [ideal]\n---\n- id: p\n  prompt: hi\n  ideal: hi\n  should: [$contains: hi]\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "blueprints"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PytestDeprecationWarning" not in done.stdout + done.stderr


def test_hostile_text_reaches_the_terminal_visible_not_acted_on(project: Project) -> None:
    """Answers come from models that read untrusted content, prompt ids from strangers' files:
    escape sequences and bidirectional overrides are shown, not sent to the terminal (issue:
    nothing lost under faults, item 8); the files keep the exact text."""
    hostile = "Sure.\x1b]0;pwned\x07\x1b[2J done"
    project.write(
        "blueprints/h.yml",
        f"models: [{MODEL_ID}]\n---\n- id: \"evil\\u202eexe.txt\"\n  prompt: Say it.\n  should: [$contains: nothing]\n",
    )
    project.rules(Rule(reply=hostile))
    result = project.run("--color=no", "-rA", "--weval-out=out", "-v")
    out = result.stdout.str() + result.stderr.str()
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in out and "evil\\u202eexe.txt" in out
    comparison = project.json("out/h.json")
    assert comparison["allFinalAssistantResponses"]["evil\u202eexe.txt"][f"{MODEL_ID}[temp:0]"] == hostile
