"""The parent side of a Python catalog run: start the worker, read its events, survive its death.

A test that hangs past its timer, calls os._exit, or kills the interpreter takes the worker down with
it. The supervisor records that test (timeout or error), starts a fresh worker that skips every test
already run, and goes on, so one bad test never hides the verdicts of the others.
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.forkserver
import os
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from course import processes
from course.check.results import ERROR, TIMEOUT, CaseResult, RunOutcome

# Grace on top of the per-test timer before the supervisor kills a worker that stopped answering
# (learner code that blocks signals, or hangs in C).
KILL_GRACE = 2.0
# Outside any test (starting, collecting, ending) a worker that says nothing for this long, on top of
# the per-test timeout, is stopped: the command always ends.
QUIET_LIMIT = 30.0


@dataclass
class RunSpec:
    code_root: Path
    tests_dir: Path
    names: list[str]  # the catalog's test names, in catalog order
    modules: list[str]
    timeout: float
    select: str = ""
    pycache: Path | None = None  # where compiled files go (default: the user's cache folder)
    shuffle: int | None = None  # a seed: run the cases in an order drawn from it, not the catalog's
    coverage: dict | None = None  # {"data_file", "include"}: measure the code under test with coverage.py


def _case_of(nodeid: str) -> str:
    return nodeid[nodeid.index("[") + 1 : -1] if nodeid.endswith("]") and "[" in nodeid else ""


def default_pycache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "course" / "pycache"


# Imported once by the fork server. Never the code under test: only the harness's side of a run and
# standard-library modules that chapter code commonly imports.
PRELOAD = ["course.languages.python.worker", "course.fake_model", "http.client", "json", "dataclasses",
           "enum", "contextvars", "codecs", "urllib.parse", "concurrent.futures",
           "course.languages.python.preload"]
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
            _start_in_empty_folder(multiprocessing.forkserver.ensure_running)
            _forkserver = context
    return _forkserver


def _start_in_empty_folder(start) -> None:  # noqa: ANN001
    """The fork server starts as `python -c ...`, which puts the current folder first on sys.path:
    started in a learner's agent/ folder, their types.py would shadow the standard library's.
    So it starts in an empty folder (the workers then move to the code under test)."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="course-start-") as empty:
        os.chdir(empty)
        try:
            start()
        finally:
            os.chdir(here)


class _Worker:
    def __init__(self, spec: RunSpec, skip: set[str]) -> None:
        from course.languages.python import worker

        processes.admit()
        self.stderr = tempfile.NamedTemporaryFile(prefix="course-run-", suffix=".err", delete=False)
        try:
            self._start(spec, skip, worker.run)
        except BaseException:
            self.stderr.close()
            os.unlink(self.stderr.name)
            raise

    def _start(self, spec: RunSpec, skip: set[str], target) -> None:  # noqa: ANN001
        payload = {
            "code_root": str(spec.code_root),
            "tests_dir": str(spec.tests_dir),
            "names": spec.names,
            "modules": spec.modules,
            "timeout": spec.timeout,
            "select": spec.select,
            "skip": sorted(skip),
            "stderr_path": self.stderr.name,
            "pycache": str(spec.pycache or default_pycache()),
            "shuffle": spec.shuffle,
            "coverage": spec.coverage,
        }
        context = _context()
        self.events, sender = context.Pipe(duplex=False)
        self.process = context.Process(target=target, args=(payload, sender), daemon=True)
        try:
            self.process.start()
            processes.register(self.process.pid)
        finally:
            sender.close()  # the worker holds the only write end: its death is our end of stream

    def next_event(self, deadline: float | None) -> dict | None:
        """The next event; None at end of stream; raises TimeoutError past the deadline."""
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            ready = self.events.poll(wait)
            message = self.events.recv_bytes() if ready else b""
        except (EOFError, ConnectionError):  # the worker is gone and its end of the pipe closed
            return None
        if not ready:
            raise TimeoutError
        return json.loads(message)

    def kill(self) -> None:
        processes.kill(self.process.pid)

    def close(self) -> str:
        """Reap the worker and whatever its tests left running; the tail of what it wrote to stderr."""
        self.process.join(0.5)
        self.kill()  # its whole process group: a test's forgotten subprocess must not outlive us
        self.process.join()
        processes.unregister(self.process.pid)
        self.exit_code = self.process.exitcode
        self.events.close()
        with self.stderr:
            self.stderr.seek(0)
            tail = self.stderr.read()[-2000:].decode("utf-8", "replace").strip()
        os.unlink(self.stderr.name)
        return tail


def _death_message(code: int, stderr: str) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        why = f"the test process was killed by {name}"
    else:
        why = f"the test process exited with code {code} (os._exit or a crash in the code under test)"
    last = stderr.splitlines()[-1] if stderr else ""
    return f"{why} during this test" + (f": {last}" if last else "")


def run(spec: RunSpec, on_case: Callable[[CaseResult], None] | None = None) -> RunOutcome:
    outcome = RunOutcome()
    done: set[str] = set()
    names: dict[str, str] = {}  # nodeid -> catalog test name

    def record(case: CaseResult, nodeid: str) -> None:
        done.add(nodeid)
        outcome.cases.append(case)
        if on_case:
            on_case(case)

    while True:
        progress = len(done)
        worker = _Worker(spec, done)
        current = ""
        finished = False
        try:
            while True:
                limit = spec.timeout + (KILL_GRACE if current else QUIET_LIMIT)
                try:
                    event = worker.next_event(time.monotonic() + (KILL_GRACE if finished else limit))
                except TimeoutError:
                    worker.kill()
                    if current:
                        record(CaseResult(
                            entry=names[current], case=_case_of(current), status=TIMEOUT,
                            message=f"the test, with its setup and teardown, did not finish within "
                            f"{limit:g} s and was stopped (use --timeout to allow more)",
                        ), current)
                        current = ""
                    elif not finished:
                        outcome.problem = f"the test process stopped answering outside any test for {limit:g} s"
                        finished = True
                    break
                if event is None:
                    break
                kind = event.pop("event")
                if kind == "collected":
                    names.update(dict(event["tests"]))
                elif kind == "start":
                    current = event["nodeid"]
                elif kind == "result":
                    nodeid = event.pop("nodeid")
                    record(CaseResult(entry=names[nodeid], case=_case_of(nodeid), **event), nodeid)
                    current = ""
                elif kind == "import_error":
                    outcome.problem = outcome.problem or event["message"]
                    finished = True
                elif kind == "finished":
                    finished = True
                    if event["exitstatus"] in (2, 3, 4) and not outcome.cases and not outcome.problem:
                        outcome.problem = f"pytest stopped with exit code {event['exitstatus']}"
                        outcome.bad_selection = event["exitstatus"] == 4 and bool(spec.select)
        finally:
            stderr = worker.close()
        if finished:
            if outcome.problem.startswith("pytest stopped") and stderr:
                outcome.problem += ": " + stderr.splitlines()[-1]
            return outcome
        if current:  # the worker died inside a test: blame that test, then run the rest
            record(CaseResult(entry=names[current], case=_case_of(current), status=ERROR,
                              message=_death_message(worker.exit_code, stderr)), current)
            continue
        if names and progress < len(done) < len(names):
            continue  # a timeout stopped the worker: run the rest
        if len(done) < len(names) or not names:
            last = stderr.splitlines()[-1] if stderr else f"exit code {worker.exit_code}"
            outcome.problem = f"the test process ended outside any test: {last}"
        return outcome
