"""The TypeScript track end to end, as a learner meets it: start, stubs that compile, a passing
package, diff, and the ways TypeScript code goes wrong (a type error, a throw, process.exit, a hang,
an exception nobody catches, Ctrl-C, no Node at all)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness.conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="the TypeScript track needs Node.js on PATH")

STUBS = ["ts/package.json", "ts/tsconfig.json", "ts/agent/types.ts", "ts/agent/provider/errors.ts",
         "ts/agent/provider/sse.ts", "ts/agent/provider/openai.ts", "ts/agent/provider/retry.ts",
         "ts/agent/provider/index.ts"]


def ts_reference(into: Path) -> None:
    shutil.copytree(REPO / "reference" / "typescript" / "ag01", into, dirs_exist_ok=True)


def edit(path: Path, find: str, replace: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(find) == 1, f"{path.name}: {find!r} found {text.count(find)} times"
    path.write_text(text.replace(find, replace), encoding="utf-8")


def processes_in(folder: Path) -> list[int]:
    """Processes whose working folder is inside `folder` (node runs in the learner's package folder)."""
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


def verdicts(out: str) -> dict[str, str]:
    return {line.split()[1]: line.split()[0] for line in out.splitlines()
            if line.strip().startswith(("PASS", "FAIL", "ERROR", "TIMEOUT")) and len(line.split()) > 1}


def test_start_stubs_then_reference(course, learner):
    started = course("start", "ag01", "--language", "typescript", cwd=learner)
    assert started.code == 0, started.err
    for name in [*STUBS, "ts/test/mine.test.ts"]:
        assert (learner / name).is_file(), f"start did not write {name}: {started.out}"
    assert '"dependencies"' not in (learner / "ts/package.json").read_text(), "the learner's package has no dependencies"

    listed = course("list", cwd=learner)
    line = next(line for line in listed.out.splitlines() if " ag01 " in line)
    assert line.rstrip().endswith("typescript"), f"list must show the chapter's language: {listed.out}"
    catalog = course("tests", cwd=learner)
    assert "hand_example" in catalog.out and "sse_spec_edges" in catalog.out, catalog.out[:400]
    source = course("tests", "--source", "stalled_stream_times_out", cwd=learner)
    assert source.code == 0 and 'test("stalled_stream_times_out"' in source.out, source.out[:400]
    shown = course("show", cwd=learner)
    assert "class EventReader implements AsyncIterable<SSEEvent>" in shown.out and "## 4. The interface" in shown.out, (
        "show must give the TypeScript interface section to a TypeScript learner")
    assert "is_content" not in shown.out and "json.loads" not in shown.out, "no Python name in the TypeScript text"
    course("hint", "call_context_default_tainted", cwd=learner)
    hinted = course("hint", "call_context_default_tainted", cwd=learner)
    assert hinted.code == 0 and "currentCallContext" in hinted.out and "current_call_context" not in hinted.out, (
        f"a TypeScript learner's hints name TypeScript's API: {hinted.out}")

    stubs = course("check", cwd=learner, timeout=600)
    assert stubs.code == 1, f"check on the stubs: exit {stubs.code}\n{stubs.out}\n{stubs.err}"
    assert "0 passed, 38 failed" in stubs.out, f"every test must fail on the stubs (and the stubs must compile):\n{stubs.out}"
    assert "TODO ag01" in stubs.out and "in your code at ts/agent/" in stubs.out, (
        f"a stub's throw must be shown at the learner's file:line:\n{stubs.out}")

    again = course("start", "ag01", "--language", "typescript", cwd=learner)
    assert again.code == 0 and all(f"kept   {name}" in again.out for name in STUBS), f"start must keep every file: {again.out}"

    ts_reference(learner)
    before = sorted(p.relative_to(learner).as_posix() for p in learner.rglob("*") if p.is_file() and p.name != ".course.json")
    passed = course("check", cwd=learner, timeout=600)
    assert passed.code == 0, f"check on the reference: exit {passed.code}\n{passed.out}\n{passed.err}"
    assert "38 passed, 0 failed" in passed.out, passed.out
    assert "two events read one byte at a time" not in passed.out, "check runs the catalog, never the learner's own tests"
    after = sorted(p.relative_to(learner).as_posix() for p in learner.rglob("*") if p.is_file() and p.name != ".course.json")
    assert before == after, "check wrote into the learner's tree (its build lives in the user's cache)"

    diffed = course("diff", cwd=learner)
    assert diffed.code == 0 and "no differences" in diffed.out, f"diff after a pass: {diffed.out}{diffed.err}"


def test_a_type_error_is_one_block_and_a_missing_file_one_line(course, learner):
    course("start", "ag01", "--language", "typescript", cwd=learner)
    ts_reference(learner)
    edit(learner / "ts/agent/types.ts", "  return `llm/${iter}`;\n", "  return iter;\n")
    ran = course("check", cwd=learner, timeout=600)
    assert ran.code == 1, f"a type error: exit {ran.code}\n{ran.out}\n{ran.err}"
    assert "your code does not compile" in ran.out, ran.out
    assert "ts/agent/types.ts:" in ran.out and "TS2322" in ran.out, f"the learner's file:line and the compiler's code: {ran.out}"
    assert "Traceback" not in ran.out + ran.err

    (learner / "ts/agent/provider/sse.ts").unlink()
    ran = course("check", cwd=learner, timeout=600)
    assert ran.code == 1 and "ts/agent/provider/sse.ts is missing; `course start` writes missing stubs again" in ran.out, ran.out
    assert "TS2307" not in ran.out, "one line, not the compiler's complaint about every import of it"


def test_throw_exit_hang_and_stray_exception_each_get_their_verdict(course, learner):
    """A throw, a process.exit(0), an endless loop and a promise rejected with nobody to await it, in
    four functions: four tests fail, each with its own reason, and the other thirty-three still run
    and pass; no process is left behind."""
    course("start", "ag01", "--language", "typescript", cwd=learner)
    ts_reference(learner)
    types_ts = learner / "ts/agent/types.ts"
    edit(types_ts, "  return match?.[3];\n", '  throw new Error("step names are hard");\n')
    edit(types_ts, "  return callContextStore.run(cc, fn);\n",
         "  if (cc.iter === 2) {\n    void Promise.reject(new Error(\"rejected, and nobody awaited it\"));\n  }\n"
         "  return callContextStore.run(cc, fn);\n")
    retry_ts = learner / "ts/agent/provider/retry.ts"
    edit(retry_ts, "  if (error instanceof StreamCutError) {\n", "  if (error === undefined) {\n    process.exit(0);\n  }\n  if (error instanceof StreamCutError) {\n")
    edit(retry_ts, "    let wait = this.initialMs;\n", "    while (n === 6) {\n      // forever\n    }\n    let wait = this.initialMs;\n")
    results = learner / "results.json"
    ran = course("check", "--timeout", "3", "--json", str(results), cwd=learner, timeout=600)
    assert ran.code == 1, f"exit {ran.code}\n{ran.out}\n{ran.err}"
    assert "34 passed, 4 failed" in ran.out, ran.out
    seen = verdicts(ran.out)
    # the terminal shows the first failure's reason; results.json holds every one
    ran.out += "\n".join(t.get("message", "") for t in json.loads(results.read_text())["tests"])
    assert seen["step_names"] == "FAIL" and "step names are hard" in ran.out and "ts/agent/types.ts" in ran.out, ran.out
    assert seen["retryable_table"] == "ERROR" and "exited with code 0" in ran.out, ran.out
    assert seen["retry_backoff_schedule"] == "TIMEOUT" and "longer than 3 s" in ran.out, (
        "the worker stops a test at --timeout, not at the runner's grace after it")
    assert seen["call_context_restores"] == "FAIL" and "rejected, and nobody awaited it" in ran.out, ran.out
    assert "outside the test's own code" in ran.out, "a rejection nobody awaited is told apart from a failed assertion"
    assert processes_in(learner) == [], "a test process outlived course check"


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_stopping_check_leaves_no_process(learner, stop):
    """Ctrl-C, or a SIGKILL that gives the harness no chance to clean up: node, stuck in a loop that
    never yields (so neither its reporter nor a broken pipe would end it), ends with it."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "course", "start", "ag01", "--language", "typescript"], cwd=learner, env=env,
                   capture_output=True, check=True, timeout=120)
    ts_reference(learner)
    edit(learner / "ts/agent/types.ts", "  return `llm/${iter}`;\n", "  for (;;) {\n    // forever\n  }\n")
    proc = subprocess.Popen([sys.executable, "-m", "course", "check", "-k", "step_names", "--timeout", "600"], cwd=learner,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        running = learner / "ts"
        seen: set[int] = set()
        while time.monotonic() < deadline and proc.poll() is None:
            now = set(processes_in(running))
            if now & seen:
                break
            seen = now
            time.sleep(0.5)
        if not set(processes_in(running)) & seen:
            out, err = proc.communicate(timeout=60) if proc.poll() is not None else (b"", b"")
            pytest.fail(f"node never started (check exit {proc.poll()})\n{out.decode()[-3000:]}\n{err.decode()[-3000:]}")
        time.sleep(1)  # into the endless loop
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


def test_no_node_or_an_old_node_is_one_line_and_exit_2(course, learner, tmp_path):
    course("start", "ag01", "--language", "typescript", cwd=learner)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    ran = course("check", cwd=learner, env={"PATH": str(empty)})
    assert ran.code == 2, f"no node on PATH: exit {ran.code}\n{ran.out}\n{ran.err}"
    said = [line for line in ran.err.splitlines() if line.strip()]
    assert len(said) == 1 and "Node.js 20.3" in said[0] and "PATH" in said[0], f"want one line naming what to install: {ran.err!r}"

    old = tmp_path / "old-bin"
    old.mkdir()
    fake = old / "node"
    fake.write_text("#!/bin/sh\necho v18.19.1\n")
    fake.chmod(0o755)
    ran = course("check", cwd=learner, env={"PATH": f"{old}:/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert ran.code == 2, f"node 18 on PATH: exit {ran.code}\n{ran.out}\n{ran.err}"
    said = [line for line in ran.err.splitlines() if line.strip()]
    assert len(said) == 1 and "v18.19.1" in said[0] and "20.3" in said[0], ran.err

    python = course("tests", "ag01", "--language", "python", cwd=learner, env={"PATH": str(empty)})
    assert python.code == 0 and "test_hand_example" in python.out, "the Python track must not need Node"


def test_demonstration(course, learner):
    ran = course("run", "ag01", "--reference", "--language", "typescript", cwd=learner, timeout=600)
    assert ran.code == 0, ran.out + ran.err
    assert "HTTP 503 with Retry-After: 0.2" in ran.out and "retry: waiting 200 ms" in ran.out, ran.out
    assert ran.out.count("delta: ") == 11, "nine text deltas, usage, done:\n" + ran.out
    assert 'collected: "Streams arrive in pieces; the client puts them together."' in ran.out, ran.out
    assert "usage: 14 in, 9 out; the fake model received 2 requests" in ran.out, ran.out

    assert course("start", "ag01", "--language", "typescript", cwd=learner).code == 0
    stubs = course("run", cwd=learner, timeout=600)
    assert stubs.code == 1 and "Not written yet" in stubs.out and "course run ag01" in stubs.out, stubs.out + stubs.err

    ts_reference(learner)
    edit(learner / "ts/agent/provider/retry.ts", "  return new RetryingProvider(provider, policy);\n", "  return provider; // no retry at all\n")
    none = course("run", cwd=learner, timeout=600)
    assert none.code == 1 and "APIError: HTTP 503" in none.out, none.out + none.err
    assert "Traceback" not in none.out + none.err, none.out + none.err


def test_an_uncaught_error_of_the_demonstration_is_one_line():
    from course.languages.typescript.uncaught import Collapsed

    shown = Collapsed("/tmp/learner")
    text = ("before\n/tmp/learner/ts/dist/agent/types.js:12\n        throw new Error(\"no\");\n        ^\n\n"
            "Error: no\n    at stepToolName (/tmp/learner/ts/agent/types.ts:12:9)\n    at main (/elsewhere/demo.ts:3:1)\n\n"
            "Node.js v20.20.2\nafter\n")
    for line in text.splitlines(keepends=True):
        assert shown.feed(line) == []
    assert "".join(shown.end()) == ("before\nError: no at ts/agent/types.ts:12 (`course run --traceback` shows it whole)\n"
                                    "after\n")
