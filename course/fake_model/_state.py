"""The fake model's memory, shared by its API modules: the script of replies, the requests received, the
tool-call ids issued, and the counters that make ids reproducible. Thread-safe; no I/O."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from course.fake_model._replies import Reply

MODEL_NAME = "course-fake-model"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake received it."""

    method: str
    path: str  # the request target as sent, query string included
    headers: dict[str, str]  # names lowercased; a header sent twice shows its last value here, every value in header_values
    body: Any  # the parsed JSON body; None when the body is empty or not JSON
    raw_body: bytes = b""
    header_values: dict[str, list[str]] = field(default_factory=dict)  # names lowercased: every value, in arrival order

    @classmethod
    def of(cls, method: str, path: str, headers: Iterable[tuple[str, str]], body: Any, raw_body: bytes = b"") -> RecordedRequest:
        """A request from its headers as received, (name, value) pairs in arrival order."""
        values: dict[str, list[str]] = {}
        for name, value in headers:
            values.setdefault(name.lower(), []).append(value)
        return cls(method, path, {name: found[-1] for name, found in values.items()}, body, raw_body, values)

    def values(self, name: str) -> list[str]:
        """Every value the request carried for this header (case-insensitive name), in arrival order."""
        return list(self.header_values.get(name.lower(), []))

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "headers": self.headers, "header_values": self.header_values,
                "body": self.body}


class State:
    """What one fake model remembers between requests."""

    def __init__(self, *, tool_name: str = "get_weather", tool_arguments: str = '{"city": "Paris"}') -> None:
        self.tool_name = tool_name
        self.tool_arguments = tool_arguments
        self.client_gone = threading.Event()  # set when a client left a stream before it was complete
        self._lock = threading.Lock()
        self._script: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._issued: set[str] = set()
        self._calls = 0
        self._completions = 0
        self._cleared = 0  # how many times clear() ran: a stream of before the last one is not this script's

    # ---- the script ----------------------------------------------------------------------------------

    def script(self, replies: Iterable[Reply]) -> None:
        replies = list(replies)
        for r in replies:
            if not isinstance(r, Reply):
                raise TypeError(f"script() takes Reply objects (see the factories), got {r!r}")
        with self._lock:
            self._script.extend(replies)

    def next_reply(self) -> Reply | None:
        with self._lock:
            return self._script.popleft() if self._script else None

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def clear(self) -> None:
        """Forget the queued replies, the recorded requests and ``client_gone`` (issued call ids are kept)."""
        with self._lock:
            self._script.clear()
            self._requests.clear()
            self._cleared += 1
            self.client_gone.clear()

    # ---- what happened -------------------------------------------------------------------------------

    def client_gone_setter(self) -> Callable[[], None]:
        """What a request's stream calls when its client leaves before the end: sets ``client_gone``,
        unless the state was cleared since the request came (a stream left over from a test before
        must not answer the next test's question)."""
        with self._lock:
            cleared = self._cleared

        def gone() -> None:
            with self._lock:
                if self._cleared == cleared:
                    self.client_gone.set()
        return gone

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def note_calls(self, ids: Iterable[str]) -> None:
        with self._lock:
            self._issued.update(ids)

    @property
    def issued_call_ids(self) -> set[str]:
        with self._lock:
            return set(self._issued)

    # ---- ids -----------------------------------------------------------------------------------------

    def new_call_id(self) -> str:
        with self._lock:
            self._calls += 1
            return f"call_fake_{self._calls}"

    def new_completion_id(self, prefix: str = "chatcmpl-fake") -> str:
        with self._lock:
            self._completions += 1
            return f"{prefix}-{self._completions}"

    def snapshot(self) -> dict[str, Any]:
        """What a catalog in another language reads over HTTP (``GET /_fake/state``)."""
        with self._lock:
            return {
                "pending": len(self._script),
                "requests": [r.to_json() for r in self._requests],
                "issued_call_ids": sorted(self._issued),
                "client_gone": self.client_gone.is_set(),
            }
