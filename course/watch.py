"""`course watch`: check again whenever a chapter file is saved, on a screen that keeps only what
matters now: how many tests pass, the first failing one with its reason, and the hint line.

Saves are noticed by the operating system through watchfiles; where it is not installed, or with
--poll, by looking at the files' size and modification time a few times a second. What is watched
is the chapter's packages and the learner's own tests (Scope). The moment a save is noticed the
screen says a run is going on; a save noticed during a run gives that run up (its workers stopped)
and starts again, so the verdict on screen is always that of the files on disk. The tests that
failed last run first (their verdict arrives sooner); the screen lists them in catalog order.
While the learner types, the language adapter keeps the next run ready (`Adapter.standby`: for
Python, one worker per core the run uses, pytest set up and nothing of the learner's code imported), so a save costs
the catalog's own time and little more.
"""

from __future__ import annotations

import os
import select
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

POLL_INTERVAL = 0.05  # seconds between looks at the files when polling (a stat of a few files)
# A save is often several writes (truncate, write, rename), microseconds to a millisecond apart:
# the watcher reports once nothing new has happened for a step, and at the latest after the
# longest wait. A write that comes later anyway (a slow editor) is a change of its own: it starts
# another run, so the last verdict on screen is always that of the files as they were last saved.
STEP_MS = 5
LONGEST_MS = 100


class Keys:
    """Single key presses on a terminal (q to quit), read without blocking; nothing elsewhere."""

    def __init__(self, stream=None) -> None:  # noqa: ANN001
        self.stream = stream if stream is not None else sys.stdin
        self.fd = self.stream.fileno() if self._tty() else None
        self.saved = None

    def _tty(self) -> bool:
        try:
            return self.stream.isatty()
        except (ValueError, OSError):
            return False

    def __enter__(self) -> Keys:
        if self.fd is not None:
            import termios
            import tty

            self.saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            import termios

            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)

    def quit_pressed(self, wait: float = 0.0) -> bool:
        if self.fd is None:
            if wait:
                time.sleep(wait)
            return False
        ready, _, _ = select.select([self.fd], [], [], wait)
        if not ready:
            return False
        key = os.read(self.fd, 32)
        return b"q" in key.lower() or b"\x04" in key  # q, or Ctrl-D


# Files an editor writes beside the one being edited, never code: vim's swap files and its write
# test (4913), backups ending in ~, emacs's lock and autosave files (.#name, #name#).
_EDITOR_SUFFIXES = (".swp", ".swo", ".swx", ".swpx", "~", ".tmp", ".bak", ".orig")


def _ignored(name: str) -> bool:
    return (name.startswith((".", "#")) or name.endswith(_EDITOR_SUFFIXES) or name == "__pycache__"
            or name.isdigit())


