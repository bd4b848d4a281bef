"""The check engine: run a chapter's catalog on some code through the runner and fold the cases into
a verdict. Every command that judges code goes through run_check: check, watch, verify, mutants,
selftest and (in a subprocess per repository) grade."""

from __future__ import annotations

import time
from collections.abc import Collection
from pathlib import Path
from typing import Callable

from course import cache, content, languages, runner, selection
from course.chapters import Chapter, Track
from course.errors import BadSelection
from course.languages.protocol import RunRequest
from course.mutant import Mutant
from course.results import FAIL_STATUSES, CaseResult, CheckResult, EntryResult

DEFAULT_TIMEOUT = 5.0
# The whole check, however many tests time out: a learner waits at most this long for a verdict.
DEFAULT_BUDGET = 120.0


def default_build_dir() -> Path:
    """Where build products go when the caller names no folder: the user's cache, kept between runs."""
    return cache.folder()


class _StopFirst(Exception):
    """Raised from the case callback to end the run at the first failure (-x)."""


def run_check(
    chapter: Chapter,
    track: Track,
    code_root: Path,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    budget: float | None = DEFAULT_BUDGET,
    select: str = "",
    cases: str = "",
    only: Collection[str] | None = None,
    first: Collection[str] = (),
    stop_first: bool = False,
    on_entry: Callable[[EntryResult], None] | None = None,
    scratch: Path | None = None,
    shuffle: int | None = None,
    coverage: bool = False,
    origin: Path | None = None,
    mutant: Mutant | None = None,
    workers: int = 1,
) -> CheckResult:
    """Run the catalog (the tests `select` matches, with -k's syntax, and among them those in `only`)
    on the code in code_root. `cases` chooses cases by their ids, with the same syntax; `first` runs
    these tests before the others (failed-first); `stop_first` ends the run at the first failing
    case; `budget` bounds the whole run in seconds. Entries come back in catalog order whatever
    order they ran in; `on_entry` sees each as soon as it is complete (an entry's cases arrive
    together, so it is complete when the next begins). `scratch` is a folder for build products
    (removed by the caller); without it they go to the user's cache. `shuffle`, a seed, runs the
    cases in an order drawn from it instead (no `on_entry` then); `coverage` measures what of the
    code the catalog executed. `origin`: code_root is a changed copy of that folder (RunRequest.origin);
    `mutant`: the documented mutant that copy holds (RunRequest.mutant).
    `workers`: how many test processes may share the run (where the language splits runs)."""
    chapter = chapter.for_track(track)  # the entries this track runs
    if track.tests_at is None:
        content.require(track.tests)  # an install without this track's catalog: say so, fail no test

    if shuffle is not None and on_entry is not None:
        raise ValueError("a shuffled run reports its entries only at the end")
    adapter = languages.get(track.language)
    languages.settle_early(track.language)
    entries = {e.name: EntryResult(entry=e, test_name=adapter.test_name(e.name)) for e in chapter.catalog}
    chosen = selection.select(select, {name: (name, e.test_name) for name, e in entries.items()})
    if not chosen:
        names = ", ".join(e.name for e in chapter.catalog)
        raise BadSelection(f"no catalog test matches -k {select!r}; the tests are: {names}")
    if only is not None:
        chosen = [name for name in chosen if name in only]
    if cases:
        selection.parse(cases)  # a malformed expression is a usage error before anything runs
    order = [n for n in chosen if n in first] + [n for n in chosen if n not in first]
    pending: list[EntryResult] = []

    def on_case(case: CaseResult) -> None:
        entry = entries[case.entry]
        if pending and pending[-1] is not entry:
            if on_entry:
                on_entry(pending[-1])
        if not pending or pending[-1] is not entry:
            pending.append(entry)
        entry.cases.append(case)
        if stop_first and case.status in FAIL_STATUSES:
            raise _StopFirst

    started = time.perf_counter()
    request = RunRequest(track=track, code_root=code_root, tests=tuple(order), timeout=timeout,
                         build_dir=scratch or default_build_dir(), shuffle=shuffle, coverage=coverage,
                         budget=budget, cases=cases, origin=origin, mutant=mutant, workers=workers)
    stopped = False
    try:
        outcome = runner.run(adapter, request, on_case=on_case)
    except _StopFirst:
        outcome, stopped = None, True
    problem = outcome.problem if outcome else ""
    if cases and not any(e.cases for e in entries.values()) and not problem:
        raise BadSelection(f"no case of the chosen tests matches --case {cases!r}")
    if pending and on_entry and not problem:
        on_entry(pending[-1])
    ran = [entries[name] for name in chosen]
    not_run: list[EntryResult] = []
    if cases or stopped or (outcome and outcome.out_of_time):
        not_run = [e for e in ran if not e.cases]
        ran = [e for e in ran if e.cases]
    else:
        for entry in ran:
            entry.missing = not entry.cases and not problem
    return CheckResult(entries=ran, problem=problem, duration=time.perf_counter() - started,
                       not_run=[e.test_name for e in not_run] if not cases else [], stopped_first=stopped,
                       coverage=outcome.coverage if outcome else None)
