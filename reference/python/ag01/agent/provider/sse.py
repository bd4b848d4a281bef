# course: begin docstring
"""Server-sent events: the bytes of a streamed answer turned into events, and events into deltas."""
# course: end docstring

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from agent.provider.errors import ProviderError, StreamError
from agent.types import (
    Delta,
    DoneDelta,
    ErrorDelta,
    TextDelta,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEndDelta,
    ToolCallStartDelta,
    UsageDelta,
)


class BinaryReader(Protocol):
    """Anything with read(n) returning up to n bytes, and b"" at the end."""

    def read(self, n: int, /) -> bytes: ...


@dataclass(slots=True)
class Event:
    """One server-sent event. Not frozen: a frozen dataclass costs three times as much to make, and
    a stream makes one per event. `id` is the last event id seen so far, as the spec defines it."""

    data: str
    event: str = "message"
    id: str = ""


class EventReader:
    # course: begin EventReader
    """Iterates over the events of a text/event-stream body (WHATWG HTML, "server-sent events").

    An event is the text between two blank lines. A read may end anywhere: inside a line, inside a
    UTF-8 character, between the CR and LF of one line end, between the two line ends of a blank
    line. The reader carries that state from one read to the next, and its cost stays linear in
    the size of the input whatever the read size. Each read asks for read_size bytes and may get
    fewer; only b"" is the end. An exception a read raises reaches the caller as it came, after
    the events completed before it.
    """
    # course: end EventReader

    def __init__(self, stream: BinaryReader, read_size: int = 65536) -> None:
        self._stream = stream
        self._read_size = read_size
        # course: begin EventReader__init__
        self._events = self._parse()
        # course: end EventReader__init__

    def __iter__(self) -> Iterator[Event]:
        # course: begin EventReader__iter__
        # the generator itself, so that a for loop steps it without a Python-level __next__ per event
        return self._events

    def _parse(self) -> Iterator[Event]:
        last_id = ""  # unlike the event type, kept from one event to the next
        for blocks in self._blocks():
            for block in blocks:
                # The common event, one "data: ..." line, skips the field parsing below.
                # removeprefix checks and cuts in one call (half the cost of startswith and a
                # slice), and changes the block only when the prefix is there.
                value = block.removeprefix("data: ")
                if value != block and "\n" not in value:
                    yield Event(value, "message", last_id)
                    continue
                data: list[str] = []
                event_type = ""
                for line in block.split("\n"):
                    # "name: value" (a line without a colon is a name with an empty value);
                    # a comment ": ping" and an empty line have the empty name, which matches no field
                    name, _, value = line.partition(":")
                    if value[:1] == " ":
                        value = value[1:]
                    if name == "data":
                        data.append(value)
                    elif name == "event":
                        event_type = value
                    elif name == "id" and "\0" not in value:
                        last_id = value
                if data:  # a block without data (comments, event: alone) dispatches nothing
                    yield Event("\n".join(data), event_type or "message", last_id)

    # re splits on this two-character separator twice as fast as str.split does
    _BLANK_LINE = re.compile("\n\n")

    def _blocks(self) -> Iterator[list[str]]:
        """Yields, read by read, the text of the events that read completed: each event's lines
        joined by LF, up to (not with) the blank line that ends it."""
        read, size = self._stream.read, self._read_size
        undecoded = b""  # the first bytes of a character that the previous read cut in two
        # dropped if it is the next character: a BOM at the start of the stream, later the LF of
        # a CRLF whose CR ended the previous text
        skip = "\ufeff"
        unfinished: list[str] = []  # pieces of the event being read, joined once when it ends
        while chunk := read(size):
            # A plain function, not an incremental decoder object (two Python-level calls a read).
            # final=False stops before a character the read cut short (it is decoded with the next
            # read); "replace" makes undecodable bytes U+FFFD, as the spec's UTF-8 decoding does.
            chunk = undecoded + chunk
            text, used = codecs.utf_8_decode(chunk, "replace", False)
            undecoded = chunk[used:]
            if not text:  # only part of a character so far
                continue
            if text[0] == skip:
                text = text[1:]
            # set after every text, an emptied one included: a CR's LF can only come right after it
            skip = "\n" if text.endswith("\r") else ""
            if not text:
                continue
            if "\r" in text:  # CRLF first, so that its CR and LF do not end two lines
                text = text.replace("\r\n", "\n").replace("\r", "\n")
            if text[0] == "\n" and unfinished and unfinished[-1].endswith("\n"):
                text = "\n" + text  # the blank line's two line ends came in different reads
            # A text without a LF ends no event (most reads of a long event have none), and `in`
            # finds one LF many times faster than split looks for two.
            if "\n" in text:
                blocks = self._BLANK_LINE.split(text)
                if len(blocks) > 1:
                    unfinished.append(blocks[0])
                    blocks[0] = "".join(unfinished)
                    unfinished = [blocks.pop()]
                    # three or more line ends in a row leave empty blocks, or blocks starting with a LF:
                    # _parse's field parsing finds no data in the extra blank lines, so they end no event
                    yield blocks
                    continue
            unfinished.append(text)
        # end of input: an event without its blank line is discarded, as the spec says


