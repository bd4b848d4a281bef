"""`course check`: run a chapter's catalog against some code and fold the cases into a verdict."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from course import languages
from course.chapters import Chapter, Track
from course.check.results import CaseResult, CheckResult, EntryResult
from course.errors import UsageError

DEFAULT_TIMEOUT = 5.0


def run_check(
    chapter: Chapter,
    track: Track,
    code_root: Path,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    select: str = "",
    on_entry: Callable[[EntryResult], None] | None = None,
    scratch: Path | None = None,
    shuffle: int | None = None,
    coverage: bool = False,
) -> CheckResult:
    """Run the catalog on the code in code_root. `on_entry` sees each entry as soon as it is complete,
    in catalog order (cases arrive in catalog order, so an entry is complete when the next begins).
    `shuffle`, a seed, runs the cases in an order drawn from it instead (no `on_entry` then);
    `coverage` measures what of the code the catalog executed."""
    if shuffle is not None and on_entry is not None:
        raise ValueError("a shuffled run reports its entries only at the end")
    adapter = languages.get(track.language)
    entries = {e.name: EntryResult(entry=e, test_name=adapter.test_name(e.name)) for e in chapter.catalog}
    pending: list[EntryResult] = []

    def on_case(case: CaseResult) -> None:
        entry = entries[case.entry]
        if pending and pending[-1] is not entry:
            if on_entry:
                on_entry(pending[-1])
        if not pending or pending[-1] is not entry:
            pending.append(entry)
        entry.cases.append(case)

    started = time.perf_counter()
    outcome = adapter.run_catalog(
        track, code_root, [e.name for e in chapter.catalog], timeout=timeout, select=select, on_case=on_case,
        scratch=scratch, shuffle=shuffle, coverage=coverage,
    )
    problem = outcome.problem
    if outcome.bad_selection:
        raise UsageError(f"-k {select!r} is not a valid test selection: {problem}")
    if select and not any(e.cases for e in entries.values()) and not problem:
        names = ", ".join(e.name for e in chapter.catalog)
        raise UsageError(f"no catalog test matches -k {select!r}; the tests are: {names}")
    if pending and on_entry and not problem:
        on_entry(pending[-1])
    if select:
        ran = [e for e in entries.values() if e.cases]
    else:
        ran = list(entries.values())
        for entry in ran:
            entry.missing = not entry.cases and not problem
    return CheckResult(entries=ran, problem=problem, duration=time.perf_counter() - started,
                       coverage=outcome.coverage)
