"""What the client receives: a valid Responses object as JSON, or as a server-sent event stream.

Both are built from a finished Turn, never from upstream bytes, so a client only ever sees a
response that ended. Section "Synthesize, do not forward" shows both shapes in full.
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
        """One event: ``event: KIND`` then ``data: JSON`` (the fields with "type" and
        "sequence_number" first) then one blank line, LF line ends. Numbers count from 0, one per
        event written: no gap, no repeat."""
        raise NotImplementedError("EventWriter.event: section 'Synthesize, do not forward'")


def message_item(turn: Turn, text: str, status: str = "completed") -> dict[str, Any]:
    """The assistant message item that carries the answer (given)."""
    content = [{"type": "output_text", "text": text, "annotations": []}] if status == "completed" else []
    return {"id": "msg_" + turn.id.removeprefix("resp_"), "type": "message", "status": status,
            "role": "assistant", "content": content}


def response_object(turn: Turn, text: str | None = None, status: str = "completed") -> dict[str, Any]:
    """The Responses object for the turn: while in progress with no output, at the end with one
    message (given)."""
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
    """The body of a non-streamed answer: the completed response object as JSON."""
    raise NotImplementedError("to_json: section 'Synthesize, do not forward'")


def opening(writer: EventWriter, turn: Turn) -> list[bytes]:
    """The events before any text, in this order: response.created and response.in_progress (the
    response in progress, no output), output_item.added (the message item in progress, index 0),
    content_part.added (an empty output_text part)."""
    raise NotImplementedError("opening: section 'Synthesize, do not forward'")


def text_delta(writer: EventWriter, turn: Turn, delta: str) -> bytes:
    """One response.output_text.delta of the message item (item_id, output_index 0, content_index 0)."""
    raise NotImplementedError("text_delta: section 'Synthesize, do not forward'")


def closing(writer: EventWriter, turn: Turn, text: str) -> list[bytes]:
    """The events after the text, inside out: output_text.done (the text), content_part.done,
    output_item.done (the completed message), then response.completed with the whole response."""
    raise NotImplementedError("closing: section 'Synthesize, do not forward'")


def to_sse(turn: Turn) -> bytes:
    """The body of a streamed answer: opening, the whole text in one delta (none when the text is
    empty), closing, all numbered by one writer. The Responses API sends no [DONE] line; nor do we.
    The completed event carries exactly the object to_json gives."""
    raise NotImplementedError("to_sse: section 'Synthesize, do not forward'")
