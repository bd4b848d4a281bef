"""A demonstration's panics as one line each: `course run` on stubs or on buggy code says what
panicked, and where in the learner's code, instead of a goroutine dump.

A Go program that panics (or dies of a fatal error) writes the panic's value, then every
goroutine's stack, and ends: from the panic's line to the end of the dump, what it writes to stderr
becomes one line; everything else passes unchanged. `course run --traceback` shows them whole.
"""

from __future__ import annotations

import os
import re

_START = ("panic: ", "fatal error: ")
_RECOVERED = re.compile(r" \[recovered[^\]]*\]$")
_FRAME = re.compile(r"^\t(?P<file>/\S+\.go):(?P<line>\d+)(?: \+0x[0-9a-f]+)?$")
_CALL = re.compile(r"^(?:created by )?\S+\(.*\)(?: in goroutine \d+)?$")


def _in_dump(line: str) -> bool:
    """A line of a panic's goroutine dump."""
    return (not line.strip() or line.startswith(("goroutine ", "\t", "created by ", "[signal ", "exit status ",
                                                  "...additional frames elided...", *_START))
            or bool(_CALL.match(line)))


class Collapsed:
    """Go panics in a stream of lines, each turned into one line (see the module's text)."""

    def __init__(self, code_root: os.PathLike | str, chapter_id: str, program: os.PathLike | str = "") -> None:
        self.code_root = os.path.realpath(code_root)
        self.program = os.path.realpath(program) if program else ""  # the demonstration's own folder
        self.chapter_id = chapter_id
        self.block: list[str] | None = None

    def feed(self, line: str) -> list[str]:
        if self.block is None:
            if line.startswith(_START):
                self.block = [line]
                return []
            return [line]
        if _in_dump(line):
            self.block.append(line)
            return []
        return self.end() + [line]

    def end(self) -> list[str]:
        if self.block is None:
            return []
        block, self.block = self.block, None
        return [self.summary(block)]

    def summary(self, block: list[str]) -> str:
        value = _RECOVERED.sub("", block[0]).strip()
        kind, _, said = value.partition(": ")
        where = ""
        for line in block:  # the innermost frame of the learner's code comes first
            frame = _FRAME.match(line)
            if frame and self._learners(frame["file"]):
                where = f"{os.path.relpath(frame['file'], self.code_root)}:{frame['line']}"
                break
        at = f" at {where}" if where else ""
        if kind == "panic" and said.strip('"').startswith("TODO"):
            return f'not written yet: your code{at} panics with "{said.strip(chr(34))}"'
        if where:
            return (f"your code {'panicked' if kind == 'panic' else 'died'}: {said}{at}; `course check "
                    f"{self.chapter_id}` says which rule it breaks (`course run --traceback` shows the whole dump)")
        return f"the demonstration stopped: {value} (`course run --traceback` shows the whole dump)"

    def _learners(self, path: str) -> bool:
        real = os.path.realpath(path)
        inside = os.path.commonpath([real, self.code_root]) == self.code_root
        in_program = bool(self.program) and os.path.commonpath([real, self.program]) == self.program
        return inside and not in_program and not real.endswith("_test.go")
