"""What every store module shares: the store's errors and statistics, and how a store URL is
recognised and shown (a password in it never is)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import re
import urllib.parse
from typing import Any, Literal

from pytest_weval.errors import WevalError

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
PASSWORD_MASK = "***"
_QUERY_PASSWORD = re.compile(r"(?i)(password=)[^&\s]*")


class NotNow(enum.Enum):
    """A store's answer that it cannot read an entry without awaiting (``Store.get_reply_now``)."""

    NOT_NOW = "not now"


NOT_NOW = NotNow.NOT_NOW


class StoreError(WevalError):
    """The cache store cannot be used (unreachable, refused, wrong schema version, no driver).
    ``str()`` is one line naming the store, its password masked."""


def is_postgres(store: str) -> bool:
    return store.lower().startswith(POSTGRES_SCHEMES)


def store_kind(store: str) -> Literal["postgres", "sqlite", "files"]:
    """Which store a ``cache_store`` setting means: the one place that is decided (the backend,
    the history and the tools each build theirs from it)."""
    if is_postgres(store):
        return "postgres"
    if store == "sqlite":
        return "sqlite"
    if store == "files":
        return "files"
    raise StoreError(f"unknown cache store {store!r}: choose sqlite, files or a postgresql:// URL")


def url_password(url: str) -> str | None:
    """The password written in a PostgreSQL URL (user:password@, or ?password=), if any."""
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:
        password = None
    if password:
        return urllib.parse.unquote(password)
    found = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).get("password") if "?" in url else None
    return found[0] if found else None


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***``: the only way a store URL is shown."""
    if "://" not in url:
        return url
    shown = _QUERY_PASSWORD.sub(lambda m: m.group(1) + PASSWORD_MASK, url)
    scheme, sep, rest = shown.partition("://")
    authority, slash, tail = rest.partition("/")
    if "@" in authority:
        userinfo, _, host = authority.rpartition("@")
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":" + PASSWORD_MASK
        authority = f"{userinfo}@{host}"
    return f"{scheme}{sep}{authority}{slash}{tail}"


def scrub(text: str, url: str) -> str:
    """``text`` without the URL's password (in case a driver message quotes it)."""
    password = url_password(url)
    if password:
        text = text.replace(password, PASSWORD_MASK)
        quoted = urllib.parse.quote(password, safe="")
        if quoted != password:
            text = text.replace(quoted, PASSWORD_MASK)
    return text


def one_line(exc: BaseException) -> str:
    """A driver's message as one line (libpq's run over several)."""
    text = " ".join(part.strip() for part in str(exc).splitlines() if part.strip())
    return text or type(exc).__name__


@dataclasses.dataclass
class StoreStats:
    store: str  # as shown (redacted)
    entries: int
    size_bytes: int  # on disk (the database file, the table with its indexes, or the files)
    oldest: float | None  # epoch seconds of the oldest and newest entries
    newest: float | None
    by_model: list[tuple[str, int]]  # most entries first

    def lines(self) -> list[str]:
        def when(ts: float | None) -> str:
            if ts is None:
                return "-"
            return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")

        out = [
            f"store: {self.store}",
            f"entries: {self.entries}",
            f"size: {_size(self.size_bytes)}",
            f"oldest: {when(self.oldest)}",
            f"newest: {when(self.newest)}",
        ]
        if self.by_model:
            out.append("by model:")
            width = max(len(model) for model, _ in self.by_model)
            out += [f"  {model:<{width}}  {count}" for model, count in self.by_model]
        return out

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"by_model": dict(self.by_model)}


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


class StoreDown(StoreError):
    """The store stayed unreachable for the whole retry time (``--weval-store-retry``): the run
    stops using it, keeps every reply it receives in the spool, and sends nothing more."""
