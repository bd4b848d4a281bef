"""The child processes the harness has running, so that an interrupt can stop all of them at once.

Each runs in its own session (process group); kill_all() kills every group and stops new children
from starting, so no test process outlives the command that started it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading

_lock = threading.Lock()
_live: set[subprocess.Popen] = set()
_stopping = threading.Event()


class Stopped(Exception):
    """The harness is shutting down: no new child process may start."""


def start(args: list[str], **kwargs) -> subprocess.Popen:  # noqa: ANN003
    with _lock:
        if _stopping.is_set():
            raise Stopped("interrupted")
        process = subprocess.Popen(args, start_new_session=True, **kwargs)
        _live.add(process)
    return process


def kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def reap(process: subprocess.Popen) -> int:
    if process.poll() is None:
        kill(process)
    code = process.wait()
    with _lock:
        _live.discard(process)
    return code


def kill_all() -> None:
    with _lock:
        _stopping.set()
        live = list(_live)
    for process in live:
        kill(process)
