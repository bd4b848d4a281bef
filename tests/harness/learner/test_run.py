"""`course run`, one way for every chapter and every track: the demonstration's options are the
chapter's (an unknown one is a usage error that lists them, `course run CH --help` shows them), and
code that fails under it is one line saying what and where, whatever the demonstration prints
itself: the tiny chapter's demonstrations below have no error handling of their own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tiny import CHAPTER, GO_REFERENCE, GO_SUM_TEST, tiny_chapter, tiny_go_chapter

TESTS = "def test_add():\n    assert calc.add(2, 3) == 5, 'add(2, 3) is 5'\n"
REFERENCE = "def add(a, b):\n    return a + b\n"
# A demonstration that prints what it was given, then calls the learner's code in a thread (whose
# traceback Python prints and goes on) and in the main program.
DEMO = """\
import sys
import threading

import calc

print("args:", sys.argv[1:])
thread = threading.Thread(target=calc.add, args=(1, 2))
thread.start()
thread.join()
print("sum:", calc.add(2, 3))
"""
OPTIONS = [{"name": "scenario", "value": "NAME", "choices": ["calm", "storm"], "help": "which weather"},
           {"name": "loud", "help": "shout"}]


def _python(tmp_path: Path, options: list | None = OPTIONS) -> dict[str, str]:
    root = tiny_chapter(tmp_path / "content", tests=TESTS, reference=REFERENCE)
    manifest_path = root / "chapters" / CHAPTER / "chapter.yaml"
    manifest = yaml.safe_load(manifest_path.read_text())
    manifest["tracks"]["python"]["run"] = "demo.py"
    if options is not None:
        manifest["demonstration"] = {"options": options}
    manifest_path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    (root / "tests" / "python" / CHAPTER / "demo.py").write_text(DEMO)
    return {"COURSE_CONTENT": str(root)}


def test_on_stubs_a_demonstration_says_in_one_line_what_is_not_written(course, learner: Path, tmp_path: Path) -> None:
    env = _python(tmp_path)
    assert course("start", CHAPTER, cwd=learner, env=env).code == 0
    ran = course("run", cwd=learner, env=env)
    assert ran.code == 1, ran.out + ran.err
    assert "Traceback" not in ran.out + ran.err, ran.out + ran.err
    # the thread's traceback and the main program's say the same: one line for both
    assert ran.err.strip().splitlines() == ["not written yet: calc.py:6 (in add) raises NotImplementedError: add"], ran.err
    assert "args: []" in ran.out, "what the demonstration prints itself is untouched"

    whole = course("run", "--traceback", cwd=learner, env=env)
    assert whole.code == 1 and whole.err.count("Traceback (most recent call last)") == 2, whole.err


def test_on_buggy_code_a_demonstration_says_what_was_raised_and_where(course, learner: Path, tmp_path: Path) -> None:
    env = _python(tmp_path)
    assert course("start", CHAPTER, cwd=learner, env=env).code == 0
    (learner / "calc.py").write_text("def add(a, b):\n    return {}[a]\n")
    ran = course("run", cwd=learner, env=env)
    lines = ran.err.strip().splitlines()
    assert ran.code == 1 and len(lines) == 2, "two failures (the thread's, the main program's), a line each\n" + ran.err
    assert lines[0].startswith("your code raised KeyError: 1 at calc.py:2 (in add)"), lines
    assert lines[1].startswith("your code raised KeyError: 2 at calc.py:2 (in add)"), lines
    assert f"`course check {CHAPTER}`" in lines[0] and "--traceback" in lines[0], lines

    (learner / "calc.py").write_text("import nowhere_to_be_found\n")  # fails as it is imported: no frame of theirs runs
    ran = course("run", cwd=learner, env=env)
    lines = ran.err.strip().splitlines()
    assert ran.code == 1 and len(lines) == 1 and "ModuleNotFoundError" in lines[0] and "calc.py:1" in lines[0], ran.err


def test_the_chapters_options_are_checked_listed_and_passed_on(course, learner: Path, tmp_path: Path) -> None:
    env = _python(tmp_path)
    assert course("start", CHAPTER, cwd=learner, env=env).code == 0
    (learner / "calc.py").write_text(REFERENCE)

    ran = course("run", CHAPTER, "--scenario", "storm", "--loud", cwd=learner, env=env)
    assert ran.code == 0 and "args: ['--scenario', 'storm', '--loud']" in ran.out, ran.out + ran.err
    ran = course("run", "--scenario=calm", cwd=learner, env=env)
    assert ran.code == 0 and "args: ['--scenario=calm']" in ran.out, ran.out + ran.err

    for wrong, said in ((["--bogus"], "takes no option '--bogus'"), (["--scenario", "rain"], "is not one of calm, storm"),
                        (["--scenario"], "--scenario needs a NAME"), (["--loud=yes"], "--loud takes no value"),
                        (["extra"], "unknown chapter 'extra'"), ([CHAPTER, "extra"], "takes no argument 'extra'")):
        refused = course("run", *wrong, cwd=learner, env=env)
        lines = refused.err.strip().splitlines()
        assert refused.code == 2 and len(lines) == 1 and said in lines[0], f"{wrong}: {refused.err}"
        assert "args:" not in refused.out, "nothing runs"
    listed = course("run", "--bogus", cwd=learner, env=env).err
    assert "--scenario NAME (calm, storm)" in listed and "--loud" in listed and f"course run {CHAPTER} --help" in listed

    for asked in ([CHAPTER, "--help"], ["--help"], [CHAPTER, "-h"]):
        shown = course("run", *asked, cwd=learner, env=env)
        assert shown.code == 0 and "Usage: course run" in shown.out, shown.out + shown.err
        assert f"The demonstration of {CHAPTER} takes:" in shown.out and "which weather" in shown.out, shown.out
        assert "one of: calm, storm" in shown.out and "args:" not in shown.out, shown.out


def test_a_demonstration_without_options_refuses_any(course, learner: Path, tmp_path: Path) -> None:
    env = _python(tmp_path, options=None)
    assert course("start", CHAPTER, cwd=learner, env=env).code == 0
    refused = course("run", "--scenario", "x", cwd=learner, env=env)
    assert refused.code == 2 and "takes no option '--scenario'; it takes none" in refused.err, refused.err
    shown = course("run", "--help", cwd=learner, env=env)
    assert shown.code == 0 and f"The demonstration of {CHAPTER} takes no options of its own." in shown.out


def test_the_real_chapters_demonstrations_refuse_unknown_options(course, learner: Path) -> None:
    for chapter in ("ag00", "ag01", "ag03"):
        refused = course("run", chapter, "--reference", "--bogus", cwd=learner)
        assert refused.code == 2 and "it takes none" in refused.err, f"{chapter}: {refused.err}"
    refused = course("run", "ag02", "--reference", "--scenario", "sunny", cwd=learner)
    assert refused.code == 2 and "retry, disconnect, malformed, output-limit" in refused.err, refused.err
    shown = course("run", "ag02", "--help", cwd=learner)
    assert shown.code == 0 and "--scenario NAME" in shown.out and "output-limit" in shown.out, shown.out


GO_DEMO = """\
package main

