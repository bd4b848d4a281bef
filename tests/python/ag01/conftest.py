"""Shared fixtures of the ag01 catalog: a fake model per test, a sleep recorder, a reader of small pieces."""

from __future__ import annotations

import pytest

from course import fake_model


class SleepRecorder(list):
    """Stands in for time.sleep in a RetryPolicy: records every wait it is asked for, never waits."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


class ChunkedReader:
    """A binary stream whose read() returns at most `size` bytes, the way a socket delivers small packets."""

    def __init__(self, data: bytes, size: int) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self._data = data
        self._size = size
        self._pos = 0
        self.reads = 0

    def read(self, n: int = -1) -> bytes:
        self.reads += 1
        if n == 0 or self._pos >= len(self._data):
            return b""
        take = self._size if n is None or n < 0 else min(n, self._size)
        piece = self._data[self._pos : self._pos + take]
        self._pos += len(piece)
        return piece


@pytest.fixture
def fake():
    """A fresh course fake model on 127.0.0.1 (ephemeral port), stopped after the test."""
    with fake_model.FakeModel() as fm:
        yield fm


@pytest.fixture
def sleeps() -> SleepRecorder:
    """Pass as RetryPolicy(sleep=sleeps); afterwards `sleeps` is the list of waits asked for."""
    return SleepRecorder()


@pytest.fixture
def chunked():
    """chunked(data, n): a stream over `data` whose reads return at most n bytes."""
    return ChunkedReader
