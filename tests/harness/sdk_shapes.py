"""Responses objects checked against the official openai SDK's own types, strictly, extra fields included.

The SDK's pydantic models are the most exacting reader a course client meets: `check_event`,
`check_response` and `check_error_body` validate an object with ``strict=True`` and then walk the
validated model for fields the SDK does not declare (its models accept them silently; we report them).
Where live traffic and the SDK disagree, the course is faithful to live traffic; each such difference
is one named entry of ``LIVE_TRAFFIC``, never a silent skip:

- ``store``: live Response objects carry ``store``; the SDK's ``Response`` does not declare it.
- ``nested error event``: live traffic nests an ``error`` event's fields under ``error``
  (``{"type": "error", "sequence_number": N, "error": {"type", "code", "message", "param"}}``); the
  SDK's ``ResponseErrorEvent`` (and the published schema) has them at the top level, the flat shape
  the fake model sends only when asked (``Turn(flat_error=True)``).

Two more differences need no entry because the course follows live traffic where the SDK agrees with it:
live traffic sends ``usage: null`` in ``response.created`` (the published schema forbids it, the SDK
allows it), and no ``name`` on ``response.function_call_arguments.done`` (the published schema lists
it, the SDK does not): nothing the course emits carries it.
"""

from __future__ import annotations

import typing
from functools import lru_cache
from typing import Any

LIVE_TRAFFIC = {
    "store": "live Response objects carry `store`; the SDK's Response type does not declare it",
    "nested error event": "live `error` events nest code, message, type and param under `error`; the SDK "
                          "and the published schema put them at the top level",
}

_EXTRA_ALLOWED = {("Response", "store"): "store"}  # (model name, field) -> the LIVE_TRAFFIC entry that allows it


@lru_cache(maxsize=1)
def _event_models() -> dict[str, Any]:
    """Event type -> the SDK's model for it (the stream-event union, read once)."""
    from openai.types.responses import ResponseStreamEvent

    union = typing.get_args(ResponseStreamEvent)[0] if typing.get_origin(ResponseStreamEvent) is typing.Annotated \
        else ResponseStreamEvent
    models: dict[str, Any] = {}
    for model in typing.get_args(union):
        for kind in typing.get_args(model.model_fields["type"].annotation):
            models[kind] = model
    return models


def _validated(model: Any, obj: Any) -> tuple[Any, list[str]]:
    from pydantic import ValidationError

    try:
        return model.model_validate(obj, strict=True), []
    except ValidationError as exc:
        return None, [f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()]


def _extras(value: Any, path: str = "") -> list[str]:
    """Every field the validated model holds that its class does not declare, as path: name."""
    from pydantic import BaseModel

    found: list[str] = []
    if isinstance(value, BaseModel):
        for name in (value.__pydantic_extra__ or {}):
            if (type(value).__name__, name) not in _EXTRA_ALLOWED:
                found.append(f"{path or '(top)'}: extra field {name!r} (the SDK's {type(value).__name__} has none)")
        for name in type(value).model_fields:
            found += _extras(getattr(value, name), f"{path}.{name}" if path else name)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found += _extras(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            found += _extras(item, f"{path}.{key}")
    return found


def check_response(obj: Any) -> list[str]:
    """What the SDK's Response type refuses in obj, or finds there it does not declare."""
    from openai.types.responses import Response

    model, problems = _validated(Response, obj)
    return problems or _extras(model)


def check_event(obj: Any) -> list[str]:
    """What the SDK's type for this stream event refuses in obj, or finds there it does not declare. The
    nested error event of live traffic is checked for its own fields instead (LIVE_TRAFFIC)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        return ["(top): not an event object with a type"]
    if obj["type"] == "error" and isinstance(obj.get("error"), dict):
        return _nested_error_problems(obj)
    model = _event_models().get(obj["type"])
    if model is None:
        return [f"(top): the SDK knows no stream event {obj['type']!r}"]
    validated, problems = _validated(model, obj)
    return problems or _extras(validated)


def _nested_error_problems(obj: dict[str, Any]) -> list[str]:
    problems = []
    if set(obj) != {"type", "sequence_number", "error"}:
        problems.append(f"(top): a nested error event has type, sequence_number and error only, got {sorted(obj)}")
    if type(obj.get("sequence_number")) is not int:
        problems.append("sequence_number: an integer")
    error = obj["error"]
    if not isinstance(error.get("message"), str) or not isinstance(error.get("type"), str):
        problems.append("error: message and type are strings")
    for key in ("code", "param"):
        if key not in error or not (error[key] is None or isinstance(error[key], str)):
            problems.append(f"error.{key}: a string or null")
    return problems


def check_error_body(obj: Any) -> list[str]:
    """An HTTP error answer: {"error": {message, type, param, code}}, as the SDK's APIError reads it."""
    if not isinstance(obj, dict) or set(obj) != {"error"} or not isinstance(obj["error"], dict):
        return ["(top): an error answer is {\"error\": {...}} alone"]
    error = obj["error"]
    problems = [] if set(error) == {"message", "type", "param", "code"} else [f"error: keys {sorted(error)}"]
    if not isinstance(error.get("message"), str) or not isinstance(error.get("type"), str):
        problems.append("error: message and type are strings")
    return problems
