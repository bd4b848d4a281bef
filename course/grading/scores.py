"""Points: each catalog entry is worth its manifest `weight` (1 by default) when it passes."""

from __future__ import annotations

import json
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


# GitHub Classroom's reporter receives the runner result base64-encoded, through a step output (GitHub
# caps a step's outputs at 1 MB) and then an environment variable (Linux caps one environment string,
# NAME=value, at 128 KiB: MAX_ARG_STRLEN). The encoded payload is kept under the smaller of the two,
# with room for the variable's name: at most PAYLOAD_BYTES of JSON.
STEP_OUTPUT_LIMIT = 1_000_000
ENVIRONMENT_STRING_LIMIT = 128 * 1024
PAYLOAD_BYTES = (ENVIRONMENT_STRING_LIMIT - 1024) // 4 * 3
# Each test's message and code, cut to the first of these sizes (characters) at which the whole
# payload fits; a cut text ends with a note of what was left out (results.json keeps it whole).
CUTS = ((1000, 1000), (500, 300), (200, 0), (100, 0))


def autograding(results: dict, result: CheckResult) -> dict:
    """GitHub Classroom's runner result (what its grading reporter decodes from a step output):
    version 1, a status, `max_score`, and per test its `score`. Built from results.json's tests so
    that names, statuses and messages are the same in both files; each message and test code cut so
    that the payload, encoded, fits where the workflow passes it (see PAYLOAD_BYTES)."""
    total = score(result)
    for message_chars, code_chars in CUTS:
        tests = []
        for doc, entry in zip(results["tests"], result.entries):
            test = {"name": doc["name"], "status": doc["status"]}
            if "message" in doc:
                test["message"] = cut(doc["message"], message_chars)
            if code_chars and doc.get("test_code"):
                test["test_code"] = cut(doc["test_code"], code_chars)
            test["score"] = _number(entry_points(entry))
            if entry.entry.task:
                test["task_id"] = entry.entry.task
            tests.append(test)
        doc = {"version": 1, "status": results["status"], "max_score": _number(total.max_points), "tests": tests}
        if payload_size(doc) <= PAYLOAD_BYTES:
            break
    return doc


def payload_size(doc: dict) -> int:
    """The bytes of the JSON the workflow encodes (as write_json writes it)."""
    return len((json.dumps(doc, indent=2) + "\n").encode("utf-8"))


def cut(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters and a note of how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters cut; results.json has the whole text]"


def _number(value: float) -> float | int:
    """Whole points as integers: '3', not '3.0', in files people read."""
    return int(value) if float(value).is_integer() else round(value, 4)
