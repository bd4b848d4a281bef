"""A demonstration's tracebacks as one line each: `course run` on stubs or on buggy code says what
was raised, and where in the learner's code, instead of a screenful of frames.

What the demonstration writes to stderr passes through a Collapsed filter line by line: a Python
traceback (chained exceptions and exception groups included), wherever it comes from (the main
program, a server's thread, a library that prints one and goes on), becomes a single line; every
other line passes unchanged. `course run --traceback` shows them whole.
"""

from __future__ import annotations

import os
import re

_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+)(?:, in (?P<function>.+))?$')
_START = ("Traceback (most recent call last):", "Exception Group Traceback (most recent call last):")
# What Python and its servers print just before a traceback they report and go on from (a thread's,
# a request handler's): part of the traceback's announcement, dropped with it.
_ANNOUNCING = re.compile(r"^(?:Exception in thread .*:|Exception ignored in: .*|"
                         r"Exception occurred during processing of request from .*|-{40})$")
_CHAINED = ("During handling of the above exception, another exception occurred:",
            "The above exception was the direct cause of the following exception:")


def _unframed(line: str) -> str:
    """A line of an exception group's traceback without its "| " and "+" framing."""
    return line.lstrip().lstrip("+-|").strip() if line.lstrip().startswith(("|", "+")) else line.strip()


class Collapsed:
    """Python tracebacks in a stream of lines, each turned into one line (see the module's text)."""

    def __init__(self, code_root: os.PathLike | str, chapter_id: str) -> None:
        self.code_root = os.path.realpath(code_root)
        self.chapter_id = chapter_id
        self.block: list[str] | None = None  # the traceback being read
        self.after = False  # its exception line was read: what follows may chain another one
        self.said: set[str] = set()  # one line per distinct failure (a server's thread and its client)
        self.held: list[str] = []  # lines that may announce a traceback
        self.ruled = False  # the traceback read was announced between rules of dashes: its closing rule goes too

    def feed(self, line: str) -> list[str]:
        """The lines to show now for one more line of the stream (without its newline)."""
        bare = _unframed(line)
        if self.block is None:
            if bare in _START:
                self.block, self.after = [line], False
                self.ruled = any(held.startswith("-" * 40) for held in self.held)
                self.held = []
                return []
            if self.ruled and line == "-" * 40 and not self.held:  # the rule that closes the report
                self.ruled = False
                return []
            self.ruled = False
            if _ANNOUNCING.match(line) and len(self.held) < 2:
                self.held.append(line)
                return []
            shown, self.held = self.held, []
            return shown + [line]
        if self.after:
            if not line.strip() or bare in _CHAINED:  # a chained exception's traceback may follow
                self.block.append(line)
                return []
            if bare in _START and any(_unframed(held) in _CHAINED for held in self.block[-3:]):
                self.block.append(line)
                self.after = False
                return []
            if line[:1].isspace() and line.lstrip().startswith(("|", "+")):  # an exception group goes on
                self.block.append(line)
                return []
            return self._close() + self.feed(line)
        self.block.append(line)
        if line[:1].isspace() or not line.strip() or bare in _CHAINED:
            return []
        self.after = True  # a line at the margin after the frames: the exception itself
        return []

    def end(self) -> list[str]:
        """The lines still held at the end of the stream."""
        held, self.held = self.held, []
        return (self._close() if self.block is not None else []) + held

    def _close(self) -> list[str]:
        block, self.block, self.after = self.block or [], None, False
        summary = self.summary(block)
        if summary in self.said:
            return []
        self.said.add(summary)
        return [summary]

    def summary(self, block: list[str]) -> str:
        """One line for a traceback: the last exception raised, at the deepest line of the learner's code."""
        frames: list[tuple[str, int, str]] = []
        exception = ""
        for line in block:
            bare = _unframed(line)
            frame = _FRAME.match(bare)
            if frame:
                frames.append((frame["file"], int(frame["line"]), frame["function"] or ""))
            elif bare in _START or bare in _CHAINED:
                frames = []  # the exception shown last is the one that ended the program
            elif line.strip() and not line[:1].isspace():
                exception = line.strip()
            elif line.lstrip().startswith("|") and bare and not bare.startswith(("^", "~")) and _is_exception(bare):
                exception = bare
        mine = [f for f in frames if self._learners(f[0])]
        exception = exception or "an exception"
        if mine:
            path, number, function = mine[-1]
            where = f"{os.path.relpath(path, self.code_root)}:{number}" + (
                f" (in {function})" if function and not function.startswith("<") else "")
            kind, _, message = exception.partition(": ")
            if kind.rsplit(".", 1)[-1] == "NotImplementedError":
                said = f": {message}" if message else ""
                return f"not written yet: {where} raises NotImplementedError{said}"
            return (f"your code raised {exception} at {where}; `course check {self.chapter_id}` says which rule "
                    "it breaks (`course run --traceback` shows the whole traceback)")
        place = f" at {os.path.basename(frames[-1][0])}:{frames[-1][1]}" if frames else ""
        return f"the demonstration stopped: {exception}{place} (`course run --traceback` shows the whole traceback)"

    def _learners(self, path: str) -> bool:
        """A frame of the code under test: in its folder, not in an installed package."""
        if path.startswith("<"):
            return False
        real = os.path.realpath(path)
        try:
            inside = os.path.commonpath([real, self.code_root]) == self.code_root
        except ValueError:
            return False
        return inside and "site-packages" not in real.split(os.sep)


def _is_exception(text: str) -> bool:
    """Whether a line looks like an exception's own line ('ValueError: x', 'pkg.Error')."""
    head = text.split(":", 1)[0]
    return bool(re.fullmatch(r"[A-Za-z_][\w.]*", head)) and (head.endswith(("Error", "Exception", "Group", "Exit",
                                                                             "Interrupt", "Warning")) or ":" in text)
