"""The Go adapter's broad mutation tool (`course mutants CHAPTER --language go --broad`): gremlins'
mutation score of a Go track's catalog, the Go counterpart of Python's mutmut (an instructor's tool:
not part of verify or CI).

gremlins runs `go test` itself and knows nothing of overlays, so it works on a staged copy: the
reference module with the catalog's test files copied into their packages, in a temporary folder.
It runs the whole catalog for every mutant (--integration: the catalog's tests sit in one package
and exercise the others), with the chapter's fixtures and a fake model reached as in `course check`.
Its verdicts are read from the lines it prints ("KILLED ARITHMETIC_BASE at agent/provider/sse.go:51:47").
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Mapping

from course import processes
from course.chapters import Chapter, Track
from course.errors import CourseError, ToolMissing
from course.languages.common import ToolMutant, ToolReport
from course.languages.go import build, toolchain

VERSION = "v0.6.0"
INSTALL = f"go install github.com/go-gremlins/gremlins/cmd/gremlins@{VERSION}"
_VERDICT = re.compile(r"^\s*(KILLED|LIVED|NOT COVERED|TIMED OUT|NOT VIABLE|SKIPPED|RUNNABLE)\s+(\w+) at (\S+):(\d+):(\d+)\s*$")
LIMIT = 3 * 3600.0


class GremlinsReport(ToolReport):
    """gremlins' verdicts (its efficacy counts KILLED over KILLED and LIVED; ours counts TIMED OUT as killed)."""

    LABEL = "gremlins"
    TOOL = f"gremlins {VERSION}"
    KILLED, TIMED_OUT, SURVIVED, NOT_COVERED = "KILLED", "TIMED OUT", "LIVED", "NOT COVERED"
    NOT_VIABLE = ("NOT VIABLE",)
    NOT_VIABLE_NOTE = " (they do not compile)"


def find() -> str:
    found = shutil.which("gremlins")
    if found is None:
        gopath = subprocess.run([toolchain.find().go, "env", "GOPATH"], capture_output=True, text=True,
                                env=toolchain.environment(), check=False).stdout.strip()
        candidate = Path(gopath.split(os.pathsep)[0] or Path.home() / "go") / "bin" / "gremlins"
        found = str(candidate) if candidate.is_file() else None
    if found is None:
        raise ToolMissing(f"gremlins is not installed: `{INSTALL}` (an instructor's tool)")
    return found


def stage(track: Track, into: Path) -> Path:
    """The reference module with the catalog's test files in their packages; the module's folder."""
    reference_module = build.module_root(track, track.reference)
    module = into / "module"
    shutil.copytree(reference_module, module)
    for test in sorted(track.tests.rglob("*_test.go")):
        target = module / test.relative_to(track.tests)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(test, target)
    return module


def run_gremlins(chapter: Chapter, track: Track, env: Mapping[str, str], *, echo: Callable[[str], None]) -> GremlinsReport:
    """gremlins on a staged copy of the track's reference module, in the run's environment `env`."""
    gremlins = find()
    shown_prefix = build.module_root(track, Path(".")).as_posix()
    with tempfile.TemporaryDirectory(prefix=f"course-gremlins-{chapter.id}-") as tmp:
        module = stage(track, Path(tmp))
        echo(f"gremlins {VERSION}: staging {chapter.id} in {module} and running the catalog for every mutant "
             "(this takes a while)")
        args = [gremlins, "unleash", "--integration", "--coverpkg", "./...", "."]
        processes.admit()
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(args, cwd=module, env=toolchain.environment(dict(env)), stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
            processes.register(proc.pid)
            try:
                proc.wait(LIMIT)
            except subprocess.TimeoutExpired:
                pass
            finally:
                processes.kill(proc.pid)
                proc.wait()
                processes.unregister(proc.pid)
            out.seek(0)
            said = out.read().decode("utf-8", "replace")
        report = GremlinsReport()
        for line in said.splitlines():
            verdict = _VERDICT.match(line)
            if not verdict:
                continue
            status, mutator, file, row, column = verdict.groups()
            mutant = ToolMutant(status, mutator, f"{shown_prefix}/{file}" if shown_prefix not in ("", ".") else file,
                            int(row), int(column))
            if status in ("LIVED", "NOT COVERED"):
                lines = (module / file).read_text(encoding="utf-8").splitlines()
                text = lines[mutant.line - 1] if 0 < mutant.line <= len(lines) else ""
                mutant.source = text.expandtabs() + "\n" + " " * (len(text[: mutant.column - 1].expandtabs())) + "^"
            report.mutants.append(mutant)
        if not report.mutants:
            tail = "\n".join(said.strip().splitlines()[-15:])
            raise CourseError(f"gremlins judged no mutant (exit {proc.returncode}):\n{tail}")
    return report


class Gremlins:
    """The BroadMutation capability of the Go adapter (course.languages.protocol)."""

    tool = f"gremlins {VERSION}"

    def run(self, chapter: Chapter, track: Track, env: Mapping[str, str], *, echo: Callable[[str], None]) -> GremlinsReport:
        return run_gremlins(chapter, track, env, echo=echo)
