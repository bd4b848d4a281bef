"""`course run`: the chapter's offline demonstration on the learner's code (or the reference).

One way for every chapter and every track: the demonstration's options are the chapter's
(`demonstration: options:` in its manifest), checked here before anything runs (an unknown one is a
usage error that lists them; `course run CH --help` shows them) and passed on as written; what ends
the program with an error is one line from the track's adapter (Demonstration.run_script).
"""

from __future__ import annotations

import sys

import click

from course.commands.shared import CHAPTER, code_under_test, echo, language_option
from course.errors import UsageError

RUN_TIMEOUT = 60.0  # seconds for `course run`: a demonstration is offline and quick


@click.command(context_settings={"ignore_unknown_options": True, "help_option_names": []})
@click.option("--reference", is_flag=True, help="Run the demonstration on the course's reference.")
@language_option("The track, with --reference.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=RUN_TIMEOUT, show_default=True,
              help="Seconds the demonstration may take before it is stopped.")
@click.option("--traceback", "whole_errors", is_flag=True,
              help="Show a failure of your code whole (the traceback, the panic's goroutines), not in one line.")
@click.option("-h", "--help", "show_help", is_flag=True, help="Show this message and the chapter's demonstration options.")
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="[CHAPTER] [DEMO OPTIONS]...")
@click.pass_context
def run(ctx: click.Context, reference: bool, language: str, timeout: float, whole_errors: bool, show_help: bool,
        args: tuple[str, ...]) -> None:
    """Run the chapter's offline demonstration on your code.

    The demonstration's own options (`course run ag02 --scenario retry`) are listed by
    `course run CHAPTER --help`; any other is refused.
    """
    from course import content, languages, services
    from course.languages.protocol import Demonstration

    # The chapter is the first word that is not an option; with none, the current chapter. Any other
    # word belongs to the demonstration (click puts unknown options among the arguments, in order).
    chapter, args = (CHAPTER.convert(args[0], None, None), args[1:]) if args and not args[0].startswith("-") else (None, args)
    if show_help or "--help" in args or "-h" in args:
        echo(ctx.get_help())
        _options_help(chapter)
        return
    target = code_under_test(chapter, reference, language)
    track = target.track
    if not track.run:
        raise UsageError(f"chapter {target.chapter.id} has no demonstration to run")
    checked(target.chapter, list(args))
    demonstration = languages.capability(languages.get(track.language), Demonstration)
    if demonstration is None:
        raise UsageError(f"the {track.language} track cannot run demonstrations yet")
    with services.environment(track.for_demonstration) as env:
        code = demonstration.run_script(track, target.code_root, content.require(track.tests) / track.run,
                                        list(args), env, timeout=timeout, whole_errors=whole_errors)
    sys.exit(code if code >= 0 else 128 - code)  # killed by a signal: the shell's convention


def checked(chapter, args: list[str]) -> None:  # noqa: ANN001
    """Refuse what the chapter's demonstration does not take, before it runs: an unknown option, a
    value outside its choices, a missing value, a word that is no option. The message lists them."""
    options = {option.name: option for option in chapter.demonstration}
    words = iter(args)
    for word in words:
        name, has_value, value = word.removeprefix("--").partition("=")
        option = options.get(name) if word.startswith("--") else None
        if option is None:
            what = f"option {word!r}" if word.startswith("-") else f"argument {word!r}"
            raise UsageError(f"the demonstration of {chapter.id} takes no {what}; {_takes(chapter)}")
        if not option.value:
            if has_value:
                raise UsageError(f"--{name} takes no value; {_takes(chapter)}")
            continue
        if not has_value:
            value = next(words, None)
            if value is None or value.startswith("--"):
                raise UsageError(f"--{name} needs a {option.value}; {_takes(chapter)}")
        if option.choices and value not in option.choices:
            raise UsageError(f"--{name} {value!r} is not one of {', '.join(option.choices)}")


def _takes(chapter) -> str:  # noqa: ANN001
    if not chapter.demonstration:
        return f"it takes none (`course run {chapter.id} --help`)"
    shown = [option.usage + (f" ({', '.join(option.choices)})" if option.choices else "")
             for option in chapter.demonstration]
    return f"it takes {'; '.join(shown)} (`course run {chapter.id} --help`)"


def _options_help(given) -> None:  # noqa: ANN001
    """The options of the chapter's demonstration (the one named, else the current one, if any)."""
    from course.commands.shared import any_chapter
    from course.errors import CourseError

    try:
        chapter = any_chapter(given)
    except CourseError:  # no chapter named, outside a learner's repository: only the command's own help
        return
    echo("")
    if not chapter.demonstration:
        echo(f"The demonstration of {chapter.id} takes no options of its own.")
        return
    echo(f"The demonstration of {chapter.id} takes:")
    width = max(len(option.usage) for option in chapter.demonstration)
    for option in chapter.demonstration:
        echo(f"  {option.usage.ljust(width)}  {option.help}")
        if option.choices:
            echo(f"  {''.ljust(width)}  one of: {', '.join(option.choices)}")
