"""`course diff`: the learner's files against the reference, as unified diffs."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Callable

import click

from course import regions

_COLOURS = {"+": "green", "-": "red", "@": "cyan"}


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True) if path.is_file() else []


def diff_files(learner_root: Path, reference_root: Path, files: tuple[str, ...], *,
               echo: Callable[[str], None], color: bool) -> bool:
    """Print a diff per differing file (learner as 'yours', reference as 'reference'); True if any."""
    changed = False
    for name in files:
        # marker lines of learner regions are the course's bookkeeping, not code: never compared
        yours, reference = (regions.without_markers(_lines(root / name)) for root in (learner_root, reference_root))
        lines = difflib.unified_diff(yours, reference,
                                     fromfile=f"yours/{name}", tofile=f"reference/{name}")
        for line in lines:
            changed = True
            text = line.rstrip("\n")
            if not line.endswith("\n"):
                text += "\n\\ No newline at end of file"
            colour = _COLOURS.get(line[:1]) if not line.startswith(("+++", "---")) else None
            echo(click.style(text, fg=colour, bold=line.startswith(("+++", "---"))) if color else text)
    return changed
