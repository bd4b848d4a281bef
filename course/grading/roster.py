"""A roster: the learner repositories a class grade runs over.

Either a folder whose subfolders are the learners' repositories (each named after its learner), or a
text file listing one repository path a line (relative paths are taken from the file's folder; blank
lines and lines starting with # are skipped).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from course.errors import UsageError


@dataclass(frozen=True)
class Member:
    learner: str  # the name the gradebook shows: the folder's name, or its path where names repeat
    path: Path


def read(roster: Path) -> list[Member]:
    if roster.is_dir():
        paths = sorted(p for p in roster.iterdir() if p.is_dir() and not p.name.startswith("."))
        if not paths:
            raise UsageError(f"roster {roster} has no repository folders in it")
    elif roster.is_file():
        try:
            lines = roster.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read roster {roster}: {exc}") from None
        paths = [(roster.parent / line.strip()).resolve() for line in lines
                 if line.strip() and not line.lstrip().startswith("#")]
        if not paths:
            raise UsageError(f"roster {roster} lists no repositories")
    else:
        raise UsageError(f"no roster at {roster}: give a folder of learner repositories or a file listing them")
    names = [p.name for p in paths]
    return [Member(learner=p.name if names.count(p.name) == 1 else str(p), path=p) for p in paths]
