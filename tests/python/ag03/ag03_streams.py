"""The authored upstream streams of fixtures/ag03, and the stand-ins the catalog and the demo use:
a scripted upstream that records what it was sent and whether it was closed, recording tools, a client
that retries as the official SDK does, and the checks the official SDK applies to what it reads."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

FIXTURES = Path(os.environ["COURSE_FIXTURES"])  # set by the harness for catalog runs and `course run`
STREAMS: dict[str, dict[str, Any]] = json.loads((FIXTURES / "streams.json").read_text(encoding="utf-8"))["streams"]
EXPECTED: dict[str, Any] = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))
READ_SIZES = (1, 7, 65536)


def frame(event: dict[str, Any]) -> bytes:
    """One event as the real API frames it: its name, its JSON data, a blank line."""
    return f"event: {event['type']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n".encode()


def events_of(name: str, tag: str = "") -> list[dict[str, Any]]:
    """A fixture stream's events; with a tag, every response id and call id made its own (a model asked
    again answers with new ids)."""
    events = json.loads(json.dumps(STREAMS[name]["events"]))
    if tag:
        text = json.dumps(events)
        for call in {e["item"]["call_id"] for e in events if e.get("item", {}).get("type") == "function_call"}:
            text = text.replace(f'"{call}"', f'"{call}_{tag}"')
        response_id = events[0]["response"]["id"] if "response" in events[0] else ""
        events = json.loads(text.replace(f'"{response_id}"', f'"{response_id}_{tag}"') if response_id else text)
    return events


def body(name: str, tag: str = "") -> bytes:
    """A fixture stream's whole body, with its cut tail when it has one."""
    return b"".join(frame(e) for e in events_of(name, tag)) + STREAMS[name].get("tail", "").encode()


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)] or [b""]


class Broken(OSError):
    """The scripted failure of an upstream connection in the middle of its body."""


class UpstreamBody:
    """An upstream answer's chunks: counts how many were read and whether close() was called. With
    `breaks_after`, reading past that many chunks raises `error` instead (a connection that broke)."""

    def __init__(self, chunks: list[bytes], breaks_after: int | None = None, error: BaseException | None = None) -> None:
        self._chunks = chunks
        self.read = 0
        self.closed = False
        self.breaks_after = breaks_after
        self.error = error

    def __iter__(self) -> UpstreamBody:
        return self

    def __next__(self) -> bytes:
        if self.closed:
            raise StopIteration
        if self.breaks_after is not None and self.read == self.breaks_after:
            raise self.error or Broken("connection reset by peer (scripted)")
        if self.read == len(self._chunks):
            raise StopIteration
        self.read += 1
        return self._chunks[self.read - 1]

    @property
    def exhausted(self) -> bool:
        return self.read == len(self._chunks)

    def close(self) -> None:
        self.closed = True


class ScriptedUpstream:
    """Answers each request with the next scripted body: a fixture name, raw bytes, a list of chunks
    exactly as given, or an UpstreamBody; an exception is raised instead (an upstream that answered
    an error status, or could not be reached)."""

    def __init__(self, *script: str | bytes | list[bytes] | UpstreamBody | Exception, read_size: int = 65536) -> None:
        self.script = list(script)
        self.read_size = read_size
        self.requests: list[dict[str, Any]] = []
        self.bodies: list[UpstreamBody] = []

    def __call__(self, request: dict[str, Any]) -> UpstreamBody:
        self.requests.append(json.loads(json.dumps(request)))  # as sent: a copy the caller cannot change later
        if not self.script:
            raise AssertionError("the proxy made more upstream requests than the test scripted")
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        if isinstance(step, UpstreamBody):
            self.bodies.append(step)
        elif isinstance(step, list):  # the chunks exactly as given
            self.bodies.append(UpstreamBody(list(step)))
        else:
            self.bodies.append(UpstreamBody(pieces(body(step) if isinstance(step, str) else step, self.read_size)))
        return self.bodies[-1]

    @property
    def all_closed(self) -> bool:
        return all(b.closed for b in self.bodies)


FORECASTS = {"Paris": "light rain, 14 C", "Lisbon": "sunny, 21 C"}


