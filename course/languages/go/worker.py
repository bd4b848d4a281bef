"""One Go test process: the catalog's test binary, its output piped through test2json, the JSON events
turned into the runner boundary's events (course.languages.protocol).

Top-level tests are announced up front; a first-level subtest (t.Run) is a case of its test and is
announced when it starts. A test with subtests also reports its own body as a case (case ""): a
pass, or a failure outside its subtests. A failure whose own output says nothing (a panic prints after the test's
FAIL line, an os.Exit prints nothing) is held until the process moves on or ends, so that what
follows can explain it.
"""

from __future__ import annotations

import json
import queue
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from course import processes
from course.results import FAIL, PASS, SKIP, TIMEOUT
from course.languages.go import toolchain
from course.languages.protocol import CaseFinished, CaseId, CaseStarted, Collected, Ended, Event, Finished

_RECOVERED = re.compile(r" \[recovered[^\]]*\]$")
_FAILURE_LINE = re.compile(r"^\s*([\w.\-]+\.go):(\d+): ?(.*)$")
_FRAME = re.compile(r"^\s+(/\S+\.go):(\d+)(?: \+0x[0-9a-f]+)?$")
_FRAMING = ("=== RUN", "=== NAME", "=== PAUSE", "=== CONT", "--- FAIL", "--- PASS", "--- SKIP")
_TEST_FRAME = re.compile(r"\.Test\w*(?:\.func\d+)*\(")
_CRASH = ("panic: ", "fatal error: ")
_TOO_LARGE = ": file too large"  # a write refused by the write limit (EFBIG), as Go's errors say it
_CRASH_IN = re.compile(r"(?m)^(?:panic|fatal error): ")


@dataclass
class _Test:
    """What a running (sub)test has said so far."""

    key: str
    output: list[str] = field(default_factory=list)
    subtests: int = 0
    failed_subtests: int = 0


