"""`course verify`: prove chapters sound, every track of each."""

from __future__ import annotations

import sys
from typing import Any

import click

from course.commands.shared import CHAPTER, echo


@click.command()
@click.argument("chosen", metavar="[CHAPTER]...", type=CHAPTER, nargs=-1)
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="The shuffled run's seed (to repeat an order verify printed) [default: drawn from the catalog's files].")
@click.option("--record", is_flag=True,
              help="Record the mutants' kill signatures anew (for hints) instead of checking them.")
def verify(chosen: tuple[Any, ...], seed: int | None, record: bool) -> None:
    """Prove chapters sound: manifest, reference passes (in order and shuffled), stubs fail,
    documented mutants killed, recorded kill signatures up to date.

    Verify only reads the course's files; --record writes each chapter's signatures.json."""
    from course import chapters
    from course.verify import verify_track

    selected = list(chosen) or list(chapters.load_all())
    passed = failed = 0

    def say(finding) -> None:  # noqa: ANN001
        mark = click.style("ok  ", fg="green") if finding.ok else click.style("FAIL", fg="red", bold=True)
        first, *more = finding.detail.splitlines() or [""]
        echo(f"  {mark} {finding.step:<9} {first}")
        for line in more:
            echo(f"                 {line}")

    for chapter in selected:
        for track in chapter.tracks.values():
            echo(f"{chapter.id} ({track.language}): {chapter.title}")
            verdict = verify_track(chapter, track, say=say, seed=seed, record=record)
            passed += sum(f.ok for f in verdict.findings)
            failed += sum(not f.ok for f in verdict.findings)
    echo(f"\nverify: {passed} passed, {failed} failed")
    sys.exit(0 if failed == 0 else 1)
