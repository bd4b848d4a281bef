"""A demonstration's uncaught error as one line: `course run` on stubs or on buggy code says what was
thrown, and where in the learner's code, instead of node's source excerpt and stack.

Node writes an uncaught error as the line that threw (`file:line`, the source line, a caret), a blank
line, the error's `Name: message`, its stack (`    at fn (file:line:column)`, mapped to the .ts files by
--enable-source-maps) and `Node.js vX`. What the program writes to stderr is held until it ends (a
demonstration writes little there); an error block becomes one line, everything else passes
unchanged. `course run --traceback` shows it whole.
"""

from __future__ import annotations

import os
import re

_ERROR = re.compile(r"^(?P<kind>[A-Za-z_$][\w$]*(?:Error|Exception)|Error|Uncaught \S+)(?:: (?P<said>.*))?$")
_FRAME = re.compile(r"^\s+at (?:.*?\()?(?:file://)?(?P<file>/[^():]+):(?P<line>\d+):\d+\)?$")
_HEADER = re.compile(r"^(?:file://)?/\S+:\d+$")


class Collapsed:
    """Uncaught errors in a program's stderr, each turned into one line (see the module's text)."""

    def __init__(self, code_root: os.PathLike | str) -> None:
        self.code_root = os.path.realpath(code_root)
        self.lines: list[str] = []

    def feed(self, line: str) -> list[str]:
        self.lines.append(line)
        return []

    def end(self) -> list[str]:
        lines, self.lines = self.lines, []
        out: list[str] = []
        i = 0
        while i < len(lines):
            found = _ERROR.match(lines[i].rstrip("\n"))
            frames = []
            j = i + 1
            while found and j < len(lines) and _FRAME.match(lines[j].rstrip("\n")):
                frames.append(_FRAME.match(lines[j].rstrip("\n")))
                j += 1
            if not found or not frames:
                out.append(lines[i])
                i += 1
                continue
            # the excerpt node printed above the error (file:line, source, caret, blank) goes with it
            if (len(out) >= 4 and not out[-1].strip() and set(out[-2].strip()) == {"^"}
                    and _HEADER.match(out[-4].strip())):
                del out[-4:]
            mine = next((f for f in frames if self._learners(f["file"])), None)
            where = f" at {os.path.relpath(mine['file'], self.code_root)}:{mine['line']}" if mine else ""
            said = found["said"] or ""
            out.append(f"{found['kind']}{': ' + said if said else ''}{where} (`course run --traceback` shows it whole)\n")
            i = j
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("Node.js v")):
                i += 1
        return out

    def _learners(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real.startswith(self.code_root + os.sep) and "node_modules" not in real
