"""A demonstration's tracebacks and panics, collapsed to a line each by their language's filter
(course run), on the shapes Python and Go really print: made here by running code that fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from course.languages.python.tracebacks import Collapsed


def _through(filter_, text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        out += filter_.feed(line)
    return out + filter_.end()


def _stderr_of(tmp_path: Path, program: str) -> str:
    (tmp_path / "mine.py").write_text(program)
    done = subprocess.run([sys.executable, "-c", "import mine"], cwd=tmp_path, capture_output=True, text=True,
                          check=False)
    return done.stderr


def test_a_chained_exception_is_one_line_for_the_last_raised(tmp_path: Path) -> None:
    text = _stderr_of(tmp_path, "try:\n    {}['a']\nexcept KeyError as exc:\n    raise ValueError('no a') from exc\n")
    assert "The above exception was the direct cause" in text, "the shape this test is about"
    assert _through(Collapsed(tmp_path, "ch"), "before\n" + text + "after\n") == [
        "before", "your code raised ValueError: no a at mine.py:4; `course check ch` says which rule it breaks "
                  "(`course run --traceback` shows the whole traceback)", "after"]
    during = _stderr_of(tmp_path, "try:\n    {}['a']\nexcept KeyError:\n    raise NotImplementedError('later')\n")
    assert "During handling" in during
    assert _through(Collapsed(tmp_path, "ch"), during) == ["not written yet: mine.py:4 raises NotImplementedError: later"]


def test_an_exception_group_is_one_line(tmp_path: Path) -> None:
    if sys.version_info < (3, 11):
        return
    text = _stderr_of(tmp_path, "def f():\n    raise ExceptionGroup('several', [KeyError('k')])\nf()\n")
    assert "Exception Group Traceback" in text
    lines = _through(Collapsed(tmp_path, "ch"), text)
    assert len(lines) == 1 and "mine.py:2" in lines[0] and "KeyError: 'k'" in lines[0], "the exception inside the group"


def test_a_servers_report_of_a_failed_request_is_one_line_with_its_rules(tmp_path: Path) -> None:
    program = ("import socketserver\n"
               "class H(socketserver.BaseRequestHandler):\n"
               "    def handle(self):\n"
               "        raise NotImplementedError('handle')\n"
               "server = socketserver.TCPServer(('127.0.0.1', 0), H)\n"
               "server.handle_error(None, ('127.0.0.1', 1)) if False else None\n"
               "try:\n    H.handle(None)\nexcept NotImplementedError:\n    server.handle_error(None, ('127.0.0.1', 1))\n"
               "server.server_close()\nprint('went on', file=__import__('sys').stderr)\n")
    text = _stderr_of(tmp_path, program)
    assert "Exception occurred during processing of request" in text and text.count("-" * 40) == 2
    assert _through(Collapsed(tmp_path, "ch"), text) == [
        "not written yet: mine.py:4 (in handle) raises NotImplementedError: handle", "went on"]


def test_the_same_failure_twice_is_said_once_and_other_lines_pass_unchanged(tmp_path: Path) -> None:
    text = _stderr_of(tmp_path, "def f():\n    raise NotImplementedError\nf()\n")
    lines = _through(Collapsed(tmp_path, "ch"), "a warning\n" + text + text + "  indented, not a traceback\n")
    assert lines == ["a warning", "not written yet: mine.py:2 (in f) raises NotImplementedError",
                     "  indented, not a traceback"], lines
