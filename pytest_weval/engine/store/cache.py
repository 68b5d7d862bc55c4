"""The response cache: one interface, pluggable stores (docs/rulings.md, ruling 19).

Key = sha256 of a canonical JSON of everything that changes the answer: the adapter's identity
(provider, endpoint kind, model name, or a custom model's definition without header values),
the messages (system included, as a leading system message), temperature and max_tokens.
Never a key or header value. Modes: rw (read + write), ro (replay: read only, a miss is an
error and nothing is sent), refresh (write only), off (neither). ``no_cache`` requests bypass
the store both ways.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import Callable
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any, Literal, Protocol

from pytest_weval.engine.request import ModelReply, ModelRequest
from pytest_weval.engine.store.common import NotNow, StoreDown
from pytest_weval.engine.store.outage import Spool
from pytest_weval.engine.store.sqlite_health import is_damage, is_full, is_unwritable

log = logging.getLogger("pytest_weval.engine")
KEY_VERSION = 1


def _number(value: float | int | None) -> float | int | None:
    if isinstance(value, float) and value.is_integer():
        return int(value)  # 0 and 0.0 give the same key
    return value


def json_encoder(
    *,
    sort_keys: bool = False,
    ensure_ascii: bool = True,
    allow_nan: bool = True,
    separators: tuple[str, str] = (", ", ": "),
    default: Callable[[Any], Any] | None = None,
) -> Callable[[Any], str]:
    """``json.dumps`` with these options, as one call of the standard library's C encoder made
    once: ``json.dumps`` builds a ``JSONEncoder`` and a C encoder for every call, which cost more
    than encoding a request (it is asked for every item and request). The text is
    ``json.dumps``'s, byte for byte; there is no check for circular references (the engine
    encodes only data it built)."""
    fallback = json.JSONEncoder(
        sort_keys=sort_keys, ensure_ascii=ensure_ascii, allow_nan=allow_nan, separators=separators, default=default
    )
    # The C accelerator json.encoder uses itself (an interpreter without it has None there).
    c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if c_make_encoder is None:
        return fallback.encode
    encode = c_make_encoder(
        None,
        fallback.default,
        encode_basestring_ascii if ensure_ascii else encode_basestring,
        None,
        separators[1],
        separators[0],
        sort_keys,
        False,
        allow_nan,
    )

    def dumps(value: Any) -> str:
        return "".join(encode(value, 0))

    return dumps


_canonical = json_encoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(payload: Any) -> str:
    """The cache key's JSON: sorted keys, compact, the text as is (an existing cache replays by it)."""
    return _canonical(payload)


def key_payload(identity: dict[str, Any], request: ModelRequest) -> dict[str, Any]:
    """What the cache key is the hash of; also the human-readable request summary in the store."""
    payload = {
        "v": KEY_VERSION,
        **identity,
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        "temperature": _number(request.temperature),
        "max_tokens": _number(request.max_tokens),
    }
    if request.sample:  # sample 0 keeps the key it always had, so existing recordings still replay
        payload["sample"] = request.sample
    return payload


def cache_key(identity: dict[str, Any], request: ModelRequest) -> tuple[str, dict[str, Any]]:
    """(key, payload): the key as it is defined, the sha256 of the payload's ``canonical_json``.
    ``request_key`` gives the same key for less (the engine's way)."""
    payload = key_payload(identity, request)
    return sha256_holding_gil(canonical_json(payload).encode("utf-8")), payload


# hashlib lets go of the GIL to hash 2048 bytes or more at once (a judge's request is a few
# KB); on the engine's thread, beside pytest's busy one, each let-go is a wait for pytest's
# thread to hand the GIL back, longer than the hash. Fed in smaller pieces, it keeps it.
_HASH_PIECE = 2047


def sha256_holding_gil(data: bytes) -> str:
    """``hashlib.sha256(data).hexdigest()``, without letting go of the GIL."""
    if len(data) <= _HASH_PIECE:
        return hashlib.sha256(data).hexdigest()
    digest = hashlib.sha256()
    _feed(digest, data)
    return digest.hexdigest()


