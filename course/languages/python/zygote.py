"""A copy of the harness, forked as `course check` starts, that gets the run's first workers ready early.

Before its first test a Python worker needs pytest, its plugins and the harness's side of a run
imported (handshake.warm): about 150 ms. The harness, meanwhile, spends its first ~80 ms on its own
command line and the chapter's manifest, on one core. The zygote does the importing on the other
core at the same time: it is forked before the command line is parsed, imports what every worker
needs, and then forks the run's first workers from itself when the run asks (Kept.provide), each
already warm. The harness keeps what it would have had with its own workers: a pipe for each
worker's events, one for its run's spec, its process id and its exit code (reported by the zygote,
which is the workers' parent).

The pipes are made before the zygote is forked, one set per worker it may start (its slots), so
that no file descriptor ever has to travel between the processes. The zygote forks nothing more
once the harness says it is done asking (or is gone): it then reaps its workers, reporting each exit
code, and ends. However the harness ends, the zygote ends with it (processes.die_with_parent), and
the workers with the zygote.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import time
from typing import TYPE_CHECKING

from course import processes

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

# How long the harness waits for the zygote to say which process a worker is: it says it as soon as
# its imports are done, a fraction of a second; past this the zygote is taken to be stuck.
SAY_LIMIT = 30.0


class _Slot:
    """The pipes of one worker the zygote may fork: events (worker -> harness) and orders (harness -> worker)."""

    def __init__(self) -> None:
        self.events_r, self.events_w = os.pipe()
        self.orders_r, self.orders_w = os.pipe()

    def harness_side(self) -> tuple[int, int]:
        return self.events_r, self.orders_w

    def worker_side(self) -> tuple[int, int]:
        return self.events_w, self.orders_r


class Zygote:
    """The harness's handle on its zygote: ask it for workers, learn their ids and exit codes."""

    def __init__(self, slots: int) -> None:
        self.slots = [_Slot() for _ in range(slots)]
        control_r, control_w = os.pipe()
        status_r, status_w = os.pipe()
        harness = os.getpid()
        pid = os.fork()
        # multiprocessing's pipes are imported on either side of the fork, never before it: the
        # import would delay the zygote's start by its cost (~8 ms).
        from multiprocessing.connection import Connection

        if pid == 0:  # the zygote
            try:
                for fd in (control_w, status_r, *(fd for slot in self.slots for fd in slot.harness_side())):
                    os.close(fd)
                _serve(harness, Connection(control_r, writable=False), Connection(status_w, readable=False),
                       self.slots)
            finally:
                os._exit(0)  # never the harness's exit handlers, whatever happened
        for fd in (control_r, status_w, *(fd for slot in self.slots for fd in slot.worker_side())):
            os.close(fd)
        self.pid = pid
        processes.register(pid)  # an interrupt ends it with every other child
        self.control: Connection | None = Connection(control_w, readable=False)
        self.status = Connection(status_r, writable=False)
        self.pids: dict[int, int] = {}  # slot -> the worker's process id
        self.exits: dict[int, int] = {}  # process id -> exit code
        self.used = 0
        self.ended = False
        atexit.register(self.end)

    def spawn(self, ready: dict) -> "Forked | None":
        """A worker forked by the zygote getting ready for `ready`; None when it has no slot left or
        is not taking requests any more (the caller then forks one itself)."""
        if self.control is None or self.used >= len(self.slots):
            return None
        slot = self.used
        try:
            self.control.send((slot, ready))
        except OSError:  # the zygote is gone
            self.done()
            return None
        self.used += 1
        events_r, orders_w = self.slots[slot].harness_side()
        if self.used == len(self.slots):
            self.done()
        from multiprocessing.connection import Connection

        return Forked(self, slot, Connection(events_r, writable=False), Connection(orders_w, readable=False))

    def done(self) -> None:
        """Ask for nothing more: the zygote forks no other worker, and ends once its workers have."""
        if self.control is None:
            return
        self.control.close()
        self.control = None
        for slot in self.slots[self.used:]:  # pipes for workers that will never be
            for fd in slot.harness_side():
                os.close(fd)

    def hear(self, deadline: float) -> bool:
        """Take one thing the zygote says (a worker's id, an exit code); False when it said nothing
        by the deadline, or is gone."""
        try:
            if not self.status.poll(max(0.0, deadline - time.monotonic())):
                return False
            what, key, value = self.status.recv()
        except (EOFError, OSError):
            return False
        if what == "started":
            self.pids[key] = value
            processes.register(value)
        else:
            self.exits[key] = value
        return True

    def end(self) -> None:
        """At the harness's exit: stop the zygote if it still runs, and reap it."""
        if self.ended:
            return
        self.ended = True
        self.done()
        processes.kill(self.pid)
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        processes.unregister(self.pid)
        self.status.close()