class Scope:
    """What `course watch` looks at in a learner's repository: the chapter's packages (every folder
    under the top-level folder of each of the track's files: `agent/` for agent/provider/sse.py,
    new modules and subpackages included), the learner's own tests folder, and the track's files
    at the repository's top. Only source files count (a name ending as one of the track's files
    does, `.py`, `.go`, `.mod`); hidden names, editors' swap and backup files and `__pycache__`
    never do, so neither saving in an editor nor running the code triggers a run."""

    def __init__(self, root: Path, files: tuple[str, ...], folders: tuple[str, ...] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        self.top_files = frozenset(name for name in files if len(Path(name).parts) == 1)
        tops = {Path(name).parts[0] for name in files if len(Path(name).parts) > 1} | set(folders)
        # a folder inside another one is watched with it
        tops = {top for top in tops if not any(top != other and Path(top).is_relative_to(other) for other in tops)}
        self.tops = tuple(sorted(tops))
        self.suffixes = frozenset(Path(name).suffix for name in files if Path(name).suffix)

    def describe(self) -> str:
        shown = [f"{top}/" for top in self.tops] + sorted(self.top_files)
        return ", ".join(shown) or "nothing"

    def wanted(self, path: str) -> bool:
        """Whether a change at `path` is a change of the code under watch."""
        try:
            relative = Path(os.path.realpath(path)).relative_to(self.root)
        except ValueError:
            return False
        parts = relative.parts
        if not parts or any(_ignored(part) for part in parts):
            return False
        if len(parts) == 1:
            return parts[0] in self.top_files
        if not any(relative.is_relative_to(top) for top in self.tops):
            return False
        return relative.suffix in self.suffixes or os.path.isdir(path)  # a new folder: a package to be

    def folders(self) -> list[str]:
        """Every folder to look in, as they are now (the top, when files live there, and each folder
        under the watched ones that is not ignored); a folder made later is found at the next call."""
        found = [str(self.root)] if self.top_files else []
        for top in self.tops:
            start = self.root / top
            for folder, subfolders, _ in os.walk(start):
                subfolders[:] = sorted(d for d in subfolders if not _ignored(d))
                found.append(folder)
        return found

    def files(self) -> dict[str, tuple[int, int]]:
        """Every watched file now, by path relative to the root: (modification time in ns, size)."""
        found = {}
        for folder in self.folders():
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                path = entry.path
                if entry.is_dir(follow_symlinks=False) or not self.wanted(path):
                    continue
                try:
                    info = entry.stat()
                except OSError:
                    continue
                found[os.path.relpath(path, self.root)] = (info.st_mtime_ns, info.st_size)
        return found


class Polling:
    """Saves seen by looking at the watched files' size and modification time a few times a second
    (and at the folders, for new files)."""

    how = "polling"

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.seen = scope.files()  # from now on: a save during the first check counts
        self.last: list[str] = []  # the files the last change reported touched

    def wait(self, keys: Keys) -> bool:
        """True when a file changed, False when q was pressed."""
        while True:
            if keys.quit_pressed(POLL_INTERVAL):
                return False
            if self.pending():
                return True

    def pending(self) -> bool:
        """Whether a file changed since the last look (a quick look, for a run that may be given up)."""
        now = self.scope.files()
        if now == self.seen:
            return False
        now = self._settled(now)
        self.last = sorted(name for name in set(now) | set(self.seen) if now.get(name) != self.seen.get(name))
        self.seen = now
        return True

    def _settled(self, now: dict) -> dict:
        """The files' state once a step passes without change (a save's several writes), within the longest wait."""
        for _ in range(LONGEST_MS // STEP_MS):
            time.sleep(STEP_MS / 1000)
            again = self.scope.files()
            if again == now:
                break
            now = again
        return now

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass


class Notified:
    """Saves heard from the operating system (watchfiles). The watcher starts listening at once,
    and keeps what it hears between two looks, so a save made while a check runs is not lost.
    Each look waits one step for what the system has said (rust_timeout of a millisecond): a look
    costs a few milliseconds, and an idle watch looks about 200 times a second, asleep between."""

    how = "notifications"

    def __init__(self, scope: Scope) -> None:
        import watchfiles  # noqa: F401 - ImportError here means: poll instead

        self.scope = scope
        self.events = None
        self.watched: list[str] = []
        self.last: list[str] = []
        self.refresh()

    def refresh(self) -> None:
        """Listen to the folders as they are now: one made since the last call (a new subpackage)
        is added. Each folder is watched on its own, not recursively: a virtual environment or a
        build folder beside the code never costs a watch."""
        import watchfiles

        folders = self.scope.folders() or [str(self.scope.root)]
        if folders == self.watched:
            return
        self.close()
        self.events = watchfiles.watch(
            *folders, watch_filter=lambda change, path: self.scope.wanted(path),
            debounce=LONGEST_MS, step=STEP_MS, rust_timeout=1, yield_on_timeout=True,
            recursive=False, raise_interrupt=True)
        next(self.events)  # the generator starts the watcher on its first step: listen from now on
        self.watched = folders

    def wait(self, keys: Keys) -> bool:
        while True:
            if self.pending():
                return True
            if keys.quit_pressed():
                return False

    def pending(self) -> bool:
        """Whether a save was heard since the last look (a look of one step, a few milliseconds)."""
        changes = next(self.events)
        if not changes:
            return False
        self.last = sorted({os.path.relpath(os.path.realpath(path), self.scope.root) for _, path in changes})
        return True

    def close(self) -> None:
        """Stop listening (the watcher's thread ends with it)."""
        if self.events is not None:
            self.events.close()
            self.events = None


def watcher(scope: Scope, *, poll: bool) -> Polling | Notified:
    """Notifications where watchfiles is installed and works here, else polling."""
    if not poll:
        try:
            return Notified(scope)
        except (ImportError, OSError):  # not installed, or no watches left (inotify limits)
            pass
    return Polling(scope)


@contextmanager
def screen(clear: bool) -> Iterator[Callable[[], None]]:
    """A function that clears the terminal (or, when output is not a terminal, draws a rule)."""

    def wipe() -> None:
        if clear:
            sys.stdout.write("\x1b[H\x1b[2J\x1b[3J")
        else:
            sys.stdout.write("\n" + "-" * 40 + "\n")
        sys.stdout.flush()

    yield wipe
