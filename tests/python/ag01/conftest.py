"""Shared fixtures of the ag01 catalog: servers on 127.0.0.1, a sleep recorder, a reader of small pieces.

Every test that talks to a server also checks, at its end, that the client closed each connection it
opened: unreachable objects are collected and an unclosed socket among them fails the test. CPython's
reference counting would otherwise close a forgotten socket quietly, and a client that leaks one
connection per request passes every other check.

The collection scans only what was made since the previous check: what survived it is frozen
(gc.freeze), so a full collection costs a fraction of a millisecond instead of a scan of everything
pytest has loaded. Nothing a test makes is frozen before its own check has looked at it.
"""

from __future__ import annotations

import contextlib
import gc
import io
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.append(_HERE)  # appended, so it never shadows the code under test

from ag01_fake import FakeModel  # noqa: E402
from ag01_http import RawServer  # noqa: E402


class SleepRecorder(list):
    """Stands in for time.sleep in a RetryPolicy: records every wait it is asked for, never waits.

    `on_sleep`, when set, is called at each wait (before it is recorded), e.g. to look at the server.
    """

    on_sleep = None

    def __call__(self, seconds: float) -> None:
        if self.on_sleep is not None:
            self.on_sleep(seconds)
        self.append(seconds)


class ChunkedReader:
    """A binary stream whose read() returns at most `size` bytes, the way a socket delivers small packets."""

    def __init__(self, data: bytes, size: int) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self._read = io.BytesIO(data).read  # keeps the position and cuts in C: the reads are many
        self._size = size

    def read(self, n: int = -1) -> bytes:
        return self._read(self._size if n is None or n < 0 or n > self._size else n)


# ---- leak check ------------------------------------------------------------------------------------


@contextlib.contextmanager
def no_unclosed_client_sockets(port: int) -> Iterator[None]:
    """Fails the test when a client socket to `port` was left for the garbage collector to close."""
    marker = f"raddr=('127.0.0.1', {port})"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield
        gc.collect()  # every generation: a socket kept by a cycle may have aged into the oldest one
        gc.freeze()  # the survivors outlive this test; later checks need not scan them again
    leaked = []
    for w in caught:
        if not issubclass(w.category, ResourceWarning):
            continue
        if marker in str(w.message):
            leaked.append(str(w.message))
        else:  # another server's (a test may use two): passed on to the check around this one
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if leaked:
        pytest.fail(
            f"{len(leaked)} connection(s) to the server were never closed by the client (found by the garbage "
            "collector, after the test): close the connection when a stream ends, when an answer is an error, "
            "and before a retry",
            pytrace=False,
        )


@pytest.fixture
def fake():
    """This worker's course fake model (made by the run's, COURSE_FAKE_MODEL_URL), reset for the test
    (see ag01_fake.py)."""
    fm = FakeModel.of_this_process()
    fm.clear()
    with no_unclosed_client_sockets(fm.port):
        yield fm


def raw_server() -> Iterator[RawServer]:
    srv = RawServer()
    try:
        with no_unclosed_client_sockets(srv.port):
            yield srv
    finally:
        srv.close()


@pytest.fixture
def server():
    """A RawServer: exact bytes per request, open connections counted; stopped after the test."""
    yield from raw_server()


@pytest.fixture
def second_server(server):
    """Another RawServer, for a test that runs two exchanges at once (set up after `server`, so its
    check runs first and passes other sockets on to the check of `server`)."""
    yield from raw_server()


@pytest.fixture
def fresh_server():
    """Makes RawServers on demand, each with the same leak check and stopped after the test: for a
    test that judges a run again where no request of an earlier run, read late by a busy machine, can
    reach it (set up after `server`, so its checks run first)."""
    with contextlib.ExitStack() as stack:
        yield lambda: stack.enter_context(contextlib.contextmanager(raw_server)())


@pytest.fixture
def sleeps() -> SleepRecorder:
    """Pass as RetryPolicy(sleep=sleeps); afterwards `sleeps` is the list of waits asked for."""
    return SleepRecorder()


@pytest.fixture
def chunked():
    """chunked(data, n): a stream over `data` whose reads return at most n bytes."""
    return ChunkedReader
