"""Starting Python workers: forked from the harness itself, from the zygote, or from a fork server with
pytest preloaded.

Each worker is one process running part of a catalog (course.languages.python.worker); it reports
typed events on a pipe of its own and writes its stderr to a file read when it ends. What to do when
it hangs or dies is the shared runner's business (course.runner). What a worker and the process
that starts it say to each other before its run is course.languages.python.handshake.
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
from multiprocessing.reduction import ForkingPickler
from typing import Any, Callable

from course import processes, rundir
from course.languages.python import zygote
from course.languages.python.handshake import PIPE_TAKES_AT_ONCE, PRELOAD, WAITING, warm
from course.errors import InternalError, Stopped
from course.languages.protocol import Ended, Event, decode


_forkserver = None
_forkserver_lock = threading.Lock()


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
    """One worker process, the pipe it reports on, and the pipe its run's spec arrives on.

    The process starts getting ready at once (course.languages.python.worker.run); the run begins
    with go(). `course check` calls go() straight away; `course watch` keeps one worker ready
    ahead of the next save (Standby)."""

    def __init__(self, ready: dict[str, Any], spec: dict[str, Any] | None = None, core: int | None = None) -> None:
        """Start a worker getting ready for `ready`; its run is `spec` when given, else the one go() sends.
        With `core`, the worker keeps to that core (see cores_of_their_own)."""
        processes.admit()
        self.ready = ready
        self.on_close: Callable[[], None] | None = None
        self.ready_to_run = False  # it said it waits for its run (WAITING)
        self.pending: list[bytes] = []  # messages read while waiting for WAITING
        self.stderr = tempfile.NamedTemporaryFile(prefix="course-run-", suffix=".err", delete=False)
        try:
            full = {**ready, "stderr_path": self.stderr.name, "core": core}
            # the zygote's: forked warm from a copy of the harness that imported while the command started
            forked = zygote.spawn(full) if spec is None else None
            if forked is not None:
                self.process, self.events, self.orders = forked, forked.events, forked.orders
                return
            # What every worker needs is imported here, before the fork, once, rather than by each
            # worker after it: two workers importing pytest and its plugins at once on two cores
            # cost twice the CPU for no less wait.
            warm()
            from course.languages.python import worker

            self._start(full, spec, worker.run)
        except BaseException:
            self.stderr.close()
            os.unlink(self.stderr.name)
            raise

    def _start(self, ready: dict[str, Any], spec: dict[str, Any] | None, target) -> None:  # noqa: ANN001
        context = _context()
        self.events, sender = context.Pipe(duplex=False)
        orders, self.orders = context.Pipe(duplex=False)
        if spec is not None:
            self.orders.close()
        self.process = context.Process(target=target, args=(ready, sender, orders, spec), daemon=True)
        try:
            self.process.start()
            processes.register(self.process.pid)
        except (EOFError, ConnectionError) as exc:  # the fork server is gone: the harness's failure
            processes.admit()  # an interrupt that killed it is an interrupt, not an internal error
            raise InternalError(f"a test process could not be started: the fork server ended "
                                f"({type(exc).__name__}: {exc})") from exc
        finally:
            sender.close()  # the worker holds the only write end: its death is our end of stream
            orders.close()  # and the only read end of its orders: a send to a dead worker fails

    def go(self, spec: dict[str, Any]) -> bool:
        """Start the run; False when the process is already gone (killed while it waited), or the
        spec is too large to be sure the pipe takes it at once (the worker may be busy setting up:
        the harness must never block on it)."""
        data = ForkingPickler.dumps(spec)
        try:
            if len(data) > PIPE_TAKES_AT_ONCE:
                return False
            self.orders.send_bytes(data)
            return True
        except OSError:  # BrokenPipeError: nobody reads the orders any more
            return False
        finally:
            self.orders.close()

    def next_event(self, deadline: float | None) -> Event | None:
        """The next event; None at end of stream; raises TimeoutError past the deadline."""
        while True:
            message = self.pending.pop(0) if self.pending else self._receive(deadline)
            if message != WAITING:
                return None if message is None else decode(message)
            self.ready_to_run = True

    def wait_until_ready(self, deadline: float) -> bool:
        """Whether the worker is set up and waits for its run, by the deadline (False: it ended)."""
        while not self.ready_to_run:
            message = self._receive(deadline)
            if message is None:
                return False
            if message == WAITING:
                self.ready_to_run = True
            else:
                self.pending.append(message)
        return True

    def _receive(self, deadline: float | None) -> bytes | None:
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            if not self.events.poll(wait):
                raise TimeoutError
            return self.events.recv_bytes()
        except (EOFError, ConnectionError):  # the worker is gone and its end of the pipe closed
            return None

    def fileno(self) -> int:
        """Readable when the worker has said something (or is gone): to wait for several at once."""
        return self.events.fileno()

    def kill(self) -> None:
        if self.process.pid is not None:  # None: a zygote's worker that never came to be
            processes.kill(self.process.pid)

    def close(self) -> Ended:
        """Reap the worker and whatever its tests left running."""
        self.process.join(0.5)
        self.kill()  # its whole process group: a test's forgotten subprocess must not outlive us
        self.process.join()
        processes.unregister(self.process.pid)
        self.events.close()
        self.orders.close()
        with self.stderr:
            self.stderr.seek(0)
            tail = self.stderr.read()[-2000:].decode("utf-8", "replace").strip()
        os.unlink(self.stderr.name)
        if self.on_close is not None:
            self.on_close()
        return Ended(self.process.exitcode, tail)

    def discard(self) -> None:
        """End a worker that never ran (a standby no longer wanted)."""
        self.kill()
        self.on_close = None
        self.close()


def cores_of_their_own(count: int) -> list[int | None]:
    """A core for each of the `count` workers of a run that is split among several, where this
    process may use that many; else None for each (the scheduler places them). A worker's threads
    take turns constantly: a test's client and the servers it talks to hand over at every exchange,
    and a hand-over to a thread on another core wakes that core, several times slower than one on
    the same core. Python runs one thread of a process at a time anyway, so the worker loses little.
    A run with one worker is left alone: commands that run many checks at once (mutants, grade)
    give each one worker, and must not crowd them onto one core. The cores start at an offset drawn
    from the process id, so that two checks started at once are unlikely to share theirs."""
    try:
        usable = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return [None] * count
    if count < 2 or count > len(usable):
        return [None] * count
    offset = os.getpid() % len(usable)
    return [usable[(offset + i) % len(usable)] for i in range(count)]


def start(ready: dict[str, Any], spec: dict[str, Any]) -> Worker:
    """A new worker, running `spec` as soon as it is ready."""
    return Worker(ready, spec)


class Kept:
    """Workers started ahead of their run, getting ready (as far as they can without the code
    under test) until start() hands them to a run made for them."""

    def __init__(self) -> None:
        self.spares: list[Worker] = []
        self.handed = 0  # runs that started on a worker kept ready

    def provide(self, ready: dict[str, Any], count: int) -> None:
        """At least `count` workers getting ready for `ready` (those for anything else are ended)."""
        for spare in [s for s in self.spares if s.ready != ready]:
            self.spares.remove(spare)
            spare.discard()
        cores = cores_of_their_own(count)
        try:
            while len(self.spares) < count:
                self.spares.append(Worker(ready, core=cores[len(self.spares)]))
        except (Stopped, InternalError):  # an interrupt is ending the command: no run to get ready for
            return
        finally:
            zygote.done()  # the zygote (if any) serves a command's first run only

    def start(self, ready: dict[str, Any], spec: dict[str, Any]) -> Worker:
        """A worker running `spec`: one kept ready for this kind of run when there is one still
        alive, else a new one."""
        while self.spares:
            spare = self.spares.pop(0)
            if spare.ready == ready and spare.go(spec):
                self.handed += 1
                return spare
            spare.discard()
        return start(ready, spec)

    def close(self) -> None:
        spares, self.spares = self.spares, []
        for spare in spares:
            spare.discard()


class Standby(Kept):
    """`course watch`: workers kept ready ahead of the next run. The workers it hands out make the
    next ones once all of them are closed, when the run is over, so getting ready never competes
    with a run; as many as ran at once."""

    def __init__(self) -> None:
        super().__init__()
        self.running = 0  # handed out and not closed yet
        self.most = 0  # the most that ran at once in the last run

    def start(self, ready: dict[str, Any], spec: dict[str, Any]) -> Worker:
        worker = super().start(ready, spec)
        self.running += 1
        self.most = max(self.most, self.running)
        worker.on_close = lambda: self.closed(ready)
        return worker

    def closed(self, ready: dict[str, Any]) -> None:
        self.running -= 1
        if self.running == 0:
            self.provide(ready, self.most)
            self.most = 0
