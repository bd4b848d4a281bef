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

# Sends one request body upstream (always streamed) and returns the chunks of the SSE body. The
# chunks may have close(): call it once you are done with them, however you are done.
Upstream = Callable[[dict[str, Any]], Iterable[bytes]]
# Tool name -> the function that runs it on the call's parsed arguments, returning the output text.
Tools = Mapping[str, Callable[[dict[str, Any]], str]]

MAX_TURNS = 4  # upstream responses one client request may cost
SSE, JSON = "text/event-stream", "application/json"


@dataclass
class Reply:
    status: int
    content_type: str
    body: Iterable[bytes]


def handle(request: dict[str, Any], upstream: Upstream, tools: Tools, *, policy: str = "buffered_final_stream",
           forward_tool_events: bool = False) -> Reply:
    """The reply to one client request.

    - ``policy`` is "buffered_final_stream" or "progress_events"; anything else is a ValueError.
    - A request without tools is stateless: pass the client's request upstream unchanged and
      reply 200 with pass_through of the answer (text/event-stream when the request says
      stream, application/json otherwise).
    - progress_events: reply 200 with its event stream, but only once its first event exists: a
      failure before anything went out is still an error reply.
    - buffered_final_stream: the final Turn as to_sse (stream true) or to_json (otherwise).
    - Whatever fails closed is answered 502, application/json, with error_body: never a 200.
    """
    raise NotImplementedError("handle: section 'Fail closed, and say why'")


def pass_through(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The upstream body, byte for byte and chunk by chunk, each chunk as soon as it arrives:
    nothing parsed, nothing buffered, nothing re-framed. Close the chunks when done, including when
    the client stops reading early."""
    raise NotImplementedError("pass_through: section 'Pass-through means the same bytes'")


def buffered_final_stream(request: dict[str, Any], upstream: Upstream, tools: Tools, *,
                          max_turns: int = MAX_TURNS) -> Turn:
    """Consume upstream responses (one_turn), running the tools each complete one asks for
    (run_calls, whose items extend the conversation), until one answers with no call: return it.

    Each upstream request is the client's request with ``"stream": True`` and the conversation so
    far as its ``input`` (start from input_items); never change the client's dict in place. After
    ``max_turns`` upstream responses without a final one, fail closed with "turn_limit".
    """
    raise NotImplementedError("buffered_final_stream: section 'Progress is not permission'")


def progress_events(request: dict[str, Any], upstream: Upstream, tools: Tools, *,
                    forward_tool_events: bool = False, max_turns: int = MAX_TURNS) -> Iterator[bytes]:
    """The downstream event stream of the progress_events policy, one EventWriter numbering it all.

    When the first upstream response is created, yield opening() for a response named after it
    (its id, model, created_at). Forward every ``response.output_text.delta`` at once, as
    text_delta. Forward tool-call events (the function_call_arguments events, and output_item
    added/done of function_call items) only when ``forward_tool_events``, renumbered. Run tools as
    buffered_final_stream does, only after each response completed. At the end yield closing() with
    all the text forwarded. On FailClosed: if nothing was yielded yet, raise it; otherwise yield one
    ``response.failed`` event (the same response id, status "failed", error with code and message)
    and stop. Close every upstream body, however the loop ends.
    """
    raise NotImplementedError("progress_events: section 'Progress mode'")


def one_turn(body: dict[str, Any], upstream: Upstream) -> Turn:
    """Send one body upstream, feed every event to a fresh StreamState, return its finish(). The
    upstream body is closed in every case: success, failure, exception."""
    raise NotImplementedError("one_turn: section 'Closing is part of finishing'")


def run_calls(calls: list[FunctionCall], tools: Tools) -> list[dict[str, Any]]:
    """Run a complete batch of calls, each exactly once, in order, but only after checking that
    every one can run: a tool not in ``tools`` is FailClosed("unknown_tool"), arguments that are not
    a JSON object FailClosed("bad_arguments") (parsed_arguments). Return, per call, the function_call
    item (call_id, name, the final arguments) followed by its function_call_output (call_id, output).
    """
    raise NotImplementedError("run_calls: section 'One batch, one decision'")


def input_items(request: dict[str, Any]) -> list[Any]:
    """The request's input as a list of items (a bare string is one user message) (given)."""
    given = request.get("input") or []
    return [{"role": "user", "content": given}] if isinstance(given, str) else list(given)


def error_body(failure: FailClosed) -> bytes:
    """The API's error shape (given)."""
    error = {"message": failure.message, "type": "upstream_error", "param": None, "code": failure.code}
    return json.dumps({"error": error}).encode()
