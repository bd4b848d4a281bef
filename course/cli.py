"""The `course` command line's front door: the group, its help in two wings, and the mapping of every
error to its exit code. Each command is a module of its own, in the learner's wing
(course.commands.learner) or the instructor's (course.commands.instructor).

Exit codes: 0 success; 1 a verdict against the code (a test failed, diff before passing, an unsound
chapter); 2 a usage error (unknown chapter, not in a learner repository, chapter not started); 3 an
internal failure of the harness; 130 interrupted. Heavy modules are imported inside the commands so
that `course --help` stays fast.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import click

from course import __version__
from course.commands import instructor, learner
from course.errors import CourseError

WINGS = (("Learner commands", learner.COMMANDS), ("Instructor commands", instructor.COMMANDS))


class WingedGroup(click.Group):
    """Lists commands in the order a learner meets them, not alphabetically, in two wings: the
    learner's loop first, then what instructors use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        longest = max(len(name) for name in self.commands)  # one column for both wings
        for title, commands in WINGS:
            with formatter.section(title):
                formatter.write_dl([(c.name.ljust(longest), c.get_short_help_str(formatter.width - 6 - longest))
                                    for c in commands if not c.hidden])


@click.group(cls=WingedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="course")
def cli() -> None:
    """An exercise harness for a course on talking to LLM providers reliably.

    \b
    A learner's loop:
      course list              the chapters and where you are
      course start CHAPTER     write the chapter's stubs into your repository
      course show              read the chapter
      course tests             read its test catalog
      course check             run the catalog on your code (exit code is the verdict)
      course watch             check again at every save
      course hint              a hint for the first failing test, one level more each time
      course diff              after passing: your code against the reference

    With no chapter named, a command acts on the chapter you worked on last.
    Exit codes: 0 success, 1 tests failed or refused, 2 usage error.
    """


for _, commands in WINGS:
    for command in commands:
        cli.add_command(command)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM and SIGHUP clean up like Ctrl-C: no test process is left running


def main() -> None:
    """The `course` command: run it, then end the process (see _end)."""
    try:
        _command()
    except SystemExit as exc:
        _end(exc)
    _end(SystemExit(0))


def _end(ending: SystemExit) -> NoReturn:
    """End the process as `raise ending` would, without tearing the interpreter down: with pytest and
    the rest loaded that costs ~15 ms of every check, and nothing of a command's is left to do by
    then. Every atexit handler still runs (the run folder, multiprocessing's helpers, coverage's
    data), in the same order, then both streams are flushed, and the exit status is the one
    sys.exit would give. It exits the usual way while a thread other than a daemon runs (the
    interpreter waits for it before its atexit handlers) and under a profiler or a tracer (which
    may write its results after the command returns, as `python -m cProfile` does)."""
    import atexit
    import threading

    if (any(not thread.daemon for thread in threading.enumerate() if thread is not threading.main_thread())
            or sys.getprofile() is not None or sys.gettrace() is not None):
        raise ending
    if ending.code is None or isinstance(ending.code, int):
        status = ending.code or 0
    else:  # sys.exit("message"): the message goes to stderr, the status is 1
        print(ending.code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader of our output left: as in _command
            status = status or 141
        except (OSError, ValueError):  # a stream that cannot be written (closed): as Python's own exit
            status = status or 120
    os._exit(status)


def _command() -> None:
    import signal

    from course import rundir

    signal.signal(signal.SIGTERM, _interrupt)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, _interrupt)  # the terminal closed
    rundir.enter()
    try:
        sys.exit(cli.main(standalone_mode=False, prog_name="course") or 0)
    except click.UsageError as exc:  # one line, as every other usage error: what is wrong, where to look
        command = exc.ctx.command_path if exc.ctx else "course"
        what = "commands" if exc.ctx is None or isinstance(exc.ctx.command, click.Group) else "options"
        click.echo(f"course: {exc.format_message()} (`{command} --help` lists the {what})", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):  # click turns Ctrl-C into Abort
        from course import processes

        processes.kill_all()
        click.echo("interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:  # the reader of our output left before click's own output was done
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)  # 128 + SIGPIPE, as a shell reports it
    except CourseError as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except Exception as exc:  # noqa: BLE001 - a bug of the harness: say so, never "interrupted"
        from course import processes
        from course.errors import InternalError

        processes.kill_all()
        if os.environ.get("COURSE_DEBUG"):
            import traceback

            traceback.print_exc()
        InternalError(f"{type(exc).__name__}: {exc}").show()
        sys.exit(InternalError.exit_code)
    finally:
        from course import processes

        processes.kill_all()
