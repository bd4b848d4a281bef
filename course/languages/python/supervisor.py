"""The parent side of a Python catalog run: start the worker, read its events, survive its death.

A test that hangs past its timer, calls os._exit, or kills the interpreter takes the worker down with
it. The supervisor records that test (timeout or error), starts a fresh worker that skips every test
already run, and goes on, so one bad test never hides the verdicts of the others.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from course import processes
from course.check.results import ERROR, TIMEOUT, CaseResult

# Grace on top of the per-test timer before the supervisor kills a worker that stopped answering
# (learner code that blocks signals, or hangs in C).
KILL_GRACE = 2.0


@dataclass
class RunSpec:
    code_root: Path
    tests_dir: Path
    names: list[str]  # the catalog's test names, in catalog order
    modules: list[str]
    timeout: float
    select: str = ""


@dataclass
class RunOutcome:
    cases: list[CaseResult] = field(default_factory=list)
    problem: str = ""


def _case_of(nodeid: str) -> str:
    return nodeid[nodeid.index("[") + 1 : -1] if nodeid.endswith("]") and "[" in nodeid else ""


class _Worker:
    def __init__(self, spec: RunSpec, skip: set[str]) -> None:
        read_fd, write_fd = os.pipe()
        payload = {
            "code_root": str(spec.code_root),
            "tests_dir": str(spec.tests_dir),
            "names": spec.names,
            "modules": spec.modules,
            "timeout": spec.timeout,
            "select": spec.select,
            "skip": sorted(skip),
            "events_fd": write_fd,
        }
        self.spec_file = tempfile.NamedTemporaryFile("w", suffix=".json", prefix="course-run-", delete=False)
        with self.spec_file as out:
            json.dump(payload, out)
        self.stderr = tempfile.TemporaryFile()
        try:
            # In its own process group (processes.start): a kill reaches whatever the test spawned.
            self.process = processes.start(
                [sys.executable, "-m", "course.languages.python.worker", self.spec_file.name],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self.stderr,
                pass_fds=(write_fd,),
                # No third-party pytest plugins: the catalog needs none, and whatever else is
                # installed (anyio, trio, ...) costs start-up time and could change behaviour.
                env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            )
        except BaseException:
            os.close(read_fd)
            os.unlink(self.spec_file.name)
            self.stderr.close()
            raise
        finally:
            os.close(write_fd)
        self.events = os.fdopen(read_fd, "rb")
        self.buffer = b""

    def next_event(self, deadline: float | None) -> dict | None:
        """The next event; None at end of stream; raises TimeoutError past the deadline."""
        while b"\n" not in self.buffer:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.events], [], [], wait)
            if not ready:
                raise TimeoutError
            chunk = os.read(self.events.fileno(), 65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def kill(self) -> None:
        processes.kill(self.process)

    def close(self) -> str:
        """Reap the worker; return the tail of what it wrote to stderr."""
        code = processes.reap(self.process)
        self.events.close()
        os.unlink(self.spec_file.name)
        self.stderr.seek(0)
        tail = self.stderr.read()[-2000:].decode("utf-8", "replace").strip()
        self.stderr.close()
        self.exit_code = code
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
                deadline = time.monotonic() + spec.timeout + KILL_GRACE if current else None
                try:
                    event = worker.next_event(deadline)
                except TimeoutError:
                    worker.kill()
                    record(CaseResult(
                        entry=names[current], case=_case_of(current), status=TIMEOUT,
                        message=f"the test did not finish within {spec.timeout:g} s and was stopped "
                        "(use --timeout to allow more)",
                    ), current)
                    current = ""
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
