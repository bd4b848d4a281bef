"""The harness's errors: each carries the exit code the CLI ends with and a one-line message.

Exit codes: 0 success, 1 a verdict against the user's code (tests failed, diff refused before a pass,
a chapter unsound), 2 a usage error (unknown chapter, no learner repository, chapter not started).
"""

from __future__ import annotations


class CourseError(Exception):
    """Base of every error the CLI turns into a message and an exit code."""

    exit_code = 1

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail  # extra lines shown after the message (e.g. the list of chapters)


class UsageError(CourseError):
    """The command cannot run as asked: fix the command line or the place it runs from."""

    exit_code = 2


class UnknownChapter(UsageError):
    pass


class NoLearnerRepo(UsageError):
    pass


class ChapterNotStarted(UsageError):
    pass


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
