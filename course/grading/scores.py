"""Points: each catalog entry is worth its manifest `weight` (1 by default) when it passes."""

from __future__ import annotations

from dataclasses import dataclass

from course.results import PASS, CheckResult, EntryResult


@dataclass(frozen=True)
class Score:
    points: float
    max_points: float

    def as_dict(self) -> dict[str, float]:
        return {"score": _number(self.points), "max_score": _number(self.max_points)}


def entry_points(entry: EntryResult) -> float:
    return entry.entry.weight if entry.status == PASS else 0.0


def score(result: CheckResult) -> Score:
    """The points earned by the entries that ran, out of what those entries are worth."""
    return Score(points=sum(entry_points(e) for e in result.entries),
                 max_points=sum(e.entry.weight for e in result.entries))


def autograding(results: dict, result: CheckResult) -> dict:
    """GitHub Classroom's runner result (what its grading reporter decodes from a step output):
    version 1, a status, `max_score`, and per test its `score`. Built from results.json's tests so
    that names, statuses and messages are the same in both files."""
    tests = []
    for doc, entry in zip(results["tests"], result.entries):
        test = {key: doc[key] for key in ("name", "status", "message", "test_code") if key in doc}
        test["score"] = _number(entry_points(entry))
        if entry.entry.task:
            test["task_id"] = entry.entry.task
        tests.append(test)
    total = score(result)
    return {"version": 1, "status": results["status"], "max_score": _number(total.max_points), "tests": tests}


def _number(value: float) -> float | int:
    """Whole points as integers: '3', not '3.0', in files people read."""
    return int(value) if float(value).is_integer() else round(value, 4)
