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
    """The JSON body for ``POST /v1/responses``: model, instructions, question, tool, budget.

    Return a dict with exactly four keys:

    - ``"model"``: ``model``;
    - ``"input"``: two new messages, in this order:
      ``{"role": "developer", "content": DEVELOPER_INSTRUCTIONS}`` then
      ``{"role": "user", "content": question}`` (the question exactly as given, not stripped);
    - ``"tools"``: a list holding one deep copy of ``READ_ORDER_TOOL`` (``copy.deepcopy``), made
      for this request: editing any part of a request, however deep, never changes the module's
      tool or another request;
    - ``"max_output_tokens"``: ``max_output_tokens``.

    Raise ``ValueError`` when ``model`` or ``question`` is not a string, is empty, or holds only
    whitespace (spaces, tabs, newlines); any other text is accepted as it is, whatever its
    length or characters (``"ft:gpt-4o-mini:acme::abc123"`` is a model id); and when ``max_output_tokens`` is not a positive ``int``:
    0, negative numbers, ``True``/``False``, floats (even ``500.0``), ``"500"`` and ``None`` are not
    budgets; 1 is the smallest one.
    """
    raise NotImplementedError("build_request: assemble the request body")
