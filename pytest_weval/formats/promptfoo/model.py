"""The typed form of a promptfoo-shaped suite: prompts, providers, and test rows after
``defaultTest`` merging and the expansion of list vars (docs/promptfoo.md, 'Collection')."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from pytest_weval.blueprint.model import Location

Dialect = Literal["promptfoo", "agentv5"]


@dataclasses.dataclass(frozen=True, slots=True)
class PfPrompt:
    """One entry of ``prompts:``: the raw template (a chat array is its JSON text, as promptfoo
    keeps it) and its label (written, or the raw text / ``file`` name, as promptfoo makes it)."""

    raw: str
    label: str
    index: int
    labelled: bool  # the file gave a label (or id): it names the item, else the index does
    location: Location
    problem: str | None = None

    @property
    def node_label(self) -> str:
        return self.label if self.labelled else str(self.index)


@dataclasses.dataclass(frozen=True, slots=True)
class PfProvider:
    """One entry of ``providers:`` mapped onto a model this plugin sends to (``model_id`` and,
    for an OpenAI-compatible ``apiBaseUrl``, the custom model object ``custom``), or why not."""

    written_id: str  # promptfoo's provider id as written (``openai:chat:gpt-4o``)
    label: str | None
    index: int
    location: Location
    model_id: str | None = None
    custom: dict[str, Any] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    system: str | None = None  # config.systemPrompt / config.system: sent before the prompt
    config: dict[str, Any] = dataclasses.field(default_factory=dict)
    problem: str | None = None
    # promptfoo's ``provider.id()`` where it differs from the written id: its results file names
    # a provider written as the text ``openai:chat:<m>`` ``openai:<m>``
    promptfoo_id: str | None = None
    # its place among providers shown alike (two `openai:chat` with different configs), numbered
    # as pytest numbers duplicated parametrize ids, so every item's node id stays its own
    duplicate: int | None = None

    @property
    def node_label(self) -> str:
        shown = self.label or self.written_id
        return shown if self.duplicate is None else f"{shown}{self.duplicate}"


@dataclasses.dataclass(frozen=True, slots=True)
class RawAssertion:
    """An assertion as written (promptfoo's object; a CSV ``__expected`` string already turned
    into one), with where it was written. Parsed and scored by ``scoring/promptfoo``."""

    raw: Any
    location: Location


@dataclasses.dataclass(frozen=True, slots=True)
class PfTest:
    """One test row after ``defaultTest`` merging and var expansion (one of a matrix)."""

    index: int  # the row's place after expansion, from 0 (promptfoo's testIdx)
    description: str | None
    vars: dict[str, Any]
    asserts: tuple[RawAssertion, ...]
    options: dict[str, Any]
    threshold: float | None
    metadata: dict[str, Any]
    location: Location
    written_id: str | None = None  # AgentV v5's ``id``
    problem: str | None = None

    @property
    def node_label(self) -> str:
        return self.written_id or self.description or str(self.index)


@dataclasses.dataclass(frozen=True, slots=True)
class PromptfooSuite:
    path: str  # relative to the rootdir, "/" separated
    directory: str  # absolute folder of the file: file:// paths start here
    id: str
    title: str
    dialect: Dialect
    prompts: tuple[PfPrompt, ...]
    providers: tuple[PfProvider, ...]
    tests: tuple[PfTest, ...]
    tags: tuple[str, ...] = ()
