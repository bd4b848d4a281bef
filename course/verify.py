"""`course verify`: prove a chapter sound, for every chapter and language.

1. The manifest is consistent: every file, test and mutant it names exists, ids are unique, and
   each catalog entry names where the chapter states its rule (a heading, a documented symbol).
   Every catalog test has its hint levels; no hint repeats a line or a run of tokens of the code the
   learner writes (course.overlap), and every section a hint names is a section of the track's text.
   What the track's text states that the course knows (counts, fixture sizes, pitfall numbers) is true.
2. The reference passes the whole catalog.
3. Every catalog test fails on the freshly rendered stubs (a test that passes on a stub checks nothing),
   and the stubs load: what `course start` writes is in step with the reference's learner regions.
4. The reference passes again with the cases in a shuffled order (a test that passes only because an
   earlier one left state behind is caught), seeded and the seed printed so the order can be repeated.
5. That run measures coverage: every line and branch of the reference is run by its own catalog,
   except lines marked as excluded with the reason written beside them (a track still short of
   that records its floor in the manifest, `coverage_floor`; the lines no test runs are listed).
6. Every documented mutant is killed by at least one of the tests the manifest says catch it.
7. The mutants' kill signatures recorded in the chapter's signatures.json (for `course check` hints)
   were recorded against this very catalog, these mutants and this reference: a stale recording fails
   with the command that renews it. Verify reads the content tree and never writes it, except with
   `record=True` (`course verify --record`), which records the signatures anew from two runs of the
   mutants (course.signatures keeps what both show).
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from course import languages
from course import signatures as recorded
from course.chapters import HINT_LEVELS, Chapter, Track
from course.check import run_check
from course.check.coverage import coverage_figure, coverage_gaps, coverage_percent
from course.results import PASS
from course.errors import CourseError
from course.languages.protocol import Demonstration, LearnerTests


@dataclass
class Finding:
    chapter: str
    language: str
    step: str  # manifest | hints | text | reference | stubs | shuffled | coverage | mutants | signatures
    ok: bool
    detail: str = ""


@dataclass
class ChapterVerdict:
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.findings)


def _duplicates(values: list[str]) -> list[str]:
    seen: set[str] = set()
    return sorted({v for v in values if v in seen or seen.add(v)})


def manifest_problems(chapter: Chapter, track: Track) -> list[str]:
    problems = []
    names = [e.name for e in chapter.catalog]
    for dup in _duplicates(names):
        problems.append(f"catalog name {dup!r} appears twice")
    for name in track.given:
        if name not in track.files:
            problems.append(f"given file {name} is not one of the track's files")
    for name in track.files:
        folders = [("reference", track.reference)] + ([] if name in track.given else [("starter", track.starter)])
        for kind, folder in folders:
            if not (folder / name).is_file():
                problems.append(f"{kind} file missing: {folder / name}")
    adapter = languages.get(track.language)
    defined = adapter.test_sources(track)
    for entry in chapter.catalog:
        if adapter.test_name(entry.name) not in defined:
            problems.append(f"catalog entry {entry.name!r}: no {adapter.test_name(entry.name)} in {track.tests}")
    catalogued = {adapter.test_name(n) for n in names}
    for test in sorted(set(defined) - catalogued):
        problems.append(f"{test} in {track.tests} is not in the catalog (course check would never run it)")
    problems.extend(adapter.catalog_problems(track))
    if not any(p.startswith(("starter file missing", "reference file missing")) for p in problems):
        from course.scaffold import starter_problems

        problems.extend(starter_problems(chapter, track))  # what `start` would write, out of step
        problems.extend(stated_in_problems(chapter, track))  # which renders the starter too
    from course.services import SERVICES

    for service in (*track.services, *track.run_services):
        if service not in SERVICES:
            problems.append(f"service {service!r} is unknown; the services are: {', '.join(SERVICES)}")
    if track.run and not (track.tests / track.run).is_file():
        problems.append(f"run script missing: {track.tests / track.run}")
    if track.run and languages.capability(adapter, Demonstration) is None:
        problems.append(f"the track names a demonstration (run: {track.run}), which the {track.language} adapter cannot run")
    if track.selftest and languages.capability(adapter, LearnerTests) is None:
        problems.append(f"the track names a selftest example ({track.selftest}), but the {track.language} adapter "
                        "offers no selftest")
    for dup in _duplicates([m.id for m in track.mutants]):
        problems.append(f"mutant id {dup!r} appears twice")
    pitfalls = {p.id for p in chapter.pitfalls}
    for mutant in track.mutants:
        if mutant.pitfall is not None and mutant.pitfall not in pitfalls:
            problems.append(f"mutant {mutant.id}: pitfall {mutant.pitfall} is not among the chapter's pitfalls")
        for test in mutant.caught_by:
            if test not in names:
                problems.append(f"mutant {mutant.id}: caught_by names {test!r}, which is not in the catalog")
        if mutant.file not in track.files:
            problems.append(f"mutant {mutant.id}: file {mutant.file} is not one of the track's files")
    if not any(p.startswith("reference file missing") for p in problems):
        problems.extend(place_problems(chapter, track))
    return problems


def place_problems(chapter: Chapter, track: Track) -> list[str]:
    """The pitfalls' places (`places:`): each names a pitfall of the chapter and functions the
    reference defines, one each; and every documented mutant changes a function among its pitfall's
    places (or one they hold), so the hints' place and pitfall can agree."""
    from course.pitfall_hints import contains, mutant_places, outline, reference_texts

    functions = outline(track)
    if functions is None:
        return [f"the track lists places, but the {track.language} adapter offers no outline of a file's functions"] \
            if track.places else []
    texts = reference_texts(track)
    defined: dict[str, list[str]] = {}
    for name, text in texts.items():
        for function in functions(text):
            defined.setdefault(function.name, []).append(name)
    pitfalls = {p.id for p in chapter.pitfalls}
    problems = []
    for pitfall, names in track.places.items():
        if pitfall not in pitfalls:
            problems.append(f"places: pitfall {pitfall} is not among the chapter's pitfalls")
        for name in names:
            holders = sorted({f for n, files in defined.items() if contains(name, n) for f in files})
            if not holders:
                problems.append(f"places: pitfall {pitfall} names {name!r}, which no file of the reference defines")
            elif len(holders) > 1:
                problems.append(f"places: pitfall {pitfall} names {name!r}, which {' and '.join(holders)} both define")
    changes = mutant_places(track, texts)
    if not track.places and any(changes.values()):
        wanted: dict[int, list[str]] = {}
        for mutant in (m for m in track.mutants if m.pitfall is not None):
            for place in changes.get(mutant.id, ()):
                names = wanted.setdefault(mutant.pitfall, [])
                names.extend([place.partition("::")[2]] if place.partition("::")[2] not in names else [])
        listed = "; ".join(f"{p}: [{', '.join(names)}]" for p, names in sorted(wanted.items()))
        return problems + [f"the track lists no places, the functions each pitfall's text is about (the pitfall hints "
                           f"need them); its mutants change at least these: {listed}"]
    for mutant, changed in changes.items():
        pitfall = next(m.pitfall for m in track.mutants if m.id == mutant)
        if pitfall is None:
            continue  # a bug of no pitfall may be anywhere
        owned = track.places.get(pitfall, ())
        for place in changed:
            function = place.partition("::")[2]
            if not any(contains(name, function) for name in owned):
                problems.append(f"mutant {mutant} changes {function}, which is not among pitfall {pitfall}'s places"
                                + (f" ({', '.join(owned)})" if owned else " (it lists none)"))
    return problems


