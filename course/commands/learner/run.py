"""`course run`: the chapter's offline demonstration on the learner's code (or the reference)."""

from __future__ import annotations

import sys

import click

from course.commands.shared import CHAPTER, code_under_test, language_option
from course.errors import UsageError

RUN_TIMEOUT = 60.0  # seconds for `course run`: a demonstration is offline and quick


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--reference", is_flag=True, help="Run the demonstration on the course's reference.")
@language_option("The track, with --reference.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=RUN_TIMEOUT, show_default=True,
              help="Seconds the demonstration may take before it is stopped.")
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="[CHAPTER] [DEMO OPTIONS]...")
def run(reference: bool, language: str, timeout: float, args: tuple[str, ...]) -> None:
    """Run the chapter's offline demonstration on your code.

    Every other option is the demonstration's own and is passed to it as it is
    (for example `course run ag02 --scenario retry`).
    """
    from course import content, languages, services
    from course.languages.protocol import Demonstration

    # The chapter is the first word that is not an option; with none, the current chapter. Any other
    # word belongs to the demonstration (click puts unknown options among the arguments, in order).
    chapter, args = (CHAPTER.convert(args[0], None, None), args[1:]) if args and not args[0].startswith("-") else (None, args)
    target = code_under_test(chapter, reference, language)
    track = target.track
    if not track.run:
        raise UsageError(f"chapter {target.chapter.id} has no demonstration to run")
    demonstration = languages.capability(languages.get(track.language), Demonstration)
    if demonstration is None:
        raise UsageError(f"the {track.language} track cannot run demonstrations yet")
    with services.environment(track.for_demonstration) as env:
        code = demonstration.run_script(track, target.code_root, content.require(track.tests) / track.run,
                                        list(args), env, timeout=timeout)
    sys.exit(code if code >= 0 else 128 - code)  # killed by a signal: the shell's convention
