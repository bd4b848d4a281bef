"""The TypeScript adapter's broad mutation tool (`course mutants CHAPTER --language typescript
--broad`): StrykerJS's mutation score of a TypeScript track's catalog, the counterpart of Python's
mutmut and Go's gremlins (an instructor's tool: not part of verify or CI).

StrykerJS knows nothing of the course's build, so it works on a staged copy: the reference package
(without its region markers) with the catalog's files in their places, in a temporary folder. It
mutates the learner's files there (not the given ones), compiles the package once with all its
mutants switched off (its mutant schemata: a mutant is chosen at run time by an environment
variable), then runs the whole catalog under a bare `node --test` for every mutant (the command
runner: no per-test coverage), with the chapter's fixtures and a fake model reached as in `course
check`. Pinned to 9.6.1 (stryker/package-lock.json), installed into the user's cache on first use:
StrykerJS 10 needs Node.js 22. The compile uses a config named build.tsconfig.json, so that
StrykerJS leaves it alone (it rewrites a tsconfig.json with TypeScript's own library, which the
native compiler does not ship).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from course import processes, regions
from course.errors import CourseError
from course.languages.common import ToolMutant, ToolReport
from course.languages.typescript import build, toolchain

if TYPE_CHECKING:
    from course.chapters import Chapter, Track

VERSION = "9.6.1"
PINNED = Path(__file__).with_name("stryker")
LIMIT = 3 * 3600.0
TEST_LIMIT_MS = 20_000  # a test that hangs on a mutant fails at this, rather than at StrykerJS's own timeout


class StrykerReport(ToolReport):
    """StrykerJS's verdicts (Killed, Survived, Timeout, NoCoverage, CompileError, RuntimeError, Ignored)."""

    LABEL = TOOL = f"StrykerJS {VERSION}"
    KILLED, TIMED_OUT, SURVIVED, NOT_COVERED = "Killed", "Timeout", "Survived", "NoCoverage"
    NOT_VIABLE = ("CompileError", "RuntimeError")


def stage(track: Track, into: Path, tools: toolchain.Toolchain) -> tuple[Path, list[str]]:
    """The reference package with the catalog's files in their places, its build config and StrykerJS's;
    (the package folder, the files to mutate relative to it)."""
    package = build.package_folder(track)
    root = into / "package"
    for name, path in build.learner_sources(track.reference / package).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(regions.strip(path.read_text(encoding="utf-8"), name), encoding="utf-8")
    theirs = build.test_sources(track)
    for name, path in theirs.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(path.read_bytes())
    (root / "package.json").write_text('{"type": "module"}\n', encoding="utf-8")
    options = {**build.COMPILER_OPTIONS, "rootDir": ".", "outDir": "out",
               "typeRoots": [str(tools.tools / "node_modules" / "@types")]}
    (root / "build.tsconfig.json").write_text(json.dumps({"compilerOptions": options, "include": ["**/*.ts"],
                                                          "exclude": ["node_modules", ".stryker-tmp", "out"]}), encoding="utf-8")
    prefix = f"{package}/" if package not in ("", ".") else ""
    mutate = [name[len(prefix):] for name in track.files if name.endswith(".ts") and name not in track.given]
    tests = [f"out/{name[:-3]}.js" for name in sorted(theirs) if name.endswith(".test.ts")]
    config = {
        "testRunner": "command",
        "commandRunner": {"command": f"{tools.node} --test --test-force-exit --test-timeout={TEST_LIMIT_MS} {' '.join(tests)}"},
        "buildCommand": f"{' '.join(tools.tsc)} -p build.tsconfig.json",
        "mutate": mutate,
        "coverageAnalysis": "off",
        "reporters": ["json", "progress-append-only"],
        "jsonReporter": {"fileName": "stryker-report.json"},
        "concurrency": max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1),
        "timeoutMS": TEST_LIMIT_MS + 5000,  # a hang ends at the test's own limit: a failure, not StrykerJS's timeout
        "tempDirName": ".stryker-tmp",
        "cleanTempDir": "always",
        "plugins": [],
    }
    (root / "stryker.config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
    return root, mutate


def run_stryker(chapter: Chapter, track: Track, env: Mapping[str, str], *, echo: Callable[[str], None]) -> StrykerReport:
    """StrykerJS on a staged copy of the track's reference package, in the run's environment `env`."""
    tools = toolchain.find()
    stryker = toolchain.install(PINNED, tools.node, what=f"StrykerJS {VERSION}")
    package = build.package_folder(track)
    shown_prefix = f"{package}/" if package not in ("", ".") else ""
    with tempfile.TemporaryDirectory(prefix=f"course-stryker-{chapter.id}-") as tmp:
        root, mutate = stage(track, Path(tmp), tools)
        echo(f"StrykerJS {VERSION}: staging {chapter.id} in {root}, mutating {', '.join(mutate)}, and running the whole "
             "catalog for every mutant (this takes a while)")
        cli = stryker / "node_modules" / "@stryker-mutator" / "core" / "bin" / "stryker.js"
        processes.admit()
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen([tools.node, str(cli), "run", "stryker.config.json"], cwd=root,
                                    env=toolchain.environment(dict(env)), stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
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
        report_file = root / "stryker-report.json"
        if not report_file.is_file():
            tail = "\n".join(said.strip().splitlines()[-15:])
            raise CourseError(f"StrykerJS judged no mutant (exit {proc.returncode}):\n{tail}")
        report = StrykerReport()
        for file, data in json.loads(report_file.read_text(encoding="utf-8"))["files"].items():
            lines = data.get("source", "").splitlines()
            for found in data["mutants"]:
                start = found["location"]["start"]
                mutant = ToolMutant(found["status"], found["mutatorName"], shown_prefix + file, start["line"],
                                    start["column"], replacement=found.get("replacement", ""))
                if mutant.status in ("Survived", "NoCoverage") and 0 < mutant.line <= len(lines):
                    text = lines[mutant.line - 1]
                    mutant.source = text + "\n" + " " * (mutant.column - 1) + "^"
                report.mutants.append(mutant)
    report.mutants.sort(key=lambda m: (m.file, m.line, m.column))
    return report


class Stryker:
    """The BroadMutation capability of the TypeScript adapter (course.languages.protocol)."""

    tool = f"StrykerJS {VERSION}"

    def run(self, chapter: Chapter, track: Track, env: Mapping[str, str], *, echo: Callable[[str], None]) -> StrykerReport:
        return run_stryker(chapter, track, env, echo=echo)
