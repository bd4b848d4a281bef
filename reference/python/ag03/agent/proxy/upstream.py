"""The upstream model, over HTTP (given): one POST to {base_url}/responses per request body."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from agent.proxy.errors import FailClosed

READ_SIZE = 65536


class HttpUpstream:
    """Callable as the policies' `upstream`: sends the body, returns the answer's chunks.

    The returned iterator has close(), which closes the connection: the policies call it whether
    they read the body to its end or stopped early. A non-2xx answer fails closed at once.
    """

    def __init__(self, base_url: str, api_key: str = "", timeout: float = 60.0) -> None:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) base URL: {base_url!r}")
        self._parts = parts
        self._api_key = api_key
        self._timeout = timeout

    def __call__(self, body: dict[str, Any]) -> Iterator[bytes]:
        kind = http.client.HTTPSConnection if self._parts.scheme == "https" else http.client.HTTPConnection
        connection = kind(self._parts.hostname, self._parts.port, timeout=self._timeout)
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        try:
            connection.request("POST", self._parts.path + "/responses", json.dumps(body).encode(), headers)
            answer = connection.getresponse()
        except OSError as exc:
            connection.close()
            raise FailClosed("upstream_unreachable", f"cannot reach the upstream: {exc}") from None
        if not 200 <= answer.status < 300:
            text = answer.read(2048).decode("utf-8", "replace")
            connection.close()
            raise FailClosed("upstream_status", f"the upstream answered {answer.status}: {text}")
        return _chunks(connection, answer)


def _chunks(connection: http.client.HTTPConnection, answer: http.client.HTTPResponse) -> Iterator[bytes]:
    try:
        while chunk := answer.read1(READ_SIZE):
            yield chunk
    except (OSError, http.client.HTTPException) as exc:
        raise FailClosed("truncated", f"the upstream connection broke: {exc}") from None
    finally:
        connection.close()
