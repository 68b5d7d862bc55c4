"""The promptfoo-shaped loader (formats/promptfoo/, pure): discovery, prompts, providers,
defaultTest merging, the var matrix, CSV / JSON / JSONL / YAML test files, templates, and
located problems (issue 46, item 1). promptfoo's rules are cited from its source: src/csv.ts
(assertionFromString, testCaseFromCsvRow), src/evaluator.ts (generateVarCombinations and the
defaultTest merge), src/evaluatorHelpers.ts (renderPrompt)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_weval.blueprint.model import BlueprintError, Location
from pytest_weval.formats.discover import is_agent_eval_file, is_promptfoo_file
from pytest_weval.formats.promptfoo.csv_rows import assertion_from_string, csv_tests
from pytest_weval.formats.promptfoo.load import load_promptfoo_suite
from pytest_weval.formats.promptfoo.providers import build_provider, map_provider_id
from pytest_weval.formats.promptfoo.template import TemplateError, render


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load(root: Path, rel: str = "promptfooconfig.yaml"):
    return load_promptfoo_suite(root / rel, rootdir=root)


def test_discovery_tells_the_new_shape_from_agentvs_older_one(tmp_path: Path) -> None:
    v5 = 'prompts:\n  - "{{ input }}"\ntests:\n  - vars: {input: hi}\n'
    older = "tests:\n  - id: a\n    criteria: says hi\n    input: hi\n"
    assert is_promptfoo_file(write(tmp_path, "promptfooconfig.yaml", "prompts: [x]\n"), rootdir=tmp_path)
    assert is_promptfoo_file(write(tmp_path, "x/promptfooconfig.json", "{}"), rootdir=tmp_path)
    assert is_promptfoo_file(write(tmp_path, "x/chat.promptfoo.yaml", "prompts: [x]\n"), rootdir=tmp_path)
    assert is_promptfoo_file(write(tmp_path, "b/evals/suite.yaml", v5), rootdir=tmp_path)
    assert is_promptfoo_file(write(tmp_path, "c/EVAL.yaml", v5), rootdir=tmp_path)
    assert is_promptfoo_file(
        write(tmp_path, "d/evals/x.eval.yaml", "default_test: {vars: {a: 1}}\ntests: []\n"), rootdir=tmp_path
    )
    older_path = write(tmp_path, "e/evals/old.eval.yaml", older)
    assert not is_promptfoo_file(older_path, rootdir=tmp_path) and is_agent_eval_file(older_path, rootdir=tmp_path)
    assert not is_promptfoo_file(write(tmp_path, "f/suite.yaml", v5), rootdir=tmp_path)  # not below evals/
    assert not is_promptfoo_file(write(tmp_path, "blueprints/b.yml", "title: t\n---\n- prompt: hi\n"), rootdir=tmp_path)


def test_default_test_merges_as_promptfoo_merges_it(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """
        prompts: ["{{ a }}"]
        providers: [openai:chat:gpt-4o-mini]
        defaultTest:
          vars: {a: default-a, b: default-b}
          options: {prefix: "P:"}
          metadata: {team: x}
          threshold: 0.5
          assert:
            - {type: contains, value: first}
        tests:
          - vars: {a: own-a}
            options: {suffix: ":S"}
            assert:
              - {type: contains, value: second}
          - threshold: 0.9
        """,
    )
    suite = load(tmp_path)
    first, second = suite.tests
    assert first.vars == {"a": "own-a", "b": "default-b"}
    assert [a.raw["value"] for a in first.asserts] == ["first", "second"]  # defaultTest's first
    assert first.options == {"prefix": "P:", "suffix": ":S"}
    assert first.metadata == {"team": "x"}
    assert first.threshold == 0.5 and second.threshold == 0.9
    assert first.node_label == "0" and second.node_label == "1"  # no description: the index


def test_list_vars_expand_into_a_matrix_and_other_lists_stay_one_value(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """
        prompts: ["{{ x }} {{ y }}"]
        tests:
          - description: grid
            vars:
              x: [a, b]
              y: ["1", "2", "3"]
              chat: [{role: user, content: hi}]
          - vars: {x: after}
        """,
    )
    suite = load(tmp_path)
    pairs = [(t.vars["x"], t.vars.get("y")) for t in suite.tests]
    # promptfoo's generateVarCombinations: the first var varies slowest
    assert pairs == [("a", "1"), ("a", "2"), ("a", "3"), ("b", "1"), ("b", "2"), ("b", "3"), ("after", None)]
    assert [t.index for t in suite.tests] == list(range(7))
    assert suite.tests[0].vars["chat"] == [{"role": "user", "content": "hi"}]
    assert suite.tests[6].node_label == "6"


def test_csv_columns_and_rows(tmp_path: Path) -> None:
    text = (
        "question,__expected1,__expected2,__description,__threshold,__metric,__metadata:topic\n"
        "q1,contains:yes,not-icontains:no,,0,m1,geo\n"
        'q2,"icontains-any:a, b",fn:output.length > 2,second,0.7,,\n'
    )
    (line1, one), (line2, two) = csv_tests(text)
    assert (line1, line2) == (2, 3)
    assert one["vars"] == {"question": "q1"}
    assert one["assert"] == [
        {"type": "contains", "value": "yes", "metric": "m1"},
        {"type": "not-icontains", "value": "no", "metric": "m1"},
    ]
    assert "threshold" not in one  # promptfoo drops a threshold of 0
    assert one["metadata"] == {"topic": "geo"}
    assert "description" not in one
    assert two["description"] == "second" and two["threshold"] == 0.7
    assert two["assert"] == [
        {"type": "icontains-any", "value": ["a", "b"]},
        {"type": "javascript", "value": "output.length > 2"},
    ]


def test_assertion_text_as_promptfoo_reads_it() -> None:
    assert assertion_from_string("plain text") == {"type": "equals", "value": "plain text"}
    assert assertion_from_string("grade: is kind") == {"type": "llm-rubric", "value": " is kind"}
    assert assertion_from_string("levenshtein(0.5):abc") == {"type": "levenshtein", "threshold": 0.5, "value": "abc"}
    assert assertion_from_string("rouge-n:abc") == {"type": "rouge-n", "threshold": 0.75, "value": "abc"}
    assert assertion_from_string("is-json") == {"type": "is-json"}
    assert assertion_from_string("python:output == 1") == {"type": "python", "value": "output == 1"}
    assert assertion_from_string("file://check.js") == {"type": "javascript", "value": "check.js"}


def test_test_files_csv_jsonl_yaml_json_and_row_descriptions(tmp_path: Path) -> None:
    write(tmp_path, "rows.csv", "q,__expected\none,yes\ntwo,no\n")
    write(tmp_path, "rows.jsonl", '{"vars": {"q": "three"}}\n{"vars": {"q": "four"}, "description": "named"}\n')
    write(tmp_path, "more.yaml", "- vars: {q: five}\n")
    write(tmp_path, "more.json", json.dumps([{"vars": {"q": "six"}, "description": "six"}]))
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """
        prompts: ["{{ q }}"]
        tests:
          - file://rows.csv
          - file://rows.jsonl
          - file://more.yaml
          - more.json
        """,
    )
    suite = load(tmp_path)
    assert [(t.vars["q"], t.node_label) for t in suite.tests] == [
        ("one", "Row #1"),
        ("two", "Row #2"),
        ("three", "Row #1"),
        ("four", "named"),
        ("five", "4"),
        ("six", "six"),
    ]
    assert str(suite.tests[1].location) == "rows.csv:3"
    assert str(suite.tests[3].location).startswith("rows.jsonl:2")


def test_file_vars_yaml_parsed_text_read(tmp_path: Path) -> None:
    write(tmp_path, "data/profile.yaml", "name: Ada\nskills: [math]\n")
    write(tmp_path, "data/note.txt", "a note\n")
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """
        prompts: ["{{ profile }} / {{ note }}"]
        tests:
          - vars: {profile: file://data/profile.yaml, note: file://data/note.txt}
        """,
    )
    [test] = load(tmp_path).tests
    assert test.vars["profile"] == {"name": "Ada", "skills": ["math"]}
    assert test.vars["note"] == "a note\n"
    assert render("{{ profile }} / {{ note }}", test.vars) == '{"name":"Ada","skills":["math"]} / a note\n'


def test_prompts_inline_chat_files_and_labels(tmp_path: Path) -> None:
    write(tmp_path, "p/one.txt", "first {{ q }}\n---\nsecond {{ q }}")
    write(tmp_path, "p/chat.json", json.dumps([{"role": "user", "content": "{{ q }}"}]))
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """
        prompts:
          - "inline {{ q }}"
          - [{role: system, content: sys}, {role: user, content: "{{ q }}"}]
          - file://p/one.txt
          - {raw: file://p/chat.json, label: chatfile}
        tests: [{vars: {q: x}}]
        """,
    )
    prompts = load(tmp_path).prompts
    assert [p.node_label for p in prompts] == ["0", "1", "2", "3", "chatfile"]
    assert [p.raw for p in prompts[2:4]] == ["first {{ q }}", "second {{ q }}"]
    assert json.loads(prompts[1].raw)[0] == {"role": "system", "content": "sys"}
    assert json.loads(prompts[4].raw) == [{"role": "user", "content": "{{ q }}"}]


def test_templates_follow_nunjucks_and_promptfoo() -> None:
    assert (
        render("{{ a }}|{{ b }}|{{ c }}|{{ missing }}|", {"a": True, "b": 2.0, "c": [1, "x"]}) == "true|2|[1,\"x\"]||"
    )
    assert render("{{ env.KEY }}", {}, {"KEY": "allowed"}) == "allowed"
    assert render("{{ env.OTHER }}", {}, {"KEY": "allowed"}) == ""  # not allowed: not there
    assert render("{{ x | dump }}", {"x": 'q"uote'}) == '"q\\"uote"'
    assert render("<b>{{ x }}</b>", {"x": "<i>"}) == "<b><i></b>"  # no autoescaping
    with pytest.raises(TemplateError):
        render("{{ x.__class__.__mro__ }}{% for %}", {"x": 1})


def test_providers_map_onto_ours() -> None:
    assert map_provider_id("openai:chat:gpt-4o") == ("openai:gpt-4o", None)
    assert map_provider_id("openai:gpt-4o-mini") == ("openai:gpt-4o-mini", None)
    assert map_provider_id("anthropic:messages:claude-3-5-haiku") == ("anthropic:claude-3-5-haiku", None)
    assert map_provider_id("google:gemini-2.0-flash") == ("google:gemini-2.0-flash", None)
    assert map_provider_id("vertex:gemini-2.0-flash") == ("google:gemini-2.0-flash", None)
    assert map_provider_id("openrouter:meta/llama-3") == ("openrouter:meta/llama-3", None)
    assert map_provider_id("mistral:mistral-large-latest") == ("mistral:mistral-large-latest", None)
    # promptfoo's registry: a bare openai:chat / openai:responses runs config.model, else its default
    assert map_provider_id("openai:chat") == ("openai:gpt-5.6-terra", None)
    assert map_provider_id("openai:responses:") == ("openai:gpt-5.6-terra", None)
    assert map_provider_id("openai:chat", "gpt-4o") == ("openai:gpt-4o", None)
    bare = build_provider({"id": "openai:chat", "config": {"model": "gpt-4o-mini"}}, 0, Location(path="p.yaml", line=1))
    assert (bare.model_id, bare.problem) == ("openai:gpt-4o-mini", None)
    assert build_provider("openai:chat", 0, Location(path="p.yaml", line=1)).promptfoo_id == "openai:gpt-5.6-terra"
    for unrunnable in ("exec:./run.sh", "python:provider.py", "file://provider.js", "openai:embedding:x", "llm"):
        model, why = map_provider_id(unrunnable)
        assert model is None and why
    where = Location(path="p.yaml", line=3)
    local = build_provider(
        {
            "id": "openai:chat:local",
            "label": "mine",
            "config": {
                "apiBaseUrl": "http://127.0.0.1:9/v1",
                "temperature": 0.2,
                "max_tokens": 7,
                "systemPrompt": "be brief",
                "headers": {"Authorization": "Bearer {{ env.LOCAL_KEY }}"},
            },
        },
        0,
        where,
    )
    assert local.model_id == "mine" and local.problem is None
    assert local.custom == {
        "id": "mine",
        "url": "http://127.0.0.1:9/v1/chat/completions",
        "modelName": "local",
        "inherit": "openai",
        "headers": {"Authorization": "Bearer ${LOCAL_KEY}"},  # the engine substitutes allowed variables only
    }
    assert (local.temperature, local.max_tokens, local.system) == (0.2, 7, "be brief")
    assert build_provider({"id": "openai:gpt-4o", "config": {"temperature": "hot"}}, 0, where).problem


def test_promptfoos_own_name_for_a_provider_is_kept_where_it_differs() -> None:
    # promptfoo 0.123.1's provider.id() (its results file): the text openai:chat:<m> is
    # openai:<m>; an object's id, or a single-key mapping's, is kept as written
    where = Location(path="p.yaml", line=3)
    assert build_provider("openai:chat:gpt-4o", 0, where).promptfoo_id == "openai:gpt-4o"
    assert build_provider({"id": "openai:chat:gpt-4o"}, 0, where).promptfoo_id is None
    assert build_provider({"openai:chat:gpt-4o": {"config": {}}}, 0, where).promptfoo_id is None
    assert build_provider("openai:gpt-4o", 0, where).promptfoo_id is None


def test_one_broken_part_is_located_and_the_rest_loads(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """
        prompts: ["{{ q }}", "file://missing.txt"]
        providers: [openai:chat:gpt-4o-mini, exec:./x.sh]
        tests:
          - vars: {q: fine}
          - file://nope.csv
          - vars: {q: file://absent.yaml}
          - vars: not-a-mapping
        """,
    )
    suite = load(tmp_path)
    assert suite.prompts[0].problem is None and "missing.txt" in (suite.prompts[1].problem or "")
    assert suite.providers[0].problem is None
    assert (suite.providers[1].problem or "").startswith("promptfooconfig.yaml:2")
    fine, no_file, absent, bad = suite.tests
    assert fine.problem is None
    assert "nope.csv" in (no_file.problem or "") and (no_file.problem or "").startswith("promptfooconfig.yaml:5")
    assert "absent.yaml" in (absent.problem or "")
    assert "`vars` of the test must be a mapping" in (bad.problem or "")


def test_a_file_that_cannot_be_used_at_all_is_one_located_error(tmp_path: Path) -> None:
    write(tmp_path, "promptfooconfig.yaml", "providers: [openai:gpt-4o]\ntests: []\n")
    with pytest.raises(BlueprintError, match="no `prompts`"):
        load(tmp_path)
    write(tmp_path, "promptfooconfig.yaml", "prompts: [x]\ntests: [\n")
    with pytest.raises(BlueprintError) as error:
        load(tmp_path)
    assert error.value.location.path == "promptfooconfig.yaml"


def test_a_blueprint_named_on_the_command_line_is_not_taken_for_promptfoo(tmp_path: Path) -> None:
    blueprint = write(tmp_path, "b.yml", "title: t\nmodels: [openai:gpt-4o-mini]\nprompts:\n  - prompt: hi\n")
    assert not is_promptfoo_file(blueprint, rootdir=tmp_path, named=True)
    config = write(tmp_path, "mine.yaml", "prompts: ['{{ q }}']\nproviders: [openai:gpt-4o-mini]\ntests: []\n")
    assert is_promptfoo_file(config, rootdir=tmp_path, named=True)


def test_providers_shown_alike_are_numbered_as_pytest_numbers_duplicate_ids(tmp_path: Path) -> None:
    write(
        tmp_path,
        "promptfooconfig.yaml",
        """
        prompts: ["{{ a }}"]
        providers:
          - openai:chat
          - {id: openai:chat, config: {model: gpt-4o-mini}}
          - {id: openai:gpt-4o, label: mine}
        tests: [{vars: {a: x}}]
        """,
    )
    labels = [p.node_label for p in load(tmp_path).providers]
    assert labels == ["openai:chat0", "openai:chat1", "mine"]