class Worker:
    def __init__(self, binary: Path, package_dir: Path, module_root: Path, display_root: Path,
                 names: dict[str, str], env: dict[str, str], *, timeout: float, shuffle: int | None,
                 cover_profile: str, max_file_bytes: int | None = None) -> None:
        self.names = names  # Go test name -> catalog name, the tests this process runs, in catalog order
        self.timeout = timeout  # seconds a case may take
        self.case, self.case_since = "", 0.0  # the case the runner was last told started, and when
        self.module_root, self.display_root = module_root, display_root
        self.pending: list[Event] = [Collected(tuple(CaseId(key=name, entry=entry) for name, entry in names.items()))]
        self.live: dict[str, _Test] = {}
        self.held: list[tuple[CaseFinished, list[str]]] = []
        self.output: list[str] = []  # everything the process said, for the death message
        self.ended_tests: set[str] = set()
        self.eof = False
        self.speaking: str = ""  # the (sub)test the last output line came from, while it is the last event
        args = [str(binary), "-test.v=test2json", "-test.count=1", "-test.paniconexit0",
                "-test.run", "^(" + "|".join(names) + ")$"]
        if shuffle is not None:
            args.append(f"-test.shuffle={shuffle}")
        if cover_profile:
            args.append(f"-test.coverprofile={cover_profile}.{time.monotonic_ns()}")
        # The binary and its converter are both our children, so that both end with us however we
        # end (a binary started by test2json would outlive a SIGKILL of the harness).
        pact = processes.ends_with_us()
        self.max_file_bytes = max_file_bytes
        limit = processes.file_size_limiter(max_file_bytes)

        def limited() -> None:  # in the test binary's process, before it runs: two system calls
            if pact is not None:
                pact()
            limit()

        processes.admit()
        self.test = subprocess.Popen(args, cwd=package_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=pact if limit is None else limited)
        processes.register(self.test.pid)
        try:
            self.converter = subprocess.Popen([toolchain.find().test2json, "-t"], stdin=self.test.stdout,
                                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                              start_new_session=True, preexec_fn=pact)
        except BaseException:
            self.close_test()
            raise
        finally:
            assert self.test.stdout is not None
            self.test.stdout.close()  # test2json holds it now: it sees the end when the binary ends
        processes.register(self.converter.pid)
        self.lines: queue.Queue = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.converter.stdout is not None
        for line in self.converter.stdout:
            self.lines.put(line)
        self.lines.put(None)

    # ---- the boundary ------------------------------------------------------------------------------

    def next_event(self, deadline: Optional[float]) -> Optional[Event]:
        while not self.pending:
            if self.eof:
                return None
            # A Go test binary has no timeout of its own per test (its -timeout ends the whole process,
            # as a panic), so the case's time is kept here: a hang costs the timeout, not the runner's
            # grace on top of it.
            case_ends = self.case_since + self.timeout if self.case else None
            until = min((t for t in (deadline, case_ends) if t is not None), default=None)
            now = time.monotonic()
            if until is not None and now >= until:  # checked before every line: a test that hangs printing ends too
                if until == case_ends:
                    self._stop_case()
                    continue
                raise TimeoutError
            try:
                line = self.lines.get(timeout=None if until is None else until - now)
            except queue.Empty:
                continue  # the top of the loop says which time ran out
            if line is None:  # the binary's output ended: let its exit be seen before the held failures are told
                self.eof = True
                try:
                    code = self.test.wait(5)
                except subprocess.TimeoutExpired:
                    code = None
                if code and self.speaking:
                    # what `test2json -t BINARY` adds for a binary that failed: the test it was in
                    # fails (a panic prints after the test's own FAIL line, which says nothing then)
                    self.pending.extend(self._translate(json.dumps({"Action": "fail", "Test": self.speaking})))
                self.pending.extend(self._release())
                continue
            self.pending.extend(self._translate(line))
        event = self.pending.pop(0)
        if isinstance(event, CaseStarted):
            self.case, self.case_since = event.key, time.monotonic()
        elif isinstance(event, CaseFinished) and event.key == self.case:
            self.case = ""
        return event

    def _stop_case(self) -> None:
        """The case ran out of time: the binary is stopped (the runner starts another for the tests
        left), what it had said before is told, then the timeout; nothing after it."""
        processes.kill(self.test.pid)
        self.eof = True
        self.pending.extend(self._release())
        self.pending.append(CaseFinished(key=self.case, status=TIMEOUT, duration=self.timeout,
                                         message=f"the test took longer than {self.timeout:g} s and was stopped "
                                                 "(use --timeout to allow more)"))

    def kill(self) -> None:
        processes.kill(self.test.pid)  # its whole group: whatever a test started goes too
        processes.kill(self.converter.pid)

    def close(self) -> Ended:
        code = self.close_test()
        processes.kill(self.converter.pid)
        self.converter.wait()
        processes.unregister(self.converter.pid)
        self.reader.join(5)
        if self.converter.stdout is not None:
            self.converter.stdout.close()
        return Ended(exit_code=code, stderr=self._last_words())

    def close_test(self) -> int:
        """Kill and reap the test binary; its exit code (negative: the signal that ended it)."""
        processes.kill(self.test.pid)
        code = self.test.wait()
        processes.unregister(self.test.pid)
        return code

    # ---- test2json to events -------------------------------------------------------------------------

    def _translate(self, line: bytes) -> Iterator[Event]:
        try:
            event = json.loads(line)
        except ValueError:  # not an event: something test2json itself printed
            event = {"Action": "output", "Output": line.decode("utf-8", "replace")}
        action, name, text = event.get("Action"), event.get("Test"), event.get("Output", "")
        self.speaking = (name or "") if action == "output" else ""
        if text:
            self.output.append(text)
            for _, output in self.held:
                output.append(text)
        if not name:
            if action in ("pass", "fail") and self.ended_tests >= set(self.names):
                yield from self._release()
                yield Finished()
            return
        top, _, rest = name.partition("/")
        case = rest.split("/", 1)[0]
        key = f"{top}/{case}" if case else top
        if action == "run":
            yield from self._release()
            self.live[name] = _Test(key)
            if name == key:  # a test or a first-level subtest: a case
                if case:
                    if top in self.live:
                        self.live[top].subtests += 1
                    yield Collected((CaseId(key=key, entry=self.names.get(top, top), case=case),))
                yield CaseStarted(key)
            return
        if action == "output":
            for owner in {name, key}:
                if owner in self.live:
                    self.live[owner].output.append(text)
            return
        if action not in ("pass", "fail", "skip") or name not in self.live:
            return
        test = self.live.pop(name)
        if name != key:
            return  # deeper subtests count through the first-level case that holds them
        status = {"pass": PASS, "fail": FAIL, "skip": SKIP}[action]
        elapsed = float(event.get("Elapsed") or 0.0)
        if case:
            if status == FAIL and top in self.live:
                self.live[top].failed_subtests += 1
            yield from self._finish(key, status, test.output, elapsed)
            crashed = any(line.startswith(_CRASH) for line in "".join(test.output).splitlines())
            if top in self.live and not crashed:
                yield CaseStarted(top)  # back in the test's own body, between its subtests
            return
        self.ended_tests.add(top)
        if test.subtests:
            if status == FAIL and test.failed_subtests:
                return  # its failing cases said it all
            elapsed = 0.0  # its own body: its time is its subtests' time
        yield from self._finish(key, status, test.output, elapsed)

    def _finish(self, key: str, status: str, output: list[str], elapsed: float) -> Iterator[Event]:
        text = "".join(output)
        message, where, test_line = summarize(text, self.module_root, self.display_root)
        if status == FAIL and _TOO_LARGE in text:  # the write limit: the test's own words come after it
            message = processes.file_too_large(self.max_file_bytes) + (f"\n{message}" if message else "")
        finished = CaseFinished(key=key, status=status, message=message if status == FAIL else "", where=where,
                                test_line=test_line, details=_details(text) if status != PASS else "",
                                failed_at=failed_at(text, test_line) if status == FAIL else "", duration=elapsed,
                                frames=self._frames(text) if status == FAIL else ())
        if status == FAIL and not message:
            self.held.append((finished, list(output)))
            return
        yield finished

    def _release(self) -> Iterator[Event]:
        """The held failures, explained by what the process said after them (or by its death)."""
        held, self.held = self.held, []
        for finished, output in held:
            text = "".join(output)
            message, where, test_line = summarize(text, self.module_root, self.display_root)
            if not message and self.lines.empty() and self.test.poll() is not None:
                message = death(self.test.returncode, self.output)
            yield CaseFinished(key=finished.key, status=finished.status,
                               message=message or "the test failed without saying why",
                               where=where or finished.where, test_line=test_line or finished.test_line,
                               details=_details(text), failed_at=failed_at(text, test_line) or "exit",
                               duration=finished.duration, frames=self._frames(text) or finished.frames)

    def _frames(self, output: str) -> tuple[str, ...]:
        return learner_frames(output, self.module_root, self.display_root) if _CRASH_IN.search(output) else ()

    def _last_words(self) -> str:
        """What the runner quotes when the process died inside a test: its panic, or its last lines."""
        text = "".join(self.output)
        for line in text.splitlines():
            if line.startswith(_CRASH):
                return _RECOVERED.sub("", line)
        lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith(_FRAMING)]
        return "\n".join(lines[-5:])


