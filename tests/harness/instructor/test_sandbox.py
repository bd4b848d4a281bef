"""The sandbox learner code runs in (course.sandbox, bubblewrap): each escape a graded repository tries
is stopped, and graded as the sandbox's failure, never as a pass. Each test also grades the same
repository with --no-sandbox where that is harmless here, and sees the escape happen: the test would
fail without the sandbox. Skipped, with the reason, where bubblewrap cannot make a sandbox.

The class lives outside /tmp (under /var/tmp), as a real one does: inside the sandbox /tmp is a new,
private folder, so a path under the real /tmp could not show a write that got out.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tiny import CHAPTER as TINY
from tiny import tiny_chapter
from course import sandbox

pytestmark = pytest.mark.skipif(bool(sandbox.unusable()), reason=f"no sandbox here: {sandbox.unusable()}")

TESTS = "def test_sum():\n    assert calc.add(2, 3) == 5, 'add(2, 3)'\n\n\ndef test_zero():\n    assert calc.add(0, 0) == 0, 'add(0, 0)'\n"
ADD = "\n\ndef add(a, b):\n    return a + b\n"


@pytest.fixture
def place() -> Path:
    """A folder outside /tmp for the class and the content, removed afterwards."""
    base = Path("/var/tmp")
    if not os.access(base, os.W_OK):
        pytest.skip("/var/tmp is not writable here")
    folder = Path(tempfile.mkdtemp(prefix="course-sandbox-test-", dir=base))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _class(course, place: Path, repos: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """A roster folder with one learner repository per name, its calc.py the code given."""
    env = {"COURSE_CONTENT": str(tiny_chapter(place / "content", tests=TESTS, reference=ADD))}
    roster = place / "class"
    for name, code in repos.items():
        (roster / name).mkdir(parents=True)
        assert course("start", TINY, cwd=roster / name, env=env).code == 0
        (roster / name / "calc.py").write_text(code)
    return roster, env


def _grade(course, place: Path, roster: Path, env: dict[str, str], *options: str) -> dict[str, dict]:
    book = place / "book.json"
    ran = course("grade", str(roster), "--jobs", "2", "--repo-timeout", "120", "--csv", str(place / "book.csv"),
                 "--json", str(book), *options, cwd=place, env=env, timeout=600)
    assert ran.code in (0, 1), ran.out + ran.err
    return {r["learner"]: r for r in json.loads(book.read_text())["rows"]}


def _leftover_cgroups() -> list[str]:
    base = Path("/sys/fs/cgroup/pids")
    return sorted(p.name for p in base.rglob("course-sandbox-*")) if base.is_dir() else []


def test_writes_outside_the_copy_are_stopped(course, place: Path) -> None:
    # each check of "mallory" writes a file into the class's folder, beside the other learners'
    # repositories, and "trudy" into the course's content: one file per test process, every run
    escape = "import os, pathlib\n\npathlib.Path({!r}, f'ESCAPED-{{os.getpid()}}').write_text('out')\n" + ADD
    roster_dir = place / "class"
    roster, env = _class(course, place, {"mallory": escape.format(str(roster_dir)),
                                         "trudy": escape.format(str(place / "content")),
                                         "alice": ADD})
    cgroups = _leftover_cgroups()
    rows = _grade(course, place, roster, env, "--timeout", "10")
    assert rows["alice"]["status"] == "pass", rows["alice"]
    # the class's folder is hidden (the folder is not there), the content read-only
    for name, stopped in (("mallory", "No such file or directory"), ("trudy", "Read-only file system")):
        assert rows[name]["status"] != "pass", rows[name]
        assert stopped in " ".join(rows[name]["reasons"]), rows[name]
    assert not list(place.rglob("ESCAPED-*")), "a file got out of the sandbox"
    assert _leftover_cgroups() == cgroups, "the sandbox's process groups are removed"

    # without the sandbox the same class writes outside its copies, and passes
    rows = _grade(course, place, roster, env, "--no-sandbox")
    assert rows["mallory"]["status"] == "pass" and list(roster_dir.glob("ESCAPED-*")), rows["mallory"]


def test_filling_the_disk_is_stopped_at_the_sandbox_limit(course, place: Path) -> None:
    # 80 MiB in files of 8 MiB, each under the per-file limit; the sandbox's disk here is 32 MiB
    fill = "for n in range(10):\n    with open(f'fill-{n}', 'wb') as out:\n        out.write(bytes(8 << 20))\n" + ADD
    roster, env = _class(course, place, {"fred": fill})
    rows = _grade(course, place, roster, env, "--disk", "32")
    fred = rows["fred"]
    assert fred["status"] == "error", fred
    assert fred["reasons"][0].startswith("the sandbox stopped it: it reached the disk limit (32 MiB)"), fred
    assert "No space left on device" in " ".join(fred["reasons"]), fred

    rows = _grade(course, place, roster, env, "--no-sandbox")
    assert rows["fred"]["status"] == "pass", "without the sandbox nothing limits the total written"


def test_forking_without_end_is_stopped_at_the_process_limit(course, place: Path) -> None:
    if sandbox.process_limit():
        pytest.skip(sandbox.process_limit())
    # 300 processes that sleep, each ended before the module goes on
    fork = ("import os, signal, time\n\nchildren = []\ntry:\n    for _ in range(300):\n        pid = os.fork()\n"
            "        if pid == 0:\n            time.sleep(60)\n            os._exit(0)\n        children.append(pid)\n"
            "finally:\n    for pid in children:\n        os.kill(pid, signal.SIGKILL)\n        os.waitpid(pid, 0)\n" + ADD)
    roster, env = _class(course, place, {"frank": fork})
    rows = _grade(course, place, roster, env, "--processes", "64")
    frank = rows["frank"]
    assert frank["status"] != "pass", frank
    said = " ".join(frank["reasons"])
    assert "the process limit (64)" in said or "Resource temporarily unavailable" in said, frank

    rows = _grade(course, place, roster, env, "--no-sandbox")
    assert rows["frank"]["status"] == "pass", "without the sandbox nothing limits the processes"


def test_the_network_is_only_the_loopback(course, place: Path) -> None:
    # the code looks at the network interfaces it can see, and sends nothing anywhere
    look = ("import socket\n\nSEEN = sorted(name for _, name in socket.if_nameindex())\n"
            "if SEEN != ['lo']:\n    raise RuntimeError(f'interfaces beyond the loopback: {SEEN}')\n" + ADD)
    roster, env = _class(course, place, {"nick": look})
    rows = _grade(course, place, roster, env)
    assert rows["nick"]["status"] == "pass", rows["nick"]

    import socket

    if sorted(name for _, name in socket.if_nameindex()) != ["lo"]:  # this machine has a network to hide
        rows = _grade(course, place, roster, env, "--no-sandbox")
        assert rows["nick"]["status"] != "pass" and "interfaces beyond the loopback" in " ".join(rows["nick"]["reasons"])


def test_check_sandbox_stops_the_escape_and_records_progress(course, place: Path) -> None:
    escape = f"import pathlib\n\npathlib.Path({str(place)!r}, 'ESCAPED').write_text('out')\n" + ADD
    roster, env = _class(course, place, {"mallory": escape, "alice": ADD})
    ran = course("check", "--sandbox", "--json", str(place / "r.json"), cwd=roster / "mallory", env=env)
    assert ran.code == 1 and not (place / "ESCAPED").exists(), ran.out + ran.err
    assert json.loads((place / "r.json").read_text())["status"] in ("fail", "error")  # the import fails: error

    ran = course("check", cwd=roster / "alice", env={**env, "COURSE_SANDBOX": "1"})
    assert ran.code == 0 and "2 passed, 0 failed" in ran.out, ran.out + ran.err
    progress = json.loads((roster / "alice" / ".course" / "progress.json").read_text())
    assert progress["chapters"][TINY]["last_check"]["passed"] == 2 and progress["chapters"][TINY]["passed_fingerprint"]
    assert sorted(p.name for p in (roster / "alice").iterdir()) == [".course", ".course.json", "calc.py"], (
        "the check ran on a copy: nothing else appears in the repository")


def test_memory_beyond_the_limit_is_refused(course, place: Path) -> None:
    # half a GiB written, where each process of the check may write 256 MiB
    hog = "HOG = bytearray(512 << 20)\n" + ADD
    roster, env = _class(course, place, {"harry": hog})
    rows = _grade(course, place, roster, env, "--memory", "256")
    assert rows["harry"]["status"] != "pass" and "MemoryError" in " ".join(rows["harry"]["reasons"]), rows["harry"]
