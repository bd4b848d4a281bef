"""Reading the course from a terminal: `course show` pages through $PAGER and takes a section,
`course tests` pages too, and shell completion offers chapters, test names and the chapter's files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from test_watch import Screen


def test_show_takes_a_section_by_number_or_title(course, learner: Path) -> None:
    one = course("show", "ag01", "2.2", cwd=learner)
    assert one.code == 0 and one.out.startswith("### 2.2 Reading server-sent events"), one.out[:200]
    assert "### 2.3" not in one.out and "## 3." not in one.out
    whole = course("show", "ag01", "2", cwd=learner)
    assert whole.out.startswith("## 2. Rules") and "### 2.7 The seams" in whole.out and "## 3." not in whole.out
    titled = course("show", "ag03", "fail closed", cwd=learner)
    assert titled.code == 0 and titled.out.startswith("### Fail closed, and say why"), titled.out[:200]
    missing = course("show", "ag01", "11", cwd=learner)
    assert missing.code == 2 and "chapter ag01 has no section '11'; its sections are: 1, 2, 2.1" in missing.err, missing.err
    assert course("start", "ag01", cwd=learner).code == 0
    current = course("show", "2.5", cwd=learner)  # a section of the current chapter
    assert current.code == 0 and current.out.startswith("### 2.5 When trying again is safe"), current.out[:200]


def _pager(tmp_path: Path) -> tuple[str, Path]:
    script, paged = tmp_path / "pager.sh", tmp_path / "paged.txt"
    script.write_text(f'#!/bin/sh\ncat > "{paged}"\n')
    script.chmod(0o755)
    return str(script), paged


def test_show_and_tests_go_through_the_pager_on_a_terminal(learner: Path, tmp_path: Path) -> None:
    pager, paged = _pager(tmp_path)
    for args, first in ((["show", "ag01"], "# ag01"), (["tests", "ag01"], "ag01: ")):
        screen = Screen(args, learner, env={"PAGER": pager, "LINES": "40", "COLUMNS": "100"})
        try:
            assert screen.process.wait(timeout=60) == 0
            screen.read(0.2)
        finally:
            screen.close()
        text = paged.read_text()
        assert text.startswith(first) and len(text.splitlines()) > 200, text[:200]
        assert "Pitfalls" not in screen.text and "test_sse_linear_time" not in screen.text, "the pager had it, not the screen"
        paged.unlink()
    short = Screen(["show", "ag01", "2.7"], learner, env={"PAGER": pager, "LINES": "200"})
    try:
        assert short.process.wait(timeout=60) == 0
        short.wait_for(lambda t: "2.7 The seams" in t, 10)
    finally:
        short.close()
    assert not paged.exists(), "a text that fits on the screen is printed as it is"


def _complete(words: str, cwd: Path) -> list[str]:
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    env = {**os.environ, "PYTHONPATH": str(REPO), "_COURSE_COMPLETE": "bash_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(cword)}
    done = subprocess.run([sys.executable, "-m", "course"], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line.split(",", 1)[1] for line in done.stdout.splitlines() if line]


def test_completion_offers_chapters_test_names_and_files(course, learner: Path) -> None:
    assert _complete("course start ", learner) == ["ag00", "ag01", "ag02", "ag03"]
    assert course("start", "ag01", cwd=learner).code == 0
    retry = _complete("course check -k test_retry_a", learner)
    assert retry == ["test_retry_after_honored", "test_retry_after_capped"], retry
    assert "test_request_body" in _complete("course check ag01 --pdb test_req", learner)
    assert "test_request_shape" in _complete("course check ag00 -k test_request_s", learner), "the chapter named on the line"
    assert not _complete("course check -k test_request_s", learner), "else the current one (ag01 has no such test)"
    assert "test_sse_linear_time" in _complete("course hint test_sse", learner)
    assert _complete("course reset agent/provider/r", learner) == ["agent/provider/retry.py"]
    assert _complete("course reset r", learner / "agent" / "provider") == ["retry.py"], "from where the learner is"
    assert "2.2" in _complete("course show ag01 2", learner)