def _feed(digest: Any, data: bytes) -> None:
    """``digest.update(data)`` in pieces hashlib hashes holding the GIL."""
    if len(data) <= _HASH_PIECE:
        digest.update(data)
        return
    view = memoryview(data)
    for start in range(0, len(data), _HASH_PIECE):
        digest.update(view[start : start + _HASH_PIECE])


# A value no request holds, put where the messages go to find where their JSON goes.
_MESSAGES_HERE = "\x00weval:messages-here:" + hashlib.sha256(b"weval").hexdigest()
_PLAIN = (str, int, float, bool, type(None))
_HEADS_MOST = 1024  # distinct heads kept (all let go of when full)
_FIRSTS_MOST = 256  # distinct (head, first message) states kept, whatever the heads (as above)


class _Head:
    """The key's JSON around the messages for one (identity, temperature, max_tokens, sample):
    ``before`` ends with ``"messages":[``, ``after`` starts with ``]``; ``state`` has hashed
    ``before``."""

    __slots__ = ("after", "state")

    def __init__(self, before: bytes, after: bytes):
        self.after = after
        self.state = hashlib.sha256()
        _feed(self.state, before)


_HEADS: dict[tuple[Any, ...], _Head | None] = {}
# (head, role, content) -> the head's state with that first message hashed too, for requests of
# more messages whose first (a system prompt, a judge's) other requests share.
_FIRSTS: dict[tuple[_Head, Any, Any], Any] = {}


def _head(identity: dict[str, Any], request: ModelRequest) -> _Head | None:
    """The head of ``request``'s key, made once; None where the payload's JSON cannot be cut
    around its messages (the marker met elsewhere in it): the key is then made whole."""
    temperature, max_tokens, sample = request.temperature, request.max_tokens, request.sample
    # A standard provider's identity is a few strings; anything else (a custom model's
    # definition, dicts within) is remembered by its JSON. The types count: True and 1, 1 and
    # 1.0 are one dict key each, not one JSON text.
    ident: Any = tuple(identity.items())
    try:
        "".join(identity), "".join(identity.values())  # text alone (the usual case): as it is
    except TypeError:
        if all(k.__class__ is str and v.__class__ in _PLAIN for k, v in ident):
            ident = tuple((k, v.__class__, v) for k, v in ident)
        else:
            ident = canonical_json(identity)
    memo = (ident, temperature.__class__, temperature, max_tokens.__class__, max_tokens, sample.__class__, sample)
    try:
        return _HEADS[memo]
    except KeyError:
        pass
    payload = {
        "v": KEY_VERSION,
        **identity,
        "messages": _MESSAGES_HERE,
        "temperature": _number(temperature),
        "max_tokens": _number(max_tokens),
    }
    if sample:
        payload["sample"] = sample
    text = canonical_json(payload)
    marker = _canonical(_MESSAGES_HERE)
    head = None
    if text.count(marker) == 1:
        before, after = text.split(marker)
        head = _Head((before + "[").encode("utf-8"), ("]" + after).encode("utf-8"))
    if len(_HEADS) >= _HEADS_MOST:
        _HEADS.clear()
    _HEADS[memo] = head
    return head


def _message_json(role: Any, content: Any) -> bytes:
    """A message's JSON as ``canonical_json`` writes it within the payload."""
    text = encode_basestring(content) if content.__class__ is str else _canonical(content)
    named = encode_basestring(role) if role.__class__ is str else _canonical(role)
    return f'{{"content":{text},"role":{named}}}'.encode()


def request_key(identity: dict[str, Any], request: ModelRequest) -> str:
    """``cache_key(identity, request)[0]``, for less: the JSON around the messages is encoded and
    hashed once per identity, temperature, max tokens and sample (``_Head``), and a first
    message shared by requests of more messages once per head; the rest is encoded message by
    message and fed on a copy of that hash. The bytes hashed are ``canonical_json``'s."""
    head = _head(identity, request)
    if head is None:
        return cache_key(identity, request)[0]
    messages = request.messages
    if len(messages) > 1:
        first = messages[0]
        shared = (head, first.role, first.content)
        try:
            state = _FIRSTS[shared]
        except (KeyError, TypeError):  # TypeError: unhashable content, hashed as it comes
            state = head.state.copy()
            _feed(state, _message_json(first.role, first.content))
            try:
                if len(_FIRSTS) >= _FIRSTS_MOST:
                    _FIRSTS.clear()
                _FIRSTS[shared] = state
            except TypeError:
                pass
        digest = state.copy()
        for message in messages[1:]:
            _feed(digest, b"," + _message_json(message.role, message.content))
    else:
        digest = head.state.copy()
        for message in messages:
            _feed(digest, _message_json(message.role, message.content))
    _feed(digest, head.after)
    return digest.hexdigest()


