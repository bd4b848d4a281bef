"""What the client receives: a valid Responses object as JSON, or as a server-sent event stream.

Both are built from a finished Turn, never from upstream bytes, so a client only ever sees a
# course: begin module
response that ended. The stream has the shape of the real API's: `response.created` first, sequence
numbers counting from 0 without a gap or a repeat, the text's item, part and deltas each closed by
its own done event, `response.completed` last, and no `[DONE]` line (the Responses API sends none).
# course: end module
"""

from __future__ import annotations

import json
from typing import Any

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


def message_item(turn: Turn, text: str, status: str = "completed") -> dict[str, Any]:
    # course: begin message_item
    # course: end message_item
    content = [{"type": "output_text", "text": text, "annotations": []}] if status == "completed" else []
    return {"id": "msg_" + turn.id.removeprefix("resp_"), "type": "message", "status": status,
            "role": "assistant", "content": content}


def response_object(turn: Turn, text: str | None = None, status: str = "completed") -> dict[str, Any]:
    # course: begin response_object
    """The Responses object for the turn: while in progress with no output, at the end with one message."""
    # course: end response_object
    text = turn.text if text is None else text
    return {
        "id": turn.id,
        "object": "response",
        "created_at": turn.created_at,
        "status": status,
        "model": turn.model,
        "output": [message_item(turn, text)] if status == "completed" else [],
        "usage": turn.usage if status == "completed" else None,
        "error": None,
        "incomplete_details": None,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def to_json(turn: Turn) -> bytes:
    # course: begin to_json
    """The body of a non-streamed answer."""
    return json.dumps(response_object(turn), separators=(",", ":")).encode()
    # course: end to_json


def opening(writer: EventWriter, turn: Turn) -> list[bytes]:
    # course: begin opening
    """The events before any text: the response, its message item and the item's empty text part."""
    started = response_object(turn, status="in_progress")
    return [
        writer.event("response.created", response=started),
        writer.event("response.in_progress", response=started),
        writer.event("response.output_item.added", output_index=0, item=message_item(turn, "", "in_progress")),
        writer.event("response.content_part.added", item_id=message_item(turn, "")["id"], output_index=0,
                     content_index=0, part={"type": "output_text", "text": "", "annotations": []}),
    ]
    # course: end opening


def text_delta(writer: EventWriter, turn: Turn, delta: str) -> bytes:
    # course: begin text_delta
    return writer.event("response.output_text.delta", item_id=message_item(turn, "")["id"], output_index=0,
                        content_index=0, delta=delta, logprobs=[])
    # course: end text_delta


def closing(writer: EventWriter, turn: Turn, text: str) -> list[bytes]:
    # course: begin closing
    """The events after the text: each done event, in the order the real API sends them, then completed."""
    item = message_item(turn, text)
    place = {"item_id": item["id"], "output_index": 0, "content_index": 0}
    return [
        writer.event("response.output_text.done", **place, text=text, logprobs=[]),
        writer.event("response.content_part.done", **place, part=item["content"][0]),
        writer.event("response.output_item.done", output_index=0, item=item),
        writer.event("response.completed", response=response_object(turn, text)),
    ]
    # course: end closing


def to_sse(turn: Turn) -> bytes:
    # course: begin to_sse
    """The body of a streamed answer: the whole final text in one delta."""
    writer = EventWriter()
    parts = opening(writer, turn)
    if turn.text:
        parts.append(text_delta(writer, turn, turn.text))
    parts += closing(writer, turn, turn.text)
    return b"".join(parts)
    # course: end to_sse
