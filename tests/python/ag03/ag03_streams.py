"""The authored upstream streams of fixtures/ag03, and the stand-ins the catalog and the demo use:
a scripted upstream that records what it was sent and whether it was closed, and recording tools."""

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


def body(name: str) -> bytes:
    """A fixture stream's whole body, with its cut tail when it has one."""
    stream = STREAMS[name]
    return b"".join(frame(e) for e in stream["events"]) + stream.get("tail", "").encode()


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)] or [b""]


class UpstreamBody:
    """An upstream answer's chunks: counts how many were read and whether close() was called."""

    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks
        self.read = 0
        self.closed = False

    def __iter__(self) -> UpstreamBody:
        return self

    def __next__(self) -> bytes:
        if self.closed or self.read == len(self._chunks):
            raise StopIteration
        self.read += 1
        return self._chunks[self.read - 1]

    @property
    def exhausted(self) -> bool:
        return self.read == len(self._chunks)

    def close(self) -> None:
        self.closed = True


class ScriptedUpstream:
    """Answers each request with the next scripted body (fixture names or raw bytes)."""

    def __init__(self, *script: str | bytes | list[bytes], read_size: int = 65536) -> None:
        self.script = list(script)
        self.read_size = read_size
        self.requests: list[dict[str, Any]] = []
        self.bodies: list[UpstreamBody] = []

    def __call__(self, request: dict[str, Any]) -> UpstreamBody:
        self.requests.append(json.loads(json.dumps(request)))  # as sent: a copy the caller cannot change later
        if not self.script:
            raise AssertionError("the proxy made more upstream requests than the test scripted")
        step = self.script.pop(0)
        if isinstance(step, list):  # the chunks exactly as given
            self.bodies.append(UpstreamBody(list(step)))
            return self.bodies[-1]
        data = body(step) if isinstance(step, str) else step
        self.bodies.append(UpstreamBody(pieces(data, self.read_size)))
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
