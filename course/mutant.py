"""A documented pitfall mutant, as a chapter's manifest describes it, and how it is applied to a copy of
the reference: an exact find/replace that must match once, or a small unified diff. Never applied to
the reference itself.

On the ground floor: the manifest (course.chapters) reads mutants, the engine (course.mutation)
judges them, and an adapter may build several at once (the Go track's schemata); all of them apply
a mutant the same way, from here."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from course.errors import StaleMutant

__all__ = ["Mutant", "StaleMutant", "apply", "applied"]


@dataclass(frozen=True)
class Mutant:
    id: str
    # the pitfall it is an instance of; None for a bug that matches none of them (documented all the
    # same: it shows the hints which failures other bugs share with a pitfall's, see pitfall_hints)
    pitfall: int | None
    description: str
    file: str  # the track's file it changes
    caught_by: tuple[str, ...]  # catalog names documented to fail on it
    find: str = ""
    replace: str = ""
    diff: str = ""  # a small unified diff, as an alternative to find/replace


def apply(mutant: Mutant, root: Path) -> None:
    """Change the copy of the reference in `root` as the mutant says; StaleMutant when it no longer applies."""
    path = root / mutant.file
    if not path.is_file():
        raise StaleMutant(f"{mutant.file}: no such file")
    path.write_text(applied(mutant, path.read_text(encoding="utf-8")), encoding="utf-8")


def applied(mutant: Mutant, text: str) -> str:
    """The text of the mutant's file with its change made; StaleMutant when it does not apply."""
    return _find_replace(mutant, text) if mutant.find else _patch(mutant, text)


def _find_replace(mutant: Mutant, text: str) -> str:
    count = text.count(mutant.find)
    if count != 1:
        found = "not found" if count == 0 else f"found {count} times"
        raise StaleMutant(f"{mutant.file}: {found}: {mutant.find!r}")
    return text.replace(mutant.find, mutant.replace)


_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")


def _patch(mutant: Mutant, text: str) -> str:
    """A minimal unified-diff applier: hunks, in order, must match the file exactly at their lines."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    position = 0
    body = [line for line in mutant.diff.splitlines() if not line.startswith(("---", "+++", "\\"))]
    i = 0
    while i < len(body):
        match = _HUNK.match(body[i])
        i += 1
        if not match:
            continue
        start = max(int(match.group(1)) - 1, 0)
        if start < position:
            raise StaleMutant(f"{mutant.file}: hunks out of order at line {start + 1}")
        out.extend(lines[position:start])
        position = start
        while i < len(body) and not body[i].startswith("@@"):
            line = body[i] or " "  # an empty context line whose leading space an editor stripped
            op, content = line[0], line[1:]
            if op in (" ", "-"):
                if position >= len(lines) or lines[position].rstrip("\n") != content:
                    raise StaleMutant(f"{mutant.file}:{position + 1}: expected {content!r}")
                if op == " ":
                    out.append(lines[position])
                position += 1
            elif op == "+":
                out.append(content + "\n")
            i += 1
    out.extend(lines[position:])
    return "".join(out)
