"""`-k EXPR`: which catalog tests to run, matched by the harness on their names, for every language.

The expression reads like pytest's: words combined with `and`, `or`, `not` and parentheses. A word
matches a test when it is part of the test's catalog name or of its name in the track's language
(case does not matter): `-k retry`, `-k "sse and not large"`, `-k test_step_names`, `-k TestStepNames`.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from course.errors import BadSelection

Matcher = Callable[[Iterable[str]], bool]  # the names of one test -> selected?

_TOKEN = re.compile(r"\s*(?:(\()|(\))|([\w:+\-.\[\]\\/]+))")
_KEYWORDS = {"and", "or", "not"}


def parse(expression: str, option: str = "-k") -> Matcher:
    """A predicate over a test's names; BadSelection when the expression does not parse, naming the
    option it was given to (`-k`, or `--case` for an expression over case ids)."""
    tokens = _tokenize(expression, option)
    position = 0
    what = "test" if option == "-k" else "case"

    def fail(why: str) -> BadSelection:
        return BadSelection(f"{option} {expression!r} is not a valid {what} selection: {why}")

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> str:
        nonlocal position
        position += 1
        return tokens[position - 1]

    def any_of() -> Matcher:  # or-expression
        left = all_of()
        while peek() == "or":
            take()
            right, first = all_of(), left
            left = lambda names, a=first, b=right: a(names) or b(names)  # noqa: E731
        return left

    def all_of() -> Matcher:  # and-expression
        left = negated()
        while peek() == "and":
            take()
            right, first = negated(), left
            left = lambda names, a=first, b=right: a(names) and b(names)  # noqa: E731
        return left

    def negated() -> Matcher:
        token = peek()
        if token is None:
            raise fail("it ends where a word was expected")
        if token == "not":
            take()
            inner = negated()
            return lambda names: not inner(names)
        if token == "(":
            take()
            inner = any_of()
            if peek() != ")":
                raise fail("a '(' is never closed")
            take()
            return inner
        if token == ")" or token in _KEYWORDS:
            raise fail(f"unexpected {token!r}")
        word = take().lower()
        return lambda names: any(word in name.lower() for name in names)

    if not tokens:
        raise fail("it is empty")
    matcher = any_of()
    if position < len(tokens):
        raise fail(f"unexpected {tokens[position]!r}")
    return matcher


def _tokenize(expression: str, option: str = "-k") -> list[str]:
    tokens = []
    position = 0
    while position < len(expression):
        if expression[position:].strip() == "":
            break
        match = _TOKEN.match(expression, position)
        if not match:
            bad = expression[position:].lstrip()[:1]
            what = "test" if option == "-k" else "case"
            raise BadSelection(f"{option} {expression!r} is not a valid {what} selection: unexpected character {bad!r}")
        tokens.append(match.group(match.lastindex))
        position = match.end()
    return tokens


def select(expression: str, tests: dict[str, tuple[str, ...]]) -> list[str]:
    """The tests (catalog name -> every name it goes by) the expression selects, in their order;
    all of them for an empty expression."""
    if not expression.strip():
        return list(tests)
    matcher = parse(expression)
    return [name for name, names in tests.items() if matcher(names)]
