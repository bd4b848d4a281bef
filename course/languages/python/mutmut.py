"""The Python adapter's broad mutation tool (`course mutants CHAPTER --broad` on a Python track):
mutmut's score of a chapter's catalog.

mutmut only mutates code imported under the module name matching its path, and runs pytest from its
own mutants/ copy: run on reference/<language>/<id>/ in place it fails or, with the tests outside its
folder, reports a false 100%. So it runs in a staging folder laid out as it needs: the reference's
packages at the top, the catalog and fixtures at the same relative places as in the course. Results
are read from mutmut's .meta files, never from its exit code (0 even when mutants survive).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from course import content, regions
from course.chapters import Chapter, Track
from course.environment import FIXTURES_VAR, SCRATCH_VAR
from course.errors import CourseError, UsageError

# mutmut's exit codes per mutant, from its .meta files (exit_code_by_key).
_KILLED = {1, 3}
_SURVIVED = {0}
_NO_TESTS = {5, 33}
_TIMEOUT = {24, 36, 152, 255, -24}


@dataclass
class MutmutReport:
    total: int = 0
    killed: int = 0
    survived: list[str] = field(default_factory=list)
    timeouts: int = 0
    no_tests: list[str] = field(default_factory=list)
    other: dict[str, int] = field(default_factory=dict)
    diffs: dict[str, str] = field(default_factory=dict)  # survivor -> its diff

    @property
    def score(self) -> float:
        """Killed (timeouts count as killed) over every mutant mutmut judged."""
        return (self.killed + self.timeouts) / self.total if self.total else 0.0

    def as_dict(self) -> dict:
        return {"total": self.total, "killed": self.killed, "timeouts": self.timeouts,
                "survived": self.survived, "no_tests": self.no_tests, "other": self.other,
                "score": round(self.score, 4), "diffs": self.diffs}

    def show(self, echo: Callable[[str], None]) -> None:
        echo(f"mutmut: {self.total} mutants, {self.killed} killed, {self.timeouts} timeouts, "
             f"{len(self.survived)} survived, {len(self.no_tests)} not covered by any test"
             + (f", {len(self.other)} other" if self.other else ""))
        echo(f"score: {self.score:.1%} (killed and timeouts over all)")
        for name in self.survived + self.no_tests:
            label = "survived" if name in self.survived else "no test"
            echo(f"\n--- {label}: {name}")
            echo(self.diffs.get(name, ""))


def stage(chapter: Chapter, track: Track, into: Path) -> None:
    """Lay out the reference, catalog and fixtures as mutmut needs them, as copies (not links)."""
    packages = sorted({name.split("/")[0] for name in track.files})
    for package in packages:
        source = track.reference / package
        if source.is_dir():
            shutil.copytree(source, into / package, ignore=shutil.ignore_patterns("__pycache__"))
            regions.strip_files(into, tuple(n for n in track.files if n.startswith(package + "/")))
        else:  # a top-level module
            shutil.copy2(source, into / package)
    tests = into / "tests" / track.language / chapter.id
    shutil.copytree(track.tests, tests, ignore=shutil.ignore_patterns("__pycache__"))
    fixtures = content.fixtures_dir(chapter.id)
    if fixtures.is_dir():
        shutil.copytree(fixtures, into / "fixtures" / chapter.id)
    quoted = ", ".join(json.dumps(p) for p in packages)
    (into / "pyproject.toml").write_text(
        "[tool.mutmut]\n"
        f"source_paths = [{quoted}]\n"
        f'pytest_add_cli_args_test_selection = ["{tests.relative_to(into).as_posix()}"]\n'
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]\n'
        'also_copy = ["fixtures"]\n'
        "use_git_change_detection = false\n",
        encoding="utf-8",
    )


def read_results(folder: Path) -> MutmutReport:
    report = MutmutReport()
    for meta in sorted((folder / "mutants").rglob("*.meta")):
        data = json.loads(meta.read_text(encoding="utf-8"))
        for key, code in (data.get("exit_code_by_key") or {}).items():
            report.total += 1
            if code in _KILLED:
                report.killed += 1
            elif code in _SURVIVED:
                report.survived.append(key)
            elif code in _TIMEOUT:
                report.timeouts += 1
            elif code in _NO_TESTS:
                report.no_tests.append(key)
            else:
                report.other[key] = code
    return report


def run_mutmut(chapter: Chapter, track: Track, run_env: Mapping[str, str], *, echo: Callable[[str], None]) -> MutmutReport:
    """mutmut on a staged copy of the track's reference and catalog. `run_env` is the run's
    environment (services started); the fixtures and scratch folder are the staged copy's own."""
    try:
        import mutmut  # noqa: F401
    except ImportError:
        raise UsageError("mutmut is not installed: it is an instructor extra, `pip install 'course[instructor]'`") from None
    harness = str(content.HARNESS_ROOT)
    with tempfile.TemporaryDirectory(prefix=f"course-mutmut-{chapter.id}-") as tmp:
        folder = Path(tmp)
        stage(chapter, track, folder)
        env = {**os.environ, **run_env, "PYTHONPATH": harness, "PYTHONDONTWRITEBYTECODE": "1",
               FIXTURES_VAR: str(folder / "fixtures" / chapter.id), SCRATCH_VAR: str(folder / "scratch")}
        (folder / "scratch").mkdir()
        echo(f"mutmut: staging {chapter.id} in {folder} and running (this takes a while)")
        done = subprocess.run([sys.executable, "-m", "mutmut", "run"], cwd=folder, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        report = read_results(folder)
        if report.total == 0:
            tail = "\n".join(done.stdout.strip().splitlines()[-15:])
            raise CourseError(f"mutmut produced no results (exit {done.returncode}):\n{tail}")
        for name in report.survived + report.no_tests:
            shown = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=folder, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            report.diffs[name] = shown.stdout.strip()
    return report


class Mutmut:
    """The BroadMutation capability of the Python adapter (course.languages.protocol)."""

    tool = "mutmut"

    def run(self, chapter: Chapter, track: Track, env: Mapping[str, str], *, echo: Callable[[str], None]) -> MutmutReport:
        return run_mutmut(chapter, track, env, echo=echo)

