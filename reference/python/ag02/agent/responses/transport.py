"""Given code: the Responses API over HTTP/1.1 with the standard library, as an OpenStream.

`HTTPTransport(base_url, api_key)` is awaited with a request and returns an acquired `SSEStream`, or
raises OpenFailure: no connection or no answer (status None), or a status other than 200. Once
acquired, the stream yields each event's decoded JSON; a cut or broken body raises ResponseFailure
("transport") and a non-JSON event ResponseFailure ("malformed_event"). The `event:` line of each
event is not needed: the JSON carries its own "type".
"""

from __future__ import annotations

import asyncio
import codecs
import json
import re
import ssl
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from agent.responses.types import OpenFailure, Payload, ResponseFailure

_LINE_END = re.compile(r"\r\n|\r|\n")
# no connection, a reset, a timeout, a cut body, or a head or chunk size that is not HTTP
_NETWORK = (OSError, EOFError, asyncio.TimeoutError, ValueError, LookupError)
_MAX_ERROR_BODY = 65536


class HTTPTransport:
    """POSTs requests to {base_url}/responses and acquires their event streams."""

    def __init__(self, base_url: str, api_key: str = "", *, timeout: float = 30.0) -> None:
        self.url = urlsplit(base_url.rstrip("/") + "/responses")
        self.api_key = api_key
        self.timeout = timeout  # bounds each connect and each read, not the whole response

    async def __call__(self, request: Payload) -> SSEStream:
        https = self.url.scheme == "https"
        host, port = self.url.hostname or "", self.url.port or (443 if https else 80)
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=ssl.create_default_context() if https else None), self.timeout)
        except _NETWORK as exc:
            raise OpenFailure(f"cannot connect to {host}:{port}: {exc!r}") from None
        stream = SSEStream(reader, writer, self.timeout)
        body = json.dumps(request).encode("utf-8")
        head = (f"POST {self.url.path} HTTP/1.1\r\nHost: {self.url.netloc}\r\nAuthorization: Bearer {self.api_key}\r\n"
                f"Content-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n")
        try:
            writer.write(head.encode("latin-1") + body)
            status = await stream.read_head()
            if status != 200:
                text = (await stream.read_all())[:_MAX_ERROR_BODY].decode("utf-8", "replace")
                raise OpenFailure(f"HTTP {status}: {_error_message(text)}", status)
        except _NETWORK as exc:
            await stream.aclose()
            raise OpenFailure(f"no answer from {host}:{port}: {exc!r}") from None
        except OpenFailure:
            await stream.aclose()
            raise
        return stream


def _error_message(text: str) -> str:
    try:
        return str(json.loads(text)["error"]["message"])
    except (ValueError, LookupError, TypeError):
        return text.strip()[:200]


class SSEStream:
    """One HTTP response body read as server-sent events; `aclose()` closes the connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, timeout: float) -> None:
        self._reader = reader
        self._writer = writer
        self._timeout = timeout
        self._chunked = False
        self._left: int | None = None  # bytes of a Content-Length body still to come

    async def read_head(self) -> int:
        """Reads the status line and headers; returns the status."""
        status = int((await self._line()).split(b" ")[1])
        while line := (await self._line()).strip():
            name, _, value = line.decode("latin-1").partition(":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == "transfer-encoding":
                self._chunked = value == "chunked"
            elif name == "content-length":
                self._left = int(value)
        return status

    async def _line(self) -> bytes:
        line = await asyncio.wait_for(self._reader.readline(), self._timeout)
        if not line.endswith(b"\n"):
            raise EOFError("the connection closed in the middle of the head")
        return line

    async def _piece(self) -> bytes:
        """The next piece of the body; b"" at its end. One timeout bounds the reads of one piece."""
        return await asyncio.wait_for(self._read_piece(), self._timeout)

    async def _read_piece(self) -> bytes:
        if self._chunked:
            size = int((await self._reader.readline()).split(b";")[0], 16)  # a cut size line fails here
            piece = await self._reader.readexactly(size + 2)
            return piece[:-2]  # the chunk's data without its CRLF; a zero-size chunk ends the body
        want = 65536 if self._left is None else min(self._left, 65536)
        piece = await self._reader.read(want) if want else b""
        if self._left is not None:
            if want and not piece:
                raise EOFError("the connection closed before Content-Length bytes arrived")
            self._left -= len(piece)
        return piece

    async def read_all(self) -> bytes:
        pieces = []
        while piece := await self._piece():
            pieces.append(piece)
        return b"".join(pieces)

    async def __aiter__(self) -> AsyncIterator[Any]:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        text, data = "", []
        while True:
            try:
                piece = await self._piece()
            except _NETWORK as exc:
                raise ResponseFailure("transport", f"the connection broke mid-stream: {exc!r}") from None
            text += decoder.decode(piece, final=not piece)
            held = ""
            if piece and text.endswith("\r"):
                text, held = text[:-1], "\r"  # perhaps half of a CRLF whose LF is in the next piece
            lines = _LINE_END.split(text)
            text = lines.pop() + held  # the unfinished line waits for its line end
            for line in lines:
                if line:
                    field, _, value = line.partition(":")
                    if field == "data":
                        data.append(value.removeprefix(" "))
                elif data:
                    yield _decode("\n".join(data))
                    data = []
            if not piece:
                return  # at the end of the body an event without its blank line is discarded

    async def aclose(self) -> None:
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except ConnectionError:
            pass  # the peer already broke the connection: the socket is closed all the same


def _decode(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        raise ResponseFailure("malformed_event", f"event data is not JSON: {data[:80]!r}") from None