def hint_problems(chapter: Chapter, track: Track | None = None) -> list[str]:
    """Every catalog test needs its hint levels, in the track's own words when it has them:
    `course hint` must never come up empty."""
    return [f"{entry.name!r} has {len(hints)} hint levels{f' in the {track.language} track' if track and entry.name in track.hints else ''}, "
            f"`course hint` needs {HINT_LEVELS}"
            for entry in chapter.catalog
            for hints in [track.hints_for(entry) if track else entry.hints] if len(hints) != HINT_LEVELS]


def solution_lines(track: Track) -> list[tuple[str, str]]:
    """The code the learner writes, as (file:line, line) pairs: the reference's learner regions (the
    whole file where a reference marks none, a chapter written before regions), never a given file,
    without the lines the track's language calls commentary (comments, docstrings: what `course diff`
    leaves out). Everything else of the reference is in the stub already, so a hint may repeat it."""
    from course import regions
    from course.languages.protocol import CommentBlindDiff

    blind = languages.capability(languages.get(track.language), CommentBlindDiff)
    out: list[tuple[str, str]] = []
    for name in track.files:
        path = track.reference / name
        if name in track.given or not path.is_file():
            continue
        pieces = regions.split(path.read_text(encoding="utf-8"), name)
        marked = any(isinstance(piece, regions.Region) for piece in pieces)
        quiet = blind.commentary_lines("".join(p if isinstance(p, str) else p.body for p in pieces)) if blind else set()
        number = 0
        for piece in pieces:
            learner = isinstance(piece, regions.Region) or not marked
            for line in (piece.body if isinstance(piece, regions.Region) else piece).splitlines():
                number += 1
                if learner and number not in quiet:
                    out.append((f"{name}:{number}", line))
    return out


