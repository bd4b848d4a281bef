"""`-k EXPR`: choose catalog tests by name, the same way for every language.

EXPR is a small boolean expression over words: `retry`, `retry and not capped`, `sse or (hand and
example)`. A word matches a catalog test whose name contains it (case-insensitive), in its catalog
form (`hand_example`) or its language's form (`test_hand_example`); case ids never count.
"""

from __future__ import annotations

import re
from typing import Callable

from course.errors import UsageError

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")


class _Parser:
    def __init__(self, expr: str) -> None:
        self.expr = expr
        self.tokens = [t for t in _TOKEN.findall(expr)]
        self.pos = 0

    def fail(self, why: str) -> UsageError:
        return UsageError(f"-k {self.expr!r} is not a valid test selection: {why}")

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise self.fail("it ends too early")
        self.pos += 1
        return token

    def parse(self) -> Callable[[tuple[str, ...]], bool]:
        if not self.tokens:
            raise self.fail("it is empty")
        test = self.either()
        if self.peek() is not None:
            raise self.fail(f"unexpected {self.peek()!r}")
        return test

    def either(self) -> Callable[[tuple[str, ...]], bool]:
        left = self.both()
        while self.peek() == "or":
            self.take()
            right, first = self.both(), left
            left = lambda name, a=first, b=right: a(name) or b(name)  # noqa: E731
        return left

    def both(self) -> Callable[[tuple[str, ...]], bool]:
        left = self.negated()
        while self.peek() == "and":
            self.take()
            right, first = self.negated(), left
            left = lambda name, a=first, b=right: a(name) and b(name)  # noqa: E731
        return left

    def negated(self) -> Callable[[tuple[str, ...]], bool]:
        if self.peek() == "not":
            self.take()
            inner = self.negated()
            return lambda name: not inner(name)
        return self.atom()

    def atom(self) -> Callable[[tuple[str, ...]], bool]:
        token = self.take()
        if token == "(":
            inner = self.either()
            if self.take() != ")":
                raise self.fail("a '(' is not closed")
            return inner
        if token in (")", "and", "or", "not"):
            raise self.fail(f"unexpected {token!r}")
        word = token.lower()
        return lambda names: any(word in name for name in names)


def matcher(expr: str) -> Callable[[str, str], bool]:
    """A test of (catalog name, language name) for the expression; UsageError when it is malformed."""
    test = _Parser(expr).parse()
    return lambda name, language_name: test((name.lower(), language_name.lower()))
