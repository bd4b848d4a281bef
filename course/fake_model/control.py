"""Scripting over HTTP, for catalogs in any language: ``/_fake/...`` (never recorded as requests).

* ``POST /_fake/script`` with ``[reply, ...]`` or ``{"replies": [...]}`` (the JSON form of
  ``replies.py``) queues replies; the answer says how many are pending.
* ``GET /_fake/state``: pending replies, the recorded requests (method, path, body, ``headers`` with the last
  value of each header and ``header_values`` with every value, names lowercased), issued tool-call ids,
  ``client_gone``.
* ``POST /_fake/reset``: forget the script, the recorded requests and ``client_gone``.
"""

from __future__ import annotations

import json
from typing import Any

from course.fake_model import contract
from course.fake_model.errors import APIError
from course.fake_model.replies import script_from_json
from course.fake_model.state import State
from course.fake_model.wire import Request, Responder

PREFIX = "/_fake/"


def _send(responder: Responder, obj: Any) -> None:
    responder.send(200, json.dumps(obj).encode("utf-8"), "application/json")


def add_script(request: Request, responder: Responder, state: State) -> None:
    try:
        replies = script_from_json(contract.parse_body(request.body))
    except ValueError as exc:
        raise APIError(400, f"Invalid script: {exc}", param="replies") from None
    state.script(replies)
    _send(responder, {"queued": len(replies), "pending": state.pending})


def show_state(request: Request, responder: Responder, state: State) -> None:
    _send(responder, state.snapshot())


def reset(request: Request, responder: Responder, state: State) -> None:
    state.clear()
    _send(responder, {"pending": 0})


ROUTES = {
    ("POST", PREFIX + "script"): add_script,
    ("GET", PREFIX + "state"): show_state,
    ("POST", PREFIX + "reset"): reset,
}
