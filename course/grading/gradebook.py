"""The gradebook: one row per learner repository, built from the results.json a check wrote (on this
machine by `course grade`, or by a learner's CI and downloaded), written as CSV, JSON and a table.

The book is written whole after every row that finishes (each file replaced at once, never half
written), so a grade stopped at any moment leaves a valid partial book that `--resume` continues.
In the CSV, a cell that holds several items (reasons, tests judged again) has one per line; the JSON
keeps them as lists, and adds each row's failing tests with their messages (what the HTML report
links to).
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from course.grading.scores import cut, score

JUDGED = ("pass", "fail", "error")  # results.json's own statuses: the code was judged
NOT_JUDGED = "not judged"  # no verdict could be had: not a learner repository, no results, a time limit
INTERRUPTED = "interrupted"  # a row the grade did not finish: never written, done again by --resume
MAX_REASONS = 5
MESSAGE_CHARS = 2000  # a failing test's message as the JSON book and the report keep it


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
    commit: str = ""  # the repository's last commit (short hash)
    commit_date: str = ""  # and its date (ISO 8601)
    seconds: float = 0.0
    rejudged: list[str] = field(default_factory=list)  # timing-sensitive failures judged again, and how it went
    reasons: list[str] = field(default_factory=list)  # why tests failed, or why the repository could not be judged
    pitfall: int | None = None  # the pitfall the check's hint named (its failures clearly look like it)
    # each failing test: {"name", "status", "message"}; in the JSON book only
    failures: list[dict[str, str]] = field(default_factory=list)
    # how close the failures come to each pitfall (its closest documented mutant, Jaccard index); JSON only
    pitfalls: dict[str, float] = field(default_factory=dict)

    @property
    def judged(self) -> bool:
        return self.status in JUDGED

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Row:
        """A row as write_json wrote it (a book of an earlier course: one string of reasons, the
        commit and its date in one field)."""
        known = {f.name for f in fields(cls)}
        row = cls(**{k: v for k, v in data.items() if k in known})
        for name in ("reasons", "rejudged"):
            value = getattr(row, name)
            if isinstance(value, str):
                setattr(row, name, [value] if value else [])
        if not row.commit and isinstance(data.get("last_commit"), str):
            row.commit, _, row.commit_date = data["last_commit"].partition(" ")
        return row


def not_judged(learner: str, why: str, **values: Any) -> Row:
    return Row(learner=learner, reasons=[why], **values)


def check_record(chapter, track, repo, result, code_root: Path) -> dict[str, Any]:  # noqa: ANN001
    """What results.json keeps about the check beside exercism's fields (its "course" key): the
    chapter and track, the points, the hints revealed, the commit, and which pitfalls the failures
    look like (each pitfall's closest documented mutant, as a Jaccard index; `pitfall` when the
    check's hint names one)."""
    from course.pitfall_hints import pitfall_scores

    record: dict[str, Any] = {"chapter": chapter.id, "language": track.language, **score(result).as_dict()}
    if repo is not None:
        state = repo.chapters.get(chapter.id)
        record["hints_used"] = hints_used(state)
        record["commit"], record["commit_date"] = last_commit(repo.root)
    learner = os.environ.get("COURSE_LEARNER", "")  # set by the CI workflow: whose repository this is
    if learner:
        record["learner"] = learner
    scores, named = pitfall_scores(chapter, track, result, code_root)
    if scores:
        record["pitfalls"] = {str(k): v for k, v in sorted(scores.items())}
    if named is not None:
        record["pitfall"] = named
    return record


def hints_used(state: object) -> int:
    """How many hint levels the learner revealed for the chapter (0 when none, or not recorded)."""
    hints = getattr(state, "hints", None)
    if isinstance(hints, dict):
        return sum(v for v in hints.values() if isinstance(v, int) and not isinstance(v, bool))
    return hints if isinstance(hints, int) and not isinstance(hints, bool) else 0


def last_commit(root: Path) -> tuple[str, str]:
    """The repository's last commit: (short hash, ISO date), or ("", "") when it is no git repository."""
    if not (root / ".git").exists():
        return "", ""
    try:
        # the repository's own config runs nothing here (no fsmonitor), and a repository another
        # user owns is still read (git refuses those by default)
        done = subprocess.run(["git", "-c", "core.fsmonitor=false", "-c", f"safe.directory={root}", "-C", str(root),
                               "log", "-1", "--format=%h %cI"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return "", ""
    commit, _, date = done.stdout.strip().partition(" ") if done.returncode == 0 else ("", "", "")
    return commit, date


def row_from_results(learner: str, doc: Any, seconds: float = 0.0) -> Row:
    """A row from one results.json document; a document that is not one gives a row not judged."""
    row = Row(learner=learner, seconds=round(seconds, 2))
    tests = doc.get("tests") if isinstance(doc, dict) else None
    if not isinstance(tests, list) or doc.get("status") not in JUDGED or not all(isinstance(t, dict) for t in tests):
        row.reasons = ["not a course results.json (no status and tests)"]
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
    row.commit = str(course.get("commit", ""))
    row.commit_date = str(course.get("commit_date", ""))
    if " " in row.commit and not row.commit_date:  # written by an earlier course: "hash date" in one field
        row.commit, _, row.commit_date = row.commit.partition(" ")
    scores, row.pitfall = pitfalls_of(doc)
    row.pitfalls = {str(k): v for k, v in sorted(scores.items())}
    failing = [t for t in tests if t.get("status") != "pass"]
    row.failures = [{"name": str(t.get("name", "?")), "status": str(t.get("status", "")),
                     "message": cut(str(t.get("message", "")), MESSAGE_CHARS)} for t in failing]
    reasons = []
    if doc["status"] == "error" and doc.get("message"):
        reasons.append(_first_line(str(doc["message"])))
    reasons += [f"{t.get('name', '?')}: {_first_line(str(t.get('message', t.get('status', ''))))}"
                for t in failing[:MAX_REASONS]]
    if len(failing) > MAX_REASONS:
        reasons.append(f"and {len(failing) - MAX_REASONS} more")
    row.reasons = reasons
    return row


def pitfalls_of(doc: Any) -> tuple[dict[int, float], int | None]:
    """The pitfall scores a results.json recorded (see check_record), and the pitfall its hint named."""
    course = doc.get("course") if isinstance(doc, dict) and isinstance(doc.get("course"), dict) else {}
    raw = course.get("pitfalls") if isinstance(course.get("pitfalls"), dict) else {}
    scores = {int(k): float(v) for k, v in raw.items() if str(k).isdigit() and isinstance(v, (int, float))}
    named = course.get("pitfall")
    return scores, named if isinstance(named, int) and not isinstance(named, bool) else None


def _number(value: Any, default: float) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
        return value
    return default


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


CSV_COLUMNS = [f.name for f in fields(Row) if f.name not in ("failures", "pitfalls")]


def csv_text(rows: list[Row]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        cells = asdict(row)
        writer.writerow({k: "\n".join(v) if isinstance(v, list) else v for k, v in cells.items() if k in CSV_COLUMNS})
    return out.getvalue()


def json_text(rows: list[Row], about: dict[str, Any] | None = None) -> str:
    judged = sum(r.judged for r in rows)
    doc = {**(about or {}), "learners": len(rows), "judged": judged, "rows": [asdict(r) for r in rows]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def write_csv(path: Path, rows: list[Row]) -> None:
    _replace(path, csv_text(rows))


def write_json(path: Path, rows: list[Row], about: dict[str, Any] | None = None) -> None:
    _replace(path, json_text(rows, about))


def _replace(path: Path, text: str) -> None:
    """Write the file whole or not at all: a reader (or a Ctrl-C) never meets half a book."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.resolve().parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> tuple[dict[str, Any], list[Row]]:
    """A book written by write_json: what it says about itself, and its rows. ValueError when it is not one."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        raise ValueError("not a gradebook written by course grade")
    try:
        rows = [Row.from_dict(r) for r in doc["rows"]]
    except TypeError as exc:
        raise ValueError(f"a row is not one: {exc}") from None
    return {k: v for k, v in doc.items() if k not in ("rows", "learners", "judged")}, rows


class Book:
    """The gradebook while a grade runs: rows in the roster's order, both files written again after
    every row (a few hundred rows cost milliseconds)."""

    def __init__(self, csv_path: Path, json_path: Path, order: list[str], about: dict[str, Any]) -> None:
        self.csv_path, self.json_path = csv_path, json_path
        self.order = {name: i for i, name in enumerate(order)}
        self.about = about
        self.rows: dict[str, Row] = {}

    def add(self, row: Row, *, write: bool = True) -> None:
        if row.status == NOT_JUDGED and row.reasons == [INTERRUPTED]:
            return
        self.rows[row.learner] = row
        if write:
            self.write()

    def sorted_rows(self) -> list[Row]:
        return sorted(self.rows.values(), key=lambda r: (self.order.get(r.learner, len(self.order)), r.learner))

    def write(self) -> None:
        rows = self.sorted_rows()
        complete = all(name in self.rows for name in self.order)
        write_csv(self.csv_path, rows)
        write_json(self.json_path, rows, {**self.about, "complete": complete})


def table(rows: list[Row]) -> list[str]:
    """A plain table for the terminal: learner, status, tests, score, hints, first reason."""
    head = ("learner", "chapter", "status", "tests", "score", "hints", "first reason")
    body = [(r.learner, r.chapter or "-", r.status, f"{r.passed}/{r.total}" if r.judged else "-",
             f"{_show(r.score)}/{_show(r.max_score)}" if r.judged else "-", str(r.hints_used),
             (r.reasons[0] if r.reasons else "")[:60]) for r in rows]
    widths = [max(len(str(line[i])) for line in [head, *body]) for i in range(len(head) - 1)]
    return ["  ".join(str(cell).ljust(w) for cell, w in zip(line[:-1], widths)) + "  " + line[-1]
            for line in [head, *body]]


def _show(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
