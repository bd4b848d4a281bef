"""Your own tests for ag03. `course selftest` runs them on the course's reference (each must pass
there) and on every pitfall mutant of the chapter (each mutant should make at least one fail).
Write a test per rule you want to pin down; here is one to start from."""

import pytest

from agent.proxy.errors import FailClosed
from agent.proxy.state import StreamState


def test_a_stream_without_its_terminal_event_fails_closed():
    state = StreamState()
    state.feed({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "model": "m"}})
    with pytest.raises(FailClosed):
        state.finish()
