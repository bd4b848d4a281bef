"""The words this chapter speaks: portable messages, tool specs, the stream protocol and the two failures.

Given code: the adapter you write translates between these and the provider's native shapes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

Payload = Mapping[str, Any]  # one decoded event, or one native request/response object


@dataclass(frozen=True)
class ToolCall:
    """A tool the model asked for: its call id, the tool's name, and the argument object."""

    id: str
    name: str
    arguments: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Message:
    """One turn of the portable history.

    role is "developer", "user", "assistant" or "tool". An assistant turn may carry tool_calls
    (beside or instead of content) and a refusal; a tool turn answers the call named by tool_call_id.
    """

    role: str
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    refusal: str = ""


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call: every parameter is a named string, and every one is required."""

    name: str
    description: str = ""
    parameters: tuple[str, ...] = ()


class ResponseFailure(Exception):
    """The response cannot become a decision. `code` is stable (tests and logs match on it);
    `detail` says what was seen."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail


class OpenFailure(Exception):
    """No stream was acquired. `status` is the HTTP status, or None when no answer came at all
    (refused, reset or timed-out connection)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class EventStream(Protocol):
    """An acquired stream of decoded events. Whoever acquires it must `aclose()` it."""

    def __aiter__(self) -> AsyncIterator[Payload]: ...

    async def aclose(self) -> None: ...


OpenStream = Callable[[Payload], Awaitable[EventStream]]  # sends a request, returns the acquired stream
Report = Callable[[str, str], None]  # an observer: report(kind, detail); displays, never decides
