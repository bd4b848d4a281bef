"""Where a piece of prose repeats a piece of code: what `course verify` holds a chapter's hints to.

A hint may name a function (`Decoder.decode`, `errors.Is`), never hand over a line of the solution.
Both sides are read as tokens, the same way in every language the course has: names, numbers, each
string literal as one token (by its content, so 'x' and "x" are the same), each operator or bracket.
Layout is no token (line ends, indentation, `;`), so a run may cross the code's lines; comments of
the code (`#` or `//` and a space, to the end of the line) are not its code. In prose, backticks are
markdown, not code, and an apostrophe inside a word (the caller's) opens no string.

Prose repeats code when it holds, token for token:

- a run of RUN tokens or more of the code, wherever it starts and ends;
- or a whole line of the code of LINE tokens or more.

RUN is 6 because the longest names prose uses to point at something are 5 tokens or fewer
(`http.client.HTTPException`, `ctx.Done()`, `reader.read()`, `map[string]any` are 5, `errors.Is`
3), while the shortest statements that hand over an answer are 6 (`defer body.Close()`,
`isinstance(x, str)`, `ErrorDelta{Err: err}`, `json.loads(text)` with the solution's own argument).
LINE is 5 so that a short statement of the solution, repeated whole (`except OpenFailure as failure:`,
`defer close(out)`, `stream.close()`), fails too, while a bare `return err` or `continue` (which says
nothing the prose does not) does not count as a line.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Iterable

RUN = 6
LINE = 5

_STRING = r"""(?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`\n]*`)"""
_PROSE_STRING = r"""(?P<string>(?<![A-Za-z0-9])(?:"[^"\n]*"|'[^'\n]*'|‘[^’\n]*’|“[^”\n]*”)(?![A-Za-z0-9]))"""
_REST = (r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>\d+(?:\.\d+)?)"
         r"|(?P<op>==|!=|<=|>=|:=|->|=>|\*\*|&&|\|\||<-|\+=|-=|\.\.\.|[^\sA-Za-z0-9_`])")
_CODE = re.compile(_STRING + r"|(?P<comment>(?:#|//)(?=\s|$).*)" + _REST)
_PROSE = re.compile(_PROSE_STRING + _REST)
_LAYOUT = {";"}


@dataclass(frozen=True)
class Token:
    text: str  # the token as compared: a string literal as its content, marked
    start: int  # where it is in its source, for showing the prose it came from
    end: int


def tokens(text: str, *, code: bool) -> list[Token]:
    """The tokens of `text`, read as code (comments left out) or as prose (markdown's backticks and
    apostrophes inside words are no strings)."""
    out = []
    for match in (_CODE if code else _PROSE).finditer(text):
        kind, value = match.lastgroup, match.group()
        if kind == "comment" or value in _LAYOUT:
            continue
        if kind == "string":
            value = "\0" + value[1:-1]
        out.append(Token(value, match.start(), match.end()))
    return out


@dataclass(frozen=True)
class Shared:
    prose: str  # the part of the prose that repeats the code
    where: str  # the code's line it starts on, as the caller named it ("agent/sse.py:41")


class Code:
    """Lines of code, each named where it is, read once and compared with many pieces of prose."""

    def __init__(self, lines: Iterable[tuple[str, str]]) -> None:
        self._words: list[str] = []
        self._at: list[str] = []  # where each token's line is
        self._lines: dict[int, dict[tuple[str, ...], str]] = {}  # length -> a line's tokens -> where
        for where, line in lines:
            words = [t.text for t in tokens(line, code=True)]
            self._words.extend(words)
            self._at.extend([where] * len(words))
            if len(words) >= LINE:
                self._lines.setdefault(len(words), {}).setdefault(tuple(words), where)
        self._matcher = difflib.SequenceMatcher(None, autojunk=False)
        self._matcher.set_seq2(self._words)

    def shared(self, prose: str) -> Shared | None:
        """The first thing `prose` repeats of this code (a run of RUN tokens, or a whole line of LINE
        tokens or more), or None."""
        found = tokens(prose, code=False)
        words = [t.text for t in found]
        self._matcher.set_seq1(words)
        run = self._matcher.find_longest_match(0, len(words), 0, len(self._words))
        if run.size >= RUN:
            return Shared(prose[found[run.a].start:found[run.a + run.size - 1].end], self._at[run.b])
        for length, lines in sorted(self._lines.items()):
            for i in range(len(words) - length + 1):
                where = lines.get(tuple(words[i:i + length]))
                if where is not None:
                    return Shared(prose[found[i].start:found[i + length - 1].end], where)
        return None
