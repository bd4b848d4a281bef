"""Your own tests for ag01. `course selftest` runs them on the course's reference (each must pass
there) and on every pitfall mutant of the chapter (each mutant should make at least one fail).
Write a test per rule you want to pin down; here is one to start from."""

import io

from agent.provider.sse import EventReader


class SmallReads(io.BytesIO):
    """A body that arrives three bytes at a time, as a slow network delivers it."""

    def read(self, n: int = -1) -> bytes:
        return super().read(3 if n is None or n < 0 else min(n, 3))


def test_two_events_read_in_small_pieces():
    events = [event.data for event in EventReader(SmallReads(b"data: one\n\ndata: two\n\n"))]
    assert events == ["one", "two"], f"two events, whatever the read size: {events}"
