"""Where the course content lives: chapters, starters, references, catalogs and fixtures.

An installed wheel carries them under course/_content/; a source checkout (or an editable install)
has them at the repository's top level, beside the course/ package. Both have the same shape.
COURSE_CONTENT names another folder of that shape (an instructor's work in progress, a test's copy).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
# The folder holding the `course` package: what a child process needs on sys.path to import it.
HARNESS_ROOT = _PACKAGE.parent


@lru_cache(maxsize=1)
def root() -> Path:
    if os.environ.get("COURSE_CONTENT"):
        chosen = Path(os.environ["COURSE_CONTENT"]).resolve()
        if not (chosen / "chapters").is_dir():
            from course.errors import UsageError

            raise UsageError(f"COURSE_CONTENT={chosen} has no chapters/ folder")
        return chosen
    packaged = _PACKAGE / "_content"
    if (packaged / "chapters").is_dir():
        return packaged
    return _PACKAGE.parent


def chapters_dir() -> Path:
    return root() / "chapters"


def starter_dir(language: str, chapter_id: str) -> Path:
    return root() / "starter" / language / chapter_id


def reference_dir(language: str, chapter_id: str) -> Path:
    return root() / "reference" / language / chapter_id


def tests_dir(language: str, chapter_id: str) -> Path:
    return root() / "tests" / language / chapter_id


def fixtures_dir(chapter_id: str) -> Path:
    return root() / "fixtures" / chapter_id
