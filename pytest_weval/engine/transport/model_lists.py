"""The model ids a provider lists, for the pre-flight's check of model ids (docs/engine.md,
'Model lists').

A typo in a model name (``openai:gpt-4o-mnii``) is otherwise found only when every one of that
model's items has been sent and refused. OpenAI, Anthropic, Gemini and OpenRouter list their
models (``GET .../models``), so the pre-flight can ask once per provider and refuse an id that is
not there, before anything is sent.

The check must never stop a run that would otherwise work, so it is one-sided: an id counts as
unknown only when a list was had and the id is not in it, and (where the provider can be asked
about one model: OpenAI, Anthropic, Gemini) asking for that very model says 404 too, since a
list may leave out aliases (``claude-3-5-sonnet-latest``) or a fine-tune another key can see.
Any failure to list (network, 401, 404, 5xx, a timeout, a body of another shape) means "cannot
check": a debug log line and nothing else.

The lists are kept for a day in one small JSON file in the cache folder (ids and times only,
never a key), read and written under a lock on the folder, so under xdist the first worker
asks and the others read what it wrote.

A provider is asked through the engine's own HTTP (``http.async_client``: httpx's API on
aiohttp, which the run's model requests load anyway), opened at the first question: a list kept
in the file loads and opens nothing. An ``httpx.Client`` of its own cost a process ~40 ms of CPU
before its first request (httpcore's import and an SSL context from certifi's bundle).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import difflib
import hashlib
import importlib
import importlib.util
import json
import logging
import math
import os
import time
from collections.abc import Collection, Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from pytest_weval.engine.errors import MissingKeyError
from pytest_weval.engine.secrets import Redactor
from pytest_weval.engine.transport.http import async_client
from pytest_weval.engine.transport.keys import api_key, base_url
from pytest_weval.engine.transport.providers.anthropic import ANTHROPIC_VERSION
from pytest_weval.errors import WevalError
from pytest_weval.files import write_atomic

# POSIX has it; elsewhere (Windows) each process asks for itself, the file still written atomically.
_fcntl: Any = importlib.import_module("fcntl") if importlib.util.find_spec("fcntl") is not None else None

log = logging.getLogger(__name__)
T = TypeVar("T")

LISTED_PROVIDERS = ("openai", "anthropic", "google", "openrouter")
FILE_NAME = "model-lists.json"
MAX_AGE_S = 24 * 3600.0
TIMEOUT = httpx.Timeout(5.0, connect=3.0)
PROVIDER_TIME_S = 20.0  # all of one provider's asking: a slow provider must not hold the run up
_MAX_PAGES = 50  # a provider that never stops paginating is not a list we can use
_VERSION = 1


class _CannotCheck(WevalError):
    """The provider's list (or its answer about one model) could not be had."""


class Asker:
    """GET requests for the pre-flight, which runs outside any event loop: each is run to its
    end on a loop of the asker's own. Opened at the first request; ``close`` ends both."""

    def __init__(self, timeout: httpx.Timeout):
        self._timeout = timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: httpx.AsyncClient | None = None

    def get(self, url: str, *, headers: Mapping[str, str], params: Mapping[str, Any] | None = None) -> httpx.Response:
        if self._loop is None or self._client is None:
            self._loop = asyncio.new_event_loop()
            self._client = async_client(timeout=self._timeout, follow_redirects=False)
        return self._run(self._loop, self._client.get(url, headers=dict(headers), params=params))

    def close(self) -> None:
        loop, client, self._loop, self._client = self._loop, self._client, None, None
        if loop is None:
            return
        try:
            if client is not None:
                self._run(loop, client.aclose())
        finally:
            loop.close()

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop, step: Coroutine[Any, Any, T]) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # the pre-flight's case: no loop runs in this thread
            return loop.run_until_complete(step)
        # Asked from inside a running loop (a test's, an embedding program's): the asker's own
        # loop runs beside it, in a thread of its own.
        with concurrent.futures.ThreadPoolExecutor(1) as beside:
            return beside.submit(loop.run_until_complete, step).result()


def _headers(provider: str, key: str) -> dict[str, str]:
    if provider == "anthropic":
        return {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}
    if provider == "google":
        return {"x-goog-api-key": key}  # never in the URL: URLs end up in logs and proxies
    return {"Authorization": f"Bearer {key}"}


def _models_url(provider: str, base: str) -> str:
    if provider == "anthropic":
        return base + "/v1/models"
    if provider == "google":
        return base + "/v1beta/models"
    return base + "/models"  # OpenAI's and OpenRouter's base URLs end in /v1, /api/v1


