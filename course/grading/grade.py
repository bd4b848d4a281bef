"""`course grade`: check every repository of a roster on a fresh copy, in parallel, within limits.

Each repository is copied into a temporary folder (its .git and caches left behind) and checked there
by a `course check --json` process of its own, so the learner's repository is never touched, and a
repository whose code hangs, crashes or writes without end costs its own time and file-size limits
and nothing more.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from course.content import HARNESS_ROOT
from course.grading.gradebook import Row, last_commit, row_from_results
from course.grading.roster import Member
from course.learner import STATE_FILE, LearnerRepo
from course.errors import CourseError

LEFT_BEHIND = (".git", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache", ".pytest_cache")


@dataclass(frozen=True)
class Limits:
    test_timeout: float = 5.0  # seconds per test, as `course check --timeout`
    repo_timeout: float = 300.0  # seconds for a whole repository: copy, check, results
    max_copy_bytes: int = 200 * 2**20  # a repository larger than this is not copied
    max_file_bytes: int = 64 * 2**20  # no file the check writes may grow past this (RLIMIT_FSIZE)


class _TooLarge(Exception):
    pass


class Grader:
    """Runs the checks; `stop()` ends every running one (Ctrl-C) and no new one starts after it."""

    def __init__(self, chapter: str | None, limits: Limits, jobs: int) -> None:
        self.chapter = chapter
        self.limits = limits
        self.jobs = jobs
        self._running: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def run(self, members: list[Member], on_row: Callable[[Row], None] | None = None) -> list[Row]:
        workdir = Path(tempfile.mkdtemp(prefix="course-grade-"))
        try:
            with ThreadPoolExecutor(max_workers=self.jobs) as pool:
                futures = [pool.submit(self._one, m, workdir / f"r{i}") for i, m in enumerate(members)]
                try:
                    rows = []
                    for future in futures:
                        rows.append(future.result())
                        if on_row:
                            on_row(rows[-1])
                except BaseException:
                    self.stop()
                    for future in futures:
                        future.cancel()
                    raise
            return rows
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            running = list(self._running)
        for process in running:
            _end(process)

    def _one(self, member: Member, folder: Path) -> Row:
        started = time.monotonic()
        row = Row(learner=member.learner)
        if self._stopping.is_set():
            row.reasons = "interrupted"
            return row
        if not (member.path / STATE_FILE).is_file():
            row.reasons = f"not a learner repository (no {STATE_FILE} in {member.path})"
            return row
        try:
            state = LearnerRepo.open(member.path)
            chapter = self.chapter or state.current
            if not chapter:
                row.reasons = "no chapter started"
                return row
            folder.mkdir()
            copy = folder / "repo"
            _copy(member.path, copy, self.limits.max_copy_bytes)
            row = self._check(member, copy, folder / "results.json", chapter)
        except _TooLarge:
            row.reasons = f"repository larger than {self.limits.max_copy_bytes // 2**20} MiB; not copied"
        except CourseError as exc:
            row.reasons = exc.message
        except OSError as exc:
            row.reasons = f"could not copy the repository: {exc.strerror or exc}"
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        row.chapter = row.chapter or (self.chapter or "")
        row.last_commit = last_commit(member.path)
        row.seconds = round(time.monotonic() - started, 2)
        return row

    def _check(self, member: Member, copy: Path, results: Path, chapter: str) -> Row:
        command = [sys.executable, "-m", "course", "check", chapter, "--json", str(results),
                   "--timeout", f"{self.limits.test_timeout:g}"]
        env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(HARNESS_ROOT), "COURSE_LEARNER": member.learner}
        limit = self.limits.max_file_bytes

        def limit_files() -> None:  # in the child: no file it (or its tests) writes grows past the limit
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        with self._lock:
            if self._stopping.is_set():
                return Row(learner=member.learner, reasons="interrupted")
            process = subprocess.Popen(command, cwd=copy, env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       start_new_session=True, preexec_fn=limit_files)
            self._running.add(process)
        try:
            _, err = process.communicate(timeout=self.limits.repo_timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            _end(process)
            _, err = process.communicate()
            timed_out = True
        finally:
            with self._lock:
                self._running.discard(process)
        if timed_out:
            return Row(learner=member.learner, reasons=f"took longer than the repository limit "
                                                       f"({self.limits.repo_timeout:g} s); stopped")
        if self._stopping.is_set():
            return Row(learner=member.learner, reasons="interrupted")
        try:
            doc = json.loads(results.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            said = err.decode("utf-8", "replace").strip().splitlines()
            why = said[-1] if said else f"the check ended with exit code {process.returncode}"
            return Row(learner=member.learner, reasons=f"no results: {why}")
        return row_from_results(member.learner, doc)


def _copy(source: Path, target: Path, budget: int) -> None:
    used = 0

    def copy_file(src: str, dst: str) -> None:
        nonlocal used
        used += os.lstat(src).st_size
        if used > budget:
            raise _TooLarge
        shutil.copy2(src, dst)

    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(*LEFT_BEHIND),
                    copy_function=copy_file)


def _end(process: subprocess.Popen) -> None:
    """Stop a check and everything it started: SIGTERM first (the check then stops its own test
    processes), SIGKILL to its group if it is still there after a grace period."""
    for sig, grace in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            process.wait(timeout=grace or None)
            return
        except subprocess.TimeoutExpired:
            continue
