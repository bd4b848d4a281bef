"""`course watch`: check again whenever a chapter file is saved, on a screen that keeps only what
matters now: how many tests pass, the first failing one with its reason, and the hint line.

Saves are noticed by the operating system through watchfiles; where it is not installed, or with
--poll, by looking at the files' size and modification time a few times a second. The tests that
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


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


class Polling:
    """Saves seen by looking at the files' size and modification time a few times a second."""

    how = "polling"

    def __init__(self, root: Path, files: tuple[str, ...]) -> None:
        self.paths = [root / name for name in files]
        self.seen = [_stat(p) for p in self.paths]  # from now on: a save during the first check counts

    def wait(self, keys: Keys) -> bool:
        """True when a file changed, False when q was pressed."""
        while True:
            if keys.quit_pressed(POLL_INTERVAL):
                return False
            now = [_stat(p) for p in self.paths]
            if now != self.seen:
                self.seen = self._settled(now)
                return True

    def _settled(self, now: list) -> list:
        """The files' state once a step passes without change (a save's several writes), within the longest wait."""
        for _ in range(LONGEST_MS // STEP_MS):
            time.sleep(STEP_MS / 1000)
            again = [_stat(p) for p in self.paths]
            if again == now:
                break
            now = again
        return now

    def close(self) -> None:
        pass


class Notified:
    """Saves heard from the operating system (watchfiles). The watcher starts listening at once,
    and keeps what it hears between two waits, so a save made while a check runs is not lost."""

    how = "notifications"

    def __init__(self, root: Path, files: tuple[str, ...]) -> None:
        import watchfiles

        wanted = {os.path.realpath(root / name) for name in files}
        folders = sorted({os.path.dirname(p) for p in wanted if os.path.isdir(os.path.dirname(p))}) or [str(root)]
        self.events = watchfiles.watch(
            *folders, watch_filter=lambda change, path: os.path.realpath(path) in wanted,
            debounce=LONGEST_MS, step=STEP_MS, rust_timeout=100, yield_on_timeout=True,
            recursive=False, raise_interrupt=True)
        next(self.events)  # the generator starts the watcher on its first step: listen from now on

    def wait(self, keys: Keys) -> bool:
        for changes in self.events:
            if keys.quit_pressed():
                return False
            if changes:
                return True
        return False

    def close(self) -> None:
        """Stop listening (the watcher's thread ends with it)."""
        self.events.close()


def watcher(root: Path, files: tuple[str, ...], *, poll: bool) -> Polling | Notified:
    """Notifications where watchfiles is installed and works here, else polling."""
    if not poll:
        try:
            return Notified(root, files)
        except (ImportError, OSError):  # not installed, or no watches left (inotify limits)
            pass
    return Polling(root, files)


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
