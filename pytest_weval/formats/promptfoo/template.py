"""``{{ }}`` templates rendered as promptfoo renders them with nunjucks, through jinja2's
sandboxed environment (docs/promptfoo.md, 'Templates' lists where the two differ).

As promptfoo's ``renderPrompt``: a var holding an object or a list is rendered as its JSON
text, ``true``/``false`` and numbers as JavaScript prints them, an undefined name as nothing,
no autoescaping; ``env`` holds only the variables ``--weval-allow-env`` allows (rulings 16-17).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

import jinja2
import jinja2.sandbox

from pytest_weval.errors import WevalError
from pytest_weval.jsvalues import js_json, js_string


class TemplateError(WevalError):
    """A template that does not parse or fails to render (the message says where in it)."""


def _dump(value: Any, indent: int | None = None) -> str:
    return js_json(value) if indent is None else json.dumps(value, indent=indent, ensure_ascii=False)


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.sandbox.SandboxedEnvironment:
    env = jinja2.sandbox.SandboxedEnvironment(autoescape=False, undefined=jinja2.Undefined, keep_trailing_newline=True)
    env.filters["dump"] = _dump  # nunjucks' JSON.stringify filter
    return env


def template_value(value: Any) -> Any:
    """A var as nunjucks sees it after promptfoo's renderPrompt: objects and lists as JSON text."""
    if isinstance(value, (dict, list)):
        return js_json(value)
    if isinstance(value, (bool, int, float)) or value is None:
        return js_string(value) if value is not None else ""
    return value


def has_template(text: str) -> bool:
    return "{{" in text or "{%" in text


def render(text: str, variables: Mapping[str, Any], env: Mapping[str, str] | None = None) -> str:
    if not has_template(text):
        return text
    context = {name: template_value(value) for name, value in variables.items()}
    context["env"] = dict(env or {})
    try:
        return _environment().from_string(text).render(context)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"the template does not parse (line {exc.lineno} of it): {exc.message}") from None
    except jinja2.TemplateError as exc:
        raise TemplateError(f"the template cannot be rendered: {exc}") from None
