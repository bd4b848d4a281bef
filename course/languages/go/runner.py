"""A Go catalog run: build the test binary with the catalog overlaid on the learner's module, run it
under test2json, and turn its events into cases.

The catalog's _test.go files are laid out as the module (tests/go/<id>/agent/provider/x_test.go joins
the package agent/provider) and reach the build through `go test -overlay`: nothing is written into
the learner's tree. The binary is built once and then run directly, one process per attempt: a test
that panics, exits or hangs past its timeout ends that process, gets its verdict, and the tests not
yet run start again in a fresh one (Go's own -timeout would end the whole run at the first hang).
"""

from __future__ import annotations

import json
import queue
import re
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from course import processes
from course.check.results import ERROR, FAIL, PASS, SKIP, TIMEOUT, CaseResult, RunOutcome
from course.languages.go import toolchain

# Outside any test (starting the binary, after the last test) a process silent for this long, on top
# of the per-test timeout, is stopped: the command always ends.
QUIET_LIMIT = 30.0
BUILD_LIMIT = 900.0  # a cold build cache compiles the standard library's net/http: minutes on a slow machine

_TEST_FUNC = re.compile(r"^func (Test\w*)\(\w+ \*testing\.T\) \{$", re.MULTILINE)
_FAILURE_LINE = re.compile(r"^\s*([\w.\-]+\.go):(\d+): ?(.*)$")
_FRAME = re.compile(r"^\s+(/\S+\.go):(\d+)(?: \+0x[0-9a-f]+)?$")
_RECOVERED = re.compile(r" \[recovered[^\]]*\]$")
_FRAMING = ("=== RUN", "=== NAME", "=== PAUSE", "=== CONT", "--- FAIL", "--- PASS", "--- SKIP")


@dataclass
class RunSpec:
    module_root: Path  # the folder holding the go.mod of the code under test
    display_root: Path  # paths in messages are shown relative to this (the learner's repository)
    tests_dir: Path  # the catalog's files, laid out as the module
    names: dict[str, str]  # Go test name -> catalog name, in catalog order
    timeout: float
    env: dict[str, str] = field(default_factory=dict)


def test_functions(tests_dir: Path) -> dict[str, tuple[str, str]]:
    """Each test function of the catalog: name -> (its package folder relative to the module, its source),
    in file order."""
    found: dict[str, tuple[str, str]] = {}
    for path in sorted(tests_dir.rglob("*_test.go")):
        text = path.read_text(encoding="utf-8")
        package = path.parent.relative_to(tests_dir).as_posix()
        for match in _TEST_FUNC.finditer(text):
            end = text.find("\n}\n", match.end())
            found[match.group(1)] = (package, text[match.start(): len(text) if end < 0 else end + 2])
    return found


def overlay(spec: RunSpec) -> dict[str, dict[str, str]]:
    """go's -overlay document: each catalog file appears at its place in the module."""
    return {"Replace": {str(spec.module_root / p.relative_to(spec.tests_dir)): str(p)
                        for p in sorted(spec.tests_dir.rglob("*_test.go"))}}


def run(spec: RunSpec, on_case: Callable[[CaseResult], None] | None = None) -> RunOutcome:
    tools = toolchain.find()
    outcome = RunOutcome()
    by_package: dict[str, list[str]] = {}
    for name, (package, _) in test_functions(spec.tests_dir).items():
        if name in spec.names:
            by_package.setdefault(package, []).append(name)
    with tempfile.TemporaryDirectory(prefix="course-go-") as tmp:
        overlay_path = Path(tmp) / "overlay.json"
        overlay_path.write_text(json.dumps(overlay(spec)), encoding="utf-8")
        binaries = {}
        for n, package in enumerate(sorted(by_package)):
            binary = Path(tmp) / f"catalog{n}.test"
            problem = build(tools, spec, package, overlay_path, binary)
            if problem:
                outcome.problem = problem
                return outcome
            binaries[package] = binary
        # cases in catalog order: packages in the order of their first catalog test
        order = {name: i for i, name in enumerate(spec.names)}
        for package in sorted(binaries, key=lambda p: min(order[t] for t in by_package[p])):
            tests = sorted(by_package[package], key=order.__getitem__)
            _run_binary(tools, spec, package, binaries[package], tests, outcome, on_case)
            if outcome.problem:
                break
    return outcome


