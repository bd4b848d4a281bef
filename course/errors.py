"""Every error the harness raises on purpose, in one tree, each with the exit code the CLI ends with.

    CourseError                 exit 1   base: a message, optional detail lines, show()
    ├── UsageError              exit 2   the command cannot run as asked: fix the command line or the folder
    │   ├── UnknownChapter               no chapter of that id (the message lists the chapters)
    │   ├── UnknownLanguage              no adapter, or no track, for that language
    │   ├── NoLearnerRepo                not inside a learner repository
    │   ├── ChapterNotStarted            the chapter was never started here
    │   ├── BadSelection                 -k is not a valid expression, or matches no catalog test
    │   └── ToolMissing                  a language's toolchain is not installed (the line says what to install)
    ├── ManifestError           exit 2   a chapter's data is malformed: names chapter, entry and field
    ├── Refused                 exit 1   not yet (`diff` before the chapter passes)
    ├── BaselineFailed          exit 1   the catalog fails on the reference, so no mutant can be judged
    ├── StaleMutant             exit 1   a documented mutant no longer applies to the reference
    ├── CodeProblem             exit 1   the learner's code cannot run (`course run`: a syntax error, a timeout)
    ├── InternalError           exit 3   the harness itself failed (a helper process died): a bug to report
    │   └── IncompleteInstall            the installed course lacks a folder of its content: reinstall
    └── Stopped                 exit 130 the harness is shutting down: no new child process may start

Each shows itself as one line on stderr, `course: <message>`, then its detail lines if any: the
same for every command, so no command prints a traceback for a mistake the user can fix.
Exit codes: 0 success, 1 a verdict against the code, 2 a usage error, 3 an internal failure,
130 interrupted.
"""

from __future__ import annotations

import sys
from typing import TextIO


class CourseError(Exception):
    """Base of every error the CLI turns into a message and an exit code."""

    exit_code = 1

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail  # extra lines shown after the message (e.g. the list of chapters)

    def show(self, file: TextIO | None = None) -> None:
        out = file or sys.stderr
        out.write(f"course: {self.message}\n")
        if self.detail:
            out.write(self.detail.rstrip("\n") + "\n")
        out.flush()


class UsageError(CourseError):
    """The command cannot run as asked: fix the command line or the place it runs from."""

    exit_code = 2


class UnknownChapter(UsageError):
    """No chapter has that id."""


class UnknownLanguage(UsageError):
    """No adapter for that language, or the chapter has no track in it."""


class NoLearnerRepo(UsageError):
    """Not inside a learner repository (no state file here or above)."""


class ChapterNotStarted(UsageError):
    """The chapter was never started in this repository."""


class BadSelection(UsageError):
    """A -k expression that does not parse, or that matches no catalog test."""


class ToolMissing(UsageError):
    """A language's toolchain is missing or too old; the message says what to install."""


class ManifestError(CourseError):
    """A chapter's data is malformed: names the chapter, the entry and the field."""

    exit_code = 2


class Refused(CourseError):
    """The command will not do this yet (for instance `diff` before the chapter passes)."""

    exit_code = 1


class CodeProblem(CourseError):
    """The learner's code cannot run at all (a syntax error), or ran past its time: one line, exit 1."""

    exit_code = 1


class InternalError(CourseError):
    """The harness itself failed (not the learner's code, not an interrupt): exit 3."""

    exit_code = 3

    def show(self, file: TextIO | None = None) -> None:
        out = file or sys.stderr
        out.write(f"course: internal error: {self.message}\n"
                  "(a failure of the harness, not of your code; please report it with the command you ran)\n")
        out.flush()


class IncompleteInstall(InternalError):
    """A folder of the course's content (a catalog, a starter, a reference) is missing from where the
    course is installed: nothing the learner did, and no check can judge their code without it."""

    def show(self, file: TextIO | None = None) -> None:
        CourseError.show(self, file)


class BaselineFailed(CourseError):
    """The catalog does not pass on the untouched reference, so no mutant can be judged."""


class StaleMutant(CourseError):
    """The mutant's change no longer applies to the reference."""


class Stopped(CourseError):
    """The harness is shutting down (Ctrl-C, SIGTERM): no new child process may start."""

    exit_code = 130