def _get_json(client: Asker, url: str, headers: Mapping[str, str], params: Mapping[str, Any]) -> Any:
    try:
        response = client.get(url, headers=dict(headers), params=dict(params))
    except httpx.HTTPError as exc:
        raise _CannotCheck(type(exc).__name__) from None
    if response.status_code != 200:
        raise _CannotCheck(f"HTTP {response.status_code}")
    try:
        return response.json()
    except ValueError:
        raise _CannotCheck("the body is not JSON") from None


def _ids(items: Any, field: str) -> list[str]:
    if not isinstance(items, list):
        raise _CannotCheck("no list of models in the reply")
    ids = [item[field] for item in items if isinstance(item, dict) and isinstance(item.get(field), str)]
    if items and not ids:
        raise _CannotCheck(f"no model has an '{field}'")
    return ids


def fetch_ids(client: Asker, provider: str, base: str, key: str, deadline: float = math.inf) -> set[str]:
    """Every model id the provider lists, as a model id names it after ``provider:``; pages
    are asked for until ``deadline`` (``time.monotonic()``)."""
    url, headers = _models_url(provider, base), _headers(provider, key)
    ids: set[str] = set()
    if provider in ("openai", "openrouter"):
        data = _get_json(client, url, headers, {})
        return set(_ids(data.get("data") if isinstance(data, dict) else None, "id"))
    params: dict[str, Any] = {"limit": 1000} if provider == "anthropic" else {"pageSize": 1000}
    for _ in range(_MAX_PAGES):
        if time.monotonic() > deadline:
            raise _CannotCheck("out of time")
        data = _get_json(client, url, headers, params)
        if not isinstance(data, dict):
            raise _CannotCheck("the reply is not an object")
        if provider == "anthropic":
            page = _ids(data.get("data"), "id")
            ids.update(page)
            if not data.get("has_more") or not page:
                return ids
            params["after_id"] = data.get("last_id") or page[-1]
        else:
            ids.update(name.removeprefix("models/") for name in _ids(data.get("models", []), "name"))
            token = data.get("nextPageToken")
            if not token:
                return ids
            params["pageToken"] = token
    raise _CannotCheck(f"more than {_MAX_PAGES} pages")


def model_exists(client: Asker, provider: str, base: str, key: str, name: str) -> bool | None:
    """Asked about one model: True (it is there), False (404), None (cannot tell). OpenRouter
    has no such question: its list (with every model's variants) is the answer."""
    if provider == "openrouter":
        return False
    url = _models_url(provider, base) + "/" + quote(name, safe="")
    try:
        response = client.get(url, headers=_headers(provider, key))
    except httpx.HTTPError:
        return None
    if response.status_code == 200:
        return True
    return False if response.status_code == 404 else None


def is_listed(provider: str, name: str, ids: Collection[str]) -> bool:
    if provider == "google":
        name = name.removeprefix("models/")
    if name in ids:
        return True
    # OpenRouter's variants (":free", ":nitro", ":online", ...) route a listed model.
    return provider == "openrouter" and ":" in name and name.rsplit(":", 1)[0] in ids


def closest(name: str, ids: Collection[str]) -> str | None:
    found = difflib.get_close_matches(name, sorted(ids), n=1, cutoff=0.6)
    return found[0] if found else None


