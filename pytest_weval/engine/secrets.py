"""Keeping secrets out of every text the engine produces.

Every secret the engine reads (API keys, values substituted into custom model urls/headers,
custom header values) is registered here when it is read; ``redact`` replaces each occurrence
in a text. Errors leave the engine only through ``redact``; requests and settings have a
``repr`` that shows no header value and no environment.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

MASK = "[REDACTED]"
_MIN_SECRET = 4  # shorter values ("", "1") would mangle every text


class Redactor:
    def __init__(self) -> None:
        self._secrets: set[str] = set()
        self._lock = threading.Lock()

    def add(self, *values: str | None) -> None:
        with self._lock:
            for value in values:
                if value and len(value) >= _MIN_SECRET:
                    self._secrets.add(value)
                    # A "Bearer sk-..." header value holds the key; register the token too.
                    for part in value.split():
                        if len(part) >= 8:
                            self._secrets.add(part)

    def redact(self, text: str) -> str:
        if not text:
            return text
        with self._lock:
            secrets = sorted(self._secrets, key=len, reverse=True)
        for secret in secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def __repr__(self) -> str:
        return f"Redactor({len(self._secrets)} secrets)"


def masked_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers for display: names kept, values masked."""
    return dict.fromkeys(headers, MASK)
