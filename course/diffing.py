"""`course diff`: the learner's files against the reference, as unified diffs.

By default a hunk whose changed lines are all commentary (comments, docstrings, blank lines, as the
language's adapter marks them) is left out: the stubs' long guidance against the reference's short
comments is not what a learner who passed wants to compare. `--all` shows every hunk.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import click

from course import regions

_COLOURS = {"+": "green", "-": "red", "@": "cyan"}
CONTEXT = 3


@dataclass
class DiffSummary:
    changed: bool = False  # some code differs (or, with every hunk shown, anything)
    left_out: int = 0  # hunks that differ only in comments or docstrings


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True) if path.is_file() else []


def _range(start: int, stop: int) -> str:
    length = stop - start
    return f"{start + 1 if length else start},{length}" if length != 1 else f"{start + 1}"


def diff_files(learner_root: Path, reference_root: Path, files: tuple[str, ...], *,
               echo: Callable[[str], None], color: bool,
               commentary: Callable[[str], set[int]] | None = None) -> DiffSummary:
    """Print a diff per differing file (learner as 'yours', reference as 'reference'). With
    `commentary` (1-based numbers of a text's comment-only lines), hunks that change nothing else
    are left out and counted."""
    summary = DiffSummary()
    for name in files:
        # marker lines of learner regions are the course's bookkeeping, not code: never compared
        ours, theirs = (regions.without_markers(_lines(root / name)) for root in (learner_root, reference_root))
        quiet_ours = commentary("".join(ours)) if commentary else set()
        quiet_theirs = commentary("".join(theirs)) if commentary else set()
        header = False
        for group in difflib.SequenceMatcher(None, ours, theirs, autojunk=False).get_grouped_opcodes(CONTEXT):
            changes = [op for op in group if op[0] != "equal"]
            if commentary and all(all(n + 1 in quiet_ours for n in range(i1, i2))
                                  and all(n + 1 in quiet_theirs for n in range(j1, j2))
                                  for _, i1, i2, j1, j2 in changes):
                summary.left_out += 1
                continue
            summary.changed = True
            if not header:
                _show(f"--- yours/{name}\n", echo, color)
                _show(f"+++ reference/{name}\n", echo, color)
                header = True
            first, last = group[0], group[-1]
            _show(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n", echo, color)
            for tag, i1, i2, j1, j2 in group:
                if tag == "equal":
                    for line in ours[i1:i2]:
                        _show(" " + line, echo, color)
                    continue
                removed, added = visible_pairs(ours[i1:i2], theirs[j1:j2])
                for line in removed:
                    _show("-" + line, echo, color)
                for line in added:
                    _show("+" + line, echo, color)
    return summary


def visible(text: str) -> str:
    """The text with what a terminal does not show written out: a byte-order mark, a carriage
    return, zero-width and other format or control characters, spaces other than the plain one
    (`\\ufeff`, `\\r`, `\\xa0`). Tabs and the final newline stay as they are."""
    import unicodedata

    out = []
    for char in text:
        kind = unicodedata.category(char)
        if char in "\t\n" or not (kind in ("Cf", "Cc", "Co", "Cs", "Zl", "Zp") or (kind == "Zs" and char != " ")):
            out.append(char)
        else:
            out.append(repr(char)[1:-1] if len(repr(char)) > 3 else f"\\x{ord(char):02x}")
    return "".join(out)


def visible_pairs(removed: list[str], added: list[str]) -> tuple[list[str], list[str]]:
    """Changed lines as they should be shown: invisible characters written out (visible), and
    where a removed line and the added line in its place still look the same (they differ only in
    trailing spaces, or tabs against spaces), their whitespace drawn (`·` a space, `→` a tab)."""
    removed, added = [visible(line) for line in removed], [visible(line) for line in added]
    if len(removed) == len(added):
        for i, (ours, theirs) in enumerate(zip(removed, added)):
            if ours != theirs and ours.rstrip().expandtabs() == theirs.rstrip().expandtabs():
                removed[i], added[i] = _drawn(ours), _drawn(theirs)
    return removed, added


def _drawn(line: str) -> str:
    end = "\n" if line.endswith("\n") else ""
    return line.rstrip("\n").replace(" ", "\u00b7").replace("\t", "\u2192") + end


def _show(line: str, echo: Callable[[str], None], color: bool) -> None:
    text = line.rstrip("\n")
    if not line.endswith("\n"):
        text += "\n\\ No newline at end of file"
    header = line.startswith(("+++ ", "--- "))
    colour = None if header else _COLOURS.get(line[:1])
    echo(click.style(text, fg=colour, bold=header) if color else text)
