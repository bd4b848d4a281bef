"""`course grade`: check every repository of a roster on a fresh copy, in parallel, within limits.

Each repository is checked by a `course check --json` process of its own, inside a sandbox
(course.sandbox: bubblewrap) that copies it into a private, size-limited folder first: the learner's
repository is never touched (it is mounted read-only), and a repository whose code hangs, crashes,
writes without end, forks without end or reaches for the network or the rest of the machine costs
its own time and limits, and nothing more. Without the sandbox (`--no-sandbox`) the copy is made here
and only the time and per-file limits hold.

A failure of a test the manifest marks `timing_sensitive` is judged again once, in a run of those
tests alone, before it counts; the row says so. Rows come back in the order checks finish.
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
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from course import sandbox
from course.content import HARNESS_ROOT
from course.errors import CourseError, UsageError
from course.grading.gradebook import INTERRUPTED, Row, last_commit, not_judged, row_from_results
from course.grading.roster import Member
from course.learner import STATE_FILE, LearnerRepo

OUT = f"{sandbox.OUT}/results.json"


@dataclass(frozen=True)
class Limits:
    test_timeout: float = 5.0  # seconds per test, as `course check --timeout`
    repo_timeout: float = 300.0  # seconds for a whole repository: copy, check (twice at most), results
    sandbox: sandbox.Limits = field(default_factory=sandbox.Limits)  # disk, memory, processes, CPU, file, copy


def class_chapter(members: list[Member], given: str | None) -> str:
    """The chapter the class is graded on: the one named, else the one every repository is on. When
    they are on different ones, grading each on its own would put different chapters in one book:
    a usage error that counts them and asks for --chapter."""
    if given:
        return given
    counts: dict[str, int] = {}
    for member in members:
        try:
            current = LearnerRepo.open(member.path).current if (member.path / STATE_FILE).is_file() else ""
        except CourseError:
            current = ""
        if current:
            counts[current] = counts.get(current, 0) + 1
    if not counts:
        raise UsageError("no repository of the roster has started a chapter; name one with --chapter")
    if len(counts) > 1:
        spread = ", ".join(f"{c}: {n}" for c, n in sorted(counts.items(), key=lambda item: -item[1]))
        raise UsageError(f"the repositories are on different chapters ({spread}); name the one to grade with --chapter")
    return next(iter(counts))


class Grader:
    """Runs the checks; `stop()` ends every running one (Ctrl-C) and no new one starts after it."""

    def __init__(self, chapter: str, limits: Limits, jobs: int, *, sandboxed: bool = True,
                 hide: tuple[Path, ...] = ()) -> None:
        self.chapter = chapter
        self.limits = limits
        self.jobs = jobs
        self.sandboxed = sandboxed
        self.hide = hide
        self._running: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._timing: dict[str, tuple[str, ...]] = {}  # language -> its timing-sensitive tests' names
        self._weights: dict[str, dict[str, float]] = {}  # language -> test name -> points

    def run(self, members: list[Member], on_row: Callable[[Row], None] | None = None) -> list[Row]:
        """Every member's row, in the roster's order; `on_row` sees each as soon as it is done."""
        workdir = Path(tempfile.mkdtemp(prefix="course-grade-"))
        rows: dict[int, Row] = {}
        try:
            with ThreadPoolExecutor(max_workers=self.jobs) as pool:
                futures = {pool.submit(self._one, m, workdir / f"r{i}"): i for i, m in enumerate(members)}
                try:
                    for future in as_completed(futures):
                        rows[futures[future]] = future.result()
                        if on_row:
                            on_row(rows[futures[future]])
                except BaseException:
                    self.stop()
                    for future in futures:
                        future.cancel()
                    raise
            return [rows[i] for i in sorted(rows)]
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            running = list(self._running)
        for process in running:
            _end(process)

    def warm(self, languages: set[str]) -> None:
        """Check the course's reference of each track to be graded, once, outside the sandbox: a
        broken install is found before it fails a whole class, and the toolchains' build caches
        (which the sandbox reads but cannot write) hold what every learner's build reuses."""
        for language in sorted(languages):
            command = [sys.executable, "-m", "course", "check", self.chapter, "--reference", "--language", language,
                       "--no-sandbox"]
            try:
                done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                      timeout=self.limits.repo_timeout, check=False,
                                      env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(HARNESS_ROOT)})
            except subprocess.TimeoutExpired:
                raise CourseError(f"the course's reference of {self.chapter} ({language}) took longer than "
                                  f"{self.limits.repo_timeout:g} s to check here") from None
            if done.returncode != 0:
                said = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["?"])[-1]
                raise CourseError(f"the course's reference of {self.chapter} ({language}) fails its own check here "
                                  f"({said}); grading now would blame every learner: `course check {self.chapter} "
                                  f"--reference --language {language}` shows why")

    def languages(self, members: list[Member]) -> set[str]:
        found = set()
        for member in members:
            try:
                state = LearnerRepo.open(member.path).chapters.get(self.chapter)
            except CourseError:
                continue
            if state is not None:
                found.add(state.language)
        return found

    def _one(self, member: Member, folder: Path) -> Row:
        started = time.monotonic()
        row = self._judge(member, folder)
        row.chapter = row.chapter or self.chapter
        row.commit, row.commit_date = last_commit(member.path)
        row.seconds = round(time.monotonic() - started, 2)
        return row

    def _judge(self, member: Member, folder: Path) -> Row:
        if self._stopping.is_set():
            return not_judged(member.learner, INTERRUPTED)
        if not (member.path / STATE_FILE).is_file():
            return not_judged(member.learner, f"not a learner repository (no {STATE_FILE} in {member.path})")
        try:
            state = LearnerRepo.open(member.path)
        except CourseError as exc:
            return not_judged(member.learner, exc.message)
        chapter_state = state.chapters.get(self.chapter)
        if chapter_state is None:
            on = f" (it is on {state.current})" if state.current else ""
            return not_judged(member.learner, f"chapter {self.chapter} is not started in this repository{on}")
        language = chapter_state.language
        deadline = time.monotonic() + self.limits.repo_timeout
        try:
            doc, why, reached = self._check(member, folder / "first", deadline)
            if doc is None:
                return not_judged(member.learner, why, language=language)
            again = self._timing_failures(doc, language)
            notes: list[str] = []
            if again and not self._stopping.is_set():
                second, _, reached2 = self._check(member, folder / "again", deadline, select=" or ".join(again))
                reached += [r for r in reached2 if r not in reached]
                doc, notes = self._merge(doc, second, again, language)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        row = row_from_results(member.learner, doc)
        row.rejudged = notes
        if reached:
            if row.status in ("pass", "fail"):
                row.status = "error"
            row.reasons = [f"the sandbox stopped it: it reached {' and '.join(reached)}", *row.reasons]
        return row

    def _check(self, member: Member, folder: Path, deadline: float,
               select: str = "") -> tuple[dict[str, Any] | None, str, list[str]]:
        """One check of the member's repository: (its results.json, "", the sandbox's limits it
        reached), or (None, why there are no results, ...)."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None, f"took longer than the repository limit ({self.limits.repo_timeout:g} s); stopped", []
        folder.mkdir(parents=True)
        results = Path(OUT) if self.sandboxed else folder / "results.json"
        command = [sys.executable, "-m", "course", "check", self.chapter, "--json", str(results),
                   "--timeout", f"{self.limits.test_timeout:g}", "--no-sandbox"]
        if select:
            command += ["-k", select]
        env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(HARNESS_ROOT), "COURSE_LEARNER": member.learner}
        box = None
        with self._lock:
            if self._stopping.is_set():
                return None, INTERRUPTED, []
            try:
                if self.sandboxed:
                    box = sandbox.Sandbox(command, source=member.path, limits=self.limits.sandbox,
                                          bring={"results.json": OUT}, hide=self.hide, env=env)
                    process = box.start(stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                else:
                    copy = folder / "repo"
                    sandbox.copy_repository(member.path, copy, self.limits.sandbox.copy)
                    process = _unsandboxed(command, copy, env, self.limits.sandbox.file)
            except sandbox.TooLarge:
                return None, f"repository larger than {self.limits.sandbox.copy // 2**20} MiB; not copied", []
            except CourseError as exc:
                return None, exc.message, []
            except OSError as exc:
                return None, f"could not copy the repository: {exc.strerror or exc}", []
            self._running.add(process)
        try:
            try:
                _, err = process.communicate(timeout=remaining)
                timed_out = False
            except subprocess.TimeoutExpired:
                _end(process)
                _, err = process.communicate()
                timed_out = True
            finally:
                with self._lock:
                    self._running.discard(process)
            outcome = box.outcome() if box is not None else None
        finally:
            if box is not None:
                box.close()
        if timed_out:
            return None, f"took longer than the repository limit ({self.limits.repo_timeout:g} s); stopped", []
        if self._stopping.is_set():
            return None, INTERRUPTED, []
        if outcome is not None and outcome.problem:
            return None, outcome.problem, outcome.reached
        text = outcome.files.get("results.json") if outcome is not None else _read(results)
        try:
            doc = json.loads(text) if text else None
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            said = err.decode("utf-8", "replace").strip().splitlines()
            why = said[-1] if said else f"the check ended with exit code {process.returncode}"
            reached = outcome.reached if outcome is not None else []
            if reached:
                why = f"the sandbox stopped it: it reached {' and '.join(reached)} ({why})"
            return None, f"no results: {why}", reached
        return doc, "", outcome.reached if outcome is not None else []

    # --- timing-sensitive tests: judged again once ---------------------------------------------------

    def _catalog(self, language: str) -> None:
        if language in self._timing:
            return
        from course import chapters, languages

        chapter = chapters.get(self.chapter)
        track = chapter.track(language)
        adapter = languages.get(language)
        entries = chapter.for_track(track).catalog
        self._timing[language] = tuple(adapter.test_name(e.name) for e in entries if e.timing_sensitive)
        self._weights[language] = {adapter.test_name(e.name): e.weight for e in entries}

    def _timing_failures(self, doc: dict[str, Any], language: str) -> list[str]:
        """The timing-sensitive tests that did not pass, when the check itself ran (no build error)."""
        if doc.get("status") != "fail" or not isinstance(doc.get("tests"), list):
            return []
        try:
            self._catalog(language)
        except CourseError:
            return []
        sensitive = set(self._timing[language])
        return [t["name"] for t in doc["tests"] if isinstance(t, dict) and t.get("status") != "pass"
                and t.get("name") in sensitive]

    def _merge(self, doc: dict[str, Any], second: dict[str, Any] | None, names: list[str],
               language: str) -> tuple[dict[str, Any], list[str]]:
        """The first run's results with each re-judged test as the second run found it; the points
        and status counted again; a note per test."""
        again = {t.get("name"): t for t in (second or {}).get("tests", []) if isinstance(t, dict)}
        notes = []
        tests = []
        for test in doc["tests"]:
            name = test.get("name")
            if name in names:
                later = again.get(name)
                if later is None:
                    notes.append(f"{name}: failed; the second run gave no result for it")
                elif later.get("status") == "pass":
                    notes.append(f"{name}: failed, then passed when judged again")
                    test = later
                else:
                    notes.append(f"{name}: failed, and failed again")
                    test = later
            tests.append(test)
        weights = self._weights.get(language, {})
        course = dict(doc.get("course") or {})
        course["score"] = _whole(sum(weights.get(t.get("name"), 1.0) for t in tests if t.get("status") == "pass"))
        status = "pass" if all(t.get("status") == "pass" for t in tests) else "fail"
        return {**doc, "status": status, "tests": tests, "course": course}, notes


def _whole(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(value, 4)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _unsandboxed(command: list[str], copy: Path, env: dict[str, str], file_limit: int) -> subprocess.Popen:
    def limit_files() -> None:  # in the child: no file it (or its tests) writes grows past the limit
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    return subprocess.Popen(command, cwd=copy, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=limit_files)


def _end(process: subprocess.Popen) -> None:
    """Stop a check and everything it started: SIGTERM first (the check then stops its own test
    processes), SIGKILL to its group if it is still there after a grace period. In the sandbox,
    everything dies with it besides (its own process namespace)."""
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
