"""Coverage of the code under test, measured by coverage.py in branch mode.

Each worker of a run records what it executed into its own data file in the run's coverage folder;
once the run is over, the parent combines them and reads, for every file of the track, its statements, the ones never run and
the branches never taken. Lines the code marks `# pragma: no cover` (or `no branch`) are left out,
and `course verify` insists that each such mark says why, on the same line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from course.results import FileCoverage

# coverage.py's own exclusion marks (its default patterns for excluded lines and partial branches)
PRAGMA = re.compile(r"#\s*(pragma|PRAGMA)[:\s]?\s*(no|NO)\s*(cover|COVER|branch|BRANCH)\b(?P<reason>.*)$")
# A reason is words, not punctuation: "# pragma: no cover - only when the OS refuses the close"
REASON = re.compile(r"[A-Za-z]{2,}.*\s.*[A-Za-z]{2,}")


def asked(folder: Path, code_root: Path, files: tuple[str, ...]) -> dict:
    """What a worker needs to measure: where its data file goes, and which files to measure."""
    return {"data_file": str(folder / ".coverage"), "include": [str(code_root / name) for name in files]}


def read(folder: Path, code_root: Path, files: list[str]) -> dict[str, FileCoverage]:
    import coverage
    from coverage.exceptions import NoDataError

    combined = coverage.Coverage(data_file=str(folder / ".coverage"), branch=True, config_file=False)
    combined.combine([str(folder)], keep=False)
    combined.load()
    report = folder / "coverage.json"
    present = [name for name in files if (code_root / name).is_file()]
    try:
        combined.json_report(morfs=[str(code_root / name) for name in present], outfile=str(report),
                             ignore_errors=True)
    except NoDataError:
        return {}
    measured = json.loads(report.read_text(encoding="utf-8"))["files"]
    by_path = {str(Path(path).resolve()): data for path, data in measured.items()}
    results = {}
    for name in present:
        data = by_path.get(str((code_root / name).resolve()))
        if data is None:
            continue
        statements = sorted(data["executed_lines"] + data["missing_lines"])
        results[name] = FileCoverage(
            path=name,
            statements=statements,
            missing=sorted(data["missing_lines"]),
            branches=data["summary"].get("num_branches", 0),
            missing_branches=sorted((a, b) for a, b in data.get("missing_branches", [])),
        )
    return results


def unexplained_exclusions(path: Path, shown_as: str) -> list[str]:
    """Each `pragma: no cover` / `no branch` mark in the file that does not say why."""
    problems = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        mark = PRAGMA.search(line)
        if mark and not REASON.search(mark.group("reason")):
            problems.append(f"{shown_as}:{number}: `{mark.group(0).strip()}` without a reason "
                            "(say on the same line why no test runs it)")
    return problems
