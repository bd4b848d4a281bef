# course: begin module
"""The portable history and tool catalog, encoded as one Responses API request."""
# course: end module

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent.responses.types import Message, ToolSpec

MAX_OUTPUT_TOKENS = 2048  # the budget each request allows the model to generate

# course: begin module_2
_TEXT_ROLES = frozenset({"developer", "user", "assistant"})

# course: end module_2

def build_request(
    history: Sequence[Message],
    tools: Sequence[ToolSpec],
    model: str,
    max_output_tokens: int = MAX_OUTPUT_TOKENS,
) -> dict[str, Any]:
    # course: begin build_request
    """One streaming request that replays the whole history and keeps nothing on the server."""
    return {
        "model": model,
        "input": _input_items(history),
        "tools": [_tool_schema(tool) for tool in tools],
        # The full history travels every time: no previous_response_id, nothing stored upstream.
        "store": False,
        "stream": True,
        "max_output_tokens": max_output_tokens,
    }


def _input_items(history: Sequence[Message]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    asked: set[str] = set()  # call ids requested so far: a result must answer one of them
    for message in history:
        if message.role == "tool":
            if message.tool_call_id not in asked:
                raise ValueError(f"tool result for call {message.tool_call_id!r} answers no earlier call")
            items.append({"type": "function_call_output", "call_id": message.tool_call_id, "output": message.content})
            continue
        if message.role not in _TEXT_ROLES:
            raise ValueError(f"unknown role {message.role!r}")
        text = message.content or message.refusal  # a refusal is replayed as the assistant's words
        if text or not message.tool_calls:
            items.append({"role": message.role, "content": text})
        for call in message.tool_calls:
            asked.add(call.id)
            # No item id: with store=false the server keeps no items an id could point at.
            items.append({
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": json.dumps(dict(call.arguments)),  # the wire carries the object as text
            })
    return items


def _tool_schema(tool: ToolSpec) -> dict[str, Any]:
    # Strict mode demands every property be required and nothing else be allowed.
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": {
            "type": "object",
            "properties": {name: {"type": "string"} for name in tool.parameters},
            "required": list(tool.parameters),
            "additionalProperties": False,
        },
        "strict": True,
    }
    # course: end build_request