class Store(Protocol):
    """Where entries live. Entries are dicts: key, model, request (the key payload, for
    humans), text, input_tokens, output_tokens, created (epoch seconds). Stores do their own
    disk work off the event loop."""

    async def get(self, key: str) -> dict[str, Any] | None: ...

    async def get_reply(self, key: str) -> dict[str, Any] | None:
        """The entry as far as a reply needs it: the request may be left out (``get`` has it)."""
        ...

    def get_reply_now(self, key: str) -> dict[str, Any] | NotNow | None:
        """``get_reply`` without awaiting, where the store can (a replay read where it is
        asked), else ``NOT_NOW``; never raises (a failing read is ``NOT_NOW``)."""
        ...

    async def put(self, entry: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


def make_entry(key: str, model_id: str, summary: dict[str, Any], reply: ModelReply) -> dict[str, Any]:
    return {
        "key": key,
        "model": model_id,
        "request": summary,
        "text": reply.text,
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens,
        "created": time.time(),
    }


def reply_from_entry(entry: dict[str, Any], cached: bool = True) -> ModelReply:
    return ModelReply(
        text=entry["text"],
        input_tokens=int(entry.get("input_tokens") or 0),
        output_tokens=int(entry.get("output_tokens") or 0),
        cached=cached,
    )


# Why a store can keep no more replies, decided from the error's code (sqlite_health.py); the
# words are also what the run's lines say.
StopReason = Literal["disk full", "read-only", "damaged"]


def stop_reason(exc: BaseException) -> StopReason | None:
    """Why a failed write means no later write can succeed, or None when it does not."""
    if is_full(exc):
        return "disk full"
    if is_unwritable(exc):
        return "read-only"
    if is_damage(exc):
        return "damaged"
    return None


def stop_advice(reason: StopReason) -> str:
    """What the user can do about a store that keeps no more replies (``--weval-cache=off``
    always works too)."""
    return {"disk full": "free space", "read-only": "make it writable", "damaged": "repair it after the run"}[reason]


@dataclasses.dataclass
class StoreFaults:
    """What went wrong with the store during a run, for the line at its end (issue 31, item 3):
    a failed write is a reply the next run buys again, and a failed read one bought again now."""

    where: str = ""  # the store as shown (a file, a folder, a redacted URL)
    unstored: int = 0  # replies that could not be stored
    unreadable: int = 0  # entries that could not be read
    stop: StopReason | None = None  # why no reply can be stored any more
    damaged: str | None = None  # the first sign that the file is damaged
    last_write_error: str | None = None
    down: str | None = None  # why the store was given up (unreachable past --weval-store-retry)
    spooled: int = 0  # replies kept in the spool instead (written for the next run)
    spool: str | None = None  # the spool folder

    def add(self, other: StoreFaults) -> None:
        self.where = self.where or other.where
        self.unstored += other.unstored
        self.unreadable += other.unreadable
        self.stop = self.stop or other.stop
        self.damaged = self.damaged or other.damaged
        self.last_write_error = self.last_write_error or other.last_write_error
        self.down = self.down or other.down
        self.spooled += other.spooled
        self.spool = self.spool or other.spool

    def lines(self, fix: str | None = None) -> list[str]:
        """The end-of-run lines, or none when nothing went wrong."""
        lines = []
        if self.down:
            kept = (
                f"the {_replies(self.spooled)} received since are kept in {self.spool}, and the next run stores them"
                if self.spooled
                else "no reply was lost"
            )
            lines.append(f"weval: {self.down}: no request was sent after that; {kept}")
        if self.unstored:
            why = self.stop or self.last_write_error or "write failed"
            lines.append(
                f"weval: {_replies(self.unstored)} could not be stored: {why} at {self.where}; "
                "the next run will buy them again"
            )
        if self.stop:
            lines.append(
                f"weval: the cache at {self.where} could not store replies ({self.stop}), so no request was sent "
                f"after that; {stop_advice(self.stop)}, or run with --weval-cache=off"
            )
        if self.damaged or self.unreadable:
            what = f"damaged ({self.damaged})" if self.damaged else "unreadable"
            lines.append(
                f"weval: {self.unreadable} cache entr{'y' if self.unreadable == 1 else 'ies'} could not be read, "
                f"the cache at {self.where} is {what}: they were bought again"
                # a reply bought again may fail to be stored in turn (the damage is where it goes)
                + (" until no request was sent" if self.stop else "")
                + (f"; {fix} keeps every entry it can still read" if fix and self.damaged else "")
            )
        return lines

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _replies(n: int) -> str:
    return f"{n} repl{'y' if n == 1 else 'ies'}"


class ResponseCache:
    def __init__(self, store: Store | None, mode: str, where: str = "", spool: Spool | None = None):
        self.store = store
        self.mode = mode
        self.faults = StoreFaults(where=where)
        self._unreadable: set[str] = set()
        self.spool = spool  # replies a given-up store could not take (store/outage.py)

    def readable(self, request: ModelRequest) -> bool:
        return self.store is not None and self.mode in ("rw", "ro") and not request.no_cache

    def writable(self, request: ModelRequest) -> bool:
        return self.store is not None and self.mode in ("rw", "refresh") and not request.no_cache

    async def get(self, key: str) -> dict[str, Any] | None:
        """The entry of ``key`` as a reply needs it (``Store.get_reply``); None when there is
        none or it cannot be read (counted in ``faults``)."""
        if self.store is None:
            return None
        spooled = self.spool.get(key) if self.spool is not None else None
        if spooled is not None:
            return spooled
        try:
            return await self.store.get_reply(key)
        except StoreDown:
            return None  # not a damaged entry: the store is gone, and nothing more is sent
        except Exception as exc:  # noqa: BLE001 - an unreadable entry is a miss, not a crash
            log.warning("weval cache: cannot read entry %s: %s", key, exc)
            self._unreadable.add(key)  # a key is read again after its claim: counted once
            self.faults.unreadable = len(self._unreadable)
            if is_damage(exc) and self.faults.damaged is None:
                self.faults.damaged = str(exc)
            return None

    def get_now(self, key: str) -> dict[str, Any] | NotNow | None:
        """``get`` without awaiting, where the store can answer so (``Store.get_reply_now``),
        else ``NOT_NOW``; an entry that cannot be read is ``NOT_NOW`` too, for ``get`` to note."""
        if self.store is None:
            return None
        if self.spool is not None and (spooled := self.spool.get(key)) is not None:
            return spooled
        return self.store.get_reply_now(key)

    async def put(self, entry: dict[str, Any]) -> bool:
        if self.store is None:
            return False
        try:
            await self.store.put(entry)
            return True
        except StoreDown as exc:
            if self.spool is None:
                raise
            # Paid for: kept for the next run, which stores it before sending anything.
            self.spool.add(entry)
            self.faults.down = self.faults.down or str(exc)
            self.faults.spooled = len(self.spool.entries)
            self.faults.spool = str(self.spool.path.parent)
            return False
        except Exception as exc:  # noqa: BLE001 - a failed write costs a re-request later, counted and said
            log.warning("weval cache: cannot write entry %s: %s", entry.get("key"), exc)
            self.faults.unstored += 1
            self.faults.last_write_error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            reason = stop_reason(exc)
            if reason is not None:
                self.faults.stop = self.faults.stop or reason
            if reason == "damaged" and self.faults.damaged is None:
                self.faults.damaged = str(exc)
            return False

    @property
    def stopped(self) -> StopReason | None:
        """Why no reply can be stored any more (a write failed for want of space or permission),
        or None: a request sent now would be paid for and lost."""
        return self.faults.stop
