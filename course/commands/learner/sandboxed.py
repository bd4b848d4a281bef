"""`course check --sandbox` (or COURSE_SANDBOX=1, an instructor's lab machine's setting): the same
check, run again by itself inside the sandbox (course.sandbox) on a copy of the repository. Its
verdict and its lines reach the terminal as they are; the files it was asked for (--json,
--junit-xml, --autograding) and the progress it records come back out and are written here.
Not a command of its own: check.py hands over to `run` when the sandbox is asked for.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from course.commands.shared import echo
from course.errors import UsageError

def wanted(flag: bool | None) -> bool:
    from course.sandbox import asked

    return asked(flag)


def run(target: Any, *, outputs: dict[str, Path | None], options: list[str]) -> None:
    """Run the check in the sandbox: `options` are the check's own (chapter, -k, ...), `outputs`
    the files asked for by option name. Ends the process with the check's exit code."""
    from course import sandbox
    from course.learner import PROGRESS_FILE

    why = sandbox.unusable()
    if why:
        raise UsageError(f"--sandbox: {why}")
    repo = target.repo
    inside = {name: f"{sandbox.OUT}/{name.lstrip('-')}" for name, path in outputs.items() if path is not None}
    command = [sys.executable, "-m", "course", "check", *options, "--no-sandbox"]
    for name, path in inside.items():
        command += [name, path]
    bring = {name: path for name, path in inside.items()}
    chdir = ""
    if repo is not None:
        bring[PROGRESS_FILE] = f"{sandbox.COPY}/{PROGRESS_FILE}"
        here = Path.cwd().resolve()
        chdir = str(here.relative_to(repo.root)) if here.is_relative_to(repo.root) else ""
    box = sandbox.Sandbox(command, source=repo.root if repo is not None else None, chdir=chdir, bring=bring)
    process = box.start()
    try:
        code = process.wait()
    except KeyboardInterrupt:
        os.killpg(process.pid, 15)
        process.wait()
        raise
    finally:
        box.close()
    outcome = box.outcome()
    if outcome.problem:
        raise UsageError(f"--sandbox: {outcome.problem}")
    for name, path in outputs.items():
        if path is not None and name in outcome.files:
            try:
                path.write_text(outcome.files[name], encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    if repo is not None and PROGRESS_FILE in outcome.files:
        _record(repo, target.chapter.id, outcome.files[PROGRESS_FILE])
    for limit in outcome.reached:
        echo(click.style(f"the sandbox stopped the check: it reached {limit}", fg="red"), err=True)
    sys.exit(1 if outcome.reached and code == 0 else code if outcome.exit_code is None else outcome.exit_code)


def _record(repo: Any, chapter_id: str, text: str) -> None:
    """Take the chapter's progress as the check in the sandbox recorded it on the copy (the copy's
    files are the learner's, so its fingerprints hold here)."""
    from course.learner import LearnerRepo

    try:
        kept = json.loads(text)["chapters"][chapter_id]
    except (ValueError, KeyError, TypeError):
        return
    try:
        fresh = LearnerRepo.open(repo.root)
        state = fresh.chapters.get(chapter_id)
        if state is None or not isinstance(kept, dict):
            return
        if isinstance(kept.get("last_check"), dict):
            state.last_check = kept["last_check"]
        if isinstance(kept.get("passed_fingerprint"), str):
            state.passed_fingerprint = kept["passed_fingerprint"]
        fresh.current = chapter_id
        fresh.save()
    except OSError as exc:
        echo(click.style(f"note: progress not recorded: cannot write in {repo.root} ({exc.strerror})", fg="yellow"),
             err=True)
