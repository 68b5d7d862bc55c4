"""The ``prompts:`` of a promptfoo-shaped file: template strings, chat arrays (kept as their
JSON text, as promptfoo keeps them), ``{raw, label}`` objects, and ``file://`` text, JSON and
YAML files (a text file's prompts split at ``---`` lines); AgentV v5's default prompt where a
suite writes none. A prompt that cannot be used carries its located ``problem``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_weval.blueprint.loader import load_source
from pytest_weval.blueprint.model import BlueprintError, Location
from pytest_weval.formats.context import Context, Where, describe
from pytest_weval.formats.promptfoo.model import Dialect, PfPrompt
from pytest_weval.formats.promptfoo.places import files_named, key_location

DEFAULT_AGENTV_PROMPT = "{{ input }}"


class PromptReader:
    def __init__(self, ctx: Context, where: Where, shown: str, dialect: Dialect):
        self.ctx = ctx
        self.where = where
        self.shown = shown
        self.dialect = dialect
        self.folder: Path = ctx.file_dir

    def prompts(self, document: dict[str, Any]) -> list[PfPrompt]:
        raw = document.get("prompts")
        if raw is None:
            if self.dialect == "agentv5":
                return [PfPrompt(DEFAULT_AGENTV_PROMPT, DEFAULT_AGENTV_PROMPT, 0, False, Location(path=self.shown))]
            raise BlueprintError(
                "the config has no `prompts`",
                Location(path=self.shown, line=1),
                hint="add `prompts: ['{{ question }}']`",
            )
        entries = raw if isinstance(raw, list) else [raw]
        prompts: list[PfPrompt] = []
        for index, entry in enumerate(entries):
            where = (
                self.where.item(raw, index, f"prompts[{index}]")
                if isinstance(raw, list)
                else key_location(self.where, self.shown, document, "prompts", "prompts")
            )
            prompts.extend(self._prompt(entry, len(prompts), where))
        if not prompts:
            raise BlueprintError(
                "`prompts` is empty",
                key_location(self.where, self.shown, document, "prompts", "prompts"),
                hint="list a prompt",
            )
        return prompts

    def _prompt(self, entry: Any, index: int, where: Location) -> list[PfPrompt]:
        if isinstance(entry, list):  # a chat array: kept as its JSON text, as promptfoo does
            return [
                PfPrompt(
                    json.dumps(entry, ensure_ascii=False), json.dumps(entry, ensure_ascii=False), index, False, where
                )
            ]
        if isinstance(entry, dict):
            label = entry.get("label") or entry.get("id")
            raw = entry.get("raw", entry.get("id"))
            if isinstance(raw, list):
                raw = json.dumps(raw, ensure_ascii=False)
            if not isinstance(raw, str):
                return [self._bad_prompt(index, where, "a prompt object needs `raw` (the template) or `id`")]
            if raw.startswith("file://"):
                return [
                    PfPrompt(
                        p.raw,
                        str(label) if label else p.label,
                        p.index,
                        bool(label) or p.labelled,
                        p.location,
                        p.problem,
                    )
                    for p in self._prompt_file(raw, index, where)
                ]
            return [PfPrompt(raw, str(label or raw), index, bool(label), where)]
        if isinstance(entry, str):
            if entry.startswith("file://"):
                return self._prompt_file(entry, index, where)
            return [PfPrompt(entry, entry, index, False, where)]
        return [self._bad_prompt(index, where, f"a prompt is text, a chat array or an object, not {describe(entry)}")]

    def _bad_prompt(self, index: int, where: Location, why: str) -> PfPrompt:
        return PfPrompt("", f"prompt-{index}", index, False, where, problem=str(BlueprintError(why, where)))

    def _prompt_file(self, written: str, index: int, where: Location) -> list[PfPrompt]:
        files, why = files_named(self.ctx, self.folder, written)
        if why is not None:
            return [self._bad_prompt(index, where, f"the prompt file {written!r} cannot be used: {why}")]
        prompts = []
        for number, file in enumerate(files):
            if file.suffix.lower() in (".py", ".js", ".ts", ".mjs", ".cjs"):
                prompts.append(
                    self._bad_prompt(
                        index + number,
                        where,
                        f"{written!r}: a prompt made by a program is not supported (docs/promptfoo.md)",
                    )
                )
                continue
            text, why = self.ctx.read_text(file)
            if text is None:
                prompts.append(self._bad_prompt(index + number, where, f"the prompt file {written!r} {why}"))
                continue
            if file.suffix.lower() in (".json", ".yaml", ".yml") and file.suffix.lower() != ".json":
                try:
                    parsed = load_source(text, fmt="yaml", path=self.ctx.display(file)).documents[0]
                    text = json.dumps(parsed, ensure_ascii=False)
                except BlueprintError as exc:
                    prompts.append(self._bad_prompt(index + number, where, exc.message))
                    continue
            if file.suffix.lower() in (".txt", ".md", ".j2", ".njk") and "\n---\n" in text:
                # promptfoo's separator between prompts of one text file
                for part in text.split("\n---\n"):
                    prompts.append(PfPrompt(part.strip(), part.strip(), index + len(prompts), False, where))
                continue
            prompts.append(PfPrompt(text, f"{self.ctx.display(file)}", index + number, False, where))
        return prompts
