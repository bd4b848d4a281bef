"""The functions of a TypeScript source file with their lines, for the pitfall hints' places.

A scanner, not a parser: a learner's file is read at every check that fails, where starting the
compiler would cost more than the rest of the hint. It reads TypeScript's tokens far enough to be
exact about what decides a function's extent: comments, strings, template literals (whose `${}`
hold code, strings and templates of their own) and regular expression literals, all of which may
hold braces, then the brackets themselves. On that stream it finds what a learner reads as a
function: at the top level, `function` declarations (async, generators, exported) and `const`,
`let` or `var` bound to an arrow function or a function expression; in a class, its methods,
accessors and constructor, and its properties holding an arrow function, named `Class.method`.
A function's lines run from its first modifier (`export`, `async`, a decorator) to its closing
brace (or an arrow's last expression line); what is defined inside it is part of it. A declaration
without a body (an overload, `declare`, `abstract`) is no function.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from course.languages.protocol import Function


@dataclass(frozen=True)
class _Token:
    kind: str  # "name" (identifiers and keywords, "#private" ones too), "text" (strings, templates,
    # regular expressions, numbers) or "mark" (punctuation)
    value: str
    line: int
    newline: bool  # a line break comes before it


_SPACE = re.compile(r"(?:[ \t\f\v\ufeff\u00a0]+|//[^\n\r\u2028\u2029]*|/\*.*?\*/|\r\n|[\n\r\u2028\u2029])*", re.S)
_NAME = re.compile(r"#?[A-Za-z_$\u0080-\uffff][\w$\u0080-\uffff]*")
_NUMBER = re.compile(r"\.?\d[\w.]*|\d")
_STRING = re.compile(r"""'(?:[^'\\\n\r]|\\.|\\\r\n)*'?|"(?:[^"\\\n\r]|\\.|\\\r\n)*"?""", re.S)
# `>` always alone: `>>` closes two type arguments as often as it shifts
_MARK = re.compile(r"=>|\.\.\.|\?\.|===|!==|==|!=|<=|&&=|\|\|=|\?\?=|&&|\|\||\?\?|\*\*=?|\+\+|--|[-+*/%&|^]=|[^\s]")
_REGEX_BODY = re.compile(r"(?:[^\\/\[\n\r]|\\.|\[(?:[^\]\\\n\r]|\\.)*\]?)*/?[\w$]*")
# after these a `/` starts a regular expression; after a name, a number, a string, `)` or `]` it divides
_REGEX_AFTER_NAMES = {"return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do",
                      "else", "yield", "await"}
_LINE_BREAK = re.compile(r"\r\n|[\n\r\u2028\u2029]")

_MODIFIERS = {"export", "default", "declare", "async", "abstract"}
_MEMBER_MODIFIERS = {"public", "private", "protected", "static", "readonly", "abstract", "override", "declare",
                     "async", "accessor", "get", "set"}
_STATEMENT_WORDS = {"export", "import", "const", "let", "var", "function", "class", "interface", "type", "enum",
                    "declare", "abstract", "async", "namespace", "module", "if", "for", "while", "do", "return",
                    "throw", "try", "switch"}
# a `{` after one of these, in a type, opens an object type; after anything else it is a body
_TYPE_GOES_ON = {":", "|", "&", "=>", ",", "(", "<", "[", "?", "keyof", "typeof", "extends", "implements",
                 "infer", "readonly", "unique", "new", "is", "asserts"}
_OPENERS = {"(": ")", "[": "]", "{": "}"}


def functions(source: str) -> list[Function]:
    try:
        tokens = _tokens(source)
    except _Unreadable:
        return []
    return _Reader(tokens).top_level()


# --- tokens ------------------------------------------------------------------------------------------


class _Unreadable(Exception):
    pass


def _tokens(source: str) -> list[_Token]:
    out: list[_Token] = []
    _Lexer(source, out).code(0, until_brace=False)
    return out


