"""`course`, the installed command, and `python -m course`."""

import sys

# Commands whose test processes start getting ready before the command line is parsed: one check
# that a person waits for (see course.languages.start_early). Parsing it imports click and most of
# the harness, which the test processes never need.
EARLY_START = ("check",)


def _sandboxed() -> bool:
    """A check run in the sandbox runs its tests in there: nothing to start out here."""
    from course.sandbox import asked

    return asked(True if "--sandbox" in sys.argv else False if "--no-sandbox" in sys.argv else None)


def main() -> None:
    if sys.argv[1:2] and sys.argv[1] in EARLY_START and not _sandboxed():
        from course import languages, rundir
        from course.processes import single_run_workers

        rundir.enter()  # first: what starts early must make its temporary files in the run's folder
        languages.start_early(single_run_workers())
    from course.cli import main as run_command

    run_command()


# Guarded: multiprocessing's forkserver imports the main module, and must not run the CLI again.
if __name__ == "__main__":
    main()
