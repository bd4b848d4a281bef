"""One TypeScript test process: node running the compiled catalog in-process under node:test
(node/runner.mjs), its events read from a pipe and turned into the runner boundary's events
(course.languages.protocol).

Two voices share the pipe, each writing whole lines synchronously: the runner says at once when a
test or one of its first-level subtests (a case) starts and ends, and node's reporter (ours,
node/reporter.mjs) says later how each ended, with what error. The starts give the case running now,
which a timeout or a death blames; the reporter's results are the verdicts. Should the process end
before the reporter spoke of a case that ended, the runner's own word for it stands. Top-level tests
are announced up front; a case is announced when it starts. A test with cases also reports its own
body as a case (case ""): a pass, or a failure outside its cases.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator, Optional

from course import processes
from course.results import ERROR, FAIL, PASS, SKIP, TIMEOUT
from course.languages.protocol import CaseFinished, CaseId, CaseStarted, Collected, Ended, Event, Finished, Problem
from course.languages.typescript import toolchain
from course.languages.typescript.build import Built

NODE_DIR = Path(__file__).with_name("node")
_FRAME = re.compile(r"(?:\(|at )(?P<path>/[^()\s]+?\.ts):(?P<line>\d+):(?P<column>\d+)\)?\s*$")
OUTPUT_KEPT = 64 * 1024  # bytes of the process's own output kept for the message of its death


class Worker:
    def __init__(self, built: Built, names: dict[str, str], env: dict[str, str], *, timeout: float,
                 shuffle: int | None, cwd: Path, coverage: str = "") -> None:
        self.built = built
        self.names = names  # test name -> catalog name, the tests this process runs
        self.timeout = timeout
        self.pending: list[Event] = []
        self.running = ""  # the case the runner was last told started, as the process's own lines say
        self.since = 0.0
        self.cases: dict[str, int] = {}  # a test -> how many cases it started
        self.reported: set[str] = set()
        self.ended: dict[str, dict] = {}  # the runner's own word on each case that ended
        self.eof = False
        self.output = bytearray()
        read, write = os.pipe()
        spec = {"files": [str(p) for p in built.tests], "tests": list(names), "shuffle": shuffle, "fd": write}
        extra = {**env, "COURSE_TS_RUN": json.dumps(spec), "COURSE_TS_EVENTS_FD": str(write)}
        if coverage:
            extra["NODE_V8_COVERAGE"] = coverage
        args = [toolchain.find().node, "--enable-source-maps", f"--test-reporter={NODE_DIR / 'reporter.mjs'}",
                "--test-reporter-destination=/dev/null", str(NODE_DIR / "runner.mjs")]
        processes.admit()
        try:
            self.proc = subprocess.Popen(args, cwd=cwd, env=toolchain.environment(extra), stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, pass_fds=(write,),
                                         start_new_session=True, preexec_fn=processes.ends_with_us())
        finally:
            os.close(write)  # the child holds it now: the pipe ends when the child does
        processes.register(self.proc.pid)
        self.lines: queue.Queue = queue.Queue()
        self.events = os.fdopen(read, "rb")
        self.readers = [threading.Thread(target=self._read_events, daemon=True),
                        threading.Thread(target=self._read_output, daemon=True)]
        for reader in self.readers:
            reader.start()

    def _read_events(self) -> None:
        for line in self.events:
            self.lines.put(line)
        self.lines.put(None)

    def _read_output(self) -> None:
        assert self.proc.stdout is not None
        for chunk in iter(lambda: self.proc.stdout.read1(65536), b""):  # type: ignore[union-attr]
            self.output += chunk
            del self.output[:-OUTPUT_KEPT]

    # ---- the boundary ------------------------------------------------------------------------------

    def next_event(self, deadline: Optional[float]) -> Optional[Event]:
        while not self.pending:
            if self.eof:
                return None
            # node:test's own timeout cannot stop code that never yields: the case's time is kept here,
            # and a case that overstays it costs the timeout, not the runner's grace on top of it
            case_ends = self.since + self.timeout if self.running else None
            until = min((t for t in (deadline, case_ends) if t is not None), default=None)
            now = time.monotonic()
            if until is not None and now >= until:
                if until == case_ends:
                    self._stop_case()
                    continue
                raise TimeoutError
            try:
                line = self.lines.get(timeout=None if until is None else until - now)
            except queue.Empty:
                continue  # the top of the loop says which time ran out
            if line is None:
                self._ended()
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue  # not a line of ours
            self.pending.extend(self._translate(record))
        return self.pending.pop(0)

    def kill(self) -> None:
        processes.kill(self.proc.pid)  # its whole group: whatever a test started goes too

    def close(self) -> Ended:
        processes.kill(self.proc.pid)
        code = self.proc.wait()
        processes.unregister(self.proc.pid)
        for reader in self.readers:  # both pipes end with the process (a grandchild holding one is killed with it)
            reader.join(5)
        self.events.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return Ended(exit_code=code, stderr=self._last_words())

    # ---- the process's lines to events ---------------------------------------------------------------

    def _translate(self, record: dict) -> Iterator[Event]:
        if "collected" in record:
            yield Collected(tuple(CaseId(key=name, entry=self.names[name]) for name in record["collected"]
                                  if name in self.names))
        elif "problem" in record:
            yield Problem(self._problem(record["problem"]))
        elif "started" in record:
            key = record["started"]
            top, _, case = key.partition("/")
            if case and key not in self.cases:
                self.cases[top] = self.cases.get(top, 0) + 1
                yield Collected((CaseId(key=key, entry=self.names.get(top, top), case=case),))
            yield from self._now(key)
        elif "ended" in record:
            key = record["ended"]
            self.ended[key] = record
            top, _, case = key.partition("/")
            if key == self.running:
                self.running = ""
                if case:  # back in the test's own body, between its cases
                    yield from self._now(top)
        elif "result" in record:
            key = f"{record['top']}/{record['case']}" if record["case"] else record["top"]
            yield from self._result(key, record)
        elif record.get("done") is True:
            yield Finished()

    def _now(self, key: str) -> Iterator[Event]:
        """`key` is running now: the runner hears it, and its time starts."""
        self.running, self.since = key, time.monotonic()
        if key not in self.reported:
            yield CaseStarted(key)

    def _result(self, key: str, record: dict) -> Iterator[Event]:
        top, _, case = key.partition("/")
        status = SKIP if record.get("skip") or record.get("todo") else PASS if record["result"] == "pass" else FAIL
        seconds = float(record.get("seconds") or 0.0)
        if not case and self.cases.get(top):
            if status == FAIL and record.get("failureType") == "subtestsFailed":
                self.reported.add(key)
                return  # its failing cases said it all
            seconds = 0.0  # its own body: its time is its cases' time
        if key in self.reported:
            return
        yield self._finished(key, status, record, seconds)
        if self.running and self.running not in self.reported:
            yield CaseStarted(self.running)  # a result comes after the next case began: that one still runs

    def _finished(self, key: str, status, record: dict, seconds: float) -> CaseFinished:
        self.reported.add(key)
        if status != FAIL:
            return CaseFinished(key=key, status=status, duration=seconds)
        message = (record.get("message") or "the test failed without saying why").strip()
        if record.get("compared"):
            # node puts its own rendering of the two values under the test's words: ours is plainer
            message = f"{message.split(chr(10) + chr(10))[0].strip()}: {record['compared']}"
        where, test_line = self._places(record.get("stack", ""))
        frames = self._frames(record.get("stack", ""))
        name = record.get("name") or "Error"
        if record.get("failureType") in ("uncaughtException", "unhandledRejection"):
            message = f"{name} thrown outside the test's own code (a callback, a promise nobody awaited): {message}"
        details = record.get("stack") or message
        if record.get("compared") and record["compared"] not in details:
            details = f"{details}\n{record['compared']}"
        return CaseFinished(key=key, status=FAIL, message=message, where=where, test_line=test_line, details=details,
                            failed_at=f"{test_line} {name}" if test_line else name, duration=seconds,
                            frames=frames)

    def _places(self, stack: str) -> tuple[str, str]:
        """(where in the learner's code, the tests' file:line) of a failure's stack."""
        where = test_line = ""
        for line in stack.splitlines():
            frame = _FRAME.search(line)
            if frame is None:
                continue
            shown, theirs = self.built.shown(Path(frame["path"]))
            if theirs and not test_line:
                test_line = f"{shown}:{frame['line']}"
            elif not theirs and not where and not Path(frame["path"]).is_relative_to(self.built.out):
                where = f"{shown}:{frame['line']}"
        return where, test_line

    def _frames(self, stack: str) -> tuple[str, ...]:
        """The learner's code the error came through, outermost first ('ts/agent/provider/sse.ts:88'):
        the frames of its stack in their package's files (V8 lists the innermost first). An assert of
        the test's own has none."""
        frames = []
        for line in stack.splitlines():
            frame = _FRAME.search(line)
            if frame is None or Path(frame["path"]).is_relative_to(self.built.out):
                continue
            shown, theirs = self.built.shown(Path(frame["path"]))
            if not theirs and not Path(shown).is_absolute():
                frames.append(f"{shown}:{frame['line']}")
        return tuple(reversed(frames))

    def _stop_case(self) -> None:
        """The case ran out of time: the process is stopped (the runner starts another for the tests
        left), what it had said before is told, then the timeout; nothing after it."""
        processes.kill(self.proc.pid)
        self.eof = True
        key = self.running
        self.pending.extend(self._unheard(except_for=key))
        self.reported.add(key)
        self.pending.append(CaseFinished(key=key, status=TIMEOUT, duration=self.timeout,
                                         message=f"the test took longer than {self.timeout:g} s and was stopped "
                                                 "(use --timeout to allow more)"))

    def _ended(self) -> None:
        """The events pipe closed: the process is gone. The cases it ended before the reporter could
        say how are told by the runner's own word; a case it died in is blamed."""
        self.eof = True
        try:
            code = self.proc.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        self.pending.extend(self._unheard(except_for=self.running))
        if self.running and self.running not in self.reported and code != 0:
            self.reported.add(self.running)
            self.pending.append(CaseFinished(key=self.running, status=ERROR, message=self._death(code),
                                             details=self._last_words(), failed_at="exit"))

    def _unheard(self, except_for: str) -> Iterator[CaseFinished]:
        for key, record in list(self.ended.items()):
            if key in self.reported or key == except_for:
                continue
            top, _, case = key.partition("/")
            if not case and self.cases.get(top) and record.get("ok"):
                continue  # a test's own body said nothing new
            status = PASS if record.get("ok") else FAIL
            yield self._finished(key, status, {"message": record.get("message", ""), "stack": record.get("stack", ""),
                                               "name": "Error"}, 0.0)

    def _death(self, code: int | None) -> str:
        if code is None:
            return "the test process stopped answering during this test"
        if code < 0:
            return f"the test process was killed by signal {-code} during this test"
        return f"the test process exited with code {code} during this test (process.exit, or a crash in the code under test)"

    def _problem(self, text: str) -> str:
        """A module that failed to load: its error, at the learner's file:line when it is theirs."""
        lines = text.splitlines() or ["a test file did not load"]
        where, test_line = self._places(text)
        at = f" (at {where or test_line})" if where or test_line else ""
        return f"the code under test failed as it loaded{at}: {lines[0]}"

    def _last_words(self) -> str:
        text = self.output.decode("utf-8", "replace")
        return "\n".join([line for line in text.splitlines() if line.strip()][-5:])