class _Lexer:
    def __init__(self, source: str, out: list[_Token]) -> None:
        self.source = source
        self.out = out
        self.line = 1
        self.newline = True

    def add(self, kind: str, value: str) -> None:
        self.out.append(_Token(kind, value, self.line, self.newline))
        self.newline = False

    def skip(self, start: int, end: int) -> None:
        """Count the lines of source[start:end], which was read."""
        breaks = len(_LINE_BREAK.findall(self.source, start, end))
        if breaks:
            self.line += breaks
            self.newline = True

    def code(self, at: int, *, until_brace: bool) -> int:
        """Read code from `at` to the end, or (inside a template's `${`) to its closing brace: the
        position after it."""
        source, depth = self.source, 0
        while True:
            space = _SPACE.match(source, at)
            assert space is not None
            self.skip(at, space.end())
            at = space.end()
            if at >= len(source):
                if until_brace:
                    raise _Unreadable("a template's ${ is never closed")
                return at
            char = source[at]
            if char == "`":
                at = self.template(at)
            elif char in "'\"":
                found = _STRING.match(source, at)
                assert found is not None
                self.add("text", found.group())
                self.skip(at, found.end())
                at = found.end()
            elif char.isdigit() or (char == "." and source[at + 1: at + 2].isdigit()):
                found = _NUMBER.match(source, at)
                assert found is not None
                self.add("text", found.group())
                at = found.end()
            elif char == "/" and self.regex_may_start():
                found = _REGEX_BODY.match(source, at + 1)
                assert found is not None
                self.add("text", source[at: found.end()])
                at = found.end()
            elif (name := _NAME.match(source, at)) is not None:
                self.add("name", name.group())
                at = name.end()
            else:
                found = _MARK.match(source, at)
                assert found is not None
                mark = found.group()
                if until_brace and mark == "{":
                    depth += 1
                elif until_brace and mark == "}":
                    if depth == 0:
                        return found.end()
                    depth -= 1
                self.add("mark", mark)
                at = found.end()

    def template(self, at: int) -> int:
        """A template literal from its opening backquote: one token, its `${}` read as code (and
        left out: what they define belongs to the code around the template)."""
        source, start, line, newline = self.source, at, self.line, self.newline
        at += 1
        kept = len(self.out)
        while True:
            if at >= len(source):
                raise _Unreadable("a template literal is never closed")
            char = source[at]
            if char == "\\":
                self.skip(at, at + 2)
                at += 2
            elif char == "`":
                at += 1
                break
            elif char == "$" and source.startswith("${", at):
                at = self.code(at + 2, until_brace=True)
            else:
                self.skip(at, at + 1)
                at += 1
        del self.out[kept:]
        self.out.append(_Token("text", source[start:at], line, newline))
        self.newline = False
        return at

    def regex_may_start(self) -> bool:
        if not self.out:
            return True
        last = self.out[-1]
        if last.kind == "name":
            return last.value in _REGEX_AFTER_NAMES
        if last.kind == "text":
            return False
        return last.value not in (")", "]", "}")


# --- declarations ------------------------------------------------------------------------------------


