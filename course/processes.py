"""The child processes the harness has running, so that an interrupt can stop all of them at once.

Each child leads its own process group; kill_all() kills every group and refuses new children from
then on, so no test process outlives the command that started it.
"""

from __future__ import annotations

import os
import signal
import threading

from course.errors import Stopped

_lock = threading.Lock()
_live: set[int] = set()
_stopping = threading.Event()


def admit() -> None:
    """Raise Stopped once kill_all() has run; called before starting a child."""
    if _stopping.is_set():
        raise Stopped("interrupted")


def register(pid: int) -> None:
    with _lock:
        _live.add(pid)
    if _stopping.is_set():  # kill_all() ran while this child was starting
        kill(pid)


def unregister(pid: int) -> None:
    with _lock:
        _live.discard(pid)


def kill(pid: int) -> None:
    """Kill the child's whole process group (or the child alone, if it has not made its group yet)."""
    for send in (os.killpg, os.kill):
        try:
            send(pid, signal.SIGKILL)
            return
        except ProcessLookupError:
            continue
        except PermissionError:
            return


def kill_all() -> None:
    _stopping.set()
    with _lock:
        live = list(_live)
    for pid in live:
        kill(pid)
