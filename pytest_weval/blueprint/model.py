"""Typed view of a parsed blueprint: what every later layer reads.

The parser keeps the reference's normalized config as plain JSON-shaped dicts (``config``,
``Prompt.raw``) because ids, content hashes and the Weval JSON are computed from exactly that
shape, where an absent key and ``null`` differ. The typed fields below are derived from it once,
at parse time, so later layers never re-interpret raw dicts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from pytest_weval.errors import WevalError

# One "fields set" object per distinct set of names given: pydantic keeps a set per instance
# (216-728 bytes; 18 MB of the corpus's blueprints), read only by exclude_unset and copied by
# model_copy. These models are frozen, so nothing adds to a shared set.
_FIELDS_SETS: dict[frozenset[str], set[str]] = {}


_M = TypeVar("_M", bound="_Frozen")


class _Frozen(BaseModel):
    """A frozen model whose instances share their fields sets."""

    model_config = ConfigDict(frozen=True)

    def model_post_init(self, context: Any, /) -> None:
        given = self.__pydantic_fields_set__
        shared = _FIELDS_SETS.setdefault(frozenset(given), given)
        if shared is not given:
            object.__setattr__(self, "__pydantic_fields_set__", shared)

    @classmethod
    def trusted_maker(cls: type[_M], *names: str) -> Callable[..., _M]:
        """A maker of instances from values our own parsing already made of the fields' types.

        Validation costs 1.5-3 us an instance, tens of thousands of times for a large corpus
        (points, locations). The maker takes the values of ``names``, in that order, exactly as
        the validated form would hold them (floats as float), and validates nothing: the result
        equals the validated one, fields set and field order included. Only for models whose
        defaults are immutable (no default factories).
        """
        template = {name: None if info.is_required() else info.default for name, info in cls.model_fields.items()}
        given = frozenset(names)
        shared = _FIELDS_SETS.setdefault(given, set(given))
        new = cls.__new__
        set_attribute = object.__setattr__

        def make(*values: Any) -> _M:
            fields = template.copy()
            fields.update(zip(names, values))
            instance = new(cls)
            set_attribute(instance, "__dict__", fields)
            set_attribute(instance, "__pydantic_fields_set__", shared)
            set_attribute(instance, "__pydantic_extra__", None)
            set_attribute(instance, "__pydantic_private__", None)
            return instance

        return make


class Location(_Frozen):
    """Where something sits in a blueprint file (1-based line and column; 0 when unknown)."""

    model_config = ConfigDict(frozen=True)

    path: str
    line: int = 0
    column: int = 0
    field: str | None = None

    def __str__(self) -> str:
        where = self.path
        if self.line:
            where += f":{self.line}"
            if self.column:
                where += f":{self.column}"
        if self.field:
            where += f" ({self.field})"
        return where


class Finding(_Frozen):
    """A warning about a blueprint (ignored key, unknown function, duplicate id, ...)."""

    model_config = ConfigDict(frozen=True)

    message: str
    location: Location
    code: str = "warning"


class Message(_Frozen):
    model_config = ConfigDict(frozen=True)

    role: str
    content: str | None


class ModelSpec(_Frozen):
    """A model entry after placeholder resolution: a plain id, or a custom model object."""

    model_config = ConfigDict(frozen=True)

    id: str
    # The custom model object as written (id, url, modelName, inherit, format, headers,
    # parameters, parameterMapping, promptFormat); None for a plain "provider:model" id.
    custom: dict[str, Any] | None = None


class EvalPoint(_Frozen):
    """One point in the coverage evaluator's view (docs/format.md, 'Evaluator view of points').

    ``should`` points come first, then ``should_not`` points with ``is_inverted``.
    """

    model_config = ConfigDict(frozen=True)

    text: str | None = None
    fn: str | None = None
    fn_args: Any = None
    has_args: bool = False  # False reproduces JS `undefined` args (e.g. `$is_json`)
    multiplier: float = 1.0
    citation: Any = None
    path_id: str | None = None
    is_inverted: bool = False
    display_text: str
    location: Location | None = None
    # An authoring mistake found at parse time (unknown function, bad regex, missing $ref):
    # the point is recorded as an error and the item errors (docs/rulings.md, ruling 9).
    authoring_error: str | None = None

    @property
    def is_function(self) -> bool:
        return self.fn is not None


class Prompt(_Frozen):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    id: str
    index: int  # position in the blueprint's prompt list
    messages: tuple[Message, ...] = ()
    ideal: str | None = None
    description: str | None = None
    citation: Any = None
    has_system: bool = False  # the prompt sets `system` (a null value means "no system")
    system: str | None = None
    temperature: float | None = None
    weight: float | None = None
    no_cache: bool = False
    threshold: float | None = None  # our extension (docs/rulings.md, ruling 8)
    render_as: str = "markdown"
    points: tuple[EvalPoint, ...] = ()
    # validatePrompts failure (docs/format.md, 'Prompt validation'): this prompt's items error with it.
    validation_error: str | None = None
    location: Location
    raw: dict[str, Any] = Field(default_factory=dict)  # normalized prompt, reference shape


class Blueprint(_Frozen):
    model_config = ConfigDict(frozen=True)

    path: str  # as given to the parser (absolute or relative to rootdir)
    id: str  # path-derived (docs/format.md, 'Blueprint ids')
    title: str
    description: str | None = None
    models: tuple[ModelSpec, ...] = ()
    # Where each model id is named (its entry in `models`, or the collection it came from), for
    # messages about the id (the pre-flight's check against a provider's list).
    model_locations: dict[str, Location] = Field(default_factory=dict)
    # Permutation axes (docs/format.md, 'Temperatures and system prompts'): `temperatures` if non-empty else [temperature] (may be [None]);
    # `systems` if non-empty else [system].
    temperatures: tuple[float | None, ...] = (None,)
    systems: tuple[str | None, ...] = (None,)
    sets_temperature: bool = False  # header sets temperature or temperatures (node ids)
    tags: tuple[str, ...] = ()  # normalizeTag'd
    threshold: float | None = None
    evaluation_config: dict[str, Any] = Field(default_factory=dict)
    external_services: dict[str, Any] = Field(default_factory=dict)
    prompts: tuple[Prompt, ...] = ()
    config: dict[str, Any] = Field(default_factory=dict)  # normalized config, reference shape
    content_hash: str = ""
    findings: tuple[Finding, ...] = ()
    no_cache: bool = False  # header `noCache` (prompts already inherit it in `Prompt.no_cache`)
    # The config as the reference's run uses and writes it (docs/format.md, 'Checks after parsing'; docs/options.md, 'Comparison file'): id from the path,
    # title and embeddingModel defaults, tags normalized, `system: [...]` moved to `systems`,
    # models resolved to ids. `config` above is the parser's output before those steps.
    effective_config: dict[str, Any] = Field(default_factory=dict)

    @property
    def multi_system(self) -> bool:
        return len(self.systems) > 1


class BlueprintError(WevalError):
    """A blueprint (or one of its parts) that cannot be used, with where and what to do."""

    def __init__(self, message: str, location: Location, hint: str | None = None):
        self.message = message
        self.location = location
        self.hint = hint
        super().__init__(str(self))

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


RenderAs = Literal["markdown", "html", "plaintext"]
