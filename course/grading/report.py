"""The class report (`course grade ... --html report.html`): one self-contained HTML page, rendered
with Jinja2 from the gradebook's rows.

It shows how the class stands (counts by status), the distribution of scores, a heat map of learners
against the chapter's pitfalls (how close each learner's failures come to each pitfall's documented
mutants, and which pitfall a hint named), the tests the class fails most, and each learner's row,
linked to the list of their failing tests with their messages. Everything a learner wrote (names,
messages) is escaped: the page runs no code but its own small table sorter, and loads nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

from course.grading.gradebook import JUDGED, Row

BINS = 10  # the score distribution's bars: 0-10%, ..., 90-100% (a full score in the last)
MOST_FAILED = 15


@dataclass(frozen=True)
class Pitfall:
    id: int
    title: str


def pitfalls_of(chapter_ids: set[str]) -> dict[str, list[Pitfall]]:
    """The pitfalls of each chapter graded (none for a chapter this course does not have)."""
    from course import chapters
    from course.errors import CourseError

    found = {}
    for chapter_id in sorted(chapter_ids):
        try:
            found[chapter_id] = [Pitfall(p.id, p.title) for p in chapters.get(chapter_id).pitfalls]
        except CourseError:
            found[chapter_id] = []
    return found


def context(rows: list[Row], title: str = "") -> dict[str, Any]:
    """What the template shows, worked out here so that the template only lays it out."""
    judged = [r for r in rows if r.judged]
    statuses = Counter(r.status for r in rows)
    bins = [0] * BINS
    for row in judged:
        share = row.score / row.max_score if row.max_score else 0.0
        bins[min(int(share * BINS), BINS - 1)] += 1
    failed = Counter(f["name"] for r in judged for f in r.failures)
    chapters = {r.chapter for r in rows if r.chapter}
    pitfalls = pitfalls_of(chapters)
    columns = [(chapter, p) for chapter in sorted(pitfalls) for p in pitfalls[chapter]]
    failing = [r for r in judged if r.status != "pass"]
    heat = []
    for row in failing:
        cells = []
        for chapter, pitfall in columns:
            value = row.pitfalls.get(str(pitfall.id), 0.0) if row.chapter == chapter else 0.0
            cells.append({"value": value, "named": row.chapter == chapter and row.pitfall == pitfall.id})
        heat.append({"row": row, "cells": cells})
    named = [sum(1 for h in heat if h["cells"][i]["named"]) for i in range(len(columns))]
    return {
        "title": title or "Class report",
        "made": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "rows": rows,
        "anchors": {r.learner: f"learner-{i}" for i, r in enumerate(rows)},
        "counts": {"learners": len(rows), "judged": len(judged), "pass": statuses.get("pass", 0),
                   "fail": statuses.get("fail", 0), "error": statuses.get("error", 0),
                   "not_judged": len(rows) - sum(statuses.get(s, 0) for s in JUDGED)},
        "bins": [{"label": f"{i * 100 // BINS}–{(i + 1) * 100 // BINS}%", "count": n} for i, n in enumerate(bins)],
        "bin_max": max(bins) if any(bins) else 1,
        "most_failed": failed.most_common(MOST_FAILED),
        "columns": columns,
        "heat": heat,
        "named": named,
    }


def render(rows: list[Row], title: str = "") -> str:
    import jinja2

    template = resources.files("course.grading").joinpath("report.html.j2").read_text(encoding="utf-8")
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                                     lstrip_blocks=True)
    environment.filters["points"] = lambda v: str(int(v)) if float(v).is_integer() else f"{v:g}"
    return environment.from_string(template).render(**context(rows, title))


def write(path: Path, rows: list[Row], title: str = "") -> None:
    path.write_text(render(rows, title), encoding="utf-8")
