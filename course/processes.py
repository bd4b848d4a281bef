"""The child processes the harness has running, so that an interrupt can stop all of them at once.

Each child leads its own process group; kill_all() kills every group and refuses new children from
then on, so no test process outlives the command that started it.
"""

from __future__ import annotations

import os
import signal
import threading
from functools import lru_cache
from typing import Callable, Protocol

from course.errors import Stopped

_lock = threading.Lock()
_live: set[int] = set()
_stopping = threading.Event()


def single_run_workers() -> int:
    """Workers for one check a person waits for (check, watch): two where there are two cores to
    run them. Commands that run many checks at once (mutants, grade, selftest) keep one each."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    return 2 if cores >= 2 else 1


def limit_file_size(limit: int | None) -> None:
    """No file this process, or a child it starts from now on, writes may grow past `limit` bytes
    (RLIMIT_FSIZE; where the system has none, nothing). A write past it fails (EFBIG, "File too
    large": Python and Go ignore the signal that would otherwise end the process). A lower limit
    already in force (course grade sets one on the whole check) stays. What it does not bound: the
    total of many files, what a test prints (captured in memory), memory itself."""
    apply = file_size_limiter(limit)
    if apply is not None:
        apply()


def file_size_limiter(limit: int | None) -> Callable[[], None] | None:
    """limit_file_size as a function to call later, everything worked out beforehand: safe as (part
    of) a preexec_fn in a process with threads, where only a system call may run between fork and
    exec. None when there is nothing to limit."""
    if not limit:
        return None
    try:
        import resource
    except ImportError:  # not a Unix
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    wanted = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    if soft != resource.RLIM_INFINITY and wanted >= soft:
        return None  # a lower limit is in force already
    setrlimit, which = resource.setrlimit, resource.RLIMIT_FSIZE

    def apply() -> None:
        try:
            setrlimit(which, (wanted, hard))
        except (ValueError, OSError):
            pass

    return apply


def file_too_large(limit: int | None) -> str:
    """What a test that hit the write limit is told (see limit_file_size)."""
    size = f"{limit / 2**20:g} MB" if limit else "the system's limit"
    return (f"a file it wrote reached the write limit ({size} per file) and the write failed: a loop that "
            "never stops writing? (`--max-file-size MB` allows more)")


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


def die_with_parent(parent: int) -> None:
    """Make this process end when `parent` (the process that started it) ends, however it ends:
    SIGKILL, a closed terminal, a crash. On Linux the kernel sends SIGKILL (PR_SET_PDEATHSIG);
    elsewhere a small thread watches the parent id. Then the parent is checked once more, in case
    it was already gone before the request took effect."""
    if not _request_death_signal():
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:
        os._exit(1)


def ends_with_us() -> Callable[[], None] | None:
    """A preexec_fn for a child that cannot watch for us itself (a compiled test binary): the kernel
    kills it when the thread that starts it ends, however this process ends. Linux only (None
    elsewhere). The work done between fork and exec is one system call resolved beforehand, safe in
    a process with threads; start such a child from a thread that outlives it."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent, kill_signal = os.getpid(), int(signal.SIGKILL)

    def pact() -> None:
        prctl(1, kill_signal, 0, 0, 0)  # 1: PR_SET_PDEATHSIG
        if os.getppid() != parent:  # we were already gone before it took effect
            os._exit(1)

    return pact


def resolve_ahead() -> None:
    """Resolve the system call die_with_parent makes, in a process about to fork children that will
    call it: importing ctypes takes ~12 ms, once here instead of in every child."""
    _prctl()


@lru_cache(maxsize=1)
def _prctl():  # noqa: ANN202
    import sys

    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _request_death_signal() -> bool:
    prctl = _prctl()
    return prctl is not None and prctl(1, signal.SIGKILL, 0, 0, 0) == 0  # 1: PR_SET_PDEATHSIG


def _watch_parent(parent: int) -> None:
    import time

    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def kill_all() -> None:
    _stopping.set()
    with _lock:
        live = list(_live)
    for pid in live:
        kill(pid)


class LineFilter(Protocol):
    """What stands between a child's stderr and ours (run_bounded): each line in, the lines to show out."""

    def feed(self, line: str) -> list[str]: ...

    def end(self) -> list[str]: ...


def run_bounded(command: list[str], *, cwd, env: dict[str, str], timeout: float, what: str,  # noqa: ANN001
                errors: LineFilter | None = None) -> int:
    """Run a command in its own process group, its output on ours; past `timeout` the whole group
    is killed and CodeProblem raised. Its exit code (negative: the signal that ended it). With
    `errors`, what it writes to stderr passes through that filter, line by line, as it comes."""
    import subprocess
    import sys

    from course.errors import CodeProblem

    admit()
    parent = os.getpid()
    child = subprocess.Popen(command, cwd=cwd, env=env, start_new_session=True,
                             stderr=subprocess.PIPE if errors is not None else None,
                             preexec_fn=lambda: die_with_parent(parent))
    register(child.pid)
    reader = None
    if errors is not None:
        reader = threading.Thread(target=_filtered, args=(child.stderr, errors, sys.stderr), daemon=True)
        reader.start()
    try:
        return child.wait(timeout)
    except subprocess.TimeoutExpired:
        raise CodeProblem(f"{what} did not finish within {timeout:g} s and was stopped "
                          "(a loop that never ends? --timeout allows more)") from None
    finally:
        kill(child.pid)
        child.wait()
        unregister(child.pid)
        if reader is not None:
            reader.join(5)  # the group is gone: its end of the pipe is closed, the rest is read at once


def _filtered(stream, errors: LineFilter, out) -> None:  # noqa: ANN001
    """Copy a child's stderr to `out` through `errors`, each line as soon as it is complete."""
    try:
        for raw in iter(stream.readline, b""):
            for line in errors.feed(raw.decode("utf-8", "replace").rstrip("\r\n")):
                out.write(line + "\n")
            out.flush()
        for line in errors.end():
            out.write(line + "\n")
        out.flush()
    except (OSError, ValueError):  # our stderr is gone (closed, a reader that left)
        pass
    finally:
        stream.close()


def foreground(command: list[str], *, cwd, env: dict[str, str]) -> int:  # noqa: ANN001
    """Run a command with the terminal attached, as a debugger's session needs: its stdin, stdout
    and stderr ours, in our process group (so Ctrl-C reaches it, while this process waits and lets
    it pass), no time limit. It ends with us however we end. Its exit code (negative: a signal)."""
    import signal
    import subprocess

    admit()
    child = subprocess.Popen(command, cwd=cwd, env=env, preexec_fn=ends_with_us())
    register(child.pid)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the session's, not ours
    try:
        return child.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
        if child.poll() is None:
            kill(child.pid)
            child.wait()
        unregister(child.pid)