# ---- building -------------------------------------------------------------------------------------


def build(tools: toolchain.Toolchain, spec: RunSpec, package: str, overlay_path: Path, binary: Path) -> str:
    """Compile the package's test binary; "" when it built, else the compiler's errors as one block."""
    args = [tools.go, "test", "-c", "-o", str(binary), "-overlay", str(overlay_path), "./" + package]
    code, output = _call(args, cwd=spec.module_root, env=spec.env, limit=BUILD_LIMIT)
    if code == 0 and binary.is_file():
        return ""
    return _build_problem(spec, output, code)


def _build_problem(spec: RunSpec, output: str, code: int | None) -> str:
    if code is None:
        return f"building the tests took longer than {BUILD_LIMIT:g} s and was stopped"
    catalog = {p.name for p in spec.tests_dir.rglob("*_test.go")}
    yours, theirs, other = [], [], []
    for raw in output.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        place = re.match(r"^(\S+?\.go):(\d+)(?::(\d+))?: (.*)$", line)
        if place is None:
            other.append(line)
            continue
        path = Path(place.group(1))
        if not path.is_absolute():
            path = spec.module_root / path
        where = f"{_shown(spec, path)}:{place.group(2)}" + (f":{place.group(3)}" if place.group(3) else "")
        if path.name in catalog:
            theirs.append(f"{path.name}:{place.group(2)}: {place.group(4)}")
        else:
            yours.append(f"{where}: {place.group(4)}")
    if yours:
        head = "your code does not compile:"
        lines = yours
    elif theirs:
        head = ("the catalog's tests do not compile against your code (a name missing, or declared "
                "differently from the chapter's interface):")
        lines = theirs
    else:
        head = "go could not build the tests:"
        lines = other or [f"go test -c ended with exit code {code} and said nothing"]
    shown = lines[:20] + ([f"... and {len(lines) - 20} more"] if len(lines) > 20 else [])
    return "\n".join([head, *("  " + line for line in shown)])


