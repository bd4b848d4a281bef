"""Pieces more than one adapter needs, each the same logic whatever the language: a worker with
nothing to run, and the comment lines of a language whose comments are // and /* */ (Go, TypeScript)."""

from __future__ import annotations

from typing import Optional

from course.languages.protocol import Collected, Ended, Event, Finished


class Done:
    """A worker with nothing left to run."""

    def __init__(self) -> None:
        self.events: list[Event] = [Collected(()), Finished()]

    def next_event(self, deadline: Optional[float]) -> Optional[Event]:
        return self.events.pop(0) if self.events else None

    def kill(self) -> None:
        pass

    def close(self) -> Ended:
        return Ended(exit_code=0)


def slash_comment_lines(text: str) -> set[int]:
    """Lines (1-based) that hold only // or /* */ comments, or nothing: what `course diff` leaves out
    by default in a language of C's comments."""
    quiet, in_block = set(), False
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if in_block:
            quiet.add(n)
            in_block = "*/" not in stripped
        elif not stripped or stripped.startswith("//"):
            quiet.add(n)
        elif stripped.startswith("/*"):
            quiet.add(n)
            in_block = "*/" not in stripped[2:]
    return quiet
