"""The one error the proxy raises when it will not answer (given: every file agrees on it)."""

from __future__ import annotations


class FailClosed(Exception):
    """The upstream answer cannot be trusted: nothing was executed, nothing partial goes out.

    `code` is short and stable (it becomes the error code the client sees); `message` says what was
    wrong in words a person reading a log understands. The codes:

    - truncated: the body ended inside an event or a line, or the connection broke mid-body;
    - missing_terminal: the body ended before response.completed;
    - incomplete_call: a call was never closed by its arguments.done event;
    - upstream_failed, upstream_incomplete, upstream_error: response.failed, response.incomplete,
      an error event;
    - mismatch: a final statement disagrees with what was streamed: an arguments.done or a text's
      done event with its deltas, an output_item.done with its call, response.completed with the
      calls, the text or the refusal the stream built;
    - protocol: anything else the stream does wrong (order, ids, sequence numbers, a call id used
      twice in one request);
    - limit: over one of the bounds in state.py;
    - bad_arguments, unknown_tool: a call that cannot run; tool_failed: a tool that raised;
    - turn_limit: no final answer within the allowed upstream responses;
    - upstream_unreachable, upstream_status: the upstream could not be reached, or answered non-2xx.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
