# course: begin docstring
"""A Provider for any server that speaks the OpenAI chat-completions API with streaming."""
# course: end docstring

from __future__ import annotations

import copy
import http.client
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from agent.provider.errors import APIError, StreamCutError
from agent.provider.sse import Decoder, EventReader
from agent.types import CallOptions, Delta, DeltaStream, ErrorDelta, Message, Role, ToolCall, ToolDef


@dataclass
class Config:
    """Where and how to reach the server. `base_url` ends before /chat/completions, e.g. http://127.0.0.1:8080/v1."""

    base_url: str
    api_key: str = ""
    model: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = 60.0  # seconds, for connecting and for each read


def request_body(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolDef] = (),
    options: CallOptions | None = None,
) -> dict:
    # course: begin request_body
    """The JSON body of a streamed chat-completions request."""
    body: dict = {
        "model": model,
        "messages": [_message_json(message) for message in messages],
        "stream": True,
        # without it the server sends no usage chunk, and no token is ever counted
        "stream_options": {"include_usage": True},
    }
    if tools:
        body["tools"] = [_tool_json(tool) for tool in tools]
    if options is not None and options.temperature is not None:
        body["temperature"] = options.temperature
    if options is not None and options.max_tokens is not None:
        body["max_tokens"] = options.max_tokens
    return body


def _message_json(message: Message) -> dict:
    out: dict = {"role": Role(message.role).value, "content": message.content}
    if message.tool_calls:
        # strict servers reject "" beside tool calls: no text is null
        out["content"] = message.content or None
        out["tool_calls"] = [_tool_call_json(call) for call in message.tool_calls]
    if message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id  # how the model matches a result to its call
    if message.name:
        out["name"] = message.name
    return out


def _tool_call_json(call: ToolCall) -> dict:
    # arguments travel as a string of JSON, and "" is not a JSON object
    function = {"name": call.name, "arguments": call.arguments or "{}"}
    return {"id": call.id, "type": "function", "function": function}


def _tool_json(tool: ToolDef) -> dict:
    # a copy: a caller who edits the body before sending it must not edit the tool's schema too
    function = {"name": tool.name, "description": tool.description, "parameters": copy.deepcopy(tool.parameters)}
    return {"type": "function", "function": function}
    # course: end request_body


class OpenAIProvider:
    """Streams chat completions over HTTP with the standard library's http.client."""

    def __init__(self, config: Config) -> None:
        # course: begin OpenAIProvider__init__
        url = urlsplit(config.base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base_url must be an http or https URL, got {config.base_url!r}")
        self._config = config
        self._https = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port
        self._path = url.path.rstrip("/") + "/chat/completions"
        # course: end OpenAIProvider__init__

    def chat_stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDef] = (),
        options: CallOptions | None = None,
    ) -> DeltaStream:
        # course: begin OpenAIProvider_chat_stream
        """Sends the request; raises APIError for a non-2xx answer, OSError when there is no answer.

        The stream it returns owns the connection: reading it to the end or closing it early
        closes the connection.
        """
        body = json.dumps(request_body(self._config.model, messages, tools, options)).encode()
        connection = self._connect()
        try:
            connection.request("POST", self._path, body=body, headers=self._headers())
            response = connection.getresponse()
            if not 200 <= response.status < 300:
                raise _api_error(response)
        except BaseException:
            connection.close()
            raise
        return _ResponseStream(connection, response)

    def _connect(self) -> http.client.HTTPConnection:
        if self._https:  # pragma: no cover - the catalog's servers speak plain HTTP on 127.0.0.1
            return http.client.HTTPSConnection(self._host, self._port, timeout=self._config.timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=self._config.timeout)

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self._config.api_key:
            headers["Authorization"] = f"Bearer {self._config.api_key}"
        for name, value in self._config.headers.items():  # last, so that a caller may replace ours
            # header names ignore case: the caller's "authorization" replaces our "Authorization"
            for same in [ours for ours in headers if ours.lower() == name.lower()]:
                del headers[same]
            headers[name] = value
        return headers


class _ResponseStream:
    """The deltas of one response. It owns the connection: reading to the end or closing the stream
    closes it, and dropping the connection is what tells the server to stop generating.

    A class rather than a bare generator: a generator closed before its first step never runs its
    `finally`, and a caller may well cancel before reading anything.
    """

    def __init__(self, connection: http.client.HTTPConnection, response: http.client.HTTPResponse) -> None:
        self._connection = connection
        self._response = response
        self._deltas = _deltas(response)

    def __iter__(self) -> _ResponseStream:
        return self

    def __next__(self) -> Delta:
        try:
            return next(self._deltas)
        except StopIteration:
            self.close()
            raise

    def close(self) -> None:
        self._deltas.close()
        self._response.close()
        self._connection.close()  # the response alone would leave the socket open for reuse


def _deltas(response: http.client.HTTPResponse) -> Iterator[Delta]:
    decoder = Decoder()
    try:
        for event in EventReader(_ArrivedBytes(response)):
            deltas, finished = decoder.decode(event.data)
            yield from deltas
            if finished:
                return
        # a clean end of the body without [DONE] is still a cut: a reset, a crash, a proxy timeout
        yield ErrorDelta(StreamCutError())
    except (OSError, http.client.HTTPException) as error:  # the connection broke mid-stream
        yield ErrorDelta(error)


class _ArrivedBytes:
    """The response body, read as it arrives.

    HTTPResponse.read(n) waits until n bytes came (or the body ended); read1(n) returns what has
    arrived, so each event reaches the caller as soon as the server sends it.
    """

    def __init__(self, response: http.client.HTTPResponse) -> None:
        self._response = response

    def read(self, n: int) -> bytes:
        return self._response.read1(n)


def _api_error(response: http.client.HTTPResponse) -> APIError:
    raw = response.read()
    try:
        payload = json.loads(raw)
    except ValueError:  # a proxy's HTML page, plain text, an empty body
        payload = None
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        error = {"message": raw.decode("utf-8", "replace").strip()[:500]}
    return APIError(
        response.status,
        type=str(error.get("type") or ""),
        code=str(error.get("code") or ""),
        message=str(error.get("message") or response.reason),
        retry_after=_seconds(response.getheader("Retry-After")),
    )


def _seconds(header: str | None) -> float | None:
    """Retry-After as seconds; None when absent or not a number (the HTTP-date form included)."""
    if header is None:
        return None
    try:
        seconds = float(header)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
        # course: end OpenAIProvider_chat_stream
