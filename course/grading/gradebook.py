"""The gradebook: one row per learner repository, built from the results.json a check wrote (on this
machine by `course grade`, or by a learner's CI and downloaded), written as CSV, JSON and a table."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from course.grading.scores import score

JUDGED = ("pass", "fail", "error")  # results.json's own statuses: the code was judged
NOT_JUDGED = "not judged"  # no verdict could be had: not a learner repository, no results, a time limit
MAX_REASONS = 5


@dataclass
class Row:
    learner: str
    chapter: str = ""
    language: str = ""
    status: str = NOT_JUDGED
    passed: int = 0
    total: int = 0
    score: float = 0
    max_score: float = 0
    hints_used: int = 0
    last_commit: str = ""
    seconds: float = 0.0
    reasons: str = ""  # why tests failed, or why the repository could not be judged

    @property
    def judged(self) -> bool:
        return self.status in JUDGED


def check_record(chapter, track, repo, result) -> dict[str, Any]:  # noqa: ANN001
    """What results.json keeps about the check beside exercism's fields (its "course" key)."""
    record: dict[str, Any] = {"chapter": chapter.id, "language": track.language, **score(result).as_dict()}
    if repo is not None:
        state = repo.chapters.get(chapter.id)
        record["hints_used"] = hints_used(state)
        record["commit"] = last_commit(repo.root)
    learner = os.environ.get("COURSE_LEARNER", "")  # set by the CI workflow: whose repository this is
    if learner:
        record["learner"] = learner
    return record


def hints_used(state: object) -> int:
    """How many hint levels the learner revealed for the chapter (0 when none, or not recorded)."""
    hints = getattr(state, "hints", None)
    if isinstance(hints, dict):
        return sum(v for v in hints.values() if isinstance(v, int) and not isinstance(v, bool))
    return hints if isinstance(hints, int) and not isinstance(hints, bool) else 0


def last_commit(root: Path) -> str:
    """The repository's last commit as 'short-hash date', or "" when it is no git repository."""
    if not (root / ".git").exists():
        return ""
    try:
        done = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%h %cI"], capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def row_from_results(learner: str, doc: Any, seconds: float = 0.0) -> Row:
    """A row from one results.json document; a document that is not one gives a row not judged."""
    row = Row(learner=learner, seconds=round(seconds, 2))
    tests = doc.get("tests") if isinstance(doc, dict) else None
    if not isinstance(tests, list) or doc.get("status") not in JUDGED or not all(isinstance(t, dict) for t in tests):
        row.reasons = "not a course results.json (no status and tests)"
        return row
    course = doc.get("course") if isinstance(doc.get("course"), dict) else {}
    row.learner = learner or str(course.get("learner", ""))
    row.chapter = str(course.get("chapter", ""))
    row.language = str(course.get("language", ""))
    row.status = doc["status"]
    row.total = len(tests)
    row.passed = sum(t.get("status") == "pass" for t in tests)
    row.score = _number(course.get("score"), row.passed)
    row.max_score = _number(course.get("max_score"), row.total)
    row.hints_used = int(_number(course.get("hints_used"), 0))
    row.last_commit = str(course.get("commit", ""))
    reasons = []
    if doc["status"] == "error" and doc.get("message"):
        reasons.append(_first_line(str(doc["message"])))
    failing = [t for t in tests if t.get("status") != "pass"]
    reasons += [f"{t.get('name', '?')}: {_first_line(str(t.get('message', t.get('status', ''))))}"
                for t in failing[:MAX_REASONS]]
    if len(failing) > MAX_REASONS:
        reasons.append(f"and {len(failing) - MAX_REASONS} more")
    row.reasons = "; ".join(reasons)
    return row


def _number(value: Any, default: float) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
        return value
    return default


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


COLUMNS = [f.name for f in fields(Row)]


def write_csv(path: Path, rows: list[Row]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow(asdict(row))


def write_json(path: Path, rows: list[Row]) -> None:
    judged = sum(r.judged for r in rows)
    doc = {"learners": len(rows), "judged": judged, "rows": [asdict(r) for r in rows]}
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def table(rows: list[Row]) -> list[str]:
    """A plain table for the terminal: learner, status, tests, score, hints, first reason."""
    head = ("learner", "chapter", "status", "tests", "score", "hints", "first reason")
    body = [(r.learner, r.chapter or "-", r.status, f"{r.passed}/{r.total}" if r.judged else "-",
             f"{_show(r.score)}/{_show(r.max_score)}" if r.judged else "-", str(r.hints_used),
             r.reasons.split("; ")[0][:60]) for r in rows]
    widths = [max(len(str(line[i])) for line in [head, *body]) for i in range(len(head) - 1)]
    return ["  ".join(str(cell).ljust(w) for cell, w in zip(line[:-1], widths)) + "  " + line[-1]
            for line in [head, *body]]


def _show(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
