"""The conversation rules a schema cannot express, checked the way the real chat-completions API checks them.

A tool message answers a call of the assistant message just before it (or before the tool messages that
follow it), by id; every call of an assistant message is answered before any other message comes, and
before the conversation ends. The wording, status and ``param`` of each rule live in the contract
(``x-course-conversation-rules``), so every language's catalog reads the same text.
"""

from __future__ import annotations

from typing import Any

from course.fake_model._contract import conversation_rule
from course.fake_model._errors import APIError


def check(messages: list[dict[str, Any]]) -> None:
    """Raise the APIError the real API answers for the first broken rule; the messages passed the schema."""
    open_calls: list[str] = []  # ids of the last assistant message's calls not answered yet
    asked_at: int | None = None  # the index of that assistant message
    in_answers = False  # inside the tool messages that follow an assistant message with tool_calls
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if not in_answers:
                raise _broken("tool_after_tool_calls", index=index)
            call_id = message.get("tool_call_id")
            if call_id not in open_calls:
                raise _broken("tool_call_id_known", index=index, tool_call_id=call_id)
            open_calls.remove(call_id)
            continue
        if open_calls:
            raise _broken("tool_calls_answered", index=asked_at, ids=", ".join(open_calls))
        in_answers = role == "assistant" and bool(message.get("tool_calls"))
        if in_answers:
            open_calls = [call["id"] for call in message["tool_calls"]]
            asked_at = index
    if open_calls:
        raise _broken("tool_calls_answered", index=asked_at, ids=", ".join(open_calls))


def _broken(rule_id: str, **values: Any) -> APIError:
    rule = conversation_rule(rule_id)
    return APIError(rule["status"], rule["message"].format(**values), param=rule["param"].format(**values))