class Forked:
    """A worker the zygote forked, as launch.Worker sees a process: its id, join, its exit code."""

    def __init__(self, zygote: Zygote, slot: int, events: Connection, orders: Connection) -> None:
        self.zygote, self.slot = zygote, slot
        self.events, self.orders = events, orders
        self._pid: int | None = None

    @property
    def pid(self) -> int | None:
        """The worker's process id, once the zygote has said it (None if the zygote ended first)."""
        if self._pid is None:
            deadline = time.monotonic() + SAY_LIMIT
            while self.slot not in self.zygote.pids and self.zygote.hear(deadline):
                pass
            self._pid = self.zygote.pids.get(self.slot)
        return self._pid

    @property
    def exitcode(self) -> int | None:
        pid = self.pid
        if pid is None:  # the zygote ended before it forked this worker, and took the worker's place
            return -signal.SIGKILL
        return self.zygote.exits.get(pid)

    def join(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (SAY_LIMIT if timeout is None else timeout)
        pid = self.pid
        while pid is not None and pid not in self.zygote.exits and self.zygote.hear(deadline):
            pass
        if pid is not None and pid not in self.zygote.exits and timeout is None:
            self.zygote.exits[pid] = -signal.SIGKILL  # the zygote is gone, and its workers with it


def _serve(harness: int, control: Connection, status: Connection, slots: list[_Slot]) -> None:
    """The zygote's life: import, fork the workers asked for, reap them, end."""
    os.setsid()  # out of the terminal's process group: the harness alone answers Ctrl-C
    processes.die_with_parent(harness)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # never the harness's output: a reader waiting for its end must not wait for us
        os.dup2(null, fd)
    from multiprocessing.connection import Connection

    from course.languages.python import handshake, worker

    handshake.warm()
    unused = dict(enumerate(slots))  # the slots no worker has taken: their worker ends are still open here
    children = 0
    while True:
        try:
            slot, ready = control.recv()
        except (EOFError, OSError):
            break
        pipes = unused.pop(slot)
        pid = os.fork()
        if pid == 0:  # the worker
            for other in unused.values():
                for fd in other.worker_side():
                    os.close(fd)
            control.close()
            status.close()
            events_w, orders_r = pipes.worker_side()
            worker.run(ready, Connection(events_w, readable=False), Connection(orders_r, writable=False))
            os._exit(0)
        children += 1
        for fd in pipes.worker_side():
            os.close(fd)
        status.send(("started", slot, pid))
    for pipes in unused.values():
        for fd in pipes.worker_side():
            os.close(fd)
    while children:
        pid, code = os.wait()
        children -= 1
        status.send(("ended", pid, os.waitstatus_to_exitcode(code)))


_current: Zygote | None = None


def start(workers: int) -> None:
    """Fork the zygote now, with a slot for each of the run's first `workers` workers. Only on
    Linux, where the kernel ends it with the harness without a watching thread (a process with
    threads must not fork), and only with a second core for it: on one core it would take turns
    with the harness and gain nothing."""
    global _current
    if _current is None and workers > 1 and sys.platform.startswith("linux"):
        try:
            _current = Zygote(workers)
        except OSError:  # no process or pipe to spare: the harness forks its own workers, as without
            _current = None


def spawn(ready: dict) -> Forked | None:
    """A warm worker from the zygote, if one was started and has a slot left (see Zygote.spawn)."""
    return _current.spawn(ready) if _current is not None else None


def done() -> None:
    """The run has its first workers: the zygote forks no more."""
    if _current is not None:
        _current.done()


def stop() -> None:
    """Not needed after all (the chapter's track is in another language): end it now."""
    global _current
    if _current is not None:
        _current.end()
        _current = None
