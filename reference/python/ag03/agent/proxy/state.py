"""The state of one upstream Responses stream, fed event by event, and what it amounts to at the end.

Progress is not permission: an item's `.done` event, or a function call whose arguments look
complete, executes nothing. Only `finish()`, after a terminal `response.completed`, hands out calls,
and only calls whose arguments were closed by their own `response.function_call_arguments.done`.
# course: begin module
The final statements (each done event, the completed response) are the authority, and each is checked
against what was streamed: where they disagree, the stream fails closed. Anything the state does not
understand ends the stream with FailClosed.
# course: end module
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agent.proxy.errors import FailClosed

MAX_PENDING_CALLS = 8  # function calls one response may open
MAX_ARGUMENT_CHARS = 16_000  # per call, as streamed or as finally stated
MAX_TEXT_CHARS = 64_000  # output text and refusal of one response, together


@dataclass
class FunctionCall:
    # course: begin FunctionCall
    # course: end FunctionCall
    item_id: str
    output_index: int
    call_id: str
    name: str
    # course: begin FunctionCall_2
    fragments: list[str] = field(default_factory=list)  # the argument deltas, in arrival order
    streamed_chars: int = 0
    arguments: str | None = None  # as the .done event states them (equal to the fragments); None until it arrives
    # course: end FunctionCall_2

    @property
    def streamed(self) -> str:
        return "".join(self.fragments)

    def parsed_arguments(self) -> dict[str, Any]:
        # course: begin FunctionCall_parsed_arguments
        # course: end FunctionCall_parsed_arguments
        try:
            value = json.loads(self.arguments or "")
        except ValueError:
            raise FailClosed("bad_arguments", f"call {self.call_id}: arguments are not JSON") from None
        if not isinstance(value, dict):
            raise FailClosed("bad_arguments", f"call {self.call_id}: arguments are not a JSON object")
        return value


@dataclass
class Turn:
    # course: begin Turn
    """A complete upstream response: its metadata, its text and refusal, and the calls it asks for."""
    # course: end Turn

    id: str
    model: str
    created_at: int
    text: str
    calls: list[FunctionCall]
    usage: dict[str, Any] | None = None
    status: str = "completed"
    refusal: str = ""
    # What a response echoes of its request; the policies set them from the client's request.
    tools: list[Any] = field(default_factory=list)
    tool_choice: Any = "auto"
    parallel_tool_calls: bool = True


# course: begin module_2
@dataclass
# course: end module_2
class StreamState:
    """Feed it every event of one upstream response (`feed`), then ask what it amounts to (`finish`)."""

    # course: begin StreamState
    response: dict[str, Any] | None = None  # the response object of response.created
    terminal: dict[str, Any] | None = None  # the response object of response.completed
    calls: dict[str, FunctionCall] = field(default_factory=dict)  # by item id, in the order they opened
    texts: dict[tuple[str, int], list[str]] = field(default_factory=dict)  # (item id, content index) -> text deltas
    refusals: dict[tuple[str, int], list[str]] = field(default_factory=dict)  # the same, for refusal deltas
    last_sequence: int = -1
    text_chars: int = 0
    # course: end StreamState

    def feed(self, event: dict[str, Any]) -> None:
        # course: begin StreamState_feed
        kind = event.get("type")
        self._check_order(event)
        if kind == "error":
            error = event.get("error") if isinstance(event.get("error"), dict) else event
            raise FailClosed("upstream_error", str(error.get("message") or error.get("code") or "error event"))
        if self.response is None:
            if kind != "response.created":
                raise FailClosed("protocol", f"the stream began with {kind!r}, not response.created")
            self.response = _response_of(event)
            return
        if self.terminal is not None:
            raise FailClosed("protocol", f"{kind!r} arrived after the response had ended")
        if kind == "response.created":
            raise FailClosed("protocol", "response.created arrived twice")
        self._check_identity(event)
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, event)
        # Every other event (in_progress, content parts, reasoning, ...) is progress to observe only.
        # course: end StreamState_feed

    def finish(self) -> Turn:
        # course: begin StreamState_finish
        """The response, once it ended with response.completed and every call was closed."""
        if self.terminal is None:
            raise FailClosed("missing_terminal", "the stream ended before response.completed")
        open_calls = [c.call_id for c in self.calls.values() if c.arguments is None]
        if open_calls:
            raise FailClosed("incomplete_call", f"arguments never completed for {', '.join(open_calls)}")
        self._match_terminal()
        response = self.terminal
        return Turn(
            id=response["id"],
            model=str(response.get("model", "")),
            created_at=int(response.get("created_at") or 0),
            text=_joined(self.texts),
            calls=sorted(self.calls.values(), key=lambda c: c.output_index),
            usage=response.get("usage"),
            refusal=_joined(self.refusals),
        )

    # -- events --------------------------------------------------------------------------------

    def _check_order(self, event: dict[str, Any]) -> None:
        number = event.get("sequence_number")
        if number is None:
            return
        if not isinstance(number, int) or isinstance(number, bool) or number <= self.last_sequence:
            raise FailClosed("protocol", f"sequence number {number!r} after {self.last_sequence}")
        self.last_sequence = number

    def _check_identity(self, event: dict[str, Any]) -> None:
        """Lifecycle events carry their response, item events may name it: either must be the one created."""
        named = event["response"].get("id") if isinstance(event.get("response"), dict) else self.response["id"]
        for claimed in (named, event.get("response_id", self.response["id"])):
            if claimed != self.response["id"]:
                raise FailClosed("protocol", f"{event.get('type')} names response {claimed!r}, the stream opened {self.response['id']}")

    def _item_added(self, event: dict[str, Any]) -> None:
        item = event.get("item")
        if not isinstance(item, dict) or item.get("type") != "function_call":
            return
        item_id, call_id, name = item.get("id"), item.get("call_id"), item.get("name")
        if not all(isinstance(v, str) and v for v in (item_id, call_id, name)):
            raise FailClosed("protocol", "a function call item without its id, call_id or name")
        if item_id in self.calls or any(c.call_id == call_id for c in self.calls.values()):
            raise FailClosed("protocol", f"function call {item_id} ({call_id}) opened twice")
        if len(self.calls) == MAX_PENDING_CALLS:
            raise FailClosed("limit", f"more than {MAX_PENDING_CALLS} function calls in one response")
        call = FunctionCall(item_id, int(event.get("output_index", len(self.calls))), call_id, name)
        self.calls[item_id] = call
        self._grow(call, str(item.get("arguments") or ""))

    def _item_done(self, event: dict[str, Any]) -> None:
        item = event.get("item")
        if not isinstance(item, dict) or item.get("type") != "function_call":
            return
        call = self.calls.get(item.get("id"))
        if call is None or call.arguments is None:
            raise FailClosed("protocol", f"function call item {item.get('id')!r} finished before it was added and closed")
        # The finished item restates the closed call; a slim one may leave its arguments out.
        if (item.get("call_id"), item.get("name"), item.get("arguments", call.arguments)) != (call.call_id, call.name, call.arguments):
            raise FailClosed("mismatch", f"call {call.call_id}: its finished item differs from the stream")

    def _arguments_delta(self, event: dict[str, Any]) -> None:
        call = self._open_call(event)
        self._grow(call, str(event.get("delta", "")))

    def _arguments_done(self, event: dict[str, Any]) -> None:
        call = self._open_call(event)
        final = event.get("arguments")
        if not isinstance(final, str):
            raise FailClosed("protocol", f"call {call.call_id}: the done event carries no arguments")
        if len(final) > MAX_ARGUMENT_CHARS:
            raise FailClosed("limit", f"call {call.call_id}: arguments over {MAX_ARGUMENT_CHARS} characters")
        # The done event is the authority, and it is checked: a fragment lost, repeated or changed on
        # the way makes the two disagree, and then neither can be trusted with a tool.
        if final != call.streamed:
            raise FailClosed("mismatch", f"call {call.call_id}: the done event's arguments differ from the streamed fragments")
        call.arguments = final

    def _part_delta(self, event: dict[str, Any]) -> None:
        delta = event.get("delta")
        if not isinstance(delta, str):
            raise FailClosed("protocol", f"{event['type']} without a text delta")
        self.text_chars += len(delta)
        if self.text_chars > MAX_TEXT_CHARS:
            raise FailClosed("limit", f"output text over {MAX_TEXT_CHARS} characters")
        self._parts(event).setdefault(_part_key(event), []).append(delta)

    def _part_done(self, event: dict[str, Any]) -> None:
        stated = event.get("text" if event["type"] == "response.output_text.done" else "refusal")
        if not isinstance(stated, str):
            return  # a done event without its text leaves the deltas standing
        if stated != "".join(self._parts(event).get(_part_key(event), [])):
            raise FailClosed("mismatch", f"{event['type']} states other text than its deltas spelled")

    def _completed(self, event: dict[str, Any]) -> None:
        response = _response_of(event)
        if response.get("status", "completed") != "completed":
            raise FailClosed("protocol", f"response.completed with status {response.get('status')!r}")
        self.terminal = response

    def _failed(self, event: dict[str, Any]) -> None:
        error = _response_of(event).get("error") or {}
        raise FailClosed("upstream_failed", str(error.get("message") or error.get("code") or "response.failed"))

    def _incomplete(self, event: dict[str, Any]) -> None:
        details = _response_of(event).get("incomplete_details") or {}
        raise FailClosed("upstream_incomplete", f"the response is incomplete ({details.get('reason', 'no reason given')})")

    # -- helpers -------------------------------------------------------------------------------

    def _open_call(self, event: dict[str, Any]) -> FunctionCall:
        call = self.calls.get(event.get("item_id"))
        if call is None:
            raise FailClosed("protocol", f"arguments for unknown item {event.get('item_id')!r}")
        if call.arguments is not None:
            raise FailClosed("protocol", f"arguments for call {call.call_id} after its done event")
        return call

    def _grow(self, call: FunctionCall, piece: str) -> None:
        call.streamed_chars += len(piece)
        if call.streamed_chars > MAX_ARGUMENT_CHARS:
            raise FailClosed("limit", f"call {call.call_id}: arguments over {MAX_ARGUMENT_CHARS} characters")
        call.fragments.append(piece)

    def _parts(self, event: dict[str, Any]) -> dict[tuple[str, int], list[str]]:
        return self.texts if event["type"].startswith("response.output_text.") else self.refusals

    def _match_terminal(self) -> None:
        """The completed response states its output again: its calls, its text and its refusal must be
        exactly the ones streamed. A slim terminal event without an output list leaves the stream standing."""
        output = self.terminal.get("output")
        if output is None:
            return
        if not isinstance(output, list):
            raise FailClosed("protocol", "the completed response's output is not a list")
        items = [i for i in output if isinstance(i, dict)]
        streamed = {c.call_id: c for c in self.calls.values()}
        for item in (i for i in items if i.get("type") == "function_call"):
            call = streamed.pop(item.get("call_id"), None)
            if call is None or item.get("name") != call.name or item.get("arguments") != call.arguments:
                raise FailClosed("mismatch", f"the completed response lists call {item.get('call_id')!r} unlike the stream")
        if streamed:
            raise FailClosed("mismatch", f"calls {', '.join(streamed)} are missing from the completed response")
        parts = [p for i in items if i.get("type") == "message" and isinstance(i.get("content"), list)
                 for p in i["content"] if isinstance(p, dict)]
        text = "".join(str(p.get("text", "")) for p in parts if p.get("type") == "output_text")
        refusal = "".join(str(p.get("refusal", "")) for p in parts if p.get("type") == "refusal")
        if (text, refusal) != (_joined(self.texts), _joined(self.refusals)):
            raise FailClosed("mismatch", "the completed response states other text than the stream spelled")


def _part_key(event: dict[str, Any]) -> tuple[str, int]:
    return str(event.get("item_id", "")), int(event.get("content_index", 0) or 0)


def _joined(parts: dict[tuple[str, int], list[str]]) -> str:
    return "".join("".join(deltas) for deltas in parts.values())


def _response_of(event: dict[str, Any]) -> dict[str, Any]:
    response = event.get("response")
    if not isinstance(response, dict) or not isinstance(response.get("id"), str) or not response["id"]:
        raise FailClosed("protocol", f"{event.get('type')} without a response id")
    return response


_HANDLERS = {
    "response.output_item.added": StreamState._item_added,
    "response.output_item.done": StreamState._item_done,
    "response.function_call_arguments.delta": StreamState._arguments_delta,
    "response.function_call_arguments.done": StreamState._arguments_done,
    "response.output_text.delta": StreamState._part_delta,
    "response.refusal.delta": StreamState._part_delta,
    "response.output_text.done": StreamState._part_done,
    "response.refusal.done": StreamState._part_done,
    "response.completed": StreamState._completed,
    "response.failed": StreamState._failed,
    "response.incomplete": StreamState._incomplete,
}
        # course: end StreamState_finish