def hint_leak_problems(chapter: Chapter, track: Track) -> list[str]:
    """A hint points and never hands over: no hint of any level, as the track shows it, repeats a
    line or a run of tokens of the code the learner writes (course.overlap says how much is a run)."""
    from course.overlap import Code

    code = Code(solution_lines(track))
    adapter = languages.get(track.language)
    problems = []
    for entry in chapter.catalog:
        for level, hint in enumerate(track.hints_for(entry), 1):
            shared = code.shared(hint)
            if shared is not None:
                problems.append(f"{adapter.test_name(entry.name)} hint {level} repeats the reference's code "
                                f"({shared.where}): {shared.prose!r}; a hint gives the shape, never the code")
    return problems


# How hints name a section: "Section 2.5", "sections 2.6 and 7", "section 3's table"; or a heading's
# title in quotes, 'Running the loop' (a quoted phrase in sentence case, of words alone: not a quoted
# value such as 'HTTP 503' or 'Bearer a, Basic b'); a title of one word ('Bookkeeping') where it
# opens the hint or follows the word section (not 'Hello' in "four deltas for 'Hello'").
_NUMBERED = re.compile(r"\b[Ss]ections? (\d+(?:\.\d+)*)((?:(?:,| and|, and| or) \d+(?:\.\d+)*)*)")
_QUOTED = re.compile(r"""(?<![A-Za-z0-9])(?:'([^'\n]+)'|"([^"\n]+)"|‘([^’\n]+)’|“([^”\n]+)”)(?![A-Za-z0-9])""")
_TITLE_WORD = re.compile(r"[a-z][a-z-]*|[A-Z]{2,}|[A-Z][a-z-]*")


def section_references(text: str) -> list[str]:
    """The sections a hint refers to, as it names them: numbers ('2.5') and quoted titles."""
    found = []
    for match in _NUMBERED.finditer(text):
        found.append(match.group(1))
        found.extend(re.findall(r"\d+(?:\.\d+)*", match.group(2)))
    for match in _QUOTED.finditer(text):
        phrase = next(g for g in match.groups() if g is not None)
        words = re.split(r",? ", phrase)
        alone = (match.start() == 0 and text[match.end():match.end() + 1] in (":", ",")
                 or text[:match.start()].lower().endswith(("section ", "sections ")))
        if ((len(words) >= 2 or alone) and phrase[0].isupper() and all(_TITLE_WORD.fullmatch(w) for w in words)
                and not any(w[0].isupper() and not w.isupper() for w in words[1:])):
            found.append(phrase)
    return found


