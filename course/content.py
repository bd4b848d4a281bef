"""Where the course content lives: chapters, starters, references, catalogs and fixtures.

An installed wheel carries them under course/_content/; a source checkout (or an editable install)
has them at the repository's top level, beside the course/ package. Both have the same shape.
COURSE_CONTENT names another folder of that shape (an instructor's work in progress, a test's copy).

The package build carries exactly what `packaged_files` lists (see hatch_build.py): the shared folders
whole, and each registered language's own folder under starter/, reference/ and tests/ (a language's
catalog ships because its adapter is registered, not because someone listed its folder).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
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


def require(folder: Path) -> Path:
    """`folder`, a folder of the course's content, or the one-line error that says the installed
    course is incomplete and how to mend it."""
    if folder.is_dir():
        return folder
    from course.errors import IncompleteInstall

    try:
        name = folder.relative_to(root()).as_posix()
    except ValueError:
        name = str(folder)
    packaged = root() == _PACKAGE / "_content"
    mend = ("reinstall it (`python -m pip install --force-reinstall` with the source you installed it from)"
            if packaged else "restore the folder (`git status` shows what is missing)")
    raise IncompleteInstall(f"the installed course is incomplete: it has no {name}/ folder; {mend}")


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


# Content every track shares, carried whole; and the folders holding one subfolder per language.
SHARED_FOLDERS = ("chapters", "fixtures")
LANGUAGE_FOLDERS = ("starter", "reference", "tests")
# What tools leave beside the content, never part of it.
_NOT_CONTENT = frozenset({"__pycache__", "node_modules", ".pytest_cache", ".mypy_cache"})


def packaged_files(source: Path, languages: Iterable[str]) -> list[str]:
    """Every content file a package built from the checkout `source` carries, relative to it: the
    shared folders, and for each of `languages` its folder under each of LANGUAGE_FOLDERS. Hidden
    files and tool leftovers (bytecode, installed node modules) are left out."""
    roots = [source / name for name in SHARED_FOLDERS]
    roots += [source / kind / language for kind in LANGUAGE_FOLDERS for language in languages]
    found = []
    for top in roots:
        for path in top.rglob("*") if top.is_dir() else ():
            parts = path.relative_to(source).parts
            if path.is_file() and not any(p in _NOT_CONTENT or p.startswith(".") for p in parts) \
                    and path.suffix != ".pyc":
                found.append("/".join(parts))
    return sorted(found)
