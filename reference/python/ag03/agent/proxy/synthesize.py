"""What the client receives: a valid Responses object as JSON, or as a server-sent event stream.

Both are built from a finished Turn, never from upstream bytes, so a client only ever sees a
# course: begin module
response that ended. The stream has the shape of the real API's: `response.created` first, sequence
numbers counting from 0 without a gap or a repeat, each content part of the message opened and closed
by its own events, `response.completed` last (or `response.failed`), and no `[DONE]` line (the
Responses API sends none). Every object validates against the official SDK's types.
# course: end module
"""

from __future__ import annotations

import json
from typing import Any

from agent.proxy.errors import FailClosed
from agent.proxy.state import Turn


class EventWriter:
    """Frames downstream events as server-sent events, numbering them in the order written."""

    def __init__(self) -> None:
        self.next_sequence = 0

    def event(self, kind: str, **fields: Any) -> bytes:
        # course: begin EventWriter_event
        payload = {"type": kind, "sequence_number": self.next_sequence, **fields}
        self.next_sequence += 1
        return f"event: {kind}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()
        # course: end EventWriter_event


def message_item(turn: Turn, status: str = "completed") -> dict[str, Any]:
    # course: begin message_item
    """The assistant message that carries the answer: its parts once completed, none while in progress."""
    content: list[dict[str, Any]] = []
    if status == "completed":
        if turn.text or not turn.refusal:  # a refusal alone is a message without a text part, as the API sends it
            content.append({"type": "output_text", "text": turn.text, "annotations": []})
        if turn.refusal:
            content.append({"type": "refusal", "refusal": turn.refusal})
    return {"id": "msg_" + turn.id.removeprefix("resp_"), "type": "message", "status": status,
            "role": "assistant", "content": content}
    # course: end message_item


def response_object(turn: Turn, status: str = "completed", error: dict[str, Any] | None = None) -> dict[str, Any]:
    # course: begin response_object
    """The Responses object for the turn: while in progress (or failed) with no output, at the end with one message."""
    # course: end response_object
    return {
        "id": turn.id,
        "object": "response",
        "created_at": turn.created_at,
        "status": status,
        "model": turn.model,
        "output": [message_item(turn)] if status == "completed" else [],
        "usage": turn.usage if status == "completed" else None,
        "error": error,
        "incomplete_details": None,
        "parallel_tool_calls": turn.parallel_tool_calls,
        "tool_choice": turn.tool_choice,
        "tools": turn.tools,
    }


def to_json(turn: Turn) -> bytes:
    # course: begin to_json
    """The body of a non-streamed answer."""
    return json.dumps(response_object(turn), separators=(",", ":")).encode()
    # course: end to_json


def opening(writer: EventWriter, turn: Turn) -> list[bytes]:
    # course: begin opening
    """The events before any content: the response created and in progress, and its message item added."""
    started = response_object(turn, status="in_progress")
    return [
        writer.event("response.created", response=started),
        writer.event("response.in_progress", response=started),
        writer.event("response.output_item.added", output_index=0, item=message_item(turn, "in_progress")),
    ]
    # course: end opening


def text_part_opening(writer: EventWriter, turn: Turn) -> bytes:
    # course: begin text_part_opening
    """The message's text part added, empty: it opens before the first delta."""
    return writer.event("response.content_part.added", item_id=message_item(turn)["id"], output_index=0,
                        content_index=0, part={"type": "output_text", "text": "", "annotations": []})
    # course: end text_part_opening


def text_delta(writer: EventWriter, turn: Turn, delta: str) -> bytes:
    # course: begin text_delta
    return writer.event("response.output_text.delta", item_id=message_item(turn)["id"], output_index=0,
                        content_index=0, delta=delta, logprobs=[])
    # course: end text_delta


def closing(writer: EventWriter, turn: Turn, text_opened: bool) -> list[bytes]:
    # course: begin closing
    """The events after the text: each part of the message closed (a text part never opened is opened
    empty; a refusal part is opened, spelled and closed whole), the item done, the response completed."""
    item = message_item(turn)
    events = []
    for index, part in enumerate(item["content"]):
        place = {"item_id": item["id"], "output_index": 0, "content_index": index}
        if part["type"] == "output_text":
            if not text_opened:
                events.append(text_part_opening(writer, turn))
            events.append(writer.event("response.output_text.done", **place, text=part["text"], logprobs=[]))
        else:
            events.append(writer.event("response.content_part.added", **place, part={"type": "refusal", "refusal": ""}))
            events.append(writer.event("response.refusal.delta", **place, delta=part["refusal"]))
            events.append(writer.event("response.refusal.done", **place, refusal=part["refusal"]))
        events.append(writer.event("response.content_part.done", **place, part=part))
    events.append(writer.event("response.output_item.done", output_index=0, item=item))
    events.append(writer.event("response.completed", response=response_object(turn)))
    return events
    # course: end closing


def failed(writer: EventWriter, turn: Turn, failure: FailClosed) -> bytes:
    # course: begin failed
    """The response.failed event that ends a stream after progress went out. Its code is one of the API's
    own (the proxy's code leads the message): a client's SDK accepts no other."""
    error = {"code": "server_error", "message": f"{failure.code}: {failure.message}"}
    return writer.event("response.failed", response=response_object(turn, "failed", error))
    # course: end failed


def to_sse(turn: Turn) -> bytes:
    # course: begin to_sse
    """The body of a streamed answer: the whole final text in one delta."""
    writer = EventWriter()
    parts = opening(writer, turn)
    if turn.text:
        parts += [text_part_opening(writer, turn), text_delta(writer, turn, turn.text)]
    parts += closing(writer, turn, text_opened=bool(turn.text))
    return b"".join(parts)
    # course: end to_sse
