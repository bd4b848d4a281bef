"""Pieces more than one adapter needs, each the same logic whatever the language: a worker with
nothing to run, the comment lines of a language whose comments are // and /* */ (Go, TypeScript), and
the report of a broad mutation tool (gremlins, StrykerJS) under that tool's names for its verdicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar, Optional

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


@dataclass
class ToolMutant:
    """One mutant a broad mutation tool made, with its verdict in the tool's own word."""

    status: str
    mutator: str
    file: str  # as the learner's tree names it (go/agent/provider/sse.go, ts/agent/provider/sse.ts)
    line: int
    column: int
    source: str = ""  # the line it changed, with the column marked
    replacement: str = ""  # what the tool put there, when it says

    @property
    def name(self) -> str:
        return f"{self.mutator} at {self.file}:{self.line}:{self.column}"


@dataclass
class ToolReport:
    """A broad mutation tool's run, scored as every tool's is: killed and timeouts over killed, timeouts
    and survivors. A subclass names the tool and its words for each verdict."""

    mutants: list[ToolMutant] = field(default_factory=list)
    LABEL: ClassVar[str]  # how the report's first line names the tool
    TOOL: ClassVar[str]  # the tool and its version, in the report's dict
    KILLED: ClassVar[str]
    TIMED_OUT: ClassVar[str]
    SURVIVED: ClassVar[str]
    NOT_COVERED: ClassVar[str]
    NOT_VIABLE: ClassVar[tuple[str, ...]]  # the mutants that did not compile or run
    NOT_VIABLE_NOTE: ClassVar[str] = ""

    def count(self, *statuses: str) -> int:
        return sum(m.status in statuses for m in self.mutants)

    @property
    def judged(self) -> int:
        """Killed, timed out and survived: the mutants a test run decided."""
        return self.count(self.KILLED, self.TIMED_OUT, self.SURVIVED)

    @property
    def score(self) -> float:
        """Killed (timeouts count as killed, as mutmut's score counts them) over every judged mutant."""
        return self.count(self.KILLED, self.TIMED_OUT) / self.judged if self.judged else 0.0

    def _unmet(self) -> list[ToolMutant]:
        return [m for m in self.mutants if m.status in (self.SURVIVED, self.NOT_COVERED)]

    def show(self, echo: Callable[[str], None]) -> None:
        echo(f"{self.LABEL}: {len(self.mutants)} mutants, {self.count(self.KILLED)} killed, "
             f"{self.count(self.TIMED_OUT)} timeouts, {self.count(self.SURVIVED)} survived, "
             f"{self.count(self.NOT_COVERED)} not covered by any test, "
             f"{self.count(*self.NOT_VIABLE)} not viable{self.NOT_VIABLE_NOTE}")
        echo(f"score: {self.score:.1%} (killed and timeouts over killed, timeouts and survivors)")
        for mutant in self._unmet():
            echo(f"\n--- {'survived' if mutant.status == self.SURVIVED else 'no test'}: {mutant.name}"
                 + (f" -> {mutant.replacement}" if mutant.replacement else ""))
            echo(mutant.source)

    def as_dict(self) -> dict:
        return {"tool": self.TOOL, "judged": self.judged, "killed": self.count(self.KILLED),
                "timeouts": self.count(self.TIMED_OUT),
                "survived": [m.name for m in self.mutants if m.status == self.SURVIVED],
                "not_covered": [m.name for m in self.mutants if m.status == self.NOT_COVERED],
                "not_viable": self.count(*self.NOT_VIABLE), "score": round(self.score, 4),
                "sources": {m.name: m.source for m in self._unmet()}}
