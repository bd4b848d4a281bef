"""What the proxy does with a client's request: the policies, and the reply each one makes.

- stateless pass-through (a request without tools): the upstream bytes go out exactly as they came;
- buffered_final_stream (the default for requests with tools): the upstream stream is consumed here,
  tools run only after a complete, terminal response, and the client receives one final answer,
  as JSON or as a synthesized event stream;
- progress_events (opt-in): text is forwarded while it streams, tool-call events only when asked,
  and the stream still ends in either a completed response or an explicit failure.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from agent.proxy.errors import FailClosed
from agent.proxy.sse import read_events
from agent.proxy.state import FunctionCall, StreamState, Turn
from agent.proxy.synthesize import EventWriter, closing, opening, text_delta, to_json, to_sse

# course: begin module
# Sends one request body upstream (always streamed) and returns the chunks of the SSE body.
# course: end module
Upstream = Callable[[dict[str, Any]], Iterable[bytes]]
# Tool name -> the function that runs it on the call's parsed arguments, returning the output text.
Tools = Mapping[str, Callable[[dict[str, Any]], str]]

MAX_TURNS = 4  # upstream responses one client request may cost
SSE, JSON = "text/event-stream", "application/json"
# course: begin module_2
TOOL_EVENTS = ("response.function_call_arguments.delta", "response.function_call_arguments.done")
ITEM_EVENTS = ("response.output_item.added", "response.output_item.done")
# course: end module_2


@dataclass
class Reply:
    status: int
    content_type: str
    body: Iterable[bytes]


def handle(request: dict[str, Any], upstream: Upstream, tools: Tools, *, policy: str = "buffered_final_stream",
           forward_tool_events: bool = False) -> Reply:
    # course: begin handle
    """The reply to one client request. A request that fails closed gets a 502 with the reason, never
    a 200 carrying a partial answer."""
    if policy not in ("buffered_final_stream", "progress_events"):
        raise ValueError(f"unknown policy {policy!r}")
    try:
        if not request.get("tools"):
            return Reply(200, SSE if request.get("stream") else JSON, pass_through(upstream(request)))
        if policy == "progress_events":
            events = progress_events(request, upstream, tools, forward_tool_events=forward_tool_events)
            first = next(events)  # a failure before the first event can still be an error answer
            return Reply(200, SSE, itertools.chain([first], events))
        turn = buffered_final_stream(request, upstream, tools)
    except FailClosed as failure:
        return Reply(502, JSON, [error_body(failure)])
    if request.get("stream"):
        return Reply(200, SSE, [to_sse(turn)])
    return Reply(200, JSON, [to_json(turn)])
    # course: end handle


def pass_through(chunks: Iterable[bytes]) -> Iterator[bytes]:
    # course: begin pass_through
    """The upstream body, byte for byte: nothing parsed, nothing re-framed."""
    try:
        yield from chunks
    finally:
        _close(chunks)
    # course: end pass_through


def buffered_final_stream(request: dict[str, Any], upstream: Upstream, tools: Tools, *,
                          max_turns: int = MAX_TURNS) -> Turn:
    # course: begin buffered_final_stream
    """Consume upstream responses, running the tools each complete one asks for, until one answers
    with text alone: that one is the final answer."""
    conversation = input_items(request)
    for _ in range(max_turns):
        turn = one_turn({**request, "input": conversation, "stream": True}, upstream)
        if not turn.calls:
            return turn
        conversation = conversation + run_calls(turn.calls, tools)
    raise FailClosed("turn_limit", f"no final answer within {max_turns} upstream responses")
    # course: end buffered_final_stream


def progress_events(request: dict[str, Any], upstream: Upstream, tools: Tools, *,
                    forward_tool_events: bool = False, max_turns: int = MAX_TURNS) -> Iterator[bytes]:
    # course: begin progress_events
    """The downstream event stream of the progress_events policy."""
    writer = EventWriter()
    shown: Turn | None = None  # the downstream response: named after the first upstream one
    text: list[str] = []
    conversation = input_items(request)
    try:
        for _ in range(max_turns):
            state = StreamState()
            chunks = upstream({**request, "input": conversation, "stream": True})
            try:
                for event in read_events(chunks):
                    state.feed(event)
                    if shown is None:
                        shown = _announced(state.response)
                        yield from opening(writer, shown)
                    if event["type"] == "response.output_text.delta":
                        text.append(event["delta"])
                        yield text_delta(writer, shown, event["delta"])
                    elif forward_tool_events and _is_tool_event(event):
                        yield writer.event(event["type"], **_fields(event))
            finally:
                _close(chunks)
            turn = state.finish()
            if not turn.calls:
                final = replace(turn, id=shown.id, created_at=shown.created_at, text="".join(text))
                yield from closing(writer, final, final.text)
                return
            conversation = conversation + run_calls(turn.calls, tools)
        raise FailClosed("turn_limit", f"no final answer within {max_turns} upstream responses")
    except FailClosed as failure:
        if shown is None:
            raise  # nothing went out yet: the caller answers with an error instead
        failed = {"id": shown.id, "object": "response", "status": "failed", "model": shown.model,
                  "output": [], "error": {"code": failure.code, "message": failure.message}}
        yield writer.event("response.failed", response=failed)
    # course: end progress_events


def one_turn(body: dict[str, Any], upstream: Upstream) -> Turn:
    # course: begin one_turn
    """One upstream response, read to its end and judged; the upstream body is closed in every case."""
    chunks = upstream(body)
    try:
        state = StreamState()
        for event in read_events(chunks):
            state.feed(event)
        return state.finish()
    finally:
        _close(chunks)
    # course: end one_turn


def run_calls(calls: list[FunctionCall], tools: Tools) -> list[dict[str, Any]]:
    # course: begin run_calls
    """Run a complete batch of calls, each exactly once, after checking that every one can run; the
    items that carry the calls and their results into the next request."""
    unknown = sorted({c.name for c in calls if c.name not in tools})
    if unknown:
        raise FailClosed("unknown_tool", f"the model called {', '.join(unknown)}, which this proxy does not run")
    arguments = [c.parsed_arguments() for c in calls]
    items: list[dict[str, Any]] = []
    for call, parsed in zip(calls, arguments):
        output = tools[call.name](parsed)
        items.append({"type": "function_call", "call_id": call.call_id, "name": call.name,
                      "arguments": call.arguments})
        items.append({"type": "function_call_output", "call_id": call.call_id, "output": output})
    return items
    # course: end run_calls


def input_items(request: dict[str, Any]) -> list[Any]:
    # course: begin input_items
    """The request's input as a list of items (a bare string is one user message)."""
    # course: end input_items
    given = request.get("input") or []
    return [{"role": "user", "content": given}] if isinstance(given, str) else list(given)


def error_body(failure: FailClosed) -> bytes:
    # course: begin error_body
    # course: end error_body
    error = {"message": failure.message, "type": "upstream_error", "param": None, "code": failure.code}
    return json.dumps({"error": error}).encode()
# course: begin _announced


def _announced(response: dict[str, Any]) -> Turn:
    return Turn(id=response["id"], model=str(response.get("model", "")),
                created_at=int(response.get("created_at") or 0), text="", calls=[])


def _is_tool_event(event: dict[str, Any]) -> bool:
    if event["type"] in TOOL_EVENTS:
        return True
    item = event.get("item")
    return event["type"] in ITEM_EVENTS and isinstance(item, dict) and item.get("type") == "function_call"


def _fields(event: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k not in ("type", "sequence_number")}


def _close(chunks: object) -> None:
    close = getattr(chunks, "close", None)
    if close is not None:
        close()
# course: end _announced
