"""A reply's size is capped (--weval-max-reply-mb): a larger body is an error of its own kind,
read no further than the cap, whether the server announces its length or streams it chunked;
the next request still goes through."""

from __future__ import annotations

import asyncio

import pytest

from pytest_weval.engine.errors import ReplyTooLargeError
from tests.engine.engine_helpers import complete_sync, request
from tests.engine.test_engine_http import REPLY, read_body, response_head, tiny_server

CHUNK = b"x" * 65536


def test_a_streamed_reply_past_the_cap_is_refused_before_it_all_arrives(make_engine):
    """A chunked body (no Content-Length) of up to 50 MB: the engine stops reading past the
    1 MB cap, so the server cannot write it all; the error says which limit and option."""
    written = 0
    asked = 0
    opening = b'{"choices":[{"message":{"role":"assistant","content":"'

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal written, asked
        await read_body(reader)
        asked += 1
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        writer.write(head + b"%x\r\n%s\r\n" % (len(opening), opening))
        while written < 50_000_000:
            writer.write(b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK))
            await writer.drain()
            written += len(CHUNK)

    with tiny_server(endless) as url:
        engine = make_engine(
            env={"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-test"}, cache_mode="off", max_reply_mb=1
        )
        with pytest.raises(ReplyTooLargeError) as caught:
            complete_sync(engine, request("openai:gpt-4o-mini", "say a lot"))
    assert "larger than 1 MB (--weval-max-reply-mb)" in str(caught.value)
    assert caught.value.error_kind == "too_large"
    assert asked == 1  # not retried: the same request would get the same reply
    assert written < 50_000_000  # the connection was closed, not drained


def test_an_announced_length_past_the_cap_is_refused_unread_and_the_next_request_goes_through(make_engine):
    lengths = []

    async def announce(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                body = await read_body(reader)
            except asyncio.IncompleteReadError:
                return
            if b"big" in body:
                lengths.append(3_000_000)
                writer.write(response_head(3_000_000) + b"x" * 100_000)  # the rest never comes
            else:
                lengths.append(len(REPLY))
                writer.write(response_head(len(REPLY)) + REPLY)
            await writer.drain()

    with tiny_server(announce) as url:
        engine = make_engine(
            env={"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-test"}, cache_mode="off", max_reply_mb=2
        )
        with pytest.raises(ReplyTooLargeError, match=r"larger than 2 MB \(3\.0 MB announced\)"):
            complete_sync(engine, request("openai:gpt-4o-mini", "big"))
        assert complete_sync(engine, request("openai:gpt-4o-mini", "small")).text == "hi"
    assert lengths == [3_000_000, len(REPLY)]


def test_a_reply_under_the_cap_is_read_whole(make_engine):
    text = "y" * 900_000
    payload = b'{"choices":[{"message":{"role":"assistant","content":"%s"}}],"usage":{}}' % text.encode()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_body(reader)
        writer.write(response_head(len(payload)) + payload)
        await writer.drain()

    with tiny_server(serve) as url:
        engine = make_engine(
            env={"OPENAI_BASE_URL": url + "/v1", "OPENAI_API_KEY": "sk-test"}, cache_mode="off", max_reply_mb=1
        )
        assert complete_sync(engine, request("openai:gpt-4o-mini", "just under")).text == text
