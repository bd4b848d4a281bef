"""The upstream model, over HTTP (given): one POST to {base_url}/responses per request body."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

from agent.proxy.errors import FailClosed

READ_SIZE = 65536


class HttpUpstream:
    """Callable as the policies' `upstream`: sends the body, returns the answer's chunks (an UpstreamBody).

    A non-2xx answer, or no answer at all, fails closed at once.
    """

    def __init__(self, base_url: str, api_key: str = "", timeout: float = 60.0) -> None:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) base URL: {base_url!r}")
        self._parts = parts
        self._api_key = api_key
        self._timeout = timeout  # bounds the connection and each read: a stalled upstream fails as truncated

    def __call__(self, body: dict[str, Any]) -> UpstreamBody:
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
        return UpstreamBody(connection, answer)


class UpstreamBody:
    """One upstream answer's body, chunk by chunk as it arrives.

    close() closes the connection, whether the body was read to its end, in part, or not at all; the
    end of the body and a broken connection close it too. A connection that breaks or stalls mid-body
    is FailClosed("truncated").
    """

    def __init__(self, connection: http.client.HTTPConnection, answer: http.client.HTTPResponse) -> None:
        self._connection = connection
        self._answer = answer

    def __iter__(self) -> UpstreamBody:
        return self

    def __next__(self) -> bytes:
        try:
            chunk = self._answer.read1(READ_SIZE)
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise FailClosed("truncated", f"the upstream connection broke: {exc}") from None
        if not chunk:
            self.close()
            if self._answer.length:  # http.client ends a body short of its Content-Length quietly
                raise FailClosed("truncated", f"the upstream connection closed {self._answer.length} bytes "
                                              "short of the length it announced")
            raise StopIteration
        return chunk

    def close(self) -> None:
        self._connection.close()
