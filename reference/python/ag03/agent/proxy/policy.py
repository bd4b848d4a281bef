"""What the proxy does with a client's request: the policies, and the reply each one makes.

- stateless pass-through (a request without tools): the upstream bytes go out exactly as they came;
- buffered_final_stream (the default for requests with tools): the upstream stream is consumed here,
  tools run only after a complete, terminal response, and the client receives one final answer,
  as JSON or as a synthesized event stream;
- progress_events (opt-in): text is forwarded while it streams, tool-call events only when asked,
  and the stream still ends in either a completed response or an explicit failure.

Whatever the mode, a tool runs at most once per client request: an answer that fails closed says
`x-should-retry: false`, because a client's retry would replay the whole conversation, tools included.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from agent.proxy.errors import FailClosed
from agent.proxy.sse import read_events
from agent.proxy.state import FunctionCall, StreamState, Turn
from agent.proxy.synthesize import EventWriter, closing, failed, opening, text_delta, text_part_opening, to_json, to_sse

# course: begin module
# Sends one request body upstream (always streamed) and returns the chunks of the SSE body.
# course: end module
Upstream = Callable[[dict[str, Any]], Iterable[bytes]]
# Tool name -> the function that runs it on the call's parsed arguments, returning the output text.
Tools = Mapping[str, Callable[[dict[str, Any]], str]]

MAX_TURNS = 4  # upstream responses one client request may cost
SSE, JSON = "text/event-stream", "application/json"
# The official SDKs retry a 5xx (twice, by default) unless the answer says not to; a retry would run
# the tools of the turns before the failure again.
NOT_RETRYABLE = (("x-should-retry", "false"),)
# course: begin module_2
TEXT_DELTA = "response.output_text.delta"
TOOL_EVENTS = ("response.function_call_arguments.delta", "response.function_call_arguments.done")
ITEM_EVENTS = ("response.output_item.added", "response.output_item.done")
# course: end module_2


@dataclass
class Reply:
    status: int
    content_type: str
    body: Iterable[bytes]  # a list: the whole body at once; any other iterable: produced as it streams
    headers: tuple[tuple[str, str], ...] = ()


class Body:
    # course: begin Body
    """A streamed reply body: the chunks already in hand, then the rest as they are produced.

    close() releases what the rest is read from (an upstream body, or the generator reading upstream
    bodies), whether the body was read to its end, in part, or not at all; reaching the end, or an
    error while reading, closes it too. (A generator's own `finally` runs only once it has started:
    closing one that never started leaves its upstream open.)
    """

    def __init__(self, source: Iterable[bytes], *ready: bytes) -> None:
        self._ready = list(ready)
        self._source = source
        self._chunks = iter(source)

    def __iter__(self) -> Body:
        return self

    def __next__(self) -> bytes:
        if self._ready:
            return self._ready.pop(0)
        try:
            return next(self._chunks)
        except BaseException:  # the end, or a failure: either way nothing more will be read
            self.close()
            raise

    def close(self) -> None:
        _close(self._source)
    # course: end Body


def handle(request: dict[str, Any], upstream: Upstream, tools: Tools, *, policy: str = "buffered_final_stream",
           forward_tool_events: bool = False) -> Reply:
    # course: begin handle
    """The reply to one client request. A request that fails closed gets a 502 with the reason, marked
    not to be retried, never a 200 carrying a partial answer."""
    if policy not in ("buffered_final_stream", "progress_events"):
        raise ValueError(f"unknown policy {policy!r}")
    try:
        if not request.get("tools"):
            return Reply(200, SSE if request.get("stream") else JSON, pass_through(upstream(request)))
        if policy == "progress_events":
            events = progress_events(request, upstream, tools, forward_tool_events=forward_tool_events)
            return Reply(200, SSE, Body(events, next(events)))  # a failure before the first event is still a 502
        answer = buffered_final_stream(request, upstream, tools)
    except FailClosed as failure:
        return Reply(502, JSON, [error_body(failure)], NOT_RETRYABLE)
    if request.get("stream"):
        return Reply(200, SSE, [to_sse(answer)])
    return Reply(200, JSON, [to_json(answer)])
    # course: end handle


def pass_through(chunks: Iterable[bytes]) -> Body:
    # course: begin pass_through
    """The upstream body, byte for byte: nothing parsed, nothing re-framed. A break in the upstream
    body is raised to the caller, which ends the downstream body where it broke."""
    return Body(chunks)
    # course: end pass_through


def buffered_final_stream(request: dict[str, Any], upstream: Upstream, tools: Tools, *,
                          max_turns: int = MAX_TURNS) -> Turn:
    # course: begin buffered_final_stream
    """Consume upstream responses, running the tools each complete one asks for, until one answers
    without a call: the downstream answer is built from them all."""
    conversation = input_items(request)
    turns: list[Turn] = []
    for _ in range(max_turns):
        turns.append(one_turn({**request, "input": conversation, "stream": True}, upstream))
        if not turns[-1].calls:
            return downstream(request, turns[0], turns)
        conversation = continued(conversation, turns[-1], tools)
    raise FailClosed("turn_limit", f"no final answer within {max_turns} upstream responses")
    # course: end buffered_final_stream


def progress_events(request: dict[str, Any], upstream: Upstream, tools: Tools, *,
                    forward_tool_events: bool = False, max_turns: int = MAX_TURNS) -> Iterator[bytes]:
    # course: begin progress_events
    """The downstream event stream of the progress_events policy."""
    writer = EventWriter()
    shown: Turn | None = None  # the downstream response, named after the first upstream one
    turns: list[Turn] = []
    text_opened = False
    places: dict[tuple[int, str], tuple[str, int]] = {}  # (turn, upstream item id) -> downstream item id, index
    conversation = input_items(request)
    try:
        for _ in range(max_turns):
            state = StreamState()
            chunks = upstream({**request, "input": conversation, "stream": True})
            try:
                for event in read_events(chunks):
                    state.feed(event)
                    if shown is None:
                        shown = downstream(request, _announced(state.response), [])
                        yield from opening(writer, shown)
                    if event["type"] == TEXT_DELTA and event["delta"]:
                        if not text_opened:
                            text_opened = True
                            yield text_part_opening(writer, shown)
                        yield text_delta(writer, shown, event["delta"])
                    elif forward_tool_events and _is_tool_event(event):
                        yield _forwarded(writer, shown, event, places, len(turns))
            finally:
                _close(chunks)
            turns.append(state.finish())
            if not turns[-1].calls:
                yield from closing(writer, downstream(request, shown, turns), text_opened)
                return
            conversation = continued(conversation, turns[-1], tools)
        raise FailClosed("turn_limit", f"no final answer within {max_turns} upstream responses")
    except FailClosed as failure:
        if shown is None:
            raise  # nothing went out yet: the caller answers with an error instead
        yield failed(writer, shown, failure)
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


def continued(conversation: list[Any], turn: Turn, tools: Tools) -> list[Any]:
    # course: begin continued
    """The conversation after a turn that asked for calls: the batch run, each call and its result
    appended. A call id the conversation already holds fails closed: its result could answer either."""
    used = {i.get("call_id") for i in conversation if isinstance(i, dict) and i.get("type") == "function_call"}
    reused = [c.call_id for c in turn.calls if c.call_id in used]
    if reused:
        raise FailClosed("protocol", f"call id {reused[0]} was already used in this conversation")
    return conversation + run_calls(turn.calls, tools)
    # course: end continued


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
        try:
            output = tools[call.name](parsed)
        except Exception as exc:  # a tool that breaks is a failure to report, not a crash to retry
            raise FailClosed("tool_failed", f"{call.name} raised {exc!r}") from None
        items.append({"type": "function_call", "call_id": call.call_id, "name": call.name,
                      "arguments": call.arguments})
        items.append({"type": "function_call_output", "call_id": call.call_id, "output": output})
    return items
    # course: end run_calls


def downstream(request: dict[str, Any], named_after: Turn, turns: list[Turn]) -> Turn:
    # course: begin downstream
    """The response the client receives for its request, in every mode: named after the first upstream
    response (id, model, created_at), holding the text and refusal of every upstream response in order,
    the usage of all of them added up, and what the request asked for echoed (its tools)."""
    return replace(named_after, text="".join(t.text for t in turns), refusal="".join(t.refusal for t in turns),
                   calls=[], usage=total_usage(t.usage for t in turns), tools=list(request.get("tools") or []),
                   tool_choice=request.get("tool_choice", "auto"),
                   parallel_tool_calls=request.get("parallel_tool_calls", True))
    # course: end downstream


def input_items(request: dict[str, Any]) -> list[Any]:
    # course: begin input_items
    """The request's input as a list of items (a bare string is one user message)."""
    # course: end input_items
    given = request.get("input") or []
    return [{"role": "user", "content": given}] if isinstance(given, str) else list(given)


