"""Coverage told briefly: which lines of which file no test ran, and one figure for a whole track."""

from __future__ import annotations

from course.results import FileCoverage


def coverage_percent(files: dict[str, FileCoverage]) -> float:
    """coverage.py's branch-mode figure: lines run and branches taken, over all lines and branches."""
    total = sum(len(f.statements) + f.branches for f in files.values())
    missed = sum(len(f.missing) + len(f.missing_branches) for f in files.values())
    return 100 * (total - missed) / total if total else 100.0


def coverage_figure(files: dict[str, FileCoverage]) -> str:
    """'98.9% (168 of 170 branches, 540 of 542 lines)'."""
    if not files:
        return "no coverage was measured"
    statements = sum(len(f.statements) for f in files.values())
    branches = sum(f.branches for f in files.values())
    run = statements - sum(len(f.missing) for f in files.values())
    taken = branches - sum(len(f.missing_branches) for f in files.values())
    percent = coverage_percent(files)
    shown = f"{percent:.1f}" if percent < 100 else "100"
    if shown == "100.0":
        shown = "99.9"  # never round a gap up to 100
    return f"{shown}% ({taken} of {branches} branches, {run} of {statements} lines)"


def coverage_gaps(files: dict[str, FileCoverage]) -> list[str]:
    """One readable item per file with lines never run or branches never taken."""
    return [f"{name}: {described}" for name, f in files.items() if (described := describe_gaps(f))]


def describe_gaps(f: FileCoverage) -> str:
    """'41-44, 90; branches never taken: 52->55, 60->exit' (runs of consecutive statements joined)."""
    parts = []
    if f.missing:
        parts.append(line_ranges(f.statements, f.missing))
    missing = set(f.missing)  # a branch from or to a line never run says nothing more
    branches = [f"{a}->{b if b > 0 else 'exit'}" for a, b in f.missing_branches if a not in missing and b not in missing]
    if branches:
        parts.append("branches never taken: " + ", ".join(branches))
    return "; ".join(parts)


def line_ranges(statements: list[int], missing: list[int]) -> str:
    """Missing lines as ranges; a range spans lines that are consecutive statements (a blank line or
    a comment between two missing statements does not split it)."""
    gone = set(missing)
    ranges: list[list[int]] = []
    previous_missing = False
    for line in statements:
        if line in gone:
            if previous_missing:
                ranges[-1][1] = line
            else:
                ranges.append([line, line])
        previous_missing = line in gone
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)
