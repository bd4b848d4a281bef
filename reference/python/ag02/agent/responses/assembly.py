# course: begin module
"""Native Responses events folded into one assistant decision, released only at validated completion."""
# course: end module

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent.responses.types import Message, Payload, Report, ResponseFailure, ToolCall, ToolSpec

MAX_PREVIEW_CHARS = 64_000  # text and refusal characters shown while streaming, all deltas together
MAX_PENDING_CALLS = 8  # function-call items one response may open
MAX_ARGUMENT_CHARS = 16_000  # characters buffered for one call's arguments

# course: begin module_2
_PROVIDER_FAILURES = frozenset({"response.failed", "response.incomplete", "error"})
_PREVIEWS = {"response.output_text.delta": "text", "response.refusal.delta": "refusal"}

# course: end module_2

@dataclass
class PendingCall:
    """A function call as streamed so far, under its item id."""

    call_id: str
    name: str
    arguments: str
    closed: bool = False  # its arguments.done came, stating exactly these arguments


class ResponseAssembly:
    # course: begin ResponseAssembly
    """Accepts one response's events in order; `accept` returns a Message only at response.completed."""
    # course: end ResponseAssembly

    def __init__(self, tools: Sequence[ToolSpec], report: Report) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.report = report
        self.response_id: str | None = None
        # course: begin ResponseAssembly___init__
        self.pending: dict[str, PendingCall] = {}  # by item id, in the order the items were added
        # course: end ResponseAssembly___init__
        self.preview_chars = 0
        self.ended = False

    def accept(self, event: Payload) -> Message | None:
        # course: begin ResponseAssembly_accept
        """Fold one event in; the validated decision at response.completed, None for progress."""
        if self.ended:
            raise ResponseFailure("ended", "an event arrived after the response ended")
        try:
            return self._accept(event)
        except ResponseFailure:
            self.ended = True
            self.pending.clear()  # nothing buffered may outlive a failed response
            raise

    def _accept(self, event: Payload) -> Message | None:
        if not isinstance(event, dict):
            raise ResponseFailure("malformed_event", f"an event must be a JSON object, got {event!r:.80}")
        kind = _string(event, "type")
        if not kind:
            raise ResponseFailure("malformed_event", "an event without a type")
        if kind == "response.created":
            if self.response_id is not None:
                raise ResponseFailure("duplicate_created", "response.created arrived twice")
            self.response_id = _string(_object(event, "response"), "id")
            if not self.response_id:
                raise ResponseFailure("missing_id", "response.created carries no response id")
            return None
        if self.response_id is None:
            raise ResponseFailure("not_started", f"{kind} arrived before response.created")
        self._check_identity(event)
        if kind in _PROVIDER_FAILURES:
            raise ResponseFailure(kind.removeprefix("response."), _failure_detail(event))
        if kind in _PREVIEWS:
            delta = _string(event, "delta")
            self.preview_chars += len(delta)
            if self.preview_chars > MAX_PREVIEW_CHARS:
                raise ResponseFailure("preview_limit", f"more than {MAX_PREVIEW_CHARS} characters of text")
            self.report(_PREVIEWS[kind], delta)
        elif kind == "response.output_item.added":
            self._added(_object(event, "item"))
        elif kind == "response.function_call_arguments.delta":
            item_id, call = self._pending_call(event)
            call.arguments += _string(event, "delta")
            self._check_size(item_id, call)
            self.report("arguments", f"{item_id}: {len(call.arguments)} characters buffered")
        elif kind == "response.completed":
            self.ended = True
            return self._completed(_object(event, "response"))
        elif kind == "response.function_call_arguments.done":
            # The final arguments are the authority, so they are checked: against every fragment.
            item_id, call = self._pending_call(event)
            if not isinstance(event.get("arguments"), str):
                raise ResponseFailure("malformed_event", f"the done event of item {item_id!r} states no arguments")
            if event["arguments"] != call.arguments:
                raise ResponseFailure("call_mismatch", f"item {item_id!r}: the done event's arguments differ from the streamed fragments")
            call.closed = True
        elif kind == "response.output_item.done" and isinstance(event.get("item"), dict) \
                and event["item"].get("type") == "function_call":
            self._finished(event["item"])
        # Everything else, *.done events included, is progress: one part finished, not the response.
        return None

    def _finished(self, item: Payload) -> None:
        """A call's finished item restates it: the same call id and name, and the same arguments if it states them."""
        item_id = _string(item, "id")
        if item_id not in self.pending:
            raise ResponseFailure("unknown_item", f"function-call item {item_id!r} finished without being added")
        call = self.pending[item_id]
        arguments = item.get("arguments", call.arguments)
        if (_string(item, "call_id"), _string(item, "name"), arguments) != (call.call_id, call.name, call.arguments):
            raise ResponseFailure("call_mismatch", f"finished item {item_id!r} differs from the streamed call")

    def _pending_call(self, event: Payload) -> tuple[str, PendingCall]:
        """The call an arguments event names, still open to fragments."""
        item_id = _string(event, "item_id")
        call = self.pending.get(item_id)
        if call is None:
            raise ResponseFailure("unknown_item", f"arguments for item {item_id!r}, which was never added")
        if call.closed:
            raise ResponseFailure("call_mismatch", f"arguments for item {item_id!r} after its done event stated them")
        return item_id, call

    def _check_identity(self, event: Payload) -> None:
        """Item events may name their response; lifecycle events carry it. Either must be ours."""
        claims = [event.get("response_id", self.response_id)]
        response = event.get("response")
        if isinstance(response, dict):
            claims.append(response.get("id"))
        for claimed in claims:
            if claimed != self.response_id:
                raise ResponseFailure("identity_mismatch", f"event of response {claimed!r} inside {self.response_id!r}")

    def _added(self, item: Payload) -> None:
        if item.get("type") != "function_call":
            return  # a message or other item starting: judged at completion
        item_id = _string(item, "id")
        if item_id in self.pending:
            raise ResponseFailure("duplicate_item", f"function-call item {item_id!r} added twice")
        if len(self.pending) == MAX_PENDING_CALLS:
            raise ResponseFailure("call_limit", f"more than {MAX_PENDING_CALLS} function calls")
        call = PendingCall(_string(item, "call_id"), _string(item, "name"), _string(item, "arguments"))
        self.pending[item_id] = call
        self._check_size(item_id, call)

    def _check_size(self, item_id: str, call: PendingCall) -> None:
        if len(call.arguments) > MAX_ARGUMENT_CHARS:
            raise ResponseFailure("argument_limit", f"item {item_id!r} has more than {MAX_ARGUMENT_CHARS} characters of arguments")

    def _completed(self, response: Payload) -> Message:
        """Validate the whole response, then build the decision: nothing is released before every check."""
        if response.get("status") != "completed":
            raise ResponseFailure("status", f"response.completed with status {response.get('status')!r}")
        output = response.get("output")
        if not isinstance(output, list):
            raise ResponseFailure("malformed_event", "response.completed without an output list")
        text: list[str] = []
        refusal: list[str] = []
        calls: list[ToolCall] = []
        terminal_items: set[str] = set()
        for item in output:
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "message":
                _message_parts(item, text, refusal)
            elif kind == "function_call":
                item_id, call = self._terminal_call(item, {earlier.id for earlier in calls})
                terminal_items.add(item_id)
                calls.append(call)
            else:
                raise ResponseFailure("unsupported_item", f"output item of type {kind!r} cannot be replayed")
        omitted = [item_id for item_id in self.pending if item_id not in terminal_items]
        if omitted:
            raise ResponseFailure("call_missing", f"streamed call item {omitted[0]!r} is not in the final output")
        return Message("assistant", "".join(text), tuple(calls), refusal="".join(refusal))

    def _terminal_call(self, item: Payload, seen_ids: set[str]) -> tuple[str, ToolCall]:
        item_id = _string(item, "id")
        call_id, name, arguments = _string(item, "call_id"), _string(item, "name"), _string(item, "arguments")
        if not call_id or call_id in seen_ids:
            raise ResponseFailure("call_id", f"call id {call_id!r} is empty or repeated")
        streamed = self.pending.get(item_id)
        if streamed is None:
            raise ResponseFailure("call_not_streamed", f"final call item {item_id!r} was never streamed")
        if (streamed.call_id, streamed.name, streamed.arguments) != (call_id, name, arguments):
            raise ResponseFailure("call_mismatch", f"final call item {item_id!r} differs from the streamed bytes")
        tool = self.tools.get(name)
        if tool is None:
            raise ResponseFailure("unknown_tool", f"call {call_id!r} names {name!r}, which is not exposed")
        return item_id, ToolCall(call_id, name, _arguments(tool, arguments))


