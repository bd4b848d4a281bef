"""Learner regions: the parts of a reference file that the learner writes, marked in the reference itself.

A region is the lines between two comment lines, in any language whose comments start with `#` or
`//`, at any indentation:

    # course: begin NAME                   // course: begin NAME
    ...the reference's code...             ...the reference's code...
    # course: end NAME                     // course: end NAME

NAME (an identifier: letters, digits and `_`) is unique in its file; regions do not nest. The stub a learner
receives is the reference with each region replaced by the starter's block of the same name
(starter/<language>/<chapter>/<file>, a Jinja2 template made of `{% block NAME %}` blocks): given code
exists once, in the reference, and a stub cannot drift from it. The marker lines themselves are never
shown: neither in a stub nor in the reference `course diff` shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from course.errors import ManifestError

MARKER = re.compile(r"^[ \t]*(?:#|//)[ \t]*course:[ \t]*(?P<what>begin|end)\b[ \t]*(?P<name>\S*)[ \t]*$")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Region:
    name: str
    line: int  # the begin marker's line number, from 1
    body: str  # the reference's text between the markers


def split(text: str, where: str) -> list[str | Region]:
    """The file as pieces: text outside any region (marker lines left out) and regions, in order."""
    pieces: list[str | Region] = []
    outside: list[str] = []
    inside: list[str] | None = None
    opened: tuple[str, int] = ("", 0)
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        marker = MARKER.match(line)
        if marker is None:
            (outside if inside is None else inside).append(line)
            continue
        name = marker["name"]
        if not NAME.match(name):
            raise ManifestError(f"{where}:{number}: a region marker needs a name (letters, digits and _, not first a digit)")
        if marker["what"] == "begin":
            if inside is not None:
                raise ManifestError(f"{where}:{number}: region {name!r} begins inside region {opened[0]!r} "
                                    f"(line {opened[1]}); regions do not nest")
            if name in seen:
                raise ManifestError(f"{where}:{number}: region {name!r} appears twice")
            seen.add(name)
            pieces.append("".join(outside))
            outside, inside, opened = [], [], (name, number)
        else:
            if inside is None or name != opened[0]:
                expected = f"`end {opened[0]}`" if inside is not None else "no end marker here"
                raise ManifestError(f"{where}:{number}: `end {name}` does not close an open region ({expected})")
            pieces.append(Region(name, opened[1], "".join(inside)))
            inside = None
    if inside is not None:
        raise ManifestError(f"{where}:{opened[1]}: region {opened[0]!r} is never ended")
    pieces.append("".join(outside))
    return [piece for piece in pieces if piece != ""]


def regions(text: str, where: str) -> list[Region]:
    return [piece for piece in split(text, where) if isinstance(piece, Region)]


def strip(text: str, where: str = "") -> str:
    """The file as a reader sees it: the reference's code, without the marker lines."""
    return "".join(piece if isinstance(piece, str) else piece.body for piece in split(text, where))


def strip_files(root: Path, names: tuple[str, ...]) -> None:
    """Remove the marker lines from the named files under `root` (a copy of a reference), so that
    line numbers are the code's own: what a documented mutant's diff is written against."""
    for name in names:
        path = root / name
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            if any(MARKER.match(line) for line in text.splitlines()):
                path.write_text("".join(without_markers(text.splitlines(keepends=True))), encoding="utf-8")


def without_markers(lines: list[str]) -> list[str]:
    """The lines minus any marker line, checking nothing: for showing any file, the learner's too."""
    return [line for line in lines if not MARKER.match(line)]


def fill(text: str, blocks: dict[str, str], where: str) -> str:
    """The file with each region replaced by the block of the same name."""
    out = []
    for piece in split(text, where):
        if isinstance(piece, str):
            out.append(piece)
        elif piece.name in blocks:
            out.append(blocks[piece.name])
        else:
            raise ManifestError(f"{where}:{piece.line}: region {piece.name!r} has no block in the starter")
    return "".join(out)