class _Reader:
    def __init__(self, tokens: list[_Token]) -> None:
        self.t = tokens
        self.found: list[Function] = []

    def at(self, i: int, *values: str) -> bool:
        return i < len(self.t) and self.t[i].value in values and self.t[i].kind != "text"

    def name_at(self, i: int) -> bool:
        return i < len(self.t) and self.t[i].kind == "name"

    def closing(self, i: int) -> int:
        """The index after the bracket that closes the one at i (the end, if none does)."""
        stack = [_OPENERS[self.t[i].value]]
        i += 1
        while i < len(self.t) and stack:
            token = self.t[i]
            if token.kind == "mark":
                if token.value in _OPENERS:
                    stack.append(_OPENERS[token.value])
                elif token.value == stack[-1]:
                    stack.pop()
                elif token.value in (")", "]", "}"):
                    # a stray closer: the nearest opener it closes, as a reader of broken code would
                    while stack and stack[-1] != token.value:
                        stack.pop()
                    if stack:
                        stack.pop()
            i += 1
        return i

    def angles(self, i: int) -> int:
        """The index after the `>` that closes the type arguments opened at i."""
        depth = 0
        while i < len(self.t):
            token = self.t[i]
            if token.kind == "mark" and token.value in _OPENERS:
                i = self.closing(i)
                continue
            if token.kind == "mark" and token.value == "<":
                depth += 1
            elif token.kind == "mark" and token.value == ">":
                depth -= 1
                if depth == 0:
                    return i + 1
            elif token.kind == "mark" and token.value in (";", ")", "]", "}"):
                return i
            i += 1
        return i

    def statement_starts(self, i: int) -> bool:
        """Whether a statement may start at token i: first, after `;` or `}`, or on a new line after
        what can end one."""
        if i == 0:
            return True
        before, token = self.t[i - 1], self.t[i]
        if before.kind == "mark" and before.value in (";", "}"):
            return True
        if not token.newline:
            return False
        if before.kind == "mark":
            return before.value in (")", "]")
        return before.kind == "text" or before.value not in _REGEX_AFTER_NAMES | _MODIFIERS | {"extends", "=>"}

    def first_line(self, i: int) -> int:
        """The line of the statement whose keyword is at i: its first modifier's."""
        while i > 0 and self.name_at(i - 1) and self.t[i - 1].value in _MODIFIERS and self.statement_ok(i - 1):
            i -= 1
        return self.t[i].line

    def statement_ok(self, i: int) -> bool:
        return self.statement_starts(i) or (self.name_at(i - 1) and self.t[i - 1].value in _MODIFIERS)

    def top_level(self) -> list[Function]:
        i = 0
        while i < len(self.t):
            token = self.t[i]
            if token.kind == "mark" and token.value in _OPENERS:
                i = self.closing(i)
                continue
            if token.kind == "name" and self.statement_ok(i):
                if token.value == "function":
                    i = self.function_declaration(i)
                    continue
                if token.value == "class" and self.name_at(i + 1):
                    i = self.class_declaration(i)
                    continue
                if token.value in ("const", "let", "var"):
                    i = self.variables(i)
                    continue
            i += 1
        return self.found

    def function_declaration(self, i: int) -> int:
        first = self.first_line(i)
        j = i + 1
        if self.at(j, "*"):
            j += 1
        if not self.name_at(j):
            return j
        name = self.t[j].value
        end = self.signature_and_body(j + 1)
        if end is not None:
            self.found.append(Function(name, first, self.t[end - 1].line))
            return end
        return j + 1

    def signature_and_body(self, j: int) -> int | None:
        """From after a function's name: its type parameters, parameters, return type and body;
        the index after the body's closing brace, or None when it has no body."""
        if self.at(j, "<"):
            j = self.angles(j)
        if not self.at(j, "("):
            return None
        j = self.closing(j)
        if self.at(j, ":"):
            j = self.type_end(j + 1, stop=("{",))
        if self.at(j, "{"):
            return self.closing(j)
        return None

    def type_end(self, j: int, stop: tuple[str, ...]) -> int:
        """From the start of a type annotation: the index of the first of `stop` that ends it (a
        `{` ends it only where it cannot open an object type), or of `;`, `=` or a closer."""
        while j < len(self.t):
            token = self.t[j]
            if token.kind == "mark":
                if token.value == "{" and "{" in stop and not self.type_goes_on(j):
                    return j
                if token.value in stop and token.value != "{":
                    return j
                if token.value in _OPENERS:
                    j = self.closing(j)
                    continue
                if token.value == "<":
                    j = self.angles(j)
                    continue
                if token.value in (";", "=", ")", "]", "}"):
                    return j
            j += 1
        return j

    def type_goes_on(self, j: int) -> bool:
        before = self.t[j - 1]
        return before.kind != "text" and before.value in _TYPE_GOES_ON

    def class_declaration(self, i: int) -> int:
        name = self.t[i + 1].value
        j = i + 2
        while j < len(self.t):  # the heritage: type arguments, `extends` expressions, up to the body
            if self.at(j, "<"):
                j = self.angles(j)
                continue
            if self.at(j, "{") and not self.type_goes_on(j):
                break
            if self.at(j, "(", "[", "{"):
                j = self.closing(j)
                continue
            if self.at(j, ";", ")", "]", "}"):
                return j + 1
            j += 1
        if j >= len(self.t):
            return j
        end = self.closing(j)
        self.members(name, j + 1, end - 1)
        return end

    def members(self, owner: str, j: int, end: int) -> None:
        while j < end:
            if self.at(j, ";", ","):
                j += 1
                continue
            start = j
            while self.at(j, "@"):  # decorators: @name, @a.b, @name(...)
                j += 1
                while self.name_at(j) and self.at(j + 1, "."):
                    j += 2
                j += 1
                if self.at(j, "(") and not self.t[j].newline:
                    j = self.closing(j)
            if self.at(j, "static") and self.at(j + 1, "{"):  # a static block: no function of its own
                j = self.closing(j + 1)
                continue
            while self.name_at(j) and self.t[j].value in _MEMBER_MODIFIERS and self.member_name_at(j + 1):
                j += 1
            if self.at(j, "*"):
                j += 1
            name, j = self.member_name(j)
            if name is None:
                j = self.member_end(j, end)
                continue
            if self.at(j, "?", "!"):
                j += 1
            if self.at(j, "(", "<"):
                after = self.signature_and_body(j)
                if after is not None:
                    self.found.append(Function(f"{owner}.{name}", self.t[start].line, self.t[after - 1].line))
                    j = after
                else:
                    j = self.member_end(j, end)
                continue
            if self.at(j, ":"):
                j = self.type_end(j + 1, stop=())
            if self.at(j, "="):
                last = self.function_value(j + 1, end)
                if last is not None:
                    self.found.append(Function(f"{owner}.{name}", self.t[start].line, self.t[last].line))
                    j = last + 1
                    continue
            j = self.member_end(j, end)

    def member_name_at(self, j: int) -> bool:
        """Whether a member's name (or `*`) starts at j, so that the word before it is a modifier."""
        if j >= len(self.t) or (self.t[j].newline and self.t[j - 1].value == "async"):
            return False  # `async` then a line break: a property named async
        token = self.t[j]
        return token.kind in ("name", "text") or token.value in ("[", "*")

    def member_name(self, j: int) -> tuple[str | None, int]:
        if j >= len(self.t):
            return None, j
        token = self.t[j]
        if token.kind == "name":
            return token.value, j + 1
        if token.kind == "text" and token.value[:1] in "'\"":
            return token.value[1:-1], j + 1
        if token.kind == "text" and token.value[:1].isdigit():
            return token.value, j + 1
        if token.value == "[":
            after = self.closing(j)
            return "".join(t.value for t in self.t[j:after]), after
        return None, j + 1

    def member_end(self, j: int, end: int) -> int:
        """Past the rest of a member that is no function: to its `;`, or the next member on a new line."""
        while j < end:
            token = self.t[j]
            if token.kind == "mark" and token.value == ";":
                return j + 1
            if token.kind == "mark" and token.value in _OPENERS:
                j = self.closing(j)
                continue
            if token.newline and (token.kind == "name" or token.value in ("@", "[", "*")) and self.ends_expression(j - 1):
                return j
            j += 1
        return j

    def ends_expression(self, j: int) -> bool:
        token = self.t[j]
        if token.kind == "text":
            return True
        if token.kind == "name":
            return token.value not in _REGEX_AFTER_NAMES | _MEMBER_MODIFIERS | {"extends"}
        return token.value in (")", "]", "}")

    def variables(self, i: int) -> int:
        """`const f = (...) => ...`, `let g = function () {...}`: each declarator bound to a function."""
        first = self.first_line(i)
        j = i + 1
        while j < len(self.t):
            if not self.name_at(j):
                return j  # a destructuring pattern, or broken code: the main loop reads on
            name, start_line = self.t[j].value, first if j == i + 1 else self.t[j].line
            j += 1
            if self.at(j, "!"):
                j += 1
            if self.at(j, ":"):
                j = self.type_end(j + 1, stop=())
            if not self.at(j, "="):
                if self.at(j, ","):
                    j += 1
                    continue
                return j
            last = self.function_value(j + 1, len(self.t))
            if last is not None:
                self.found.append(Function(name, start_line, self.t[last].line))
                j = last + 1
            else:
                j = self.expression_end(j + 1, len(self.t))
                if j < len(self.t) and self.at(j, ","):
                    j += 1
                    continue
                return j
            if self.at(j, ","):
                j += 1
                continue
            return j
        return j

    def function_value(self, j: int, end: int) -> int | None:
        """If an arrow function or a function expression starts at j: the index of its last token."""
        if self.at(j, "async") and not self.at(j + 1, "=>", "(", "<") and not self.name_at(j + 1):
            return None
        if self.at(j, "async") and not self.t[j + 1].newline:
            j += 1
        if self.at(j, "function"):
            j += 1
            if self.at(j, "*"):
                j += 1
            if self.name_at(j):
                j += 1
            after = self.signature_and_body(j)
            return after - 1 if after is not None else None
        if self.name_at(j) and self.at(j + 1, "=>"):
            return self.arrow_body(j + 2, end)
        if self.at(j, "<"):
            j = self.angles(j)
        if not self.at(j, "("):
            return None
        j = self.closing(j)
        if self.at(j, ":"):
            j = self.type_end(j + 1, stop=("=>",))
        if not self.at(j, "=>"):
            return None
        return self.arrow_body(j + 1, end)

    def arrow_body(self, j: int, end: int) -> int | None:
        if j >= end:
            return None
        if self.at(j, "{"):
            return self.closing(j) - 1
        return self.expression_end(j, end) - 1

    def expression_end(self, j: int, end: int) -> int:
        """The index after an expression that starts at j: at a `;`, `,` or closer of its own level,
        or before a new line that starts a statement."""
        begun = j
        while j < end:
            token = self.t[j]
            if token.kind == "mark":
                if token.value in (";", ",", ")", "]", "}"):
                    return j
                if token.value in _OPENERS:
                    j = self.closing(j)
                    continue
            elif (j > begun and token.newline and token.kind == "name" and token.value in _STATEMENT_WORDS
                  and self.ends_expression(j - 1)):
                return j
            j += 1
        return j
