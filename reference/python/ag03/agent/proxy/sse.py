"""Server-sent events in, JSON events out (given: chapter ag01 taught this part).

A Responses stream is a text/event-stream body whose events each carry one JSON object in their
data, named by an `event:` line that repeats the object's "type". Reads may end anywhere: inside a
line, inside a UTF-8 character, between the CR and LF of one line end.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Iterator
from typing import Any

from agent.proxy.errors import FailClosed


def read_events(chunks: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """Yield each event's JSON object, in order.

    Raises FailClosed("truncated") when the body ends inside an event or inside a line, and
    FailClosed("protocol") when a payload is not a JSON object, is not UTF-8, or disagrees with its
    `event:` name. A `[DONE]` line, which some compatible servers add, is skipped.
    """
    decoder = codecs.getincrementaldecoder("utf-8-sig")()  # -sig: a leading BOM is not text
    partial: list[str] = []  # the pieces of the line not ended yet: joined once, at its end
    after_cr = False  # the last read ended in CR: an LF opening the next read belongs to it
    name, data = "", []
    for chunk in _decoded(chunks, decoder):
        if after_cr and chunk.startswith("\n"):
            chunk = chunk[1:]
        after_cr = chunk.endswith("\r")
        lines = chunk.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        partial.append(lines[0])
        if len(lines) == 1:
            continue
        lines[0] = "".join(partial)
        partial = [lines.pop()]
        for line in lines:
            if line:
                field, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if field == "data":
                    data.append(value)
                elif field == "event":
                    name = value
                continue
            if data:  # a blank line ends the event
                event = _payload(name, "\n".join(data))
                if event is not None:
                    yield event
            name, data = "", []
    if data or name or "".join(partial):
        raise FailClosed("truncated", "the upstream body ended inside an event")


def _decoded(chunks: Iterable[bytes], decoder: codecs.IncrementalDecoder) -> Iterator[str]:
    try:
        for chunk in chunks:
            text = decoder.decode(chunk)
            if text:  # a read that ends inside a character may decode to nothing yet
                yield text
        decoder.decode(b"", final=True)  # a character cut by the end of the body is an error
    except UnicodeDecodeError as exc:
        raise FailClosed("protocol", f"the upstream body is not UTF-8 ({exc.reason})") from None


def _payload(name: str, data: str) -> dict[str, Any] | None:
    if data == "[DONE]":
        return None
    try:
        event = json.loads(data)
    except ValueError:
        raise FailClosed("protocol", f"an event's data is not JSON: {data[:80]!r}") from None
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise FailClosed("protocol", "an event's data is not a JSON object with a type")
    if name and name != event["type"]:
        raise FailClosed("protocol", f"event {name!r} carries data of type {event['type']!r}")
    return event