@dataclass
class _OpenCall:
    id: str
    name: str
    fragments: list[str] = field(default_factory=list)
        # course: end EventReader__iter__


class Decoder:
    # course: begin Decoder
    """Turns the data of each chat-completions stream event into deltas.

    It keeps the tool calls still open, by index: a call's argument fragments may arrive
    interleaved with those of other calls, so each fragment goes to the call its index names.
    """
    # course: end Decoder

    def __init__(self) -> None:
        # course: begin Decoder__init__
        self._open: dict[int, _OpenCall] = {}
        self._finish_reason = ""
        # course: end Decoder__init__

    def decode(self, data: str) -> tuple[list[Delta], bool]:
        # course: begin Decoder_decode
        """The deltas of one event, and whether the stream is finished."""
        if data == "[DONE]":
            deltas = self._close_open_calls()
            deltas.append(DoneDelta(self._finish_reason))
            return deltas, True
        try:
            chunk = json.loads(data)
        except ValueError:
            error = ProviderError(f"invalid JSON in stream event: {data[:200]!r}")
            return [ErrorDelta(error)], True
        if not isinstance(chunk, dict):
            return [ErrorDelta(ProviderError(f"unexpected stream event: {data[:200]!r}"))], True
        if "error" in chunk:
            return [ErrorDelta(_stream_error(chunk["error"]))], True
        try:
            return self._decode_chunk(chunk), False
        except (AttributeError, TypeError, ValueError):  # valid JSON of the wrong shape
            return [ErrorDelta(ProviderError(f"unexpected stream event: {data[:200]!r}"))], True

    def _decode_chunk(self, chunk: dict) -> list[Delta]:
        deltas: list[Delta] = []
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:  # we ask for one answer; others would mix their calls in
                continue
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if content:  # servers send "" (with the role, or while a character is incomplete)
                deltas.append(TextDelta(content))
            for entry in delta.get("tool_calls") or ():
                self._add_tool_fragment(entry, deltas)
            if choice.get("finish_reason"):
                self._finish_reason = choice["finish_reason"]
                deltas.extend(self._close_open_calls())
        usage = chunk.get("usage")  # the last chunk, with "choices": [], when include_usage was asked
        if usage:
            deltas.append(UsageDelta(usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0))
        return deltas

    def _add_tool_fragment(self, entry: dict, deltas: list[Delta]) -> None:
        index = int(entry.get("index", 0))
        function = entry.get("function") or {}
        call = self._open.get(index)
        if call is None:  # id and name come with the first fragment of a call
            call = self._open[index] = _OpenCall(entry.get("id") or "", function.get("name") or "")
            deltas.append(ToolCallStartDelta(index, call.id, call.name))
        fragment = function.get("arguments")
        if fragment:
            call.fragments.append(fragment)
            deltas.append(ToolCallArgsDelta(index, fragment))

    def _close_open_calls(self) -> list[Delta]:
        """Ends every open call, in index order, its arguments joined ("{}" when none came)."""
        ends: list[Delta] = []
        for index in sorted(self._open):
            call = self._open[index]
            arguments = "".join(call.fragments) or "{}"
            ends.append(ToolCallEndDelta(index, ToolCall(call.id, call.name, arguments)))
        self._open.clear()
        return ends


def _stream_error(error: object) -> StreamError:
    if not isinstance(error, dict):
        return StreamError(message=str(error))
    return StreamError(
        type=str(error.get("type") or ""),
        code=str(error.get("code") or ""),
        message=str(error.get("message") or ""),
    )
        # course: end Decoder_decode
