"""The learner's repository: where it is, and the small state file at its root.

The state file (.course.json) records which chapters were started, the last chapter touched, and the
result of each chapter's last check with a fingerprint of the files it ran on, so that `course diff`
can tell whether the current files are the ones that passed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from course.errors import ChapterNotStarted, NoLearnerRepo, UsageError
from course.languages.registry import DEFAULT_LANGUAGE

STATE_FILE = ".course.json"
STATE_VERSION = 1


def find_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above `start` holding a state file."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / STATE_FILE).is_file():
            return folder
    return None


def default_start_root(start: Path | None = None) -> Path:
    """Where `course start` scaffolds when no --dir is given: the nearest folder at or above the
    current one that is a learner root or a git repository's top, else the current folder."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / STATE_FILE).is_file() or (folder / ".git").exists():
            return folder
    return here


def now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def fingerprint(root: Path, files: tuple[str, ...]) -> str:
    """A digest of the chapter's learner files as they are now (a missing file counts as missing)."""
    digest = hashlib.sha256()
    for name in files:
        path = root / name
        digest.update(name.encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"\0missing\0")
    return digest.hexdigest()


@dataclass
class ChapterState:
    started: str = ""
    language: str = DEFAULT_LANGUAGE  # a state written before tracks existed has no language
    last_check: dict[str, Any] = field(default_factory=dict)  # passed, total, at, failing, fingerprint
    passed_fingerprint: str = ""  # the files' fingerprint at the last check that passed everything
    hints: dict[str, int] = field(default_factory=dict)  # catalog test -> hint levels revealed

    @property
    def passed(self) -> bool:
        return bool(self.passed_fingerprint)


@dataclass
class LearnerRepo:
    root: Path
    current: str = ""
    chapters: dict[str, ChapterState] = field(default_factory=dict)

    @classmethod
    def open(cls, root: Path) -> LearnerRepo:
        path = root / STATE_FILE
        if not path.is_file():
            return cls(root=root)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return cls(root=root, current=_current(raw), chapters=_chapters(raw))
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            raise UsageError(
                f"{path} is not a course state file ({exc}); move it aside and run `course start` again"
            ) from None

    @classmethod
    def find(cls, start: Path | None = None) -> LearnerRepo:
        root = find_root(start)
        if root is None:
            raise NoLearnerRepo(
                "not inside a learner repository (no .course.json here or above); "
                "run `course start CHAPTER` in your repository first"
            )
        return cls.open(root)

    def state(self, chapter_id: str) -> ChapterState:
        if chapter_id not in self.chapters:
            raise ChapterNotStarted(f"chapter {chapter_id} is not started here; run `course start {chapter_id}` first")
        return self.chapters[chapter_id]

    def resolve_chapter(self, given: str | None) -> str:
        """The chapter a command acts on: the one named, else the one worked on last."""
        if given:
            return given
        if not self.current:
            raise UsageError("no chapter named and none started yet; run `course start CHAPTER` first")
        return self.current

    def save(self) -> None:
        """Write atomically: a crash mid-write never leaves a half state file."""
        data = {
            "version": STATE_VERSION,
            "current": self.current,
            "chapters": {k: vars(v) for k, v in sorted(self.chapters.items())},
        }
        fd, tmp = tempfile.mkstemp(prefix=".course.", dir=self.root)
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)  # an ordinary file, not mkstemp's private 0600
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=2)
                out.write("\n")
            os.replace(tmp, self.root / STATE_FILE)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _current(raw: object) -> str:
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    if raw.get("version", STATE_VERSION) > STATE_VERSION:
        raise ValueError("written by a newer course; upgrade course")
    current = raw.get("current", "")
    if not isinstance(current, str):
        raise ValueError(f"'current' must be a chapter id, got {current!r}")
    return current


def _chapters(raw: dict) -> dict[str, ChapterState]:
    chapters = raw.get("chapters", {})
    if not isinstance(chapters, dict):
        raise ValueError("'chapters' must be an object")
    out = {}
    for chapter_id, fields in chapters.items():
        if not isinstance(fields, dict):
            raise ValueError(f"chapter {chapter_id}: expected an object")
        known = {f.name for f in dataclasses.fields(ChapterState)}
        state = ChapterState(**{k: v for k, v in fields.items() if k in known})  # a newer course's extras are kept out
        check = state.last_check
        if not isinstance(check, dict) or not all(isinstance(check.get(k), int) for k in ("passed", "total")):
            state.last_check = {}  # unreadable: it is only a record of the last check, forget it
        if not all(isinstance(v, str) for v in (state.started, state.language, state.passed_fingerprint)):
            raise ValueError(f"chapter {chapter_id}: a field has the wrong type")
        if not isinstance(state.hints, dict) or not all(
                isinstance(k, str) and isinstance(v, int) for k, v in state.hints.items()):
            raise ValueError(f"chapter {chapter_id}: 'hints' must map test names to levels")
        out[chapter_id] = state
    return out
