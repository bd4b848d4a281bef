"""A Responses API adapter that releases a decision only when the whole response is complete and valid."""

from agent.responses.types import (
    EventStream,
    Message,
    OpenFailure,
    OpenStream,
    Payload,
    Report,
    ResponseFailure,
    ToolCall,
    ToolSpec,
)

__all__ = [
    "EventStream",
    "Message",
    "OpenFailure",
    "OpenStream",
    "Payload",
    "Report",
    "ResponseFailure",
    "ToolCall",
    "ToolSpec",
]