class ModelLists:
    """The lists of one run, each provider asked at most once.

    ``cache_file``: where lists are kept (None: nothing is written, each process asks for
    itself). ``run_started``: lists fetched before it are used only when ``reuse`` (the cache
    mode is not ``refresh``); a model the provider said it does not have is believed for this
    run only, so a model released today is not refused tomorrow."""

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        cache_file: Path | None,
        run_started: float,
        reuse: bool = True,
        max_age_s: float = MAX_AGE_S,
        timeout: httpx.Timeout = TIMEOUT,
        provider_time_s: float = PROVIDER_TIME_S,
    ):
        self.env = env
        self.cache_file = cache_file
        self.run_started = run_started
        self.reuse = reuse
        self.max_age_s = max_age_s
        self.timeout = timeout
        self.provider_time_s = provider_time_s
        self._entries: dict[str, dict[str, Any] | None] = {}  # per provider and base URL, this process

    def unlisted(self, provider: str, names: Collection[str]) -> dict[str, str | None] | None:
        """The names the provider does not have, each with the closest listed id (or None);
        None when it cannot be checked (the provider lists nothing, its key is not set, or
        the list could not be had)."""
        if provider not in LISTED_PROVIDERS:
            return None
        try:
            key = api_key(provider, provider, self.env, Redactor())
        except MissingKeyError:
            return None
        base = base_url(provider, self.env)
        # The base URL by its hash: a proxy's URL may carry a token, and the file holds no secret.
        slot = f"{provider} {hashlib.sha256(base.encode()).hexdigest()[:16]}"
        client = Asker(self.timeout)
        try:
            with self._locked(), contextlib.closing(client):
                deadline = time.monotonic() + self.provider_time_s
                entry = self._entry(client, slot, provider, base, key, deadline)
                if entry is None:
                    return None
                missing = self._confirm_missing(client, entry, provider, base, key, names, deadline)
                if entry.pop("_dirty", False):
                    try:
                        self._write(slot, entry)
                    except OSError as exc:  # the check stands; the next run asks again
                        log.debug("weval: cannot keep the %s model list: %s", provider, exc)
        except (OSError, _CannotCheck) as exc:
            log.debug("weval: cannot check %s model ids: %s", provider, exc)
            return None
        ids = entry["ids"]
        return {name: closest(name, ids) for name in missing}

    # -- the list, from this process, the file or the provider -----------------------------
    def _entry(
        self, client: Asker, slot: str, provider: str, base: str, key: str, deadline: float
    ) -> dict[str, Any] | None:
        if slot in self._entries:
            return self._entries[slot]
        entry = self._read(slot)
        if entry is None:
            try:
                ids = fetch_ids(client, provider, base, key, deadline)
            except _CannotCheck as exc:
                log.debug("weval: cannot list %s models: %s", provider, exc)
                self._entries[slot] = None
                return None
            if not ids:  # an empty list checks nothing (a proxy that lists no model)
                self._entries[slot] = None
                return None
            entry = {"fetched": time.time(), "ids": sorted(ids), "found": {}, "absent": {}, "_dirty": True}
        self._entries[slot] = entry
        return entry

    def _confirm_missing(
        self,
        client: Asker,
        entry: dict[str, Any],
        provider: str,
        base: str,
        key: str,
        names: Collection[str],
        deadline: float,
    ) -> list[str]:
        ids = set(entry["ids"])
        now = time.time()
        missing = []
        for name in sorted(set(names)):
            if is_listed(provider, name, ids):
                continue
            found_at = entry["found"].get(name)
            if isinstance(found_at, (int, float)) and now - found_at < self.max_age_s:
                continue
            absent_at = entry["absent"].get(name)
            if isinstance(absent_at, (int, float)) and absent_at >= self.run_started:
                missing.append(name)
                continue
            if time.monotonic() > deadline:  # out of time: not refused, since not known missing
                continue
            exists = model_exists(client, provider, base, key, name)
            if exists is False:
                entry["absent"][name] = now
                missing.append(name)
            elif exists is True:
                entry["found"][name] = now
            entry["_dirty"] = True
        return missing

    # -- the file ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The cache folder locked while a list is read, fetched and written, so concurrent
        processes of one run ask the provider once."""
        if self.cache_file is None or _fcntl is None:
            yield
            return
        folder = self.cache_file.parent
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY)
        try:
            _fcntl.flock(fd, _fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock

    def _load(self) -> dict[str, Any]:
        if self.cache_file is None:
            return {}
        try:
            data = json.loads(self.cache_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("version") != _VERSION or not isinstance(data.get("lists"), dict):
            return {}
        return data["lists"]

    def _read(self, slot: str) -> dict[str, Any] | None:
        entry = self._load().get(slot)
        if not isinstance(entry, dict):
            return None
        fetched, ids = entry.get("fetched"), entry.get("ids")
        if not isinstance(fetched, (int, float)) or not isinstance(ids, list) or not ids:
            return None
        age = time.time() - fetched
        if not -60 < age < self.max_age_s or (not self.reuse and fetched < self.run_started):
            return None
        found, absent = entry.get("found"), entry.get("absent")
        return {
            "fetched": fetched,
            "ids": [i for i in ids if isinstance(i, str)],
            "found": found if isinstance(found, dict) else {},
            "absent": absent if isinstance(absent, dict) else {},
        }

    def _write(self, slot: str, entry: dict[str, Any]) -> None:
        if self.cache_file is None:
            return
        lists = self._load()
        now = time.time()
        lists = {
            s: e
            for s, e in lists.items()
            if isinstance(e, dict)
            and isinstance(e.get("fetched"), (int, float))
            and now - e["fetched"] < self.max_age_s
        }
        lists[slot] = entry
        document = {"version": _VERSION, "lists": lists}
        write_atomic(self.cache_file, (json.dumps(document, sort_keys=True) + "\n").encode("utf-8"))
