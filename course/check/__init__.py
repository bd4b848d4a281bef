"""`course check`: run a chapter's catalog against some code and fold the cases into a verdict."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

from course.chapters import Chapter, Track
from course.check.results import CaseResult, CheckResult, EntryResult
from course.errors import BadSelection

DEFAULT_TIMEOUT = 5.0


def default_build_dir() -> Path:
    """Where build products go when the caller names no folder: the user's cache, kept between runs."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "course"


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
    """Run the catalog (the tests `select` matches, with -k's syntax) on the code in code_root.
    `on_entry` sees each entry as soon as it is complete, in catalog order (cases arrive in catalog
    order, so an entry is complete when the next begins). `scratch` is a folder for build products
    (removed by the caller); without it they go to the user's cache. `shuffle`, a seed, runs the
    cases in an order drawn from it instead (no `on_entry` then); `coverage` measures what of the
    code the catalog executed."""
    # here, not at the top: the runner boundary imports course.check.results, which imports this package
    from course import languages, runner, selection
    from course.languages.protocol import RunRequest

    if shuffle is not None and on_entry is not None:
        raise ValueError("a shuffled run reports its entries only at the end")
    adapter = languages.get(track.language)
    entries = {e.name: EntryResult(entry=e, test_name=adapter.test_name(e.name)) for e in chapter.catalog}
    chosen = selection.select(select, {name: (name, e.test_name) for name, e in entries.items()})
    if not chosen:
        names = ", ".join(e.name for e in chapter.catalog)
        raise BadSelection(f"no catalog test matches -k {select!r}; the tests are: {names}")
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
    request = RunRequest(track=track, code_root=code_root, tests=tuple(chosen), timeout=timeout,
                         build_dir=scratch or default_build_dir(), shuffle=shuffle, coverage=coverage)
    outcome = runner.run(adapter, request, on_case=on_case)
    problem = outcome.problem
    if pending and on_entry and not problem:
        on_entry(pending[-1])
    ran = [entries[name] for name in chosen]
    for entry in ran:
        entry.missing = not entry.cases and not problem
    return CheckResult(entries=ran, problem=problem, duration=time.perf_counter() - started,
                       coverage=outcome.coverage)
