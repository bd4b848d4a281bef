"""Scripting over HTTP, for catalogs in any language: ``/_fake/...`` (never recorded as requests).

* ``POST /_fake/script`` with ``[reply, ...]`` or ``{"replies": [...]}`` (the JSON form of
  ``_replies.py``) queues replies; the answer says how many are pending.
* ``GET /_fake/state``: pending replies, the recorded requests (method, path, body, ``headers`` with the last
  value of each header and ``header_values`` with every value, names lowercased), issued tool-call ids,
  ``client_gone``.
* ``POST /_fake/reset``: forget the script, the recorded requests and ``client_gone``.
* ``POST /_fake/wait`` with ``{"for": "client_gone", "timeout": SECONDS}``: answers once a client has
  left a stream before it was complete, or once the timeout (at most ``WAIT_LIMIT``) has passed:
  ``{"client_gone": true|false}``. A catalog in another process waits on the event, not on a clock.
* ``POST /_fake/fresh``: starts another fake model, of its own (its own port, script, recorded
  requests, ids), and answers ``{"base_url": "http://127.0.0.1:PORT/v1", "port": PORT}``: for a
  catalog whose tests may run at once (the Python track's workers share one run's fake model), each
  test takes a fresh one instead of resetting a shared one. It lives until ``POST /_fake/release``
  with ``{"port": PORT}`` on the fake model that made it, or until that one stops.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from course.fake_model import _contract as contract
from course.fake_model._errors import APIError
from course.fake_model._replies import script_from_json
from course.fake_model._state import State
from course.fake_model._wire import Request, Responder

PREFIX = "/_fake/"
#: The longest ``/_fake/wait`` waits, whatever it is asked: a catalog's timeout bounds its test anyway.
WAIT_LIMIT = 30.0


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


def wait(request: Request, responder: Responder, state: State) -> None:
    asked = _object(request)
    if asked.get("for") != "client_gone":
        raise APIError(400, "Invalid wait: 'for' must be 'client_gone'", param="for")
    timeout = asked.get("timeout", 0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 <= timeout:
        raise APIError(400, f"Invalid wait: 'timeout' must be a number of seconds >= 0, got {timeout!r}", param="timeout")
    _send(responder, {"client_gone": state.client_gone.wait(min(float(timeout), WAIT_LIMIT))})


def _object(request: Request) -> dict[str, Any]:
    body = contract.parse_body(request.body) if request.body else {}
    if not isinstance(body, dict):
        raise APIError(400, f"Invalid body: expected a JSON object, got {type(body).__name__}")
    return body


ROUTES = {
    ("POST", PREFIX + "script"): add_script,
    ("GET", PREFIX + "state"): show_state,
    ("POST", PREFIX + "reset"): reset,
    ("POST", PREFIX + "wait"): wait,
}


Handler = Callable[[Request, Responder, State], None]


def family_routes(fresh: Callable[[], int], release: Callable[[int], bool], base_url: Callable[[int], str]) -> dict[tuple[str, str], Handler]:
    """The routes that start and stop fake models of their own (``/_fake/fresh``, ``/_fake/release``):
    ``fresh()`` starts one and gives its port, ``release(port)`` stops it (False: no such fake model of
    this one's), ``base_url(port)`` says where it is. The server that owns them passes them in."""

    def start_fresh(request: Request, responder: Responder, state: State) -> None:
        port = fresh()
        _send(responder, {"base_url": base_url(port), "port": port})

    def stop_fresh(request: Request, responder: Responder, state: State) -> None:
        port = _object(request).get("port")
        if isinstance(port, bool) or not isinstance(port, int):
            raise APIError(400, f"Invalid release: 'port' must be the port /_fake/fresh gave, got {port!r}", param="port")
        if not release(port):
            raise APIError(404, f"No fake model on port {port} was started by this one", param="port")
        _send(responder, {"released": port})

    return {("POST", PREFIX + "fresh"): start_fresh, ("POST", PREFIX + "release"): stop_fresh}
