"""The gradebook from results.json files a learner's CI uploaded (`course grade --from-results DIR`).

DIR holds the downloaded artifacts: each results.json, at any depth, is one learner. The learner is
named by the file itself when the CI recorded it (the workflow sets COURSE_LEARNER to the repository's
name), else by the folder the file was found in.
"""

from __future__ import annotations

import json
from pathlib import Path

from course.errors import UsageError
from course.grading.gradebook import Row, row_from_results

RESULTS = "results.json"


def gradebook(folder: Path) -> list[Row]:
    if not folder.is_dir():
        raise UsageError(f"no folder {folder}: --from-results takes the folder the results.json files were downloaded to")
    found = sorted(folder.rglob(RESULTS))
    if not found:
        raise UsageError(f"no {RESULTS} under {folder}")
    rows = []
    for path in found:
        place = path.parent.relative_to(folder)
        name = str(place) if str(place) != "." else folder.name
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            rows.append(Row(learner=name, reasons=f"{path.relative_to(folder)} is not readable JSON: {exc}"))
            continue
        recorded = doc.get("course", {}).get("learner") if isinstance(doc, dict) and isinstance(doc.get("course"), dict) else None
        rows.append(row_from_results(str(recorded) if recorded else name, doc))
    return rows
