"""Starting Python workers: forked from the harness itself, or from a fork server with pytest preloaded.

Each worker is one process running part of a catalog (course.languages.python.worker); it reports
typed events on a pipe of its own and writes its stderr to a file read when it ends. What to do when
it hangs or dies is the shared runner's business (course.runner).
"""

from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.util
import os
import shutil
import tempfile
import threading
import time
from typing import Any

from course import processes, rundir
from course.errors import InternalError
from course.languages.protocol import Ended, Event, decode


# Imported once by the fork server. Never the code under test: only the harness's side of a run and
# standard-library modules that chapter code commonly imports.
PRELOAD = ["course.languages.python.worker", "course.fake_model", "http.client", "json", "dataclasses",
           "enum", "contextvars", "codecs", "urllib.parse", "concurrent.futures",
           "course.languages.python.preload"]
_forkserver = None
_forkserver_lock = threading.Lock()


def warm() -> None:
    """Import what every worker needs into this process, so that the workers it forks start warm."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)


def _context():  # noqa: ANN202
    """How workers start. A single-threaded harness (one `course check`) forks itself: it has
    imported no code under test, and forking skips a second interpreter's start. A harness running
    workers from several threads (mutants) must not fork itself; its workers fork from a server
    that has already imported pytest and the worker, but no code under test and no threads."""
    global _forkserver
    if threading.active_count() == 1 and _forkserver is None:
        return multiprocessing.get_context("fork")
    with _forkserver_lock:
        if _forkserver is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(PRELOAD)
            with rundir.outside():  # the server's socket path must stay short
                rundir.made_outside(multiprocessing.util.get_temp_dir())
            _start_in_empty_folder(multiprocessing.forkserver.ensure_running)
            _forkserver = context
    return _forkserver


def _start_in_empty_folder(start) -> None:  # noqa: ANN001
    """The fork server starts as `python -c ...`, which puts the current folder first on sys.path:
    started in a learner's agent/ folder, their types.py would shadow the standard library's. So it
    starts in an empty folder, with PYTHONSAFEPATH set where the Python reads it (3.11+). The folder
    outlives the server (removed when the harness exits): Python 3.13.0 cannot even import socket
    in a working folder that was deleted."""
    here = os.getcwd()
    empty = tempfile.mkdtemp(prefix="course-helpers-")
    atexit.register(shutil.rmtree, empty, True)
    safe_path = os.environ.get("PYTHONSAFEPATH")
    os.environ["PYTHONSAFEPATH"] = "1"
    os.chdir(empty)
    try:
        start()
    finally:
        os.chdir(here)
        if safe_path is None:
            os.environ.pop("PYTHONSAFEPATH", None)
        else:
            os.environ["PYTHONSAFEPATH"] = safe_path


class Worker:
    """One worker process and the pipe it reports on."""

    def __init__(self, payload: dict[str, Any]) -> None:
        from course.languages.python import worker

        processes.admit()
        self.stderr = tempfile.NamedTemporaryFile(prefix="course-run-", suffix=".err", delete=False)
        try:
            self._start(payload, worker.run)
        except BaseException:
            self.stderr.close()
            os.unlink(self.stderr.name)
            raise

    def _start(self, payload: dict[str, Any], target) -> None:  # noqa: ANN001
        payload = {**payload, "stderr_path": self.stderr.name}
        context = _context()
        self.events, sender = context.Pipe(duplex=False)
        self.process = context.Process(target=target, args=(payload, sender), daemon=True)
        try:
            self.process.start()
            processes.register(self.process.pid)
        except (EOFError, ConnectionError) as exc:  # the fork server is gone: the harness's failure
            processes.admit()  # an interrupt that killed it is an interrupt, not an internal error
            raise InternalError(f"a test process could not be started: the fork server ended "
                                f"({type(exc).__name__}: {exc})") from exc
        finally:
            sender.close()  # the worker holds the only write end: its death is our end of stream

    def next_event(self, deadline: float | None) -> Event | None:
        """The next event; None at end of stream; raises TimeoutError past the deadline."""
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            ready = self.events.poll(wait)
            message = self.events.recv_bytes() if ready else b""
        except (EOFError, ConnectionError):  # the worker is gone and its end of the pipe closed
            return None
        if not ready:
            raise TimeoutError
        return decode(message)

    def kill(self) -> None:
        processes.kill(self.process.pid)

    def close(self) -> Ended:
        """Reap the worker and whatever its tests left running."""
        self.process.join(0.5)
        self.kill()  # its whole process group: a test's forgotten subprocess must not outlive us
        self.process.join()
        processes.unregister(self.process.pid)
        self.events.close()
        with self.stderr:
            self.stderr.seek(0)
            tail = self.stderr.read()[-2000:].decode("utf-8", "replace").strip()
        os.unlink(self.stderr.name)
        return Ended(self.process.exitcode, tail)