def summarize(output: str, module_root: Path, display_root: Path) -> tuple[str, str, str]:
    """(message, where in the learner's code, test file:line) of a failed test's output."""
    lines = [line for line in output.splitlines() if not line.lstrip().startswith(_FRAMING)]
    where = ""
    for line in lines:
        frame = _FRAME.match(line)
        if frame and not frame.group(1).endswith("_test.go") and _inside(Path(frame.group(1)), module_root):
            where = f"{_shown(display_root, Path(frame.group(1)))}:{frame.group(2)}"
            break
    for line in lines:
        if line.startswith(_CRASH):
            return _RECOVERED.sub("", line), where, ""
    for i, line in enumerate(lines):
        failure = _FAILURE_LINE.match(line)
        if failure:
            indent = len(line) - len(line.lstrip())
            message = [failure.group(3)]
            for more in lines[i + 1:]:
                if _FAILURE_LINE.match(more) or len(more) - len(more.lstrip()) <= indent:
                    break
                message.append(more.strip())
            return "\n".join(message).strip(), where, f"{failure.group(1)}:{failure.group(2)}"
    return "", where, ""


def learner_frames(output: str, module_root: Path, display_root: Path) -> tuple[str, ...]:
    """The frames of the panicking goroutine's stack that are in the learner's files (not a test
    file), outermost first, as 'file:line' relative to the code's root."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(_CRASH)), None)
    if start is None:
        return ()
    frames: list[str] = []
    stack = False
    for line in lines[start + 1:]:
        if line.startswith("goroutine "):
            if stack:
                break  # the panicking goroutine's stack comes first; the others are not its story
            stack = True
            continue
        frame = _FRAME.match(line) if stack else None
        if frame and not frame.group(1).endswith("_test.go") and _inside(Path(frame.group(1)), module_root):
            frames.append(f"{_shown(display_root, Path(frame.group(1)))}:{frame.group(2)}")
    return tuple(reversed(frames))


def failed_at(output: str, test_line: str) -> str:
    """Which check failed, for kill signatures: the catalog's file:line of the first failed check, or
    the catalog's line a panic went through, with "panic"."""
    if test_line:
        return test_line
    lines = output.splitlines()
    if not any(line.startswith(_CRASH) for line in lines):
        return ""
    for function, place in zip(lines, lines[1:]):  # a traceback: a function's line, then its file:line
        frame = _FRAME.match(place)
        if frame and _TEST_FRAME.search(function):
            return f"{Path(frame.group(1)).name}:{frame.group(2)} panic"
    return "panic"


def death(code: int, output: list[str]) -> str:
    for line in "".join(output).splitlines():
        if line.startswith(_CRASH):
            return _RECOVERED.sub("", line) + " (the test process ended)"
    if code < 0:
        return f"the test process was killed by signal {-code} during this test"
    return f"the test process exited with code {code} during this test (os.Exit, or a crash in the code under test)"


def _details(output: str) -> str:
    return "\n".join(line for line in output.splitlines() if not line.lstrip().startswith(_FRAMING)).strip()


def _inside(path: Path, root: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve())


def _shown(root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
