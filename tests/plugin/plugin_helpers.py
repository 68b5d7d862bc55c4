"""Helpers for the plugin's end-to-end tests: a project directory run by pytester against the
loopback fake server (tests/fakeserver), judge replies scripted by criterion text."""

from __future__ import annotations

import json
import os
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.fakeserver import FakeServer, Rule

JUDGE = "judge-model"  # answered by the fake server under the openai provider
JUDGE_ID = f"openai:{JUDGE}"
MODEL = "gpt-4o-mini"
MODEL_ID = f"openai:{MODEL}"
CANARY = "sk-canary-5f1e2d3c4b5a69788796a5b4c3d2e1f0"

PROVIDER_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "MISTRAL_API_KEY",
    "TOGETHER_API_KEY",
    "XAI_API_KEY",
    "OPENROUTER_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "GEMINI_BASE_URL",
    "MISTRAL_BASE_URL",
    "TOGETHER_BASE_URL",
    "XAI_BASE_URL",
    "OPENROUTER_BASE_URL",
)

INI = """\
[pytest]
asyncio_default_fixture_loop_scope = function
filterwarnings =
    ignore::pytest.PytestAssertRewriteWarning
"""


# One prompt of one model, passed by a function point once the model says hello.
HELLO_BLUEPRINT = f"""\
title: One
models: [{MODEL_ID}]
---
- id: greet
  prompt: Say hello.
  should:
    - $contains: hello
"""


def verdict(cls: str, reflection: str = "Judged by the fake server.") -> str:
    return f"<reflection>{reflection}</reflection><classification>{cls}</classification>"


def judge_rule(criterion: str, cls: str, reflection: str | None = None, *, model: str = JUDGE, **kw: Any) -> Rule:
    """The judge ``model``'s answer for one criterion (matched on the judge prompt's
    ``<CRITERION>`` block, so the response text cannot trigger it)."""
    reflection = reflection or f"The fake judge says {cls} for '{criterion}'."
    return Rule(model=model, contains=f"<CRITERION>\n{criterion}\n</CRITERION>", reply=verdict(cls, reflection), **kw)


def answer_rule(contains: str, reply: str, *, model: str = MODEL, **kw: Any) -> Rule:
    """The tested model's answer to a prompt containing ``contains``."""
    return Rule(model=model, contains=contains, reply=reply, **kw)


class Project:
    """A throwaway pytest project in ``pytester.path`` with the fake server's environment."""

    def __init__(self, pytester: pytest.Pytester, server: FakeServer, monkeypatch: pytest.MonkeyPatch):
        self.pytester = pytester
        self.server = server
        self.monkeypatch = monkeypatch
        self.path: Path = pytester.path
        self.ini_lines: list[str] = []
        self._write_ini()

    # -- files ---------------------------------------------------------------------------
    def write(self, rel: str, text: str) -> Path:
        path = self.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    def ini(self, *lines: str) -> None:
        self.ini_lines.extend(lines)
        self._write_ini()

    def _write_ini(self) -> None:
        (self.path / "pytest.ini").write_text(INI + "".join(line + "\n" for line in self.ini_lines))

    # -- the server ----------------------------------------------------------------------
    def rules(self, *rules: Rule) -> None:
        self.server.rules = list(rules)

    def requests(self, model: str | None = None) -> list:
        return [r for r in list(self.server.requests) if model is None or r.model == model]

    # -- running -------------------------------------------------------------------------
    def run(self, *args: str, sub: bool = False, timeout: float = 180, cacheprovider: bool = False) -> pytest.RunResult:
        if not cacheprovider:
            args = ("-p", "no:cacheprovider", *args)
        if sub:
            return self.pytester.runpytest_subprocess(*args, timeout=timeout)
        return self.pytester.runpytest(*args)

    # -- outputs -------------------------------------------------------------------------
    def junit(self, rel: str = "junit.xml") -> dict[str, dict[str, Any]]:
        """testcase name -> {"outcome", "properties", "text"}."""
        tree = ET.parse(self.path / rel)
        cases: dict[str, dict[str, Any]] = {}
        for case in tree.iter("testcase"):
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            outcome = "passed"
            for tag in ("failure", "error", "skipped"):
                if case.find(tag) is not None:
                    outcome = tag
            cases[case.get("name")] = {"outcome": outcome, "properties": props, "classname": case.get("classname")}
        return cases

    def json(self, rel: str) -> Any:
        return json.loads((self.path / rel).read_text(encoding="utf-8"))

    def all_text_under(self, rel: str) -> str:
        """Every byte under a folder, decoded leniently (to search for secrets)."""
        chunks = []
        for root, _dirs, files in os.walk(self.path / rel):
            for name in files:
                chunks.append((Path(root) / name).read_bytes().decode("utf-8", errors="replace"))
        return "\n".join(chunks)


def outcomes_by_id(result: pytest.RunResult) -> dict[str, str]:
    """nodeid -> PASSED/FAILED/ERROR/SKIPPED from an -rA short summary."""
    found: dict[str, str] = {}
    for line in result.outlines:
        for word in ("PASSED", "FAILED", "ERROR", "SKIPPED"):
            if line.startswith(word + " "):
                rest = line[len(word) + 1 :]
                nodeid = rest.split(" - ", 1)[0].strip()
                found[nodeid] = word
    return found


def section(lines: list[str], title: str) -> list[str]:
    """The lines of a ``==== title ====`` section of pytest's terminal output."""
    out: list[str] = []
    inside = False
    for line in lines:
        if line.startswith("=") and line.rstrip().endswith("=") and f" {title} " in line:
            inside = True
            continue
        if inside:
            if line.startswith("=") and line.rstrip().endswith("="):
                break
            out.append(line)
    return out