def section_keys(text: str) -> set[str]:
    """What names a section of a text: its number, its title, and its whole heading."""
    keys = set()
    for heading in headings(text):
        number = re.match(r"(\d+(?:\.\d+)*)\.?\s+(.*)", heading)
        keys |= {heading, *(number.groups() if number else ())}
    return keys


def _text_name(chapter: Chapter, track: Track) -> str:
    """The files a track's learner reads the text from, as a problem names them."""
    own = f"text.{track.language}.md"
    return "text.md" + (f" with {own}" if (chapter.folder / own).is_file() else "")


def section_problems(chapter: Chapter, track: Track) -> list[str]:
    """Every section a hint names is a section of the text the track's learner reads (text.md with
    the track's own sections in place: `course show CH --language LANG`)."""
    text_name = _text_name(chapter, track)
    keys = section_keys(chapter.text(track.language)) if chapter.text_path.is_file() else set()
    adapter = languages.get(track.language)
    problems = []
    for entry in chapter.catalog:
        for level, hint in enumerate(track.hints_for(entry), 1):
            for name in section_references(hint):
                if name not in keys:
                    problems.append(f"{adapter.test_name(entry.name)} hint {level} names section {name!r}, which the "
                                    f"{track.language} track's text ({text_name}) "
                                    "does not have")
    return problems


def fact_problems(chapter: Chapter, track: Track) -> list[str]:
    """What the track's text states that the course knows is true: every placeholder (course.chapters.
    FACT: the number of tests, of pitfalls, a fixture's size and reads) can be filled; a count of
    tests written out in digits ("the 36 tests") is the track's; and its Pitfalls section numbers
    pitfalls of the manifest, each once, among them every pitfall the track's mutants document."""
    from course.chapters import FACT, fact, section_of

    if not chapter.text_path.is_file():
        return []
    where = f"the {track.language} track's text ({_text_name(chapter, track)})"
    text = chapter.text(track.language)
    problems = []
    for match in FACT.finditer(text):
        try:
            fact(chapter, track.language, match.group(1), match.group(2).split())
        except ValueError as exc:
            problems.append(f"{where}: {match.group(0)} cannot be filled: {exc}")
    tests = fact(chapter, track.language, "tests", [])
    for match in re.finditer(r"\b(\d+) (?:catalog )?tests\b", text):
        if int(match.group(1)) != tests:
            problems.append(f"{where} says {match.group(0)!r}, but the track has {tests} tests (write {{{{tests}}}})")
    pitfalls = section_of(text, "Pitfalls")
    if pitfalls is not None:
        numbers = [int(n) for n in re.findall(r"(?m)^(?:(\d+)\. |\| *(\d+) *\|)", pitfalls) for n in n if n]
        known = {p.id for p in chapter.pitfalls}
        documented = {m.pitfall for m in track.mutants if m.pitfall is not None}
        unknown, twice = sorted(set(numbers) - known), _duplicates([str(n) for n in numbers])
        missing = sorted(documented - set(numbers))
        if unknown or twice or missing:
            problems.append(f"{where}: its Pitfalls section numbers {', '.join(map(str, numbers)) or 'none'}"
                            + (f"; {', '.join(map(str, unknown))} no pitfall of the manifest" if unknown else "")
                            + (f"; {', '.join(twice)} twice" if twice else "")
                            + (f"; not {', '.join(map(str, missing))}, which the track's mutants document" if missing else ""))
    return problems


def default_seed(track: Track) -> int:
    """The shuffled run's seed unless one is given: drawn from the catalog's files, so a run is
    repeatable on the same tree and a changed catalog is tried in a new order."""
    return int(track.catalog_digest()[:8], 16)


def headings(markdown: str) -> set[str]:
    """The text of each heading (ATX style, '## 2.2 Server-sent events'), outside fenced code."""
    found, fence = set(), ""
    for line in markdown.splitlines():
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        heading = re.match(r" {0,3}#{1,6}\s+(.*?)(\s+#+)?\s*$", line)
        if heading:
            found.add(heading.group(1))
    return found


