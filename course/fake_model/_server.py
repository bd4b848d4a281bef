"""The fake model as one object: state, application and wire server put together, on a loopback address."""

from __future__ import annotations

import json
import socket
import sys
import threading
from pathlib import Path
from typing import Any, Callable, TextIO

from course.fake_model._app import App
from course.fake_model._control import family_routes
from course.fake_model._replies import Reply, script_from_json
from course.fake_model._state import RecordedRequest, State
from course.fake_model._wire import Server


class FakeModel:
    """An OpenAI-compatible server on a loopback address, run in background threads.

    ``FakeModel()`` binds 127.0.0.1 on an ephemeral port at construction; :meth:`start` (or ``with``)
    starts serving and :meth:`stop` stops promptly (open connections shut down, threads joined).

    Attributes: ``base_url`` (``http://127.0.0.1:PORT/v1``), ``port``, ``requests`` (a snapshot list of
    :class:`RecordedRequest`), ``client_gone`` (a ``threading.Event`` set when a client left a stream
    before it was complete), ``issued_call_ids`` (every tool-call id this fake has sent).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, tool_name: str = "get_weather",
                 tool_arguments: str = '{"city": "Paris"}', log: Callable[[str], None] | None = None) -> None:
        _check_loopback(host)
        self.host = "127.0.0.1" if host == "localhost" else host
        self.state = State(tool_name=tool_name, tool_arguments=tool_arguments)
        self._log = log
        self._fresh: dict[int, FakeModel] = {}  # the fake models started through /_fake/fresh, by port
        self._fresh_lock = threading.Lock()
        routes = family_routes(self._start_fresh, self._release_fresh, self._url_of)
        self._server = Server(self.host, port, App(self.state, log=log, routes=routes), on_client_gone=self.state.client_gone_setter)
        self.port: int = self._server.port
        self._started = False

    # ---- lifecycle -------------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return self._url_of(self.port)

    def start(self) -> FakeModel:
        """Start serving (idempotent). Returns self."""
        if self._server.stopping.is_set():
            raise RuntimeError("a stopped FakeModel cannot be restarted; create a new one")
        self._server.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop accepting, shut down open connections and join every thread (each wait bounded); the
        fake models started through ``/_fake/fresh`` stop too."""
        self._server.stop(timeout)
        with self._fresh_lock:
            fresh, self._fresh = list(self._fresh.values()), {}
        for model in fresh:
            model.stop(timeout)

    # ---- fake models of its own (/_fake/fresh, /_fake/release) -------------------------------------------

    def _start_fresh(self) -> int:
        model = FakeModel(self.host, tool_name=self.tool_name, tool_arguments=self.tool_arguments, log=self._log).start()
        with self._fresh_lock:
            if not self.stopping:
                self._fresh[model.port] = model
                return model.port
        model.stop()
        raise RuntimeError("the fake model is stopping")

    def _release_fresh(self, port: int) -> bool:
        with self._fresh_lock:
            model = self._fresh.pop(port, None)
        if model is None:
            return False
        model.stop()
        return True

    def _url_of(self, port: int) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def stopping(self) -> bool:
        return self._server.stopping.is_set()

    @property
    def open_connections(self) -> int:
        return self._server.open_connections

    # ---- scripting and inspection ------------------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Queue replies; each API request that passes validation consumes the next one, in order."""
        self.state.script(replies)

    def script_json(self, data: Any) -> None:
        """Queue replies given in their JSON form (a list, or ``{"replies": [...]}``); ValueError if malformed."""
        self.state.script(script_from_json(data))

    def script_file(self, path: str | Path) -> None:
        """Queue the replies of a JSON file; ValueError (one line) when it cannot be read or is malformed."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise ValueError(f"{path} is not JSON: {exc}") from None
        try:
            self.script_json(data)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    def clear(self) -> None:
        """Forget the queued replies, the recorded requests and ``client_gone`` (issued call ids are kept)."""
        self.state.clear()

    @property
    def pending(self) -> int:
        """How many scripted replies have not been consumed yet."""
        return self.state.pending

    @property
    def requests(self) -> list[RecordedRequest]:
        """The API requests received so far, in arrival order (a copy)."""
        return self.state.requests

    @property
    def issued_call_ids(self) -> set[str]:
        return self.state.issued_call_ids

    @property
    def client_gone(self) -> threading.Event:
        return self.state.client_gone

    @property
    def tool_name(self) -> str:
        return self.state.tool_name

    @property
    def tool_arguments(self) -> str:
        return self.state.tool_arguments


def _check_loopback(host: str) -> None:
    """The fake model only ever listens on a loopback address."""
    if host == "localhost":
        return
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            packed = socket.inet_pton(family, host)
        except OSError:
            continue
        if (family == socket.AF_INET and packed[0] == 127) or (family == socket.AF_INET6 and packed == b"\0" * 15 + b"\1"):
            return
        break
    raise ValueError(f"the fake model only listens on loopback addresses (127.0.0.0/8, ::1, localhost), not {host!r}")


def serve(port: int = 0, host: str = "127.0.0.1", *, script: str | Path | None = None, verbose: bool = True,
          out: TextIO | None = None, ready: Callable[[FakeModel], None] | None = None, until: threading.Event | None = None) -> None:
    """Run a fake model in the foreground, printing its URL, until Ctrl-C (or ``until`` is set)."""
    out = out or sys.stdout

    def log(line: str) -> None:
        print(f"fake-model: {line}", file=sys.stderr, flush=True)

    with FakeModel(host, port, log=log if verbose else None) as fm:
        if script is not None:
            fm.script_file(script)
        print(f"course fake model listening on {fm.base_url}  (Ctrl-C to stop)", file=out, flush=True)
        print(f"  POST {fm.base_url}/chat/completions   GET {fm.base_url}/models   script it: POST http://{fm.host}:{fm.port}/_fake/script",
              file=out, flush=True)
        print(f"try: curl -s {fm.base_url}/chat/completions -H 'Content-Type: application/json' "
              """-d '{"model": "fake", "messages": [{"role": "user", "content": "Weather in Paris?"}]}'""", file=out, flush=True)
        if ready is not None:
            ready(fm)
        stop = until or threading.Event()
        try:
            while not stop.wait(3600):
                pass
        except KeyboardInterrupt:
            print("stopped", file=out, flush=True)