class WeatherTools(dict):
    """The proxy's tools: get_weather, recording each run and how far the upstream had been read."""

    def __init__(self, upstream: ScriptedUpstream | None = None) -> None:
        super().__init__(get_weather=self._weather)
        self.upstream = upstream
        self.runs: list[dict[str, Any]] = []
        self.upstream_done_at_run: list[bool] = []

    def _weather(self, arguments: dict[str, Any]) -> str:
        self.runs.append(arguments)
        if self.upstream is not None:
            self.upstream_done_at_run.append(self.upstream.bodies[-1].exhausted)
        return json.dumps({"city": arguments.get("city"), "forecast": FORECASTS.get(arguments.get("city"), "unknown")})


# ---- what the official SDK requires of what it reads ---------------------------------------------------------
# The harness checks the reference with the openai SDK itself; learners need not install it, so the
# catalog applies the same rules: the fields the SDK's types require, and the checks its stream reader
# makes (each output index added once, content events for items that exist, an item finished as it
# was added, one response from created to its end).

API_ERROR_CODES = frozenset({
    "server_error", "rate_limit_exceeded", "invalid_prompt", "data_residency_mismatch", "bio_policy",
    "misalignment_policy_violation", "vector_store_timeout", "invalid_image", "invalid_image_format",
    "invalid_base64_image", "invalid_image_url", "image_too_large", "image_too_small", "image_parse_error",
    "image_content_policy_violation", "invalid_image_mode", "image_file_too_large", "unsupported_image_media_type",
    "empty_image_file", "failed_to_download_image", "image_file_not_found"})


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def usage_problems(usage: Any) -> list[str]:
    if usage is None:
        return []
    if not isinstance(usage, dict):
        return [f"usage is an object or null, got {usage!r}"]
    problems = [f"usage.{k} is an integer" for k in ("input_tokens", "output_tokens", "total_tokens") if not _is_int(usage.get(k))]
    details = usage.get("input_tokens_details")
    if not (isinstance(details, dict) and _is_int(details.get("cached_tokens")) and _is_int(details.get("cache_write_tokens"))):
        problems.append(f"usage.input_tokens_details holds cached_tokens and cache_write_tokens: {details!r}")
    details = usage.get("output_tokens_details")
    if not (isinstance(details, dict) and _is_int(details.get("reasoning_tokens"))):
        problems.append(f"usage.output_tokens_details holds reasoning_tokens: {details!r}")
    return problems


def response_problems(response: Any) -> list[str]:
    """What the SDK's Response type would refuse in this object."""
    if not isinstance(response, dict):
        return [f"a response is an object, got {response!r}"]
    problems = []
    wanted = {"id": str, "object": str, "model": str, "status": str, "output": list, "tools": list, "parallel_tool_calls": bool}
    problems += [f"response.{k} is a {t.__name__}, got {response.get(k)!r}" for k, t in wanted.items() if not isinstance(response.get(k), t)]
    if response.get("object") != "response":
        problems.append("response.object is 'response'")
    if not _is_int(response.get("created_at")):
        problems.append(f"response.created_at is a number of seconds, got {response.get('created_at')!r}")
    if not isinstance(response.get("tool_choice"), (str, dict)):
        problems.append(f"response.tool_choice is a string or an object, got {response.get('tool_choice')!r}")
    problems += usage_problems(response.get("usage"))
    error = response.get("error")
    if error is not None and (not isinstance(error, dict) or error.get("code") not in API_ERROR_CODES
                              or not isinstance(error.get("message"), str)):
        problems.append(f"response.error has one of the API's codes and a message, got {error!r}")
    for item in response.get("output") or []:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            problems.append(f"an output item is an object with a type: {item!r}")
        elif item["type"] == "message":
            for part in item.get("content") or []:
                if part.get("type") == "output_text" and not (isinstance(part.get("text"), str) and isinstance(part.get("annotations"), list)):
                    problems.append(f"an output_text part has its text and annotations: {part!r}")
                elif part.get("type") == "refusal" and not isinstance(part.get("refusal"), str):
                    problems.append(f"a refusal part has its refusal: {part!r}")
                elif part.get("type") not in ("output_text", "refusal"):
                    problems.append(f"a message part is output_text or refusal: {part!r}")
    return problems


