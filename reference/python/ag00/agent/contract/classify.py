"""Sort one non-streaming Responses reply into exactly one kind.

Three statuses are read in order, each only once the previous one said yes:
the HTTP status (did the server answer?), the response's own ``status`` (did
generation finish?), and then the output items (what did the model produce?).
None of them says the task is done; the loop decides that against receipts.

Only the item shapes this chapter illustrates are accepted. Anything else is
``unsupported``: a new capability deserves its own adapter and fixture, not a
guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class Kind(str, Enum):
    HTTP_ERROR = "http_error"
    INCOMPLETE = "incomplete"
    FAILED = "failed"
    CANCELLED = "cancelled"
    REFUSED = "refused"
    TOOL_REQUESTS = "tool_requests"
    TEXT = "text"
    EMPTY = "empty"
    UNSUPPORTED = "unsupported"
    INVALID_TOOL_CALL = "invalid_tool_call"


@dataclass(frozen=True)
class Verdict:
    """The classification of one reply."""

    kind: Kind
    retryable: bool = False  # HTTP_ERROR only: may the same request be sent again later?
    reason: str | None = None  # incomplete reason, error code, refusal text, or what was unsupported
    calls: tuple[dict[str, Any], ...] = ()  # TOOL_REQUESTS: the function_call items, in order
    text: str = ""  # TEXT: all output_text parts, joined


def is_retryable(http_status: int) -> bool:
    # course: begin is_retryable
    """408 (the request came too slowly), 429 (slow down), 500, 502, 503 and 504 (trouble on the
    way or on the server) may pass later; any other status fails the same way again."""
    return http_status in (408, 429, 500, 502, 503, 504)
    # course: end is_retryable


def classify_response(body: Any, http_status: int = 200) -> Verdict:
    # course: begin classify_response
    """Classify a parsed JSON ``body`` received with ``http_status``."""
    if http_status != 200:
        return Verdict(Kind.HTTP_ERROR, retryable=is_retryable(http_status), reason=_error_code(body))
    if not isinstance(body, dict):
        return Verdict(Kind.UNSUPPORTED, reason="body is not a JSON object")
    status = body.get("status")
    # Generation status comes before the items: an incomplete reply may hold
    # partial text that reads like an answer but is not one.
    if status == "incomplete":
        return Verdict(Kind.INCOMPLETE, reason=_incomplete_reason(body))
    if status == "failed":
        return Verdict(Kind.FAILED, reason=_error_code(body))
    if status == "cancelled":
        return Verdict(Kind.CANCELLED)
    if status != "completed":
        return Verdict(Kind.UNSUPPORTED, reason=f"response status {status!r}")
    output = body.get("output")
    if not isinstance(output, list):
        return Verdict(Kind.UNSUPPORTED, reason="output is not a list")
    return _classify_items(output)


def _classify_items(output: list[Any]) -> Verdict:
    calls: list[dict[str, Any]] = []
    texts: list[str] = []
    for item in output:
        item_type = item.get("type") if isinstance(item, dict) else None
        if item_type == "function_call":
            if not _well_formed_call(item):
                return Verdict(Kind.INVALID_TOOL_CALL, reason=f"function_call {item.get('id')!r} lacks call_id, name or arguments")
            calls.append(item)
        elif item_type == "message":
            content = item.get("content")
            if item.get("status") not in (None, "completed") or not isinstance(content, list):
                return Verdict(Kind.UNSUPPORTED, reason="message not completed or without a content list")
            for part in content:
                part_type = part.get("type") if isinstance(part, dict) else None
                # A refusal anywhere means the model declined: do not act on the rest.
                if part_type == "refusal":
                    return Verdict(Kind.REFUSED, reason=part.get("refusal"))
                if part_type != "output_text" or not isinstance(part.get("text"), str):
                    return Verdict(Kind.UNSUPPORTED, reason=f"content part {part_type!r}")
                texts.append(part["text"])
        elif item_type == "reasoning":
            continue  # nothing to read here, but the loop must send it back unchanged
        else:
            return Verdict(Kind.UNSUPPORTED, reason=f"output item {item_type!r}")
    if calls:
        # Any text beside the calls is a preamble, not an answer.
        return Verdict(Kind.TOOL_REQUESTS, calls=tuple(calls))
    if texts:
        return Verdict(Kind.TEXT, text="".join(texts))
    return Verdict(Kind.EMPTY)


def _well_formed_call(item: dict[str, Any]) -> bool:
    return all(isinstance(item.get(key), str) and item[key] for key in ("call_id", "name", "arguments"))


def _incomplete_reason(body: dict[str, Any]) -> str | None:
    details = body.get("incomplete_details")
    return details.get("reason") if isinstance(details, dict) else None


def _error_code(body: Any) -> str | None:
    """The ``error.code`` of an error body or a failed response, when there is one."""
    error = body.get("error") if isinstance(body, dict) else None
    return error.get("code") if isinstance(error, dict) else None
    # course: end classify_response
