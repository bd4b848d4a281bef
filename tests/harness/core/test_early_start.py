"""`course check` starts its Python workers getting ready before it has parsed its command line: a
zygote, forked as the command starts, imports what the workers need and forks the run's first
workers from itself (course.languages.python.zygote). These tests hold it to what the harness's
own workers promise: the same verdict, exit codes reaped, a harness that falls back to its own
workers when the zygote is gone, and nothing left running afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the zygote is forked")

# Run in a fresh interpreter: the zygote must be forked from a process with no threads, as the
# command is when it starts.
SCRIPT = textwrap.dedent("""
    import json, os, signal, sys
    from course.languages.python import zygote
    zygote.start(2)
    made = zygote._current
    if sys.argv[1] == "gone":
        os.kill(made.pid, signal.SIGKILL)
        os.waitpid(made.pid, 0)
    from course import chapters
    from course.check import run_check
    chapter = chapters.get("ag01")
    track = chapter.track("python")
    result = run_check(chapter, track, track.reference, workers=2)
    passed = sum(all(c.status == "pass" for c in e.cases) and bool(e.cases) for e in result.entries)
    print(json.dumps({"passed": passed, "tests": len(result.entries), "problem": result.problem,
                      "asked": made.used, "exits": sorted(made.exits.values()), "zygote": made.pid}))
""")


def run(mode: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_zygotes_workers_give_the_same_verdict_and_are_reaped() -> None:
    seen = run("live")
    assert seen["problem"] == "", seen
    assert seen["passed"] == seen["tests"] > 30, seen
    assert seen["asked"] == 2, f"the run's two first workers come from the zygote: {seen}"
    # each worker ended (killed by the harness once its share was done, or exited), and the zygote said so
    assert len(seen["exits"]) == 2, seen
    assert gone(seen["zygote"]), "the zygote outlived the command"


def test_without_its_zygote_the_harness_forks_its_own_workers() -> None:
    seen = run("gone")
    assert seen["problem"] == "", seen
    assert seen["passed"] == seen["tests"] > 30, seen
    assert seen["exits"] == [], f"no worker can have come from a dead zygote: {seen}"


def test_a_track_in_another_language_stops_the_zygote_at_once() -> None:
    script = textwrap.dedent("""
        import os, time
        from course import languages
        from course.languages.python import zygote
        languages.start_early(2)
        pid = zygote._current.pid
        languages.settle_early("go")
        try:
            os.kill(pid, 0)
            print("alive")
        except ProcessLookupError:
            print("gone")
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "gone"


def test_a_check_that_stops_before_its_run_leaves_no_zygote(course, learner) -> None:
    """A usage error (no chapter started here) ends the command before any worker is asked for."""
    marker = f"COURSE_EARLY_TEST={os.getpid()}-{id(learner)}"
    ran = course("check", cwd=learner, env={"COURSE_EARLY_TEST": marker.split("=", 1)[1]})
    assert ran.code == 2, ran.err
    from test_no_leftovers import marked

    assert not marked(marker), "the zygote outlived a command that ended with a usage error"
