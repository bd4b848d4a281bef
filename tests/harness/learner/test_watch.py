"""`course watch` end to end in a pseudo-terminal, as a learner sees it: a save redraws the screen
with the new verdict, a full pass says what comes next, q leaves."""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import REPO, copy_reference
from test_learner_loop import CATALOG, CHAPTER

pty = pytest.importorskip("pty")
CLEAR = "\x1b[2J"


class Screen:
    """A command running on a pseudo-terminal, and everything it has written so far."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        self.master, slave = pty.openpty()
        env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", "TERM": "xterm", **(env or {})}
        self.process = subprocess.Popen([sys.executable, "-m", "course", *args], cwd=cwd, env=env,
                                        stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        self.text = ""

    def read(self, seconds: float) -> None:
        ready, _, _ = select.select([self.master], [], [], seconds)
        if ready:
            try:
                self.text += os.read(self.master, 65536).decode("utf-8", "replace")
            except OSError:  # the command ended and its side of the terminal closed
                time.sleep(seconds)

    def wait_for(self, predicate, seconds: float = 120) -> None:  # noqa: ANN001
        deadline = time.monotonic() + seconds
        while not predicate(self.text):
            assert time.monotonic() < deadline, f"the screen never showed it; it shows:\n{self.last()}"
            self.read(0.1)

    def last(self) -> str:
        """The current screen: what was written since it was last cleared."""
        return self.text.rsplit(CLEAR, 1)[-1]

    def screens(self) -> int:
        return self.text.count(CLEAR)

    def press(self, key: str) -> None:
        os.write(self.master, key.encode())

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        os.close(self.master)


@pytest.mark.parametrize("mode", [[], ["--poll"]], ids=["notifications", "polling"])
def test_watch_redraws_on_save_says_what_next_when_done_and_quits_on_q(course, learner: Path, mode: list[str]) -> None:
    assert course("start", CHAPTER, cwd=learner).code == 0
    screen = Screen(["watch", *mode], learner)
    try:
        # a screen is complete with its last line: the hint, or what comes next
        screen.wait_for(lambda t: f"0 of {len(CATALOG)} passing" in t and "hint: " in t.rsplit(CLEAR, 1)[-1])
        first = screen.last()
        assert f"FAIL    {CATALOG[0]}" in first and "not implemented yet" in first, first
        assert "course hint" in first, "the hint line is on the screen"
        shown = screen.screens()

        copy_reference(CHAPTER, learner / "reference-copy")  # the learner finishes one file, then all
        shutil.copy(learner / "reference-copy" / "agent" / "provider" / "sse.py", learner / "agent" / "provider" / "sse.py")
        screen.wait_for(lambda t: t.count(CLEAR) > shown and "hint: " in t.rsplit(CLEAR, 1)[-1])
        passing = re.search(rf"(\d+) of {len(CATALOG)} passing", screen.last())
        assert passing and int(passing.group(1)) > 0, screen.last()
        shown = screen.screens()

        copy_reference(CHAPTER, learner)
        screen.wait_for(lambda t: "begins the next chapter" in t.rsplit(CLEAR, 1)[-1])
        done = screen.last()
        assert f"{len(CATALOG)} of {len(CATALOG)} passing" in done and "course diff" in done, done
        assert "course start ag02" in done, "the next chapter is named"

        screen.press("q")
        assert screen.process.wait(timeout=60) == 0
        screen.read(0.2)
        assert "stopped watching" in screen.text
    finally:
        screen.close()
    listed = course("list", cwd=learner)
    assert "[passed]" in listed.out, "what watch saw is recorded as progress"


def test_each_save_shows_the_verdict_of_the_file_as_saved(course, learner: Path) -> None:
    """Saves one after the other, each run on the worker kept ready since the one before: broken,
    fixed, broken again, with the same bytes as the first time."""
    assert course("start", CHAPTER, cwd=learner).code == 0
    copy_reference(CHAPTER, learner)
    retry = learner / "agent" / "provider" / "retry.py"
    fixed = retry.read_text()
    rule = "if attempt >= self._policy.max_attempts"
    assert rule in fixed
    broken = fixed.replace(rule, "if attempt > self._policy.max_attempts")  # one attempt too many
    total = len(CATALOG)
    screen = Screen(["watch"], learner)
    try:
        screen.wait_for(lambda t: "begins the next chapter" in t.rsplit(CLEAR, 1)[-1])
        for text, verdict in ((broken, f"{total - 1} of {total} passing"), (fixed, f"{total} of {total} passing"),
                              (broken, f"{total - 1} of {total} passing")):
            shown = screen.screens()
            retry.write_text(text)
            screen.wait_for(lambda t, shown=shown: t.count(CLEAR) > shown and (
                "hint: " in t.rsplit(CLEAR, 1)[-1] or "begins the next chapter" in t.rsplit(CLEAR, 1)[-1]))
            assert verdict in screen.last(), f"want {verdict!r}:\n{screen.last()}"
            if text is broken:
                assert "FAIL    test_retry_gives_up_at_max_attempts" in screen.last(), screen.last()
        screen.press("q")
        assert screen.process.wait(timeout=60) == 0
    finally:
        screen.close()


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc to find the processes")
@pytest.mark.parametrize("how", ["q", "SIGHUP", "SIGKILL"])
def test_the_worker_kept_ready_for_the_next_save_ends_with_watch(course, learner: Path, how: str) -> None:
    from test_no_leftovers import marked, wait_for

    assert course("start", CHAPTER, cwd=learner).code == 0
    copy_reference(CHAPTER, learner)
    marker = uuid.uuid4().hex
    screen = Screen(["watch"], learner, env={"COURSE_TEST_MARKER": marker})
    try:
        screen.wait_for(lambda t: "begins the next chapter" in t.rsplit(CLEAR, 1)[-1])
        # the watch, and the worker it keeps ready for the next save
        assert wait_for(lambda: len([p for p in marked(marker) if p != screen.process.pid]) >= 1, 60), \
            "no worker is kept ready"
        if how == "q":
            screen.press("q")
        else:
            screen.process.send_signal(getattr(signal, how))
        screen.process.wait(timeout=60)
        assert wait_for(lambda: not marked(marker), 5.0), f"left running after {how}: {marked(marker)}"
    finally:
        screen.close()
        for pid in marked(marker):
            os.kill(pid, signal.SIGKILL)
