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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from course import processes
from course.chapters import Chapter, Track
from course.errors import CourseError, ToolMissing
from course.languages.go import build, toolchain

VERSION = "v0.6.0"
INSTALL = f"go install github.com/go-gremlins/gremlins/cmd/gremlins@{VERSION}"
_VERDICT = re.compile(r"^\s*(KILLED|LIVED|NOT COVERED|TIMED OUT|NOT VIABLE|SKIPPED|RUNNABLE)\s+(\w+) at (\S+):(\d+):(\d+)\s*$")
LIMIT = 3 * 3600.0


@dataclass
class Mutant:
    status: str
    mutator: str
    file: str  # as the learner's tree names it (go/agent/provider/sse.go)
    line: int
    column: int
    source: str = ""  # the line it changed, with the column marked

    @property
    def name(self) -> str:
        return f"{self.mutator} at {self.file}:{self.line}:{self.column}"


@dataclass
class GremlinsReport:
    mutants: list[Mutant] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(m.status == status for m in self.mutants)

    @property
    def judged(self) -> int:
        """KILLED, LIVED and TIMED OUT: the mutants a test run decided (gremlins' efficacy counts the first two)."""
        return self.count("KILLED") + self.count("LIVED") + self.count("TIMED OUT")

    @property
    def score(self) -> float:
        """Killed (timeouts count as killed, as mutmut's score counts them) over every judged mutant."""
        return (self.count("KILLED") + self.count("TIMED OUT")) / self.judged if self.judged else 0.0

    def show(self, echo: Callable[[str], None]) -> None:
        echo(f"gremlins: {len(self.mutants)} mutants, {self.count('KILLED')} killed, {self.count('TIMED OUT')} "
             f"timeouts, {self.count('LIVED')} survived, {self.count('NOT COVERED')} not covered by any test, "
             f"{self.count('NOT VIABLE')} not viable (they do not compile)")
        echo(f"score: {self.score:.1%} (killed and timeouts over killed, timeouts and survivors)")
        for mutant in self.mutants:
            if mutant.status in ("LIVED", "NOT COVERED"):
                echo(f"\n--- {'survived' if mutant.status == 'LIVED' else 'no test'}: {mutant.name}")
                echo(mutant.source)

    def as_dict(self) -> dict:
        return {"tool": f"gremlins {VERSION}", "judged": self.judged, "killed": self.count("KILLED"),
                "timeouts": self.count("TIMED OUT"), "survived": [m.name for m in self.mutants if m.status == "LIVED"],
                "not_covered": [m.name for m in self.mutants if m.status == "NOT COVERED"],
                "not_viable": self.count("NOT VIABLE"), "score": round(self.score, 4),
                "sources": {m.name: m.source for m in self.mutants if m.status in ("LIVED", "NOT COVERED")}}


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
            mutant = Mutant(status, mutator, f"{shown_prefix}/{file}" if shown_prefix not in ("", ".") else file,
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
