"""`course doctor`: is this machine and this install ready for the course? One line per check.

What it looks at: each registered language's toolchain (the interpreter, `go`, ...), whether every
track of every chapter is complete where the course is installed (its files, catalog and fixtures),
whether its hints can speak (kill signatures recorded for the catalog as shipped), and whether the
cache and temporary folders can be written. A check that fails says what to do about it.

A toolchain that is missing fails only the tracks that need it: a learner of the Python tracks is
told that Go is missing (a warning, with the line that installs it), and doctor still passes, unless
a chapter started in the repository it runs in is a track of that language.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from course import cache, chapters, content, languages, rundir
from course import signatures as recorded
from course.chapters import Chapter, Track
from course.errors import CourseError

OK, WARN, FAIL = "ok", "warn", "FAIL"


@dataclass(frozen=True)
class Check:
    status: str  # OK, WARN (worth knowing, nothing the learner needs is broken) or FAIL
    what: str  # the thing checked, a word or two
    detail: str  # what was found, or what to do


def run_checks(needed: frozenset[str] = frozenset()) -> Iterator[Check]:
    """Every check, in order. `needed`: languages of chapters the learner has started here, whose
    toolchain missing is a failure rather than a warning."""
    everything = chapters.load_all()
    users: dict[str, list[str]] = {}
    for chapter in everything:
        for language in chapter.tracks:
            users.setdefault(language, []).append(chapter.id)
    for language in languages.ADAPTERS:
        try:
            found = languages.get(language).toolchain()
        except CourseError as exc:
            tracks = ", ".join(users.get(language, [])) or "no chapter yet"
            status = FAIL if language in needed else WARN
            yield Check(status, f"{language}", f"needed by the {language} tracks ({tracks}): {exc.message}")
            continue
        yield Check(OK, language, found)
    for chapter in everything:
        for track in chapter.tracks.values():
            yield _content(chapter, track)
            if track.mutants:
                stale = recorded.staleness(chapter, track)
                yield Check(FAIL if stale else OK, f"hints {chapter.id} {track.language}",
                            f"pitfall hints are off: {stale}" if stale else "kill signatures match the catalog")
    yield _writable("cache", cache.folder(), "set XDG_CACHE_HOME to a folder you can write")
    temporary = Path(tempfile.gettempdir())
    if temporary.name.startswith(rundir.PREFIX):
        temporary = temporary.parent  # this command's own folder (course.rundir) was made in it
    yield _writable("temporary", temporary, "set TMPDIR to a folder you can write")


def _content(chapter: Chapter, track: Track) -> Check:
    """Everything a track's commands read: starters, references, catalog, run script, fixtures, text."""
    missing = [f"reference/{track.language}/{chapter.id}/{n}" for n in track.files if not (track.reference / n).is_file()]
    missing += [f"starter/{track.language}/{chapter.id}/{n}" for n in track.files
                if n not in track.given and not (track.starter / n).is_file()]
    catalog = track.tests
    if not catalog.is_dir() or not any(catalog.iterdir()):
        missing.append(f"tests/{track.language}/{chapter.id}/")
    elif track.run and not (catalog / track.run).is_file():
        missing.append(f"tests/{track.language}/{chapter.id}/{track.run}")
    if not content.fixtures_dir(chapter.id).is_dir():
        missing.append(f"fixtures/{chapter.id}/")
    if not chapter.text_path.is_file():
        missing.append(f"chapters/{chapter.id}/{chapter.text_path.name}")
    what = f"content {chapter.id} {track.language}"
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        return Check(FAIL, what, f"the installed course is incomplete: no {shown}; reinstall it "
                                 "(`python -m pip install --force-reinstall` with the source you installed it from)")
    return Check(OK, what, f"{len(track.files)} files, catalog, fixtures, text")


def _writable(what: str, folder: Path, mend: str) -> Check:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(prefix=".course-doctor-", dir=folder):
            pass
    except OSError as exc:
        return Check(FAIL, what, f"cannot write in {folder} ({exc.strerror}): {mend}")
    return Check(OK, what, f"{folder} is writable")


def needed_languages() -> frozenset[str]:
    """The languages of the chapters started in the learner repository we are in, if any."""
    from course.learner import LearnerRepo, find_root

    root = find_root()
    if root is None:
        return frozenset()
    return frozenset(state.language for state in LearnerRepo.open(root).chapters.values())

