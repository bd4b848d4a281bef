"""The state of one upstream Responses stream, fed event by event, and what it amounts to at the end.

Progress is not permission: an item's `.done` event, or a function call whose arguments look
complete, executes nothing. Only `finish()`, after a terminal `response.completed`, hands out calls,
and only calls whose arguments were closed by their own `response.function_call_arguments.done`.
Anything the state does not understand ends the stream with FailClosed (see errors.py for its codes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agent.proxy.errors import FailClosed

MAX_PENDING_CALLS = 8  # function calls one response may open
MAX_ARGUMENT_CHARS = 16_000  # per call, as streamed or as finally stated
MAX_TEXT_CHARS = 64_000  # output text of one response


@dataclass
class FunctionCall:
    """One function call of a response, as the stream built it.

    ``fragments`` are the argument deltas in arrival order (``streamed`` joins them). ``arguments``
    is None until the call's ``response.function_call_arguments.done`` arrives; then it holds the
    arguments that event states, which are authoritative: where they differ from the deltas (a
    fragment lost or repeated on the way), the done event wins and ``corrected`` is True.
    """

    item_id: str
    output_index: int
    call_id: str
    name: str
    fragments: list[str] = field(default_factory=list)
    streamed_chars: int = 0
    arguments: str | None = None

    @property
    def streamed(self) -> str:
        return "".join(self.fragments)

    @property
    def corrected(self) -> bool:
        """True when the .done event's arguments differ from the streamed deltas (they win)."""
        return self.arguments is not None and self.arguments != self.streamed

    def parsed_arguments(self) -> dict[str, Any]:
        """The final arguments as a JSON object; FailClosed("bad_arguments") when they are not one."""
        try:
            value = json.loads(self.arguments or "")
        except ValueError:
            raise FailClosed("bad_arguments", f"call {self.call_id}: arguments are not JSON") from None
        if not isinstance(value, dict):
            raise FailClosed("bad_arguments", f"call {self.call_id}: arguments are not a JSON object")
        return value


@dataclass
class Turn:
    """A complete upstream response: its metadata (id, model, created_at, status, usage as the
    completed response states them), its output text, and the calls it asks for in output order."""

    id: str
    model: str
    created_at: int
    text: str
    calls: list[FunctionCall]
    usage: dict[str, Any] | None = None
    status: str = "completed"


class StreamState:
    """Feed it every event of one upstream response (`feed`), then ask what it amounts to (`finish`)."""

    def __init__(self) -> None:
        # Your state: the response that was created, the calls by item id, the text, the last
        # sequence number, the terminal response once it arrives. Section "Buffering by item".
        pass

    def feed(self, event: dict[str, Any]) -> None:
        """Take one event (a parsed JSON object with a "type"). Raise FailClosed as soon as the
        stream cannot be trusted:

        - an event's ``sequence_number``, when present, must be larger than the last one seen
          (a repeat or a step back is "protocol");
        - an ``error`` event is "upstream_error", its message kept whether the fields are at the
          top level or nested under "error";
        - the first event must be ``response.created`` with a response id ("protocol" otherwise);
          nothing may follow the terminal ``response.completed`` ("protocol");
        - ``response.output_item.added`` with a ``function_call`` item opens a call (item id,
          call_id and name all non-empty; an item id or call_id opened twice is "protocol"; a
          ninth call is "limit"). Other item types are progress only;
        - ``response.function_call_arguments.delta`` appends to the call its ``item_id`` names
          (an unknown item, or a call already closed, is "protocol"); ``.done`` closes the call
          with the ``arguments`` it states. Over MAX_ARGUMENT_CHARS, streamed or stated, is "limit";
        - ``response.output_text.delta`` adds to the text (over MAX_TEXT_CHARS is "limit");
          ``response.output_text.done`` states that part's text, which wins over its deltas;
        - ``response.completed`` must name the response id that was created and have status
          completed; ``response.failed`` is "upstream_failed" (its error message kept) and
          ``response.incomplete`` is "upstream_incomplete" (its reason in the message);
        - every other event type is progress: observe it, change nothing.
        """
        raise NotImplementedError("StreamState.feed: section 'Buffering by item'")

    def finish(self) -> Turn:
        """What the stream amounts to, once it ended. Raise FailClosed:

        - "missing_terminal" when response.completed never arrived, even if every call looks done;
        - "incomplete_call" when a call was never closed by its arguments.done event;
        - "mismatch" when the completed response's ``output`` lists function calls other than the
          streamed ones (another call_id, name or arguments, or a streamed call left out). A
          completed response without an ``output`` key keeps the streamed calls.

        Otherwise return the Turn: the completed response's id, model, created_at and usage, the
        output text (each part's done text, or its deltas when it has none), and the calls sorted
        by output_index.
        """
        raise NotImplementedError("StreamState.finish: section 'Progress is not permission'")
