"""However `course` ends, nothing of it stays behind: no test process after SIGHUP or SIGKILL,
no temporary file after the next run, and a failure of the harness itself says so."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import REPO, copy_reference
from test_daily_loop import LOOP_IN_READER, started
from test_learner_loop import CHAPTER


def marked(marker: str) -> list[int]:
    """Live (not zombie) processes whose environment carries the marker."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def wait_for(predicate, seconds: float) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@contextmanager
def marked_check(args: list[str], cwd: Path, env: dict[str, str]) -> Iterator[tuple[subprocess.Popen, str]]:
    """`course ARGS` started with a marker in its environment, so that marked() finds it and every
    process it starts; whatever of them is left after the block is killed."""
    marker = f"COURSE_TEST_MARKER={uuid.uuid4().hex}"
    name, value = marker.split("=")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", **env, name: value}
    check = subprocess.Popen([sys.executable, "-m", "course", *args], cwd=cwd, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield check, marker
    finally:
        if check.poll() is None:
            check.kill()
            check.wait()
        for pid in marked(marker):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc to find the processes")
@pytest.mark.parametrize("how", [signal.SIGHUP, signal.SIGKILL], ids=["SIGHUP", "SIGKILL"])
def test_no_process_outlives_a_check_killed_while_a_test_spins(course, learner: Path, tmp_path: Path, how) -> None:
    started(course, learner)
    copy_reference(CHAPTER, learner)
    sse = learner / "agent" / "provider" / "sse.py"
    sse.write_text(sse.read_text() + LOOP_IN_READER)
    private = tmp_path / "tmp"
    private.mkdir()
    with marked_check(["check", "--timeout", "60"], learner, {"TMPDIR": str(private)}) as (check, marker):
        # the harness, and at least one test process spinning in the learner's loop
        assert wait_for(lambda: len([p for p in marked(marker) if p != check.pid]) >= 1, 60), "no worker started"
        time.sleep(0.5)
        check.send_signal(how)
        check.wait(timeout=30)
        assert wait_for(lambda: not marked(marker), 2.0), f"left running after {how.name}: {marked(marker)}"

    runs = [p for p in private.iterdir() if p.name.startswith("course-")]
    if how == signal.SIGHUP:
        assert not runs, f"a check stopped by SIGHUP cleans its temporary files: {runs}"
    else:
        assert runs, "a SIGKILLed run cannot clean up; its folder is what the next run must remove"
        env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", "TMPDIR": str(private)}
        again = subprocess.run([sys.executable, "-m", "course", "list"], cwd=learner, env=env,
                               capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stderr
        assert not list(private.iterdir()), f"the next run left these behind: {list(private.iterdir())}"


def test_a_failure_of_the_harness_is_reported_as_internal_not_interrupted(learner: Path) -> None:
    script = ("import sys\nfrom course import cli\n"
              "def broken(*a, **k):\n    raise RuntimeError('a bug in the harness')\n"
              "cli.cli.commands['list'].callback = broken\nsys.argv = ['course', 'list']\ncli.main()\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    ran = subprocess.run([sys.executable, "-c", script], cwd=learner, env=env, capture_output=True, text=True,
                         timeout=60)
    assert ran.returncode == 3, ran.stdout + ran.stderr
    assert "internal error: RuntimeError: a bug in the harness" in ran.stderr
    assert "interrupted" not in ran.stderr and "Traceback" not in ran.stderr


def test_helpers_start_in_a_folder_that_outlives_them(course, tmp_path: Path) -> None:
    """Python 3.13.0 cannot import socket in a deleted working folder: the fork server (started by
    mutants, which run from several threads) must find its folder still there."""
    private = tmp_path / "tmp"
    private.mkdir()
    ran = course("mutants", "ag00", "--only", "m01", cwd=tmp_path, env={"TMPDIR": str(private)}, timeout=300)
    assert ran.code == 0, ran.out + ran.err
    assert "interrupted" not in ran.err and "Traceback" not in ran.err, ran.err
    assert not list(private.iterdir()), f"left behind: {list(private.iterdir())}"


def test_a_killed_runs_helper_folders_go_with_the_next_run(tmp_path: Path) -> None:
    """Commands that start the fork server (mutants, verify) make multiprocessing's folder outside the
    run folder, for a short socket path; killed by SIGKILL they cannot remove it, so the next run does."""
    private = tmp_path / "tmp"
    private.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", "TMPDIR": str(private)}
    script = ("import os, signal, threading\n"
              "from course import rundir\n"
              "from course.languages.python import launch\n"
              "rundir.enter()\n"
              "stop = threading.Event()\n"
              "threading.Thread(target=stop.wait, daemon=True).start()  # as mutants: more than one thread\n"
              "launch._context()\n"
              "os.kill(os.getpid(), signal.SIGKILL)\n")
    killed = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    left = sorted(p.name.split("-")[0] for p in private.iterdir())
    assert "pymp" in left and "course" in left, f"expected a run folder and multiprocessing's folder, found {left}"
    unrelated = private / "pymp-not-ours"  # made by another program: not listed, never touched
    unrelated.mkdir()

    again = subprocess.run([sys.executable, "-m", "course", "list"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=120)
    assert again.returncode in (0, 2), again.stderr
    assert sorted(p.name for p in private.iterdir()) == ["pymp-not-ours"]


def test_a_damaged_list_of_outside_folders_removes_nothing_else(tmp_path: Path) -> None:
    from course import rundir

    base = tmp_path / "tmp"
    base.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    run = base / f"{rundir.PREFIX}{dead.pid}"
    run.mkdir()
    elsewhere = tmp_path / "keep-me"
    elsewhere.mkdir()
    listed = base / "pymp-listed"
    listed.mkdir()
    (run / rundir.OUTSIDE).write_text(f"{elsewhere}\n{base}\n{base / '..'}\n\n{listed}\n{base / 'missing'}\n")
    rundir.clean_stale(base)
    assert elsewhere.is_dir() and base.is_dir()
    assert not listed.exists() and not run.exists()


@pytest.mark.parametrize("thread", [False, True])
@pytest.mark.parametrize("ending, status", [("sys.exit(4)", 4), ("sys.exit('a message')", 1), ("return None", 0)])
def test_a_command_ends_with_its_status_its_output_and_every_atexit_handler(learner: Path, ending: str, status: int,
                                                                           thread: bool) -> None:
    """`course` ends without the interpreter's teardown: what is printed and what atexit handlers do
    must all still happen, with the status sys.exit gives; a thread that is not a daemon is waited for."""
    script = ("import atexit, sys, threading, time\nfrom course import cli\n"
              "def command(*a, **k):\n"
              "    atexit.register(lambda: open('atexit-ran', 'w').close())\n"
              "    atexit.register(lambda: print('from atexit', end=''))\n"
              + ("    threading.Thread(target=lambda: (time.sleep(0.3), print('thread done', end=' '))).start()\n"
                 if thread else "") +
              "    print('unflushed', end=' ')\n"
              f"    {ending}\n"
              "cli.cli.commands['list'].callback = command\nsys.argv = ['course', 'list']\ncli.main()\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", "PYTHONUNBUFFERED": ""}
    ran = subprocess.run([sys.executable, "-c", script], cwd=learner, env=env, capture_output=True, text=True, timeout=60)
    assert ran.returncode == status, ran.stdout + ran.stderr
    assert ran.stdout == "unflushed " + ("thread done " if thread else "") + "from atexit", ran.stdout
    assert (learner / "atexit-ran").exists()
    assert ran.stderr == ("a message\n" if status == 1 else ""), ran.stderr
