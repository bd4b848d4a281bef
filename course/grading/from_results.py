"""The gradebook from results.json files a learner's CI uploaded (`course grade --from-results DIR`).

DIR holds the downloaded artifacts: each results.json, at any depth, is one learner, and so is each
zip file holding one (an artifact as GitHub's web page downloads it). The learner is named by the file
itself when the CI recorded it (the workflow sets COURSE_LEARNER to the repository's name), else by
the folder or zip the file was found in. Everything else under DIR is named as skipped, and with a
roster (`--roster FILE`) every learner of it without a result gets a row saying so: nobody is lost
because their CI never uploaded anything.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course.errors import UsageError
from course.grading.gradebook import NOT_JUDGED, Row, row_from_results

RESULTS = "results.json"
ARTIFACT_PREFIX = "course-results-"  # what the workflow names its artifacts: course-results-<repository>
MAX_RESULTS_BYTES = 64 * 2**20  # a results.json larger than this (in a zip, unpacked) is not read


@dataclass
class Found:
    rows: list[Row] = field(default_factory=list)
    docs: dict[str, Any] = field(default_factory=dict)  # learner -> the results.json document
    skipped: list[str] = field(default_factory=list)  # "notes.txt: not a results.json or a zip"


def gradebook(folder: Path, roster: list[str] | None = None, chapter: str | None = None) -> Found:
    if not folder.is_dir():
        raise UsageError(f"no folder {folder}: --from-results takes the folder the results.json files were downloaded to")
    found = Found()
    places: list[tuple[str, str, Any]] = []  # (the place's name, where it was read, the document or an error)
    _walk(folder, folder, places, found.skipped)
    if not places and not roster:
        raise UsageError(f"no {RESULTS} under {folder} (nor a zip holding one)"
                         + (f"; skipped: {'; '.join(found.skipped[:5])}" if found.skipped else ""))
    seen: dict[str, str] = {}
    for name, where, doc in places:
        if isinstance(doc, Exception):
            row = Row(learner=name, reasons=[f"{where} is not readable JSON: {doc}"])
        else:
            course = doc.get("course") if isinstance(doc, dict) and isinstance(doc.get("course"), dict) else {}
            recorded = course.get("learner")
            row = row_from_results(str(recorded) if recorded else name, doc)
            if chapter and row.judged and row.chapter != chapter:
                row.status = NOT_JUDGED
                row.reasons = [f"these results are for chapter {row.chapter or '?'}, not {chapter}"]
        if row.learner in seen:
            found.skipped.append(f"{where}: a second result for {row.learner} (the first: {seen[row.learner]})")
            continue
        seen[row.learner] = where
        found.rows.append(row)
        if not isinstance(doc, Exception):
            found.docs[row.learner] = doc
    if roster:
        found.rows = _against(roster, found.rows, folder)
    return found


def _walk(root: Path, folder: Path, places: list, skipped: list[str]) -> bool:
    """Collect the results under `folder`; True when it held any. A folder that holds none is named
    as skipped (its files then are not named one by one)."""
    held, unknown = False, []
    for path in sorted(folder.iterdir()):
        shown = path.relative_to(root).as_posix()
        if path.is_dir():
            held = _walk(root, path, places, skipped) or held
        elif path.name == RESULTS:
            place = path.parent.relative_to(root)
            name = str(place) if str(place) != "." else root.name
            places.append((name, shown, _read(path)))
            held = True
        elif path.suffix.lower() == ".zip":
            held = _zipped(path, shown, places, skipped) or held
        else:
            unknown.append(f"{shown}: not a {RESULTS} nor a zip holding one")
    if held:
        skipped.extend(unknown)
    elif folder != root:
        skipped.append(f"{folder.relative_to(root).as_posix()}/: no {RESULTS} in it")
    else:
        skipped.extend(unknown)
    return held


def _read(path: Path) -> Any:
    try:
        if path.stat().st_size > MAX_RESULTS_BYTES:
            return ValueError(f"larger than {MAX_RESULTS_BYTES // 2**20} MiB")
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return exc


def _zipped(path: Path, shown: str, places: list, skipped: list[str]) -> bool:
    """The results.json files in a zip (an artifact downloaded from GitHub's page), each one learner,
    named after the zip (and the folder inside it, when it holds several)."""
    try:
        with zipfile.ZipFile(path) as archive:
            inside = [i for i in archive.infolist() if not i.is_dir() and Path(i.filename).name == RESULTS]
            if not inside:
                skipped.append(f"{shown}: a zip with no {RESULTS} in it")
                return False
            for info in inside:
                folder = Path(info.filename).parent
                name = path.stem if len(inside) == 1 or str(folder) == "." else f"{path.stem}/{folder.as_posix()}"
                where = f"{shown}:{info.filename}"
                if info.file_size > MAX_RESULTS_BYTES:
                    places.append((name, where, ValueError(f"larger than {MAX_RESULTS_BYTES // 2**20} MiB")))
                    continue
                try:
                    places.append((name, where, json.loads(archive.read(info).decode("utf-8"))))
                except (OSError, UnicodeDecodeError, ValueError, zipfile.BadZipFile) as exc:
                    places.append((name, where, exc))
            return True
    except (OSError, zipfile.BadZipFile) as exc:
        skipped.append(f"{shown}: not a readable zip ({exc})")
        return False


def _keys(row: Row) -> set[str]:
    """The names a result answers to: the learner it records ("org/alice-ag01"), the repository's own
    name ("alice-ag01"), and the artifact's name without the workflow's prefix."""
    keys = {row.learner, row.learner.rsplit("/", 1)[-1]}
    keys |= {k[len(ARTIFACT_PREFIX):] for k in keys if k.startswith(ARTIFACT_PREFIX)}
    return {k.lower() for k in keys if k}


def matches(name: str, row: Row) -> bool:
    """Whether the roster's `name` is this result's learner: the same name, or a repository GitHub
    Classroom named after the learner ("assignment-NAME")."""
    name = name.lower()
    return any(k == name or k.endswith("-" + name) for k in _keys(row))


def _against(roster: list[str], rows: list[Row], folder: Path) -> list[Row]:
    """One row per learner of the roster, in its order (theirs, or "no result"), then the results
    of learners the roster does not name."""
    out, used = [], set()
    for name in roster:
        mine = [i for i, r in enumerate(rows) if i not in used and matches(name, r)]
        if not mine:
            out.append(Row(learner=name, reasons=[f"no result: nothing under {folder} is this learner's "
                                                  f"(their CI never ran, or never uploaded {RESULTS})"]))
            continue
        best = min(mine, key=lambda i: (rows[i].learner.lower().rsplit("/", 1)[-1] != name.lower(), i))
        used.add(best)
        out.append(rows[best])
    for i, row in enumerate(rows):
        if i not in used:
            row.reasons = [*row.reasons, "not on the roster"]
            out.append(row)
    return out
