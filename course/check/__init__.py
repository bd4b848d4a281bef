"""`course check`: run a chapter's catalog against some code and fold the cases into a verdict."""

from __future__ import annotations

import time
from collections.abc import Collection
from pathlib import Path
from typing import Callable

from course import languages
from course.chapters import Chapter, Track
from course.check.results import FAIL_STATUSES, CaseResult, CheckResult, EntryResult
from course.errors import UsageError

DEFAULT_TIMEOUT = 5.0
# The whole check, however many tests time out: a learner waits at most this long for a verdict.
DEFAULT_BUDGET = 120.0


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
    only: Collection[str] | None = None,
    first: Collection[str] = (),
    stop_first: bool = False,
    on_entry: Callable[[EntryResult], None] | None = None,
    scratch: Path | None = None,
    shuffle: int | None = None,
    coverage: bool = False,
) -> CheckResult:
    """Run the catalog on the code in code_root. `only` limits the run to these catalog names,
    `first` runs these before the others (failed-first), `select` chooses cases (the adapter's own
    syntax), `stop_first` ends the run at the first failing case. The result lists entries in
    catalog order, whatever order they ran in; `on_entry` sees each entry as soon as it is complete
    (an entry's cases arrive together, so it is complete when the next begins).
    `shuffle`, a seed, runs the cases in an order drawn from it instead (no `on_entry` then);
    `coverage` measures what of the code the catalog executed."""
    if shuffle is not None and on_entry is not None:
        raise ValueError("a shuffled run reports its entries only at the end")
    adapter = languages.get(track.language)
    chosen = [e for e in chapter.catalog if only is None or e.name in only]
    entries = {e.name: EntryResult(entry=e, test_name=adapter.test_name(e.name)) for e in chosen}
    order = [n for n in entries if n in first] + [n for n in entries if n not in first]
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
    stopped = False
    try:
        outcome = adapter.run_catalog(track, code_root, order, timeout=timeout, select=select, on_case=on_case,
                                      scratch=scratch, budget=budget, shuffle=shuffle, coverage=coverage)
    except _StopFirst:
        outcome, stopped = None, True
    problem = outcome.problem if outcome else ""
    if outcome and outcome.bad_selection:
        raise UsageError(f"--case {select!r} is not a valid case selection: {problem}")
    if select and not any(e.cases for e in entries.values()) and not problem:
        raise UsageError(f"no case of the chosen tests matches --case {select!r}")
    if pending and on_entry and not problem:
        on_entry(pending[-1])
    ran = list(entries.values())
    if select or stopped or (outcome and outcome.out_of_time):
        not_run = [e for e in ran if not e.cases]
        ran = [e for e in ran if e.cases]
    else:
        not_run = []
        for entry in ran:
            entry.missing = not entry.cases and not problem
    return CheckResult(entries=ran, problem=problem, duration=time.perf_counter() - started,
                       not_run=[e.test_name for e in not_run] if not select else [],
                       stopped_first=stopped, coverage=outcome.coverage if outcome else None)
