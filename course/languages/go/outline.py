"""The functions of a Go source file with their lines, for the pitfall hints' places.

A scanner, not a parser: a learner's file is read at every check that fails, where starting the
toolchain's go/parser would cost more than the rest of the hint. It reads Go's tokens far enough to
be exact about what decides a function's extent: comments, interpreted and raw strings and runes
(which may hold braces), and the braces themselves. A top-level `func` opens a declaration; its
body is the first brace outside parentheses that is not a struct's or an interface's, and the
declaration ends with the brace that closes it. Function literals inside are part of it.
"""

from __future__ import annotations

import re

from course.languages.protocol import Function

# comments, strings and runes first (their braces are text), then what the scanner counts
_TOKEN = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<text>"(?:[^"\\\n]|\\.)*"|`[^`]*`|'(?:[^'\\\n]|\\.)*')
  | (?P<word>[A-Za-z_]\w*)
  | (?P<mark>[{}()\[\]\n])
""", re.S | re.X)
# what follows the keyword: `func (r *EventReader[T]) Next(` or `func Delay(`, on one line
_METHOD = re.compile(r"[ \t]*\(([^()]*)\)[ \t]*(\w+)[ \t]*[(\[]")
_RECEIVER = re.compile(r"\s*(?:\w+\s+)?\*?\s*(\w+)")  # r *EventReader[T] -> EventReader
_PLAIN = re.compile(r"[ \t]+(\w+)[ \t]*[(\[]")


def functions(source: str) -> list[Function]:
    found: list[Function] = []
    line = 1
    braces = parens = 0
    declaring: dict | None = None  # the func being read: its header's start, then its body's depth
    type_brace = False  # the next "{" opens a struct's or an interface's fields, not a body
    for token in _TOKEN.finditer(source):
        kind, value = token.lastgroup, token.group()
        if kind in ("comment", "text"):
            line += value.count("\n")
            continue
        if kind == "word":
            if value == "func" and braces == 0 and parens == 0 and declaring is None:
                name = _declared_name(source, token.end())
                if name:
                    declaring = {"name": name, "first": line, "body": None}
            type_brace = value in ("struct", "interface")
            continue
        if value == "\n":
            line += 1
        elif value in "([":
            parens += 1
        elif value in ")]":
            parens = max(parens - 1, 0)
        elif value == "{":
            if declaring is not None and declaring["body"] is None and parens == 0 and not type_brace:
                declaring["body"] = braces
            braces += 1
        elif value == "}":
            braces = max(braces - 1, 0)
            if declaring is not None and declaring["body"] == braces:
                found.append(Function(declaring["name"], declaring["first"], line))
                declaring = None
        type_brace = False
    return found


def _declared_name(source: str, after: int) -> str:
    """'EventReader.Next' for `func (r *EventReader) Next(`, 'Delay' for `func Delay(`, '' for
    anything else (a function type, a function literal)."""
    method = _METHOD.match(source, after)
    if method:
        receiver = _RECEIVER.match(method.group(1))
        return f"{receiver.group(1)}.{method.group(2)}" if receiver else ""
    plain = _PLAIN.match(source, after)
    return plain.group(1) if plain else ""
