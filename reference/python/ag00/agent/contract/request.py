"""Build one non-streaming Responses request.

Credentials and the user's identity are not part of the body: the API key
travels in a header set by the caller, and identity stays in the application.
"""

from __future__ import annotations

import copy
from typing import Any

from agent.contract.orders import READ_ORDER_TOOL

DEVELOPER_INSTRUCTIONS = (
    "Answer questions about orders with the read_order tool; never guess an order's status. "
    "Pass only order_id: the application knows who is signed in and checks access itself. "
    "Reply with a JSON object with exactly the keys order_id, status and source, copied from the tool result. "
    "Never try to change an order."
)

# Caps what one call may generate (and cost). A reply cut by this cap comes back
# with status "incomplete", reason "max_output_tokens".
OUTPUT_TOKEN_BUDGET = 500


def build_request(question: str, *, model: str, max_output_tokens: int = OUTPUT_TOKEN_BUDGET) -> dict[str, Any]:
    # course: begin build_request
    """The JSON body for ``POST /v1/responses``: model, instructions, question, tool, budget."""
    if not isinstance(model, str) or not model.strip():
        raise ValueError("model must be a non-empty model id")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question must be non-empty text")
    # bool is an int in Python; True must not pass for a budget of one token.
    if isinstance(max_output_tokens, bool) or not isinstance(max_output_tokens, int) or max_output_tokens < 1:
        raise ValueError(f"max_output_tokens must be a positive integer, got {max_output_tokens!r}")
    return {
        "model": model,
        "input": [
            {"role": "developer", "content": DEVELOPER_INSTRUCTIONS},
            {"role": "user", "content": question},
        ],
        # A copy, so that whoever edits this request cannot edit the module's tool.
        "tools": [copy.deepcopy(READ_ORDER_TOOL)],
        "max_output_tokens": max_output_tokens,
    }
    # course: end build_request
