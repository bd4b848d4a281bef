"""Recorded kill signatures: how each documented mutant fails the catalog, kept in the chapter's
signatures.json for `course check` to name the pitfall a learner's failures look like
(course.pitfall_hints).

A signature is a set of marks, one per case the mutant breaks: 'entry[case]@how', where `how` is the
check that failed ('test_x.py:41 AssertionError') or the way the case ended ('timeout'). A recording
is tied to everything that decides it (the catalog's files, the track's mutants, the reference's
files and this module's mark format) by a key: a recording whose key differs is stale, never used for
hints, and `course verify` fails on it with the command that renews it. Only `course verify --record`
writes the file.

A case that times out on a loaded machine fails its assertion on a quiet one, and the reverse: a
timed-out case reads as whatever failure of the same case it is compared with (`aligned`), so neither
a recording nor a hint depends on which of the two happened. A recording keeps only the marks a
mutant shows on every run it is recorded from, so a case that fails one run in two is left out.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from course.chapters import Chapter, Track

# Bumped when the marks' format changes: every recording made before is then stale.
MARK_FORMAT = 1
_MARK = re.compile(r"^(?P<case>[^\[@]+(?:\[.*\])?)@(?P<how>[^@]*)$")
TIMED_OUT = "timeout"

Signature = frozenset[str]


def case_of(mark: str) -> tuple[str, str]:
    """(the case, how it failed) of a mark; a mark of another form is a case of its own."""
    found = _MARK.match(mark)
    return (found["case"], found["how"]) if found else (mark, "")


def aligned(marks: Iterable[str], other: Iterable[str]) -> Signature:
    """`marks`, with each timed-out case read as `other`'s failure of that same case: a timeout and an
    assertion of one case are the same evidence, whichever the machine's load produced."""
    by_case: dict[str, set[str]] = {}
    for mark in other:
        by_case.setdefault(case_of(mark)[0], set()).add(mark)
    out: set[str] = set()
    for mark in marks:
        case, how = case_of(mark)
        out |= by_case[case] if how == TIMED_OUT and case in by_case else {mark}
    return frozenset(out)


def equivalent(a: Iterable[str], b: Iterable[str]) -> bool:
    a, b = frozenset(a), frozenset(b)
    return aligned(a, b) == aligned(b, a)


def stable(runs: list[Iterable[str]]) -> Signature:
    """The marks a mutant shows on every run (a timeout standing for the same case's other failure)."""
    kept = frozenset(runs[0])
    for run in runs[1:]:
        run = frozenset(run)
        kept = aligned(kept, run) & aligned(run, kept)
    return kept


def recording_key(chapter: Chapter, track: Track) -> str:
    """A digest of everything a recording depends on: the catalog's files, the track's documented
    mutants, the reference's files, and the mark format."""
    digest = hashlib.sha256(f"marks {MARK_FORMAT}\0catalog {track.catalog_digest()}\0".encode())
    mutants = [asdict(m) for m in track.mutants]
    digest.update(json.dumps(mutants, sort_keys=True).encode() + b"\0")
    for name in sorted(track.files):
        path = track.reference / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"\0missing") + b"\0")
    return digest.hexdigest()


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load(chapter: Chapter, track: Track) -> dict[str, Signature]:
    """The recorded signatures by mutant id, if they were recorded against this very catalog, these
    mutants and this reference (against anything else they would mislead: then there are none)."""
    recorded = _read(chapter.signatures_path).get(track.language)
    if not isinstance(recorded, dict) or recorded.get("key") != recording_key(chapter, track):
        return {}
    return {mutant: frozenset(marks) for mutant, marks in recorded.get("signatures", {}).items()}


def staleness(chapter: Chapter, track: Track) -> str:
    """'' when the recording matches the track; else one line: which file, and the command that
    renews it."""
    path = chapter.signatures_path
    renew = f"`course verify {chapter.id} --record` renews it"
    recorded = _read(path).get(track.language)
    where = f"chapters/{chapter.id}/{path.name}"
    if not isinstance(recorded, dict):
        return f"{where} has no signatures recorded for the {track.language} track: {renew}"
    if recorded.get("key") != recording_key(chapter, track):
        return (f"{where} was recorded for another catalog, other mutants or another reference of the "
                f"{track.language} track: {renew}")
    missing = sorted({m.id for m in track.mutants} - set(recorded.get("signatures", {})))
    if missing:
        return f"{where} has no signature for {', '.join(missing)} ({track.language}): {renew}"
    return ""


def record(chapter: Chapter, track: Track, signatures: Mapping[str, Iterable[str]]) -> bool:
    """Record the signatures for the track, keeping a recorded one that reads the same (so a
    recording made again on a loaded machine changes nothing); True if the file changed."""
    path = chapter.signatures_path
    data = _read(path)
    before = data.get(track.language) if isinstance(data.get(track.language), dict) else {}
    old = before.get("signatures", {}) if before.get("key") == recording_key(chapter, track) else {}
    kept = {mutant: sorted(old[mutant] if mutant in old and equivalent(old[mutant], marks) else marks)
            for mutant, marks in sorted(signatures.items())}
    wanted = {"key": recording_key(chapter, track), "signatures": kept}
    if before == wanted:
        return False
    data[track.language] = wanted
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return True
