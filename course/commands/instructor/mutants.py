"""`course mutants`: the documented pitfall mutants against the catalog, or a general tool's broad score."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from course.commands.shared import CHAPTER, Progress, echo, language_option, writable
from course.errors import UsageError


@click.command()
@click.argument("chapter", metavar="CHAPTER", type=CHAPTER)
@click.option("--only", default="", metavar="IDS", help="Run only these mutants, e.g. --only s05,s06.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="Write the results as JSON.")
@click.option("--broad", is_flag=True,
              help="Run the track's general mutation tool instead (mutmut for Python, gremlins for Go: instructors' extras).")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Mutants run at once [default: twice the cores].")
@language_option("The track whose mutants run.")
def mutants(chapter: Any, only: str, json_path: Path | None, broad: bool, jobs: int | None, language: str) -> None:
    """Prove the catalog kills each documented pitfall mutant (or, with --broad, score it with a general tool)."""
    import json

    writable(json_path)
    track = chapter.track(language)
    if broad and (only or jobs):
        raise UsageError("--only and --jobs choose documented mutants; --broad runs its tool's own")
    if broad:
        from course import languages, services
        from course.languages.protocol import BroadMutation

        tool = languages.capability(languages.get(language), BroadMutation)
        if tool is None:
            raise UsageError(f"the {language} track has no broad mutation tool")
        with services.environment(track) as env:
            report = tool.run(chapter, track, env, echo=lambda m: echo(m, err=True))
        report.show(echo)
        if json_path:
            json_path.write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
        sys.exit(0)

    from course.mutation.documented import STALE, run_mutants

    selected = list(track.mutants)
    if only:
        wanted = [w.strip() for w in only.split(",") if w.strip()]
        if not wanted:
            raise UsageError("--only takes mutant ids, e.g. --only s05,s06")
        unknown = sorted(set(wanted) - {m.id for m in selected})
        if unknown:
            raise UsageError(f"chapter {chapter.id} has no mutant {', '.join(unknown)}; "
                             f"its mutants are {', '.join(m.id for m in selected)}")
        selected = [m for m in selected if m.id in wanted]
    if not selected:
        raise UsageError(f"chapter {chapter.id} documents no {language} mutants")

    echo(f"{chapter.id}: {len(selected)} documented mutants, each on a temporary copy of the reference")
    progress = Progress(len(selected))
    try:
        results = run_mutants(chapter, track, selected, jobs=jobs, on_result=progress.step)
    finally:
        progress.close()
    for r in results:
        mark = click.style("ok ", fg="green") if r.documented else click.style("BAD", fg="red", bold=True)
        echo(f"  {mark} {r.mutant.id:<5} {r.status:<8} pitfall {r.mutant.pitfall if r.mutant.pitfall is not None else '-':<2} {r.mutant.description}")
        if r.failing:
            echo(click.style(f"            failed: {', '.join(r.failing)}", dim=True))
        if not r.documented:
            echo(f"            documented as caught by: {', '.join(r.mutant.caught_by)}")
        if r.detail:
            echo(f"            {r.detail.splitlines()[0]}")
    good = sum(r.documented for r in results)
    stale = sum(r.status == STALE for r in results)
    echo(f"\n{good} of {len(results)} mutants killed as documented" + (f", {stale} stale" if stale else ""))
    echo(f"{good} passed, {len(results) - good} failed")
    if json_path:
        json_path.write_text(json.dumps({"chapter": chapter.id, "language": language,
                                         "mutants": [r.as_dict() for r in results]}, indent=2) + "\n",
                             encoding="utf-8")
    sys.exit(0 if good == len(results) else 1)