def stream_problems(events: list[dict[str, Any]]) -> list[str]:
    """What the SDK's stream reader would raise on, or its types refuse, in a downstream event stream."""
    if not events or events[0].get("type") != "response.created":
        return ["the stream opens with response.created"]
    problems = []
    if [e.get("sequence_number") for e in events] != list(range(len(events))):
        problems.append(f"sequence numbers count from 0 without a gap: {[e.get('sequence_number') for e in events]}")
    opened = events[0]["response"].get("id")
    added: dict[int, dict[str, Any]] = {}
    finished: dict[int, dict[str, Any]] = {}
    parts: dict[tuple[int, int], str] = {}
    closed_parts: set[tuple[int, int]] = set()
    for event in events:
        kind = event.get("type")
        if isinstance(event.get("response"), dict):
            problems += [f"{kind}: {p}" for p in response_problems(event["response"])]
            if event["response"].get("id") != opened:
                problems.append(f"{kind} names response {event['response'].get('id')!r}, the stream opened {opened!r}")
        index = event.get("output_index")
        if kind == "response.output_item.added":
            if index in added:
                problems.append(f"Duplicate response output index {index}")
            added[index] = event["item"]
        elif kind == "response.output_item.done":
            before = added.get(index)
            if before is None or (before.get("type"), before.get("id"), before.get("call_id")) != \
                    (event["item"].get("type"), event["item"].get("id"), event["item"].get("call_id")):
                problems.append(f"output index {index} finished as another item than it was added: {before} then {event['item']}")
            if index in finished:
                problems.append(f"output index {index} finished twice")
            finished[index] = event["item"]
        elif kind == "response.content_part.added":
            if (added.get(index) or {}).get("type") != "message" or event.get("item_id") != added[index].get("id"):
                problems.append(f"a content part for output index {index}, which is no message added under {event.get('item_id')!r}")
            if (index, event.get("content_index")) in parts:
                problems.append(f"content part {index}/{event.get('content_index')} added twice")
            parts[(index, event.get("content_index"))] = event["part"]["type"]
        elif kind == "response.content_part.done":
            if parts.get((index, event.get("content_index"))) != event.get("part", {}).get("type"):
                problems.append(f"content part {index}/{event.get('content_index')} finished as another part than it was added")
            if (index, event.get("content_index")) in closed_parts:
                problems.append(f"content part {index}/{event.get('content_index')} finished twice")
            closed_parts.add((index, event.get("content_index")))
        elif kind in ("response.output_text.delta", "response.output_text.done", "response.refusal.delta", "response.refusal.done"):
            want = "refusal" if kind.startswith("response.refusal") else "output_text"
            if parts.get((index, event.get("content_index"))) != want:
                problems.append(f"{kind} for content {index}/{event.get('content_index')}, which is no {want} part added")
            if kind.startswith("response.output_text") and not isinstance(event.get("logprobs"), list):
                problems.append(f"{kind} carries its logprobs list")
        elif kind in ("response.function_call_arguments.delta", "response.function_call_arguments.done"):
            item = added.get(index) or {}
            if item.get("type") != "function_call" or item.get("id") != event.get("item_id"):
                problems.append(f"{kind} for output index {index} and item {event.get('item_id')!r}, which is no function call added")
    if events[-1].get("type") == "response.completed":
        unfinished = sorted(set(added) - set(finished))
        if unfinished:
            problems.append(f"Cannot complete response with unfinished output items: {unfinished}")
        if set(parts) - closed_parts:
            problems.append(f"content parts never finished: {sorted(set(parts) - closed_parts)}")
    elif events[-1].get("type") != "response.failed":
        problems.append(f"the stream ends with response.completed or response.failed, not {events[-1].get('type')}")
    return problems


# ---- a client that retries as the official SDK does -------------------------------------------------------------

def sdk_like_post(port: int, payload: dict[str, Any], *, max_retries: int = 2) -> tuple[int, dict[str, str], bytes, int]:
    """POST /v1/responses the way the official SDK does by default: an answer 408, 409, 429 or 5xx is
    sent again, up to `max_retries` more times, unless it says `x-should-retry: false` (`true` forces a
    retry). No waiting here: the SDK's waits change nothing but time. Returns the last answer's
    status, headers (names lowercased), body, and the number of attempts."""
    import http.client

    attempts = 0
    while True:
        attempts += 1
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            connection.request("POST", "/v1/responses", json.dumps(payload).encode(), {"Content-Type": "application/json"})
            answer = connection.getresponse()
            status, headers, data = answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
        finally:
            connection.close()
        said = headers.get("x-should-retry")
        retry = said == "true" or (said != "false" and (status in (408, 409, 429) or status >= 500))
        if not retry or attempts > max_retries:
            return status, headers, data, attempts