def total_usage(usages: Iterable[dict[str, Any] | None]) -> dict[str, Any] | None:
    # course: begin total_usage
    """The usage of several upstream responses added up, details included; None when none reported any."""
    # course: end total_usage
    reported = [u for u in usages if isinstance(u, dict)]
    if not reported:
        return None

    def count(*path: str) -> int:
        total = 0
        for usage in reported:
            value: Any = usage
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            total += value if isinstance(value, int) and not isinstance(value, bool) else 0
        return total

    return {"input_tokens": count("input_tokens"),
            "input_tokens_details": {"cached_tokens": count("input_tokens_details", "cached_tokens"),
                                     "cache_write_tokens": count("input_tokens_details", "cache_write_tokens")},
            "output_tokens": count("output_tokens"),
            "output_tokens_details": {"reasoning_tokens": count("output_tokens_details", "reasoning_tokens")},
            "total_tokens": count("input_tokens") + count("output_tokens")}


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


def _forwarded(writer: EventWriter, shown: Turn, event: dict[str, Any], places: dict[tuple[int, str], tuple[str, int]],
               turn: int) -> bytes:
    """A tool-call event renumbered into the downstream response: its item takes the next output index
    after the message (index 0) and an id of the proxy's own, the same for every event of that item."""
    fields = {k: v for k, v in event.items() if k not in ("type", "sequence_number")}
    upstream_id = fields["item"]["id"] if "item" in fields else fields["item_id"]
    number = len(places) + 1
    item_id, index = places.setdefault((turn, upstream_id), (f"fc_{shown.id.removeprefix('resp_')}_{number}", number))
    if "item" in fields:
        fields["item"] = {**fields["item"], "id": item_id}
    else:
        fields["item_id"] = item_id
    return writer.event(event["type"], **{**fields, "output_index": index})


def _close(chunks: object) -> None:
    close = getattr(chunks, "close", None)
    if close is not None:
        close()
# course: end _announced