def stated_in_problems(chapter: Chapter, track: Track) -> list[str]:
    """Each catalog entry names where the chapter states the rule it checks, and that place exists:
    a heading of the chapter's text that is also a section of the text the track's learner reads
    (text.md with the track's own sections in place, which keep text.md's numbers and may retitle
    them: "7. Closing a stream in Python" is section 7 of the Go text, however titled there), or a
    documented symbol of a file the learner receives."""
    from course.scaffold import render

    adapter = languages.get(track.language)
    own = chapter.text_path.is_file()
    written = headings(chapter.text_path.read_text(encoding="utf-8")) if own else set()
    read = section_keys(chapter.text(track.language)) if own else set()
    text_name = _text_name(chapter, track)
    other_tracks = {name for t in chapter.tracks.values() if t is not track for name in t.files}
    problems: list[str] = []
    rendered: dict[str, str | None] = {}
    for entry in chapter.catalog:
        test = adapter.test_name(entry.name)
        if not entry.stated_in:
            problems.append(f"{chapter.id} {test}: no stated_in (the section or docstring that states its rule)")
        for kind, where in entry.stated_in:
            number = re.match(r"(\d+(?:\.\d+)*)\.?\s", where)
            if kind == "section" and number and where not in written:
                problems.append(f"{chapter.id} {test}: stated_in section {where!r} is not a heading of {chapter.text_path.name}")
            elif kind == "section" and where not in read and (number is None or number.group(1) not in read):
                problems.append(f"{chapter.id} {test}: stated_in section {where!r} is not a section of the "
                                f"{track.language} track's text ({text_name})")
            if kind != "docstring":
                continue
            path, _, symbol = where.partition("::")
            if path not in track.files:
                if path not in other_tracks:
                    problems.append(f"{chapter.id} {test}: stated_in docstring {where!r}: {path} is not a file of the chapter")
                continue
            if path not in rendered:
                try:
                    rendered[path] = render(chapter, track, path)
                except CourseError:
                    rendered[path] = None  # the starter's own problem, reported beside this one
            if rendered[path] is not None and adapter.has_docstring(rendered[path], symbol) is False:
                problems.append(f"{chapter.id} {test}: stated_in docstring {where!r}: "
                                f"{symbol or 'the module'} has no docstring in the starter's {path}")
    return problems


