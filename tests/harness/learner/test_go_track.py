"""The Go track end to end, as a learner meets it: start, stubs, a passing module, diff, and the ways
Go code goes wrong (a compile error, a panic, os.Exit, a hang, Ctrl-C, no Go at all)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness.conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="the Go track needs Go on PATH")

STUBS = ["go/go.mod", "go/agent/types/types.go", "go/agent/provider/sse.go",
         "go/agent/provider/openai.go", "go/agent/provider/retry.go"]


def go_reference(into: Path) -> None:
    shutil.copytree(REPO / "reference" / "go" / "ag01", into, dirs_exist_ok=True)


def edit(path: Path, find: str, replace: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(find) == 1, f"{path.name}: {find!r} found {text.count(find)} times"
    path.write_text(text.replace(find, replace), encoding="utf-8")


def processes_in(folder: Path) -> list[int]:
    """Processes whose working folder is inside `folder` (a test binary runs in its package's folder)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cwd = Path(os.readlink(proc / "cwd"))
        except OSError:
            continue
        if cwd == folder or folder in cwd.parents:
            found.append(int(proc.name))
    return found


def test_start_stubs_then_reference(course, learner):
    started = course("start", "ag01", "--language", "go", cwd=learner)
    assert started.code == 0, started.err
    for name in STUBS:
        assert (learner / name).is_file(), f"start did not write {name}: {started.out}"
        assert f"wrote  {name}" in started.out, f"start does not say it wrote {name}: {started.out}"
    assert "module tinyllm" in (learner / "go/go.mod").read_text(), "go.mod must declare module tinyllm"
    vet = subprocess.run(["go", "vet", "./..."], cwd=learner / "go", capture_output=True, text=True, timeout=600)
    assert vet.returncode == 0, f"go vet is not clean on the stubs:\n{vet.stdout}{vet.stderr}"

    listed = course("list", cwd=learner)
    line = next(line for line in listed.out.splitlines() if " ag01 " in line)
    assert line.rstrip().endswith("go"), f"list must show the chapter's language: {listed.out}"
    catalog = course("tests", cwd=learner)
    assert "TestHandExample" in catalog.out and "TestAPIErrorNotRetried" in catalog.out and "TestSSESpecEdges" in catalog.out, (
        f"tests must show the Go names of the track the learner started: {catalog.out[:400]}")
    shown = course("show", cwd=learner)
    assert "func NewEventReader(r io.Reader) *EventReader" in shown.out and "## 4. The interface" in shown.out, (
        "show must give the Go interface section to a Go learner")

    course("hint", "TestCallContextDefaultTainted", cwd=learner)
    hinted = course("hint", "TestCallContextDefaultTainted", cwd=learner)
    assert hinted.code == 0 and "CallContextFrom" in hinted.out and "current_call_context" not in hinted.out, (
        f"a Go learner's hints name Go's API: {hinted.out}")

    stubs = course("check", cwd=learner, timeout=900)
    assert stubs.code == 1, f"check on the stubs: exit {stubs.code}\n{stubs.out}\n{stubs.err}"
    assert "0 passed, 38 failed" in stubs.out, f"every test must fail on the stubs:\n{stubs.out}"
    assert "TODO ag01" in stubs.out and "in your code at go/agent/" in stubs.out, (
        f"a stub's panic must be shown at the learner's file:line:\n{stubs.out}")

    again = course("start", "ag01", "--language", "go", cwd=learner)
    assert again.code == 0 and all(f"kept   {name}" in again.out for name in STUBS), f"start must keep every file: {again.out}"

    go_reference(learner)
    before = sorted(p.relative_to(learner).as_posix() for p in learner.rglob("*") if p.is_file())
    passed = course("check", cwd=learner, timeout=900)
    assert passed.code == 0, f"check on the reference: exit {passed.code}\n{passed.out}\n{passed.err}"
    assert "38 passed, 0 failed" in passed.out, passed.out
    after = sorted(p.relative_to(learner).as_posix() for p in learner.rglob("*") if p.is_file() and p.name != ".course.json")
    assert [p for p in after if p.endswith("_test.go")] == ["go/agent/provider/mine_test.go"], (
        f"the catalog was written into the learner's tree (only the learner's own example belongs there): {after}")
    assert "TestTwoEvents" not in passed.out, "check runs the catalog, never the learner's own tests"
    assert [p for p in before if p != ".course.json"] == after, "check changed the learner's files"

    diffed = course("diff", cwd=learner)
    assert diffed.code == 0 and "no differences" in diffed.out, f"diff after a pass: {diffed.out}{diffed.err}"


def test_compile_error_is_one_block(course, learner):
    course("start", "ag01", "--language", "go", cwd=learner)
    go_reference(learner)
    edit(learner / "go/agent/provider/retry.go", "p = p.withDefaults()\n\tvar apiErr", "p = p.withDefault()\n\tvar apiErr")
    ran = course("check", cwd=learner, timeout=900)
    assert ran.code == 1, f"a compile error: exit {ran.code}\n{ran.out}\n{ran.err}"
    assert "your code does not compile" in ran.out, ran.out
    assert "go/agent/provider/retry.go:" in ran.out and "withDefault" in ran.out, f"the learner's file:line: {ran.out}"
    assert "Traceback" not in ran.out + ran.err


def test_a_missing_file_is_one_line_as_in_python(course, learner):
    """A deleted learner file is named in one line with the way back, not as the compiler's list of
    every name it declared."""
    course("start", "ag01", "--language", "go", cwd=learner)
    (learner / "go/agent/provider/sse.go").unlink()
    ran = course("check", cwd=learner, timeout=900)
    assert ran.code == 1, f"exit {ran.code}\n{ran.out}\n{ran.err}"
    assert "go/agent/provider/sse.go is missing; `course start` writes missing stubs again" in ran.out, ran.out
    assert "undefined" not in ran.out and "Traceback" not in ran.out + ran.err, ran.out
    again = course("start", "ag01", "--language", "go", cwd=learner)
    assert again.code == 0 and (learner / "go/agent/provider/sse.go").is_file(), again.out


def test_panic_exit_and_hang_each_get_their_verdict(course, learner):
    """A panic, an os.Exit(0) and an endless loop in three functions: three tests fail, each with its
    own reason, and the other thirty-four still run and pass; no process is left behind."""
    course("start", "ag01", "--language", "go", cwd=learner)
    go_reference(learner)
    types_go = learner / "go/agent/types/types.go"
    edit(types_go, '\treturn parts[3], true\n', '\tpanic("step names are hard")\n')
    retry_go = learner / "go/agent/provider/retry.go"
    edit(retry_go, "\tif err == nil || errors.Is(err, context.Canceled)", "\tif err == nil {\n\t\tos.Exit(0)\n\t}\n\tif errors.Is(err, context.Canceled)")
    edit(retry_go, 'import (\n', 'import (\n\t"os"\n')
    edit(retry_go, "\tp = p.withDefaults()\n\tvar apiErr", "\tp = p.withDefaults()\n\tfor n == 6 {\n\t}\n\tvar apiErr")
    ran = course("check", "--timeout", "3", "--json", str(learner / "results.json"), cwd=learner, timeout=900)
    assert ran.code == 1, f"exit {ran.code}\n{ran.out}\n{ran.err}"
    assert "35 passed, 3 failed" in ran.out, ran.out
    lines = {line.split()[1]: line for line in ran.out.splitlines() if line.strip().startswith(("PASS", "FAIL", "ERROR", "TIMEOUT"))}
    assert lines["TestStepNames"].strip().startswith("FAIL"), ran.out
    assert "panic: step names are hard" in ran.out and "go/agent/types/types.go" in ran.out, ran.out
    assert lines["TestRetryableTable"].strip().startswith("FAIL"), ran.out
    assert "os.Exit(0)" in ran.out, ran.out
    assert lines["TestRetryBackoffSchedule"].strip().startswith("TIMEOUT"), ran.out
    assert "longer than 3 s" in ran.out, "the worker stops a test at --timeout, not at the runner's grace after it"
    assert processes_in(learner) == [], "a test process outlived course check"


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_stopping_check_leaves_no_process(learner, stop):
    """Ctrl-C, or a SIGKILL that gives the harness no chance to clean up: the test binary, stuck in a
    loop that never prints (so no broken pipe would end it), and its converter end with it."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "course", "start", "ag01", "--language", "go"], cwd=learner, env=env,
                   capture_output=True, check=True, timeout=120)
    go_reference(learner)
    edit(learner / "go/agent/types/types.go", '\treturn "llm/" + strconv.Itoa(iter)\n', '\tfor {\n\t}\n')
    proc = subprocess.Popen([sys.executable, "-m", "course", "check", "--timeout", "600"], cwd=learner, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        running = learner / "go" / "agent" / "provider"  # the test binary's folder (go build runs in go/)
        # The same process seen twice, half a second apart: the test binary in its loop (a short-lived
        # process may run in that folder first).
        seen: set[int] = set()
        while time.monotonic() < deadline and proc.poll() is None:
            now = set(processes_in(running))
            if now & seen:
                break
            seen = now
            time.sleep(0.5)
        if not set(processes_in(running)) & seen:
            out, err = proc.communicate(timeout=60) if proc.poll() is not None else (b"", b"")
            pytest.fail(f"the test binary never started (check exit {proc.poll()})\n{out.decode()[-3000:]}\n{err.decode()[-3000:]}")
        time.sleep(3)  # into the endless loop
        proc.send_signal(stop)  # to the harness alone, not its process group
        proc.wait(60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    out, err = proc.communicate()
    assert proc.returncode != 0, "an interrupted check must not exit 0"
    gone = time.monotonic() + 5
    while processes_in(learner) and time.monotonic() < gone:
        time.sleep(0.1)
    assert processes_in(learner) == [], f"after {stop.name} a test process is still running"
    assert b"Traceback" not in err, err.decode()[-2000:]


def test_no_go_or_an_old_go_is_one_line_and_exit_2(course, learner, tmp_path):
    course("start", "ag01", "--language", "go", cwd=learner)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    ran = course("check", cwd=learner, env={"PATH": str(empty)})
    assert ran.code == 2, f"no go on PATH: exit {ran.code}\n{ran.out}\n{ran.err}"
    said = [line for line in ran.err.splitlines() if line.strip()]
    assert len(said) == 1 and "Go 1.22" in said[0] and "PATH" in said[0], f"want one line naming what to install: {ran.err!r}"

    old = tmp_path / "old-bin"
    old.mkdir()
    fake = old / "go"
    fake.write_text("#!/bin/sh\necho go1.21.13\necho /nonexistent\n")
    fake.chmod(0o755)
    ran = course("check", cwd=learner, env={"PATH": f"{old}:/usr/bin:/bin"})
    assert ran.code == 2, f"go1.21 on PATH: exit {ran.code}\n{ran.out}\n{ran.err}"
    said = [line for line in ran.err.splitlines() if line.strip()]
    assert len(said) == 1 and "go1.21.13" in said[0] and "1.22" in said[0], ran.err

    python = course("tests", "ag01", "--language", "python", cwd=learner, env={"PATH": str(empty)})
    assert python.code == 0 and "test_hand_example" in python.out, "the Python track must not need Go"
