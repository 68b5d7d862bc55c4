"""Which judges score a blueprint's text points (docs/judges.md, 'Choosing the judges'; docs/rulings.md, rulings 11-12).

Pure data: no network, no pytest. ``select_judges`` turns the command line and the blueprint's
``evaluationConfig`` into a :class:`JudgePanel`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_weval.errors import WevalError

Approach = Literal["standard", "prompt-aware", "holistic"]
ScaleName = Literal["9", "5"]

APPROACHES: tuple[str, ...] = ("standard", "prompt-aware", "holistic")

# Per-judge call parameters (docs/judges.md, 'Per-judge call'). The caller's ``ask`` owns transport
# concerns: a judge call is sent, timed out and retried by the engine exactly as a generation
# is (docs/compatibility.md, 'Judges: compatibility notes').
JUDGE_TEMPERATURE = 0.0
JUDGE_MAX_TOKENS = 500

# Key-point extraction call parameters (docs/judges.md, 'Key-point extraction').
KEYPOINT_TEMPERATURE = 0.1
KEYPOINT_MAX_TOKENS = 2000
DEFAULT_KEYPOINT_MODELS: tuple[str, ...] = (
    "openai:gpt-4o-mini",
    "openrouter:google/gemini-1.5-flash-latest",
)


class JudgeConfigError(WevalError, ValueError):
    """``evaluationConfig['llm-coverage'].judges`` holds an entry that cannot be a judge."""


@dataclass(frozen=True)
class JudgeSpec:
    """One judge: a model asked to classify one criterion at a time."""

    id: str | None
    model: str
    approach: str = "holistic"

    @property
    def label(self) -> str:
        """``id(model)``, or ``approach(model)`` for a judge without an id (docs/judges.md, 'Consensus')."""
        head = self.id if self.id else self.approach
        return f"{head}({self.model})"


DEFAULT_JUDGES: tuple[JudgeSpec, ...] = (
    JudgeSpec("holistic-gemini-2-5-flash", "openrouter:google/gemini-2.5-flash", "holistic"),
    JudgeSpec("holistic-gpt-4-1-mini", "openrouter:openai/gpt-4.1-mini", "holistic"),
    JudgeSpec("holistic-claude-haiku-4-5", "openrouter:anthropic/claude-haiku-4.5", "holistic"),
)

BACKUP_JUDGE = JudgeSpec("backup-claude-4-5-haiku", "openrouter:anthropic/claude-haiku-4.5", "holistic")


@dataclass(frozen=True)
class JudgePanel:
    """The judges of one blueprint, the scale they answer on, and the key-point extractors."""

    judges: tuple[JudgeSpec, ...]
    uses_defaults: bool
    scale: ScaleName = "9"
    extraction_models: tuple[str, ...] = field(default=DEFAULT_KEYPOINT_MODELS)

    @property
    def backup(self) -> JudgeSpec | None:
        """The backup judge, which only ever supplements the default panel (docs/judges.md, 'Choosing the judges')."""
        return BACKUP_JUDGE if self.uses_defaults else None


def judge_id_for_model(model: str, approach: str = "holistic") -> str:
    """``holistic-gemini-2-5-flash`` for ``openrouter:google/gemini-2.5-flash``.

    The name after the last ``/`` (else after the provider's ``:``), lowercased, with every run
    of other characters turned into ``-``: the defaults' own naming.
    """
    name = model.rsplit("/", 1)[-1]
    if "/" not in model and ":" in name:
        name = name.split(":", 1)[1]
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "judge"
    return f"{approach}-{slug}"


def _llm_coverage(evaluation_config: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not isinstance(evaluation_config, Mapping):
        return {}
    section = evaluation_config.get("llm-coverage")
    return section if isinstance(section, Mapping) else {}


def _judge_from_entry(entry: Any, index: int) -> JudgeSpec:
    where = f"evaluationConfig['llm-coverage'].judges[{index}]"
    if not isinstance(entry, Mapping):
        raise JudgeConfigError(f"{where} must be an object with 'model' (and optional 'id', 'approach')")
    model = entry.get("model")
    if not isinstance(model, str) or not model.strip():
        raise JudgeConfigError(f"{where} needs a 'model' string (for example 'openrouter:openai/gpt-4.1-mini')")
    judge_id = entry.get("id")
    if judge_id is not None and not isinstance(judge_id, str):
        judge_id = str(judge_id)
    approach = entry.get("approach")
    if approach is None:
        approach = "standard"  # the reference builds the standard prompt for a missing approach
    elif not isinstance(approach, str):
        raise JudgeConfigError(f"{where}.approach must be one of {', '.join(APPROACHES)}")
    return JudgeSpec(id=judge_id or None, model=model, approach=approach)


def _cli_judges(models: Sequence[str]) -> tuple[JudgeSpec, ...]:
    taken: set[str] = set()
    judges = []
    for model in models:
        base = judge_id_for_model(model)
        judge_id, n = base, 1
        while judge_id in taken:  # two providers serving the same model name
            n += 1
            judge_id = f"{base}-{n}"
        taken.add(judge_id)
        judges.append(JudgeSpec(judge_id, model, "holistic"))
    return tuple(judges)


def select_judges(
    cli_judges: Sequence[str] | None,
    evaluation_config: Mapping[str, Any] | None,
) -> JudgePanel:
    """The panel for one blueprint.

    * ``--weval-judges=a,b``: each model is a holistic judge with id ``holistic-<slug>``; these
      models also do key-point extraction. No backup judge.
    * else a non-empty ``evaluationConfig['llm-coverage'].judges``. No backup judge.
    * else :data:`DEFAULT_JUDGES`, supplemented by :data:`BACKUP_JUDGE`.

    The scale is 9-point unless ``useExperimentalScale`` is exactly ``false`` (docs/rulings.md, ruling 12).
    Raises :class:`JudgeConfigError` for a judges entry without a model.
    """
    section = _llm_coverage(evaluation_config)
    scale: ScaleName = "5" if section.get("useExperimentalScale") is False else "9"

    judge_models = section.get("judgeModels")
    extraction: tuple[str, ...] = DEFAULT_KEYPOINT_MODELS
    if isinstance(judge_models, (list, tuple)):
        named = tuple(m for m in judge_models if isinstance(m, str) and m.strip())
        if named:
            extraction = named

    cli = [m.strip() for m in (cli_judges or []) if isinstance(m, str) and m.strip()]
    if cli:
        unique = list(dict.fromkeys(cli))
        judges = _cli_judges(unique)
        return JudgePanel(judges=judges, uses_defaults=False, scale=scale, extraction_models=tuple(unique))

    configured = section.get("judges")
    if isinstance(configured, (list, tuple)) and configured:
        judges = tuple(_judge_from_entry(entry, i) for i, entry in enumerate(configured))
        return JudgePanel(judges=judges, uses_defaults=False, scale=scale, extraction_models=extraction)

    return JudgePanel(judges=DEFAULT_JUDGES, uses_defaults=True, scale=scale, extraction_models=extraction)
