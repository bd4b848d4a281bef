"""The application: one handler for the wire layer, routing each request to an API module.

Every API module exposes ``ROUTES``, a mapping ``(method, path) -> handler(request, responder, state)``;
the application records each API request, finds its handler, and turns an
:class:`~course.fake_model._errors.APIError` (or an unexpected exception) into an error answer.
Unknown paths get the real API's 404 ``Invalid URL (METHOD /path)``; a known path asked with another
method a 405; HEAD is answered wherever GET is, without a body.
"""

from __future__ import annotations

import json
import traceback
from types import ModuleType
from typing import Callable, Iterable, Mapping

from course.fake_model import _chat as chat, _control as control, _models as models, _responses as responses
from course.fake_model._errors import APIError, error_body
from course.fake_model._state import RecordedRequest, State
from course.fake_model._wire import Request, Responder

#: The API modules served. A new API is one more module with ROUTES, added here.
API_MODULES: tuple[ModuleType, ...] = (chat, responses, models)


class App:
    def __init__(self, state: State, *, apis: Iterable[ModuleType] = API_MODULES, log: Callable[[str], None] | None = None,
                 routes: Mapping[tuple[str, str], Callable] | None = None) -> None:
        """``routes``: more control routes, ``(method, path) -> handler`` (the server's own, such as
        ``/_fake/fresh``); their paths start with ``control.PREFIX`` and are never recorded."""
        self.state = state
        self._log = log
        self._routes: dict[str, dict[str, Callable]] = {}
        for table in (*(module.ROUTES for module in (*apis, control)), routes or {}):
            for (method, path), handler in table.items():
                self._routes.setdefault(path, {})[method] = handler

    def __call__(self, request: Request, responder: Responder) -> None:
        if not request.path.startswith(control.PREFIX):
            self.state.record(_recorded(request))
        methods = self._routes.get(request.path)
        try:
            if methods is None:
                raise APIError(404, f"Invalid URL ({request.method} {request.path})")
            handler = methods.get("GET" if request.method == "HEAD" else request.method)
            if handler is None:
                allowed = ", ".join(sorted(methods))
                raise APIError(405, f"Invalid method for URL ({request.method} {request.path})", headers=(("Allow", allowed),))
            handler(request, responder, self.state)
            self._say(f"{request.method} {request.target} -> answered")
        except APIError as exc:
            self._say(f"{request.method} {request.target} -> {exc.status} {exc.message}")
            self._fail(responder, exc.status, exc.body(), exc.headers)
        except Exception as exc:  # noqa: BLE001 - a bug in the fake must not kill the connection thread silently
            self._say(f"{request.method} {request.target} -> 500: {traceback.format_exc()}")
            self._fail(responder, 500, error_body(f"The fake model failed: {exc!r}", "server_error"), ())

    def _fail(self, responder: Responder, status: int, body: dict, headers: tuple[tuple[str, str], ...]) -> None:
        if responder.started:  # too late for a status: end the connection so the client sees a broken answer
            if not responder.finished:
                responder.close()
            return
        responder.send(status, json.dumps(body).encode("utf-8"), "application/json", headers)

    def _say(self, line: str) -> None:
        if self._log is not None:
            self._log(line)


def _recorded(request: Request) -> RecordedRequest:
    try:
        body = json.loads(request.body) if request.body else None
    except ValueError:
        body = None
    return RecordedRequest.of(request.method, request.target, request.headers, body, request.body)
