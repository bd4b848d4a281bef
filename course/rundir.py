"""One temporary folder per command: every temporary file of a run, and of what it starts, lives in it.

`enter()` makes the folder and points tempfile (and TMPDIR, for child processes) at it; it is
removed when the process exits. A run that cannot clean up (killed with SIGKILL, a closed terminal) leaves its folder
behind: the next run removes every such folder whose process is gone.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PREFIX = f"course-{os.getuid() if hasattr(os, 'getuid') else 0}-run-"

_current: Path | None = None
_saved: tuple[str | None, str | None] = (None, None)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale(base: Path) -> list[Path]:
    """Remove the run folders of processes that no longer exist; the folders removed."""
    removed = []
    try:
        candidates = [p for p in base.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return removed
    for folder in candidates:
        pid = folder.name[len(PREFIX):]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            for made in _made_outside(folder, base):
                shutil.rmtree(made, ignore_errors=True)
                removed.append(made)
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


OUTSIDE = "outside"  # in a run folder: the folders that run made outside it, one path per line


def _made_outside(folder: Path, base: Path) -> list[Path]:
    """The folders a run recorded with `made_outside`: only names directly in `base`, so a damaged
    list can never point the cleaning anywhere else."""
    try:
        lines = (folder / OUTSIDE).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    paths = [Path(line) for line in lines if line]
    return [p for p in paths if p.parent == base and p.name and p.name not in (".", "..") and p.is_dir()]


def made_outside(path: str) -> None:
    """Record a folder made outside the run folder (see `outside`), so that the next run removes it
    when this one could not (killed by SIGKILL)."""
    if _current is None:
        return
    with open(_current / OUTSIDE, "a", encoding="utf-8") as listed:
        listed.write(f"{path}\n")


def enter() -> Path | None:
    """Make this run's folder and send temporary files there; None (and nothing changed) when the
    temporary folder cannot be written."""
    global _current, _saved
    if _current is not None:
        return _current
    base = Path(tempfile.gettempdir())
    clean_stale(base)
    folder = base / f"{PREFIX}{os.getpid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    _saved = (tempfile.tempdir, os.environ.get("TMPDIR"))
    tempfile.tempdir = str(folder)
    os.environ["TMPDIR"] = str(folder)
    _current = folder
    # Removed at exit, after every exit handler registered later has run (atexit runs them last
    # in, first out): multiprocessing removes its own temporary folder, inside this one, that way.
    atexit.register(leave)
    return folder


def leave() -> None:
    global _current
    if _current is None:
        return
    folder, _current = _current, None
    tempfile.tempdir, previous = _saved
    if previous is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = previous
    shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def outside() -> Iterator[None]:
    """Temporary files made in the block go where they would without a run folder: for sockets,
    whose paths are limited to about a hundred bytes (the run folder's name would cost twenty)."""
    if _current is None:
        yield
        return
    inside = tempfile.tempdir
    tempfile.tempdir = _saved[0]
    try:
        yield
    finally:
        tempfile.tempdir = inside