def verify_track(chapter: Chapter, track: Track, *, say: Callable[[Finding], None],
                 seed: int | None = None, record: bool = False) -> ChapterVerdict:
    from course.errors import BaselineFailed
    from course.mutation.documented import run_mutants
    from course.scaffold import render_all

    unknown = [n for n in track.catalog if n not in {e.name for e in chapter.catalog}]
    chapter = chapter.for_track(track)
    verdict = ChapterVerdict()

    def note(step: str, ok: bool, detail: str = "") -> None:
        finding = Finding(chapter.id, track.language, step, ok, detail)
        verdict.findings.append(finding)
        say(finding)

    problems = manifest_problems(chapter, track) + [
        f"the {track.language} track's catalog names {n!r}, which is not in the catalog" for n in unknown]
    note("manifest", not problems, "\n".join(problems) or
         f"{len(chapter.catalog)} tests, {len(track.files)} files, {len(track.mutants)} mutants")
    if problems:
        return verdict
    missing = hint_problems(chapter, track)
    wrong = hint_leak_problems(chapter, track) + section_problems(chapter, track)
    untrue = fact_problems(chapter, track)
    note("text", not untrue, "\n".join(untrue) or "every count, size and pitfall number it states is the course's")
    note("hints", not missing and not wrong, "\n".join(["; ".join(missing)] * bool(missing) + wrong) or
         f"{HINT_LEVELS} hint levels for every test; none repeats the reference's code, every section named exists")

    reference = run_check(chapter, track, track.reference)
    broken = [f"{c.entry}{f'[{c.case}]' if c.case else ''} ({c.status}: {c.message.splitlines()[0] if c.message else '-'})"
              for e in reference.entries for c in e.failures][:3]
    note("reference", reference.ok, f"{reference.passed} of {reference.total} tests pass on the reference"
         + (f": {reference.problem}" if reference.problem else "") + (f"; failed: {'; '.join(broken)}" if broken else ""))

    with tempfile.TemporaryDirectory(prefix=f"course-{chapter.id}-stubs-") as tmp:
        render_all(chapter, track, Path(tmp))
        stubs = run_check(chapter, track, Path(tmp))
    passing = [e.test_name for e in stubs.entries if e.status == PASS]
    note("stubs", not passing and not stubs.problem,
         f"{stubs.total - len(passing)} of {stubs.total} tests fail on the stubs"
         + (f"; these pass on a stub, so they check nothing: {', '.join(passing)}" if passing else "")
         + (f"; but the stubs do not even load, so every test fails the same way: {stubs.problem}"
            if stubs.problem else ""))

    if not reference.ok:
        return verdict
    seed = default_seed(track) if seed is None else seed
    shuffled = run_check(chapter, track, track.reference, shuffle=seed, coverage=True)
    again = f"seed {seed}; `course verify {chapter.id} --seed {seed}` repeats this order"
    note("shuffled", shuffled.ok, f"{shuffled.passed} of {shuffled.total} tests pass in a shuffled order ({again})"
         + (f"; these fail only in this order: {', '.join(sorted(shuffled.failing))}" if shuffled.failing else "")
         + (f": {shuffled.problem}" if shuffled.problem else ""))
    measured = shuffled.coverage or {}
    unexplained = languages.get(track.language).exclusion_problems(track)
    short = bool(measured) and coverage_percent(measured) < track.coverage_floor
    floor = f" (below this track's floor of {track.coverage_floor:g}%)" if short else \
        f" (this track's floor: {track.coverage_floor:g}%; every line and branch is the goal)" \
        if track.coverage_floor < 100 else ""
    note("coverage", bool(measured) and not short and not unexplained,
         "branch coverage of the reference by its catalog: " + coverage_figure(measured) + floor
         + "".join(f"\n{gap}" for gap in coverage_gaps(measured) + unexplained))

    if not track.mutants:
        return verdict
    try:
        results = run_mutants(chapter, track, list(track.mutants), reference_result=reference)
    except BaselineFailed as exc:
        note("mutants", False, exc.message)
        return verdict
    bad = [r for r in results if not r.documented]
    detail = f"{len(results) - len(bad)} of {len(results)} mutants killed as documented"
    if bad:
        detail += "; " + "; ".join(f"{r.mutant.id} {r.status}"
                                   + (f" (failed: {', '.join(r.failing)}; documented: {', '.join(r.mutant.caught_by)})"
                                      if r.failing else "") + (f": {r.detail}" if r.detail else "") for r in bad)
    note("mutants", not bad, detail)
    if bad:
        return verdict
    if record:
        note("signatures", *_record(chapter, track, results))
    else:
        stale = recorded.staleness(chapter, track)
        note("signatures", not stale, stale or f"kill signatures recorded for this catalog ({len(results)} mutants)")
    return verdict


def _record(chapter: Chapter, track: Track, first: list) -> tuple[bool, str]:
    """Record the signatures from `first` and one more run of the mutants: what both show."""
    from course.mutation.documented import run_mutants

    from course.pitfall_hints import mutant_places

    second = {r.mutant.id: r.signature for r in run_mutants(chapter, track, list(track.mutants))}
    signatures = {r.mutant.id: recorded.stable([r.signature, second.get(r.mutant.id, r.signature)]) for r in first}
    try:
        changed = recorded.record(chapter, track, signatures, mutant_places(track))
    except OSError as exc:
        return False, f"cannot record in {chapter.signatures_path}: {exc.strerror}"
    return True, (f"recorded anew in chapters/{chapter.id}/{chapter.signatures_path.name}" if changed
                  else "recorded signatures unchanged")
