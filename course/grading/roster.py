"""A roster: the learners a class grade runs over.

For checks (`course grade ROSTER`): a folder whose subfolders are the learners' repositories (each
named after its learner), or a text file listing one repository path a line (relative paths are taken
from the file's folder; blank lines and lines starting with # are skipped). For CI results (`course
grade --from-results DIR --roster FILE`): the same, or a file of names, one a line ("alice",
"org/alice-ag01"), or GitHub Classroom's roster export (a CSV whose header has `github_username` or
`identifier`). Whatever a roster folder holds besides folders is named, never dropped in silence.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from course.errors import UsageError


@dataclass(frozen=True)
class Member:
    learner: str  # the name the gradebook shows: the folder's name, or its path where names repeat
    path: Path


@dataclass
class Roster:
    members: list[Member]
    skipped: list[str] = field(default_factory=list)  # "notes.txt: not a folder"


def read(roster: Path) -> Roster:
    skipped = []
    if roster.is_dir():
        paths = []
        for p in sorted(roster.iterdir()):
            if p.name.startswith("."):
                continue
            if p.is_dir():
                paths.append(p)
            else:
                skipped.append(f"{p}: not a folder (a roster folder holds one repository folder per learner)")
        if not paths:
            raise UsageError(f"roster {roster} has no repository folders in it")
    elif roster.is_file():
        paths = [(roster.parent / line).resolve() for line in _lines(roster)]
        if not paths:
            raise UsageError(f"roster {roster} lists no repositories")
    else:
        raise UsageError(f"no roster at {roster}: give a folder of learner repositories or a file listing them")
    names = [p.name for p in paths]
    return Roster([Member(learner=p.name if names.count(p.name) == 1 else str(p), path=p) for p in paths], skipped)


def names(roster: Path) -> list[str]:
    """The learners a roster names, for matching CI results: folder names, the last part of each
    listed path or name, or a Classroom export's usernames."""
    if roster.is_dir():
        return [m.learner for m in read(roster).members]
    lines = _lines(roster) if roster.is_file() else None
    if lines is None:
        raise UsageError(f"no roster at {roster}: give a file of learner names (or GitHub Classroom's roster CSV)")
    header = next(csv.reader([lines[0]])) if lines else []
    column = next((c for c in ("github_username", "identifier") if c in header), None)
    if column is not None:
        rows = csv.DictReader(lines)
        found = [row[column].strip() for row in rows if row.get(column, "").strip()]
    else:
        found = [Path(line).name for line in lines]
    if not found:
        raise UsageError(f"roster {roster} names no learners")
    return list(dict.fromkeys(found))


def _lines(roster: Path) -> list[str]:
    try:
        text = roster.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read roster {roster}: {exc}") from None
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
