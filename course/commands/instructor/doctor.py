"""`course doctor`: is this machine and this install ready? One line per check."""

from __future__ import annotations

import sys

import click

from course.commands.shared import echo


@click.command()
def doctor() -> None:
    """Check that this machine and this install are ready: toolchains, content, hints, folders.

    One line per check: ok, warn (worth knowing; nothing you need is broken) or FAIL with what to
    do. Exit 0 when nothing fails, 1 otherwise. A language's toolchain that is missing fails only
    when a chapter started in this repository is a track of that language.
    """
    from course.doctor import FAIL, OK, needed_languages, run_checks

    colours = {OK: "green", FAIL: "red"}
    failed = 0
    for check in run_checks(needed_languages()):
        failed += check.status == FAIL
        mark = click.style(f"{check.status:<4}", fg=colours.get(check.status, "yellow"), bold=check.status == FAIL)
        echo(f"  {mark} {check.what:<18} {check.detail}")
    echo(f"\ndoctor: {'nothing to mend' if not failed else f'{failed} to mend (see FAIL above)'}")
    sys.exit(1 if failed else 0)