def _arguments(tool: ToolSpec, text: str) -> dict[str, str]:
    """The argument object: JSON, an object, exactly the declared names, every value a string."""
    try:
        value = json.loads(text)
    except ValueError:
        raise ResponseFailure("bad_arguments", f"{tool.name} arguments are not JSON: {text[:80]!r}") from None
    if not isinstance(value, dict) or sorted(value) != sorted(tool.parameters):
        raise ResponseFailure("bad_arguments", f"{tool.name} needs exactly {list(tool.parameters)}, got {text[:80]!r}")
    if not all(isinstance(v, str) for v in value.values()):
        raise ResponseFailure("bad_arguments", f"{tool.name} arguments must all be strings")
    return value


def _message_parts(item: Payload, text: list[str], refusal: list[str]) -> None:
    content = item.get("content")
    if not isinstance(content, list):
        raise ResponseFailure("malformed_event", "message item without a content list")
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "output_text":
            text.append(_string(part, "text"))
        elif kind == "refusal":
            refusal.append(_string(part, "refusal"))
        else:
            raise ResponseFailure("unsupported_item", f"message content of type {kind!r} cannot be replayed")


def _failure_detail(event: Payload) -> str:
    """What the provider said went wrong; an error event may nest it under "error" or not."""
    response = event.get("response")
    if isinstance(response, dict):
        sources = [response.get("error"), response.get("incomplete_details")]
    else:
        sources = [event.get("error"), event]
    for source in sources:
        if isinstance(source, dict):
            for key in ("message", "reason", "code"):
                if isinstance(source.get(key), str) and source[key]:
                    return source[key]
    return "no detail given"


def _string(obj: Payload, name: str) -> str:
    value = obj.get(name, "")
    if not isinstance(value, str):
        raise ResponseFailure("malformed_event", f"field {name!r} must be a string, got {value!r}")
    return value


def _object(obj: Payload, name: str) -> Payload:
    value = obj.get(name)
    if not isinstance(value, dict):
        raise ResponseFailure("malformed_event", f"field {name!r} must be an object")
    return value
        # course: end ResponseAssembly_accept
