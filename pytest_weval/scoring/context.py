"""What a point function may see besides the response text (the reference's
``PointFunctionContext``, docs/functions.md, 'Contract')."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class PointContext:
    """Context for one (prompt x model) response.

    ``messages`` is the full conversation history (role/content dicts, including generated
    turns and a leading system message when one was used), as ``$js`` sees it in
    ``context.messages`` and ``$call`` sends it for ``{messages}``. ``model_id`` is the
    *effective* id (``openai:gpt-4o-mini[temp:0]``, docs/format.md, 'Effective model ids'). ``config`` is the blueprint's
    normalized config (for ``externalServices``). ``tool_calls``, when a list, is a structured
    trace that replaces the ``TOOL_CALL`` lines of the text (docs/functions.md, 'Tool-trace functions'). ``allowed_env`` names the
    variables ``${VAR}`` may read in ``$call`` headers (docs/rulings.md, ruling 16).
    """

    messages: list[dict[str, Any]]
    model_id: str
    prompt_id: str
    config: dict[str, Any]
    generated_assistant_indices: list[int] = field(default_factory=list)
    tool_calls: list[Any] | None = None
    allowed_env: frozenset[str] = frozenset()
