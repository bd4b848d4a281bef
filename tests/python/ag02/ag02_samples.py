"""The authored sequences of fixtures/ag02 and the in-memory stand-ins shared by the catalog and the demo.

Nothing here touches the network: a Script answers each opening attempt with a scripted failure or a
ReplayStream, and records every request and every close.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import AsyncIterator, Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from agent.responses.types import Message, OpenFailure, ResponseFailure, ToolCall, ToolSpec

FIXTURES = Path(os.environ["COURSE_FIXTURES"])  # set by the harness for catalog runs and `course run`
MODEL = "gpt-4.1-mini"


@lru_cache(maxsize=None)
def _load(name: str) -> str:
    return (FIXTURES / f"{name}.json").read_text(encoding="utf-8")


def sequence(name: str) -> dict[str, Any]:
    """A fresh copy of one authored sequence: sample, about, tools, end, expect, events."""
    return json.loads(_load(name))


def events(name: str) -> list[dict[str, Any]]:
    return sequence(name)["events"]


def sequence_names() -> list[str]:
    skip = {"tools", "scenarios"}
    return sorted(p.stem for p in FIXTURES.glob("*.json") if p.stem not in skip)


def tools(*names: str) -> list[ToolSpec]:
    """The fixture tool catalog, or the named part of it."""
    specs = [ToolSpec(t["name"], t["description"], tuple(t["parameters"])) for t in json.loads(_load("tools"))["tools"]]
    return [s for s in specs if not names or s.name in names]


def scenarios() -> dict[str, Any]:
    return json.loads(_load("scenarios"))


def message_form(message: Message) -> dict[str, Any]:
    """A Message in the neutral form the fixtures' "expect" uses."""
    calls = [{"id": c.id, "name": c.name, "arguments": dict(c.arguments)} for c in message.tool_calls]
    return {"role": message.role, "content": message.content, "refusal": message.refusal, "tool_calls": calls}


class Reset(ConnectionResetError):
    """The scripted transport failure: the connection was reset in the middle of the stream."""


class ReplayStream:
    """An acquired stream that yields authored events, then ends ("eof") or breaks ("reset").

    It records how many events were taken and when it was closed; `close_error` makes aclose() fail.
    """

    def __init__(self, events: Sequence[dict[str, Any]], end: str = "eof", close_error: BaseException | None = None,
                 log: list[str] | None = None) -> None:
        self.events = [copy.deepcopy(e) for e in events]
        self.end = end
        self.close_error = close_error
        self.taken = 0
        self.closed = 0
        self.log = log if log is not None else []

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[dict[str, Any]]:
        for event in self.events:
            self.taken += 1
            self.log.append(f"event {event.get('type')}")
            yield event
        if self.end == "reset":
            self.log.append("reset")
            raise Reset("connection reset by peer (scripted)")

    async def aclose(self) -> None:
        self.closed += 1
        self.log.append("close")
        if self.close_error is not None:
            raise self.close_error


def replay(name: str, **kw: Any) -> ReplayStream:
    seq = sequence(name)
    return ReplayStream(seq["events"], seq.get("end", "eof"), **kw)


class ScriptExhausted(AssertionError):
    """The adapter asked for another response than the scripted ones."""


class Script:
    """Stands in for the transport: each opening attempt meets the next scripted entry.

    An entry is an OpenFailure (raised), a ReplayStream (acquired) or any other exception (raised).
    """

    def __init__(self, *entries: Any) -> None:
        self.entries = list(entries)
        self.requests: list[dict[str, Any]] = []
        self.log: list[str] = []

    async def __call__(self, request: dict[str, Any]) -> ReplayStream:
        self.requests.append(copy.deepcopy(request))
        attempt = len(self.requests)
        if attempt > len(self.entries):
            raise ScriptExhausted(f"opening attempt {attempt} was made, but only {len(self.entries)} were scripted")
        entry = self.entries[attempt - 1]
        self.log.append(f"open {attempt}")
        if isinstance(entry, BaseException):
            raise entry
        entry.log = self.log
        return entry

    @property
    def streams(self) -> list[ReplayStream]:
        return [e for e in self.entries[: len(self.requests)] if isinstance(e, ReplayStream)]


def opening(entry: dict[str, Any]) -> Any:
    """A scenario's opening entry as a Script entry."""
    if "stream" in entry:
        return replay(entry["stream"])
    failure = entry["open_failure"]
    return OpenFailure(failure["message"], failure["status"])


class Recorder:
    """A Report observer that keeps (kind, detail) pairs; also a sleep and a random source stand-in."""

    def __init__(self) -> None:
        self.reports: list[tuple[str, str]] = []
        self.sleeps: list[float] = []

    def __call__(self, kind: str, detail: str) -> None:
        self.reports.append((kind, detail))

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


class Workspace:
    """In-memory project files behind the read and edit tools; counts every execution."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = dict(files)
        self.executed: list[ToolCall] = []

    def execute(self, call: ToolCall) -> str:
        self.executed.append(call)
        args = call.arguments
        if call.name == "read":
            return self.files.get(args["path"], f"error: no file {args['path']}")
        text = self.files.get(args["path"])
        if text is None or text.count(args["old"]) != 1:
            return f"error: {args['old']!r} does not occur exactly once in {args['path']}"
        self.files[args["path"]] = text.replace(args["old"], args["new"])
        return f"edited {args['path']}"


class TurnBudgetExhausted(Exception):
    pass


async def run_loop(complete: Callable[..., Any], history: list[Message], tool_specs: Sequence[ToolSpec],
                   execute: Callable[[ToolCall], str], max_turns: int = 10) -> Message:
    """The agent loop of the earlier chapters, reduced to its contract: a decision is executed whole or not at all."""
    for _ in range(max_turns):
        decision = await complete(history, tool_specs)
        history.append(decision)
        if not decision.tool_calls:
            return decision
        for call in decision.tool_calls:
            history.append(Message("tool", execute(call), tool_call_id=call.id))
    raise TurnBudgetExhausted(f"no final answer after {max_turns} turns")


def failure_code(exc: BaseException) -> str:
    """A failure's stable code: ResponseFailure's own, "transport" for a broken connection."""
    if isinstance(exc, ResponseFailure):
        return exc.code
    if isinstance(exc, ConnectionError):
        return "transport"
    return type(exc).__name__
