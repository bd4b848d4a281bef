"""The one place an error answer is built: OpenAI's ``{"error": {"message", "type", "param", "code"}}``.

Handlers raise :class:`APIError`; the application turns it into a JSON answer with its status and headers.
Scripted HTTP errors and in-band stream errors use :func:`error_body` too, so every error the fake model
sends has the same shape as the real API's.
"""

from __future__ import annotations

from typing import Any

INVALID_REQUEST = "invalid_request_error"


def error_object(message: str, type: str = INVALID_REQUEST, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """The object under ``"error"``: all four keys, always present (``param`` and ``code`` may be null)."""
    return {"message": message, "type": type, "param": param, "code": code}


def error_body(message: str, type: str = INVALID_REQUEST, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": error_object(message, type, param, code)}


class APIError(Exception):
    """An error answer: raise it from a handler and the client receives it as the real API would send it."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = INVALID_REQUEST,
        param: str | None = None,
        code: str | None = None,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.headers = headers

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.type, self.param, self.code)
