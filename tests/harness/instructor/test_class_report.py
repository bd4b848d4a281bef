"""The class report (`course grade ... --html`): rendered from a gradebook, opened in headless Chromium,
which must load it without a console error or an exception, show the counts the book holds, and keep
what learners wrote as text (a name that is markup stays text). Skipped, with the reason, where
Chromium is missing (`apt-get install chromium`).

Chromium is driven through its DevTools protocol over a pipe (--remote-debugging-pipe: commands on fd
3, answers on fd 4, each a JSON text ended by a NUL byte), so the test needs no library and no port.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from course.grading import report
from course.grading.gradebook import Row

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


def _rows() -> list[Row]:
    failing = [{"name": "test_stalled_stream_times_out", "status": "fail", "message": "got 2 requests, want 1"},
               {"name": "test_connections_closed", "status": "fail", "message": "one connection left open"}]
    return [
        Row("alice", "ag01", "python", "pass", 38, 38, 38, 38, commit="abc1234", commit_date="2026-11-30T10:00:00+00:00"),
        Row("bob", "ag01", "python", "pass", 38, 38, 38, 38),
        Row("carol", "ag01", "go", "pass", 38, 38, 38, 38, hints_used=2),
        Row("dave", "ag01", "python", "fail", 36, 38, 36, 38, reasons=["test_stalled_stream_times_out: got 2 requests"],
            failures=failing, pitfalls={"3": 0.7, "5": 0.2}, pitfall=3),
        Row("<script>alert('erin')</script>", "ag01", "python", "fail", 37, 38, 37, 38,
            reasons=["test_stalled_stream_times_out: <b>bold</b>"], failures=failing[:1], pitfalls={"3": 0.4}),
        Row("frank", "ag01", "python", "error", 0, 38, 0, 38, reasons=["the sandbox stopped it: it reached the disk limit (512 MiB)"],
            failures=[{"name": "test_hand_example", "status": "error", "message": "No space left on device"}]),
        Row("grace", reasons=["no result: their CI never ran"]),
    ]


class DevTools:
    """Chromium's DevTools protocol over --remote-debugging-pipe."""

    def __init__(self, chromium: str, profile: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def on_three_and_four() -> None:  # in the child: fd 3 reads our commands, fd 4 takes the answers
            import fcntl

            read, write = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_chrome_r, from_chrome_w))
            os.dup2(read, 3)
            os.dup2(write, 4)

        # close_fds=False: the child closes no descriptor after on_three_and_four has placed them (the
        # others are close-on-exec, as Python makes every descriptor)
        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-extensions", "--no-first-run", "--no-default-browser-check", "--mute-audio",
             "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=on_three_and_four, close_fds=False, start_new_session=True)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict] = []

    def call(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            for answer in self._read(deadline):
                if answer.get("id") == self._next:
                    if "error" in answer:
                        raise RuntimeError(f"{method}: {answer['error']}")
                    return answer.get("result", {})
                self.events.append(answer)

    def wait_for(self, method: str, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events:
                if event.get("method") == method:
                    return event
            self.events += self._read(deadline)

    def _read(self, deadline: float) -> list[dict]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_chrome], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            data = os.read(self._from_chrome, 1 << 20)
            if not data:
                raise EOFError("Chromium closed its end of the pipe")
            self._buffer += data
        *whole, self._buffer = self._buffer.split(b"\0")
        return [json.loads(m) for m in whole if m]

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (OSError, RuntimeError, TimeoutError, EOFError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, 9)
            self.process.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)


PAGE_FACTS = """JSON.stringify({
  counts: Object.fromEntries(Array.from(document.querySelectorAll('[data-count]'),
                                        e => [e.dataset.count, Number(e.querySelector('b').textContent)])),
  learners: document.querySelectorAll('#learners tbody tr').length,
  heat: document.querySelectorAll('#heat tr').length,
  named: Array.from(document.querySelectorAll('[data-named]'), e => Number(e.dataset.named)),
  bins: Array.from(document.querySelectorAll('#distribution .bar'), e => Number(e.dataset.value)),
  failed: Array.from(document.querySelectorAll('#most-failed [data-failed]'), e => Number(e.dataset.failed)),
  brokenLinks: Array.from(document.querySelectorAll('a[href^="#"]')).filter(a => !document.getElementById(a.getAttribute('href').slice(1))).length,
  scripts: document.scripts.length,
  markupAsText: document.body.textContent.includes("<script>alert('erin')</script>") && document.body.textContent.includes('<b>bold</b>')
})"""
# Sorts the learners by score (a click on its heading), and says who comes first.
SORTED = """(() => {
  Array.from(document.querySelectorAll('#learners th')).find(th => th.textContent === 'score').click();
  return document.querySelector('#learners tbody tr td').textContent.trim();
})()"""


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
def test_the_report_renders_in_chromium_with_the_books_counts(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    report.write(page, _rows(), title="ag01, class of 2026")
    profile = Path(tempfile.mkdtemp(prefix="course-chromium-"))
    browser = DevTools(CHROMIUM, profile)
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            browser.call(f"{domain}.enable", session=session)
        browser.call("Page.navigate", {"url": page.as_uri()}, session=session)
        browser.wait_for("Page.loadEventFired")
        facts = json.loads(browser.call("Runtime.evaluate", {"expression": PAGE_FACTS, "returnByValue": True},
                                        session=session)["result"]["value"])
        first = browser.call("Runtime.evaluate", {"expression": SORTED, "returnByValue": True},
                             session=session)["result"]["value"]
        time.sleep(0.2)  # anything the page logs after its load and the click arrives by now
        browser.call("Runtime.evaluate", {"expression": "1", "returnByValue": True}, session=session)
    finally:
        browser.close()
        shutil.rmtree(profile, ignore_errors=True)
    problems = [e for e in browser.events
                if e.get("method") == "Runtime.exceptionThrown"
                or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert", "warning"))
                or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] in ("error", "warning"))
                or e.get("method") == "Page.javascriptDialogOpening"]
    assert problems == [], f"the page logged problems: {problems}"
    assert facts["counts"] == {"learners": 7, "judged": 6, "pass": 3, "fail": 2, "error": 1, "not-judged": 1}, facts
    assert facts["learners"] == 7 and facts["scripts"] == 1, facts
    assert facts["heat"] == 1 + 3 + 1, "a heading, the three learners judged who did not pass, the hints named"
    ag01_pitfalls = len(report.pitfalls_of({"ag01"})["ag01"])
    assert len(facts["named"]) == ag01_pitfalls and sum(facts["named"]) == 1, facts["named"]
    assert sum(facts["bins"]) == 6 and facts["bins"][-1] == 5 and facts["bins"][0] == 1, facts["bins"]
    assert facts["failed"][:2] == [2, 1], "test_stalled_stream_times_out failed by two learners, first"
    assert facts["brokenLinks"] == 0 and facts["markupAsText"], facts
    assert first == "frank", "sorted by score, the lowest first"