def _shown(spec: RunSpec, path: Path) -> str:
    try:
        return path.resolve().relative_to(spec.display_root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _call(args: list[str], *, cwd: Path, env: dict[str, str], limit: float) -> tuple[int | None, str]:
    """Run a command in its own process group; (exit code or None past the limit, its output)."""
    processes.admit()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        processes.register(proc.pid)
        try:
            code: int | None = proc.wait(limit)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            processes.kill(proc.pid)  # compilers it started go with it
            proc.wait()
            processes.unregister(proc.pid)
        out.seek(0)
        return code, out.read().decode("utf-8", "replace")


# ---- running ----------------------------------------------------------------------------------------


@dataclass
class _Test:
    """What one (sub)test has said so far."""

    name: str
    started: float
    output: list[str] = field(default_factory=list)
    subtests: int = 0
    failed_subtests: int = 0


class _Binary:
    """One run of the test binary under test2json: its JSON events, read by a thread."""

    def __init__(self, tools: toolchain.Toolchain, spec: RunSpec, package: str, binary: Path, tests: list[str]) -> None:
        args = [tools.test2json, "-t", "-p", package, str(binary), "-test.v=test2json", "-test.count=1",
                "-test.paniconexit0", "-test.run", "^(" + "|".join(tests) + ")$"]
        processes.admit()
        self.proc = subprocess.Popen(args, cwd=spec.module_root / package, env=spec.env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        processes.register(self.proc.pid)
        self.events: queue.Queue = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:  # not an event: what test2json itself printed
                self.events.put({"Action": "output", "Output": line.decode("utf-8", "replace")})
        self.events.put(None)

    def next_event(self, deadline: float) -> dict | None:
        """The next event; None at the end; raises TimeoutError past the deadline."""
        try:
            return self.events.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise TimeoutError from None

    def close(self) -> int:
        processes.kill(self.proc.pid)  # the whole group: whatever a test started goes too
        code = self.proc.wait()
        processes.unregister(self.proc.pid)
        self.reader.join(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code


def _run_binary(tools: toolchain.Toolchain, spec: RunSpec, package: str, binary: Path, tests: list[str],
                outcome: RunOutcome, on_case: Callable[[CaseResult], None] | None) -> None:
    remaining = list(tests)
    while remaining:
        attempt = _Attempt(spec, outcome, on_case)
        stopped = ""  # why we ended the process: "" when it ended by itself
        proc = _Binary(tools, spec, package, binary, remaining)
        try:
            while True:
                current = attempt.innermost()
                if current:
                    deadline = current.started + spec.timeout
                else:
                    deadline = time.monotonic() + spec.timeout + QUIET_LIMIT
                try:
                    event = proc.next_event(deadline)
                except TimeoutError:
                    stopped = "timeout" if current else "quiet"
                    break
                if event is None:
                    break
                attempt.take(event)
        finally:
            exit_code = proc.close()
        attempt.finish(exit_code, stopped)
        if outcome.problem:
            return
        remaining = [t for t in remaining if t not in attempt.started]


class _Attempt:
    """The events of one process, folded into cases. A failure whose own output says nothing (a
    panic prints after the test's FAIL line; an exit prints nothing) is held until the process
    moves on, so that what follows can explain it."""

    def __init__(self, spec: RunSpec, outcome: RunOutcome, on_case: Callable[[CaseResult], None] | None) -> None:
        self.spec, self.outcome, self.on_case = spec, outcome, on_case
        self.started: list[str] = []  # top-level tests this process began
        self.live: dict[str, _Test] = {}  # tests begun and not ended, by full name
        self.package_output: list[str] = []
        self.held: list[tuple[tuple[str, str], str, list[str], float]] = []
        self.crashed_in: set[str] = set()  # top-level tests with a failing case held or recorded

    def innermost(self) -> _Test | None:
        return max(self.live.values(), key=lambda t: t.name.count("/"), default=None)

    def take(self, event: dict) -> None:
        action, name = event.get("Action"), event.get("Test")
        text = event.get("Output", "") if action == "output" else ""
        for _, _, output, _ in self.held:
            output.append(text)
        if not name:
            self.package_output.append(text)
            return
        top, sub = _case_name(name)
        if action == "run":
            self.release()
            if "/" not in name:
                self.started.append(name)
            elif name.count("/") == 1 and top in self.live:
                self.live[top].subtests += 1
            self.live[name] = _Test(name, time.monotonic())
            return
        if action == "output":
            # output belongs to its test and to the first-level case that holds it
            for owner in {name, f"{top}/{sub}" if sub else top}:
                if owner in self.live:
                    self.live[owner].output.append(text)
            return
        test = self.live.pop(name, None) if action in ("pass", "fail", "skip") else None
        if test is None or name.count("/") > 1:
            return  # deeper subtests count through the first-level case that holds them
        status = {"pass": PASS, "fail": FAIL, "skip": SKIP}[action]
        if status == FAIL and sub and top in self.live:
            self.live[top].failed_subtests += 1
        if sub or not test.subtests or (status == FAIL and not test.failed_subtests) or status == SKIP:
            # a case, or a test without subtests, or one that failed outside them
            self.record((top, sub), status, test.output, float(event.get("Elapsed") or 0.0))

    def record(self, case_name: tuple[str, str], status: str, output: list[str], elapsed: float = 0.0,
               message: str = "") -> None:
        if status == FAIL and not message and not summarize("".join(output), self.spec)[0]:
            self.held.append((case_name, status, list(output), elapsed))
            self.crashed_in.add(case_name[0])
            return
        if status in (FAIL, ERROR, TIMEOUT):
            self.crashed_in.add(case_name[0])
        _record(self.outcome, self.on_case, self.spec, case_name, status, "".join(output), message=message,
                elapsed=elapsed)

    def release(self, death: str = "") -> None:
        held, self.held = self.held, []
        for case_name, status, output, elapsed in held:
            said = summarize("".join(output), self.spec)[0]
            _record(self.outcome, self.on_case, self.spec, case_name, status, "".join(output),
                    message=said or death or "the test failed without saying why", elapsed=elapsed)

    def finish(self, exit_code: int, stopped: str) -> None:
        current = self.innermost()
        died = not stopped and exit_code != 0 and current is not None
        self.release(_death(exit_code, self.package_output) if exit_code else "")
        if current is not None and not (current.name.count("/") == 0 and current.name in self.crashed_in and died):
            if stopped == "timeout":
                status, message = TIMEOUT, (f"the test did not finish within {self.spec.timeout:g} s and was "
                                            "stopped (use --timeout to allow more)")
            else:
                status, message = ERROR, _death(exit_code, current.output + self.package_output)
            _record(self.outcome, self.on_case, self.spec, _case_name(current.name), status,
                    "".join(current.output + self.package_output), message=message)
        elif stopped == "quiet":
            self.outcome.problem = (f"the test process said nothing for {self.spec.timeout + QUIET_LIMIT:g} s "
                                    "outside any test")
        elif not self.started:
            tail = "".join(self.package_output).strip().splitlines()[-5:]
            self.outcome.problem = "the test binary ran no test" + (": " + "\n".join(tail) if tail else "")


def _case_name(full: str) -> tuple[str, str]:
    """(top-level test, first-level subtest or "")."""
    top, _, rest = full.partition("/")
    return top, rest.split("/", 1)[0]


def _record(outcome: RunOutcome, on_case: Callable[[CaseResult], None] | None, spec: RunSpec,
            case_name: tuple[str, str], status: str, output: str, *, message: str = "",
            elapsed: float | None = None) -> None:
    top, sub = case_name
    if top not in spec.names:
        return
    said, where, test_line = summarize(output, spec)
    case = CaseResult(
        entry=spec.names[top], case=sub, status=status,
        message=(message or said) if status in (FAIL, ERROR, TIMEOUT) else "",
        where=where, test_line=test_line, details=_details(output) if status != PASS else "",
        duration=float(elapsed or 0.0),
    )
    outcome.cases.append(case)
    if on_case:
        on_case(case)


def _details(output: str) -> str:
    lines = [line for line in output.splitlines() if not line.lstrip().startswith(_FRAMING)]
    return "\n".join(lines).strip()


def summarize(output: str, spec: RunSpec) -> tuple[str, str, str]:
    """(message, where in the learner's code, test file:line) of a failed test's output."""
    lines = [line for line in output.splitlines() if not line.lstrip().startswith(_FRAMING)]
    where = ""
    for line in lines:
        frame = _FRAME.match(line)
        if frame and not frame.group(1).endswith("_test.go"):
            path = Path(frame.group(1))
            if _inside(path, spec.module_root):
                where = f"{_shown(spec, path)}:{frame.group(2)}"
                break
    for i, line in enumerate(lines):
        if line.startswith("panic: "):
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
    rest = [line.strip() for line in lines if line.strip()]
    return (rest[-1] if rest else ""), where, ""


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _death(code: int, output: list[str]) -> str:
    text = "".join(output)
    for line in text.splitlines():
        if line.startswith(("panic: ", "fatal error: ")):
            return _RECOVERED.sub("", line) + " (the test process ended)"
    if code < 0:
        try:
            why = signal.Signals(-code).name
        except ValueError:
            why = f"signal {-code}"
        return f"the test process was killed by {why} during this test"
    return f"the test process exited with code {code} during this test (os.Exit, or a crash in the code under test)"

