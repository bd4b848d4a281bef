"""The one tool of this chapter, ``read_order``, and the checks that guard it.

A ``function_call`` item is the model proposing an action. Whether the action
runs is decided here, from data the model cannot touch: the trusted principal
comes from the caller's session, never from the call's arguments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

TOOL_NAME = "read_order"

# Why a call was refused. Each one is also the loop's final status.
UNKNOWN_TOOL = "unknown_tool"
INVALID_ARGUMENTS = "invalid_arguments"
PERMISSION_DENIED = "permission_denied"


@dataclass(frozen=True)
class Principal:
    """Who is asking, as established by the application's own session."""

    tenant: str
    user: str


# Teaching data: a stand-in for a real order service and a real login session.
TRUSTED_PRINCIPAL = Principal(tenant="shop-a", user="u-1")

ORDERS: dict[str, dict[str, str]] = {
    "o-1": {"tenant": "shop-a", "user": "u-1", "status": "delivered"},
    "o-2": {"tenant": "shop-b", "user": "u-2", "status": "processing"},  # another shop
    "o-3": {"tenant": "shop-a", "user": "u-7", "status": "returned"},  # same shop, another customer
}

# The definition the model sees. With "strict", the model's arguments follow this
# schema; the application still checks them, because the schema is a request to
# the model, not a guarantee about what arrives.
READ_ORDER_TOOL: dict[str, Any] = {
    "type": "function",
    "name": TOOL_NAME,
    "description": "Read the status of one order the signed-in customer may see.",
    "strict": True,
    "parameters": {
        "type": "object",
        "properties": {"order_id": {"type": "string", "description": "The order id, for example o-1."}},
        "required": ["order_id"],
        "additionalProperties": False,
    },
}


@dataclass(frozen=True)
class ToolResult:
    """What executing one call produced.

    ``payload`` is what may be shown to the model: the receipt on success, or
    ``{"error": reason}`` and nothing else when the call was refused.
    """

    payload: dict[str, str]
    denied: str | None = None  # the refusal reason; None when the read ran


# course: begin execute_call
def _deny(reason: str) -> ToolResult:
    return ToolResult(payload={"error": reason}, denied=reason)


def _order_id(arguments: Any) -> str | None:
    """The order id when ``arguments`` is the JSON text of exactly ``{"order_id": <non-empty str>}``, else None."""
    if not isinstance(arguments, str):
        return None  # the contract promises JSON text; a parsed dict or bytes did not come from the API
    try:
        args = json.loads(arguments)
    except ValueError:
        return None
    # Exactly one field: a tenant or user named by the model is not ours to honour,
    # and silently ignoring it would hide an attempt to widen access.
    if not isinstance(args, dict) or set(args) != {"order_id"}:
        return None
    order_id = args["order_id"]
    return order_id if isinstance(order_id, str) and order_id else None


def execute_call(call: dict[str, Any], principal: Principal) -> ToolResult:
    """Run one ``function_call`` item as ``principal``, or refuse it."""
    if call.get("name") != TOOL_NAME:
        return _deny(UNKNOWN_TOOL)
    order_id = _order_id(call.get("arguments"))
    if order_id is None:
        return _deny(INVALID_ARGUMENTS)
    order = ORDERS.get(order_id)
    owned = order is not None and order["tenant"] == principal.tenant and order["user"] == principal.user
    if not owned:
        # Unknown and foreign orders get the same answer, with no order field in it:
        # anything more would tell the caller which ids exist in other accounts.
        return _deny(PERMISSION_DENIED)
    return ToolResult(payload={"order_id": order_id, "status": order["status"], "source": TOOL_NAME})
# course: end execute_call