import (
	"fmt"

	"tiny/calc"
)

func main() {
	fmt.Println("sum:", calc.Add(2, 3))
}
"""


@pytest.mark.skipif(shutil.which("go") is None, reason="the Go track needs Go on PATH")
def test_a_go_demonstrations_panic_is_one_line(course, learner: Path, tmp_path: Path) -> None:
    root = tiny_go_chapter(tmp_path / "content", tests=GO_SUM_TEST, reference=GO_REFERENCE)
    manifest_path = root / "chapters" / CHAPTER / "chapter.yaml"
    manifest = yaml.safe_load(manifest_path.read_text())
    manifest["tracks"]["go"]["run"] = "cmd/demo/main.go"
    manifest_path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    (root / "tests" / "go" / CHAPTER / "cmd" / "demo").mkdir(parents=True)
    (root / "tests" / "go" / CHAPTER / "cmd" / "demo" / "main.go").write_text(GO_DEMO)
    env = {"COURSE_CONTENT": str(root)}
    assert course("start", CHAPTER, "--language", "go", cwd=learner, env=env).code == 0

    stubs = course("run", cwd=learner, env=env, timeout=600)
    assert stubs.code == 2, "a Go panic's exit code, passed on\n" + stubs.out + stubs.err
    assert stubs.err.strip().splitlines() == ['not written yet: your code at go/calc/calc.go:6 panics with "TODO tiny: Add"'], \
        stubs.err

    (learner / "go" / "calc" / "calc.go").write_text(GO_REFERENCE.replace("return a + b", "return []int{a}[b]"))
    buggy = course("run", cwd=learner, env=env, timeout=600)
    lines = buggy.err.strip().splitlines()
    assert buggy.code == 2 and len(lines) == 1, buggy.err
    assert lines[0].startswith("your code panicked: runtime error: index out of range [3] with length 1 at go/calc/calc.go:6"), lines
    whole = course("run", "--traceback", cwd=learner, env=env, timeout=600)
    assert "goroutine 1 [running]" in whole.err, whole.err
    refused = course("run", "--scenario", "x", cwd=learner, env=env)
    assert refused.code == 2 and "it takes none" in refused.err, "the same options rule in every track"


WRITES_FOREVER = GO_REFERENCE.replace("package calc\n", 'package calc\n\nimport "os"\n').replace(
    "\treturn a + b\n",
    '\tf, _ := os.Create("runaway.log")\n\tbuf := make([]byte, 65536)\n\tfor {\n'
    '\t\tif _, err := f.Write(buf); err != nil {\n\t\t\tpanic(err)\n\t\t}\n\t}\n')


@pytest.mark.skipif(shutil.which("go") is None, reason="the Go track needs Go on PATH")
def test_a_go_test_that_writes_without_end_is_stopped_at_the_write_limit(course, learner: Path, tmp_path: Path) -> None:
    root = tiny_go_chapter(tmp_path / "content", tests=GO_SUM_TEST, reference=GO_REFERENCE)
    env = {"COURSE_CONTENT": str(root)}
    assert course("start", CHAPTER, "--language", "go", cwd=learner, env=env).code == 0
    (learner / "go" / "calc" / "calc.go").write_text(WRITES_FOREVER)
    ran = course("check", "--max-file-size", "1", "--timeout", "60", cwd=learner, env=env, timeout=600)
    assert ran.code == 1 and "write limit (1 MB per file)" in ran.out, ran.out + ran.err
    written = learner / "go" / "calc" / "runaway.log"
    assert written.stat().st_size <= 2**20, "the file stopped growing at the limit"
