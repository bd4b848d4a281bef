"""Pitfall hints: the `hint:` line of `course check` and `course watch`, which says where a learner's
failures come from (a function of theirs) and, when the evidence is clear, which of the chapter's
pitfalls they match; or says nothing. (Not `course hint`, which reveals a catalog test's written hints.)

The evidence is what the failing run shows (`Evidence`): its signature (each broken case with the
check that failed in it: the test lines down to the failing assert and the exception's type, see
CheckResult.signature), and the learner's functions each failure came through when it was an
exception or a panic in their code. It is read against what `course verify --record` recorded of the
chapter's documented mutants (course.signatures): each mutant's signature and the function its change
is in, found with the language's outline of the reference (`mutant_places`).

Two levels of claim, each made only when the evidence agrees on one answer (or, for the place, on
one of two):

the place      the function whose mutants' signatures the failures resemble (`score`: the Jaccard
               index of the marks, or a little less of the checks, so that other cases of the same
               asserts count; at least PLACE_SIMILARITY, no other function within MARGIN of it, or
               else the class all the close ones are methods of, or else the two functions when
               exactly two are close: "one of these"), provided every failing check is one its
               mutants fail too and not every one is failed by another function's mutants as well
               (unless the failures are one of its mutants' exactly). Failures that are all
               crashes (an exception of the language's own, a panic) inside one function of the
               learner's point there too; where crashes and signatures disagree there is no place. A
               method is named only when every other method of its class (of UNKNOWN_METHOD_LINES
               lines or more) is one a recorded mutant changes: else the recordings cannot tell them
               apart, and the place is the class.
the pitfall    the pitfall whose mutants' signatures the failures' marks match closely (Jaccard index
               at least PITFALL_SIMILARITY, or PITFALL_ALONE_SIMILARITY where no one place is
               claimed; no other pitfall within MARGIN), from a mutant of at least
               PITFALL_MIN_MARKS broken checks (a check or two are where many bugs meet), and whose
               places in the manifest include the place (one of the two) when one is claimed. The
               documented bugs of no pitfall compete as one more answer: where one of them fails as a
               pitfall's mutants do, those failures do not tell the pitfall (they still tell the place).

Ties, weak matches and failures outside every recording give no claim: a wrong hint sends a learner
to the wrong place, silence does not. `tooling/hints/precision.py` measures both levels on bugs
written apart from the catalog. Timeouts read as the same case's other failure, and the cases a
timeout left unrun say nothing (course.signatures.comparable), so a loaded machine gives the same hint.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from course import signatures as recorded
from course.chapters import Chapter, Mutant, Track
from course.results import FAIL_STATUSES, TIMEOUT, CheckResult, mark

if TYPE_CHECKING:
    from course.languages.protocol import Function

# How close a learner's failures must be to a function's mutants' signatures (`score`) for the function
# to be named. Chosen with tooling/hints/precision.py on bugs written apart from the catalogs (six sets,
# 401 kills) and on each documented mutant left out in turn: with the checks below, 0.6 named the
# right function (or its class) for 97% of the places shown.
PLACE_SIMILARITY = 0.6
# The same for a pitfall, on the marks themselves (Jaccard index): a pitfall says more than a place.
# Measured the same way, 0.6 named a wrong pitfall for about one hint in ten, 0.8 for one in twenty.
# (Not 1.0: a mutant's failures can differ from its recording by a case whose outcome depends on
# timing, such as a reset that comes before or after a parse error.)
PITFALL_SIMILARITY = 0.9
# Without a place to agree with, a pitfall is named only when the failures are one of its mutants'
# signatures exactly. On the held-out set E and the documented mutants each left out in turn, the
# pitfalls named without a place were right 5 times of 8: the five exact matches, none of the three
# at 0.91 to 0.93.
PITFALL_ALONE_SIMILARITY = 1.0
# The runner-up (function or pitfall) must score below this share of the best one, or that level is silent.
MARGIN = 0.8
# A failing check matched at another case of its test counts this much of a match at the same case.
CHECK_WEIGHT = 0.9
# A method is named only when no other method of its class of this many lines or more is beyond the
# recordings' knowledge (no documented mutant changes it); else its class is the place.
UNKNOWN_METHOD_LINES = 3
# A pitfall is named from a mutant whose recorded signature has this many broken cases at least: a few
# failing asserts are where many bugs meet, bugs that the writers of the held-out sets often filed
# under no pitfall or another one. Measured on two held-out sets (about 1,300 bugs, each judged with
# the other set's bugs documented): from 3 broken cases a named pitfall was right 94% of the time,
# from 7 98%, from 8 98.4% (123 of 125), and 15 of the 17 chapter-and-track sets at 95% or more.
PITFALL_MIN_MARKS = 8


# --- evidence --------------------------------------------------------------------------------------

Locate = Callable[[str, int], str]  # (file, line) -> the name of the function there, or ""


@dataclass(frozen=True)
class Evidence:
    """What a failing run shows a hint: its signature, and for each broken case whose failure came
    through the learner's code, the functions it came through ('agent/provider/sse.py::Decoder.decode',
    outermost first), by the case's mark."""

    marks: frozenset[str]
    frames: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, result: CheckResult, locate: Locate) -> Evidence:
        frames = {}
        for entry in result.entries:
            for case in entry.cases:
                if case.status in FAIL_STATUSES and case.status != TIMEOUT and case.frames:
                    placed = tuple(p for p in (_placed(frame, locate) for frame in case.frames) if p)
                    if placed:
                        frames[mark(entry.entry.name, case)] = placed
        return cls(result.signature, frames)

    def as_json(self) -> dict:
        return {"marks": sorted(self.marks), "frames": {m: list(f) for m, f in sorted(self.frames.items())}}

    @classmethod
    def from_json(cls, data: Mapping) -> Evidence:
        return cls(frozenset(data.get("marks", ())), {m: tuple(f) for m, f in dict(data.get("frames", {})).items()})


def _placed(frame: str, locate: Locate) -> str:
    path, _, line = frame.rpartition(":")
    name = locate(path, int(line)) if line.isdigit() else ""
    return f"{path}::{name}" if name else ""


def reference_texts(track: Track) -> dict[str, str]:
    """The track's reference files as documented mutants change them: without region markers."""
    from course import regions

    return {name: regions.strip((track.reference / name).read_text(encoding="utf-8"), name)
            for name in track.files if (track.reference / name).is_file()}


def outline(track: Track) -> Callable[[str], list] | None:
    """The track's language's outline of a source file (its functions with their lines), if it has one."""
    from course import languages
    from course.languages.protocol import Outline

    offered = languages.capability(languages.get(track.language), Outline)
    return offered.functions if offered is not None else None


def outliner(track: Track, texts: Mapping[str, str]) -> Callable[[str], Sequence[Function]]:
    """file -> the functions of texts[file] (none if the file is not there, or if the track's language
    offers no outline); each file outlined once, when first asked."""
    functions = outline(track)
    outlines: dict[str, Sequence[Function]] = {}

    def outlined(path: str) -> Sequence[Function]:
        if path not in outlines:
            outlines[path] = functions(texts[path]) if functions is not None and path in texts else ()
        return outlines[path]

    return outlined


def locator(track: Track, texts: Mapping[str, str]) -> Locate:
    """(file, line) -> the function of texts[file] that holds the line ('' if none)."""
    outlined = outliner(track, texts)
    return lambda path, line: next((f.name for f in outlined(path) if f.first <= line <= f.last), "")


def learner_texts(track: Track, code_root: Path) -> dict[str, str]:
    texts = {}
    for name in track.files:
        try:
            texts[name] = (code_root / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return texts


# --- where a documented mutant changes the code --------------------------------------------------


def changed_lines(text: str, mutant: Mutant) -> set[int]:
    """The lines of `text` (1-based) that the mutant changes; for an insertion, the line before it
    (or after it, at the very start)."""
    if mutant.find:
        start = text.find(mutant.find)
        if start < 0:
            return set()
        first = text.count("\n", 0, start) + 1
        return set(range(first, first + mutant.find.rstrip("\n").count("\n") + 1))
    import re

    lines: set[int] = set()
    position = 0  # the original's line (0-based) that the next context or removed line is
    for line in mutant.diff.splitlines():
        hunk = re.match(r"^@@ -(\d+)", line)
        if hunk:
            position = max(int(hunk.group(1)) - 1, 0)
        elif line.startswith(("---", "+++", "\\")):
            continue
        elif line.startswith("-"):
            lines.add(position + 1)
            position += 1
        elif line.startswith("+"):
            lines.add(max(position, 1))
        else:
            position += 1
    return lines


def mutant_places(track: Track, texts: Mapping[str, str] | None = None,
                  mutants: Sequence[Mutant] | None = None) -> dict[str, tuple[str, ...]]:
    """Each documented mutant's functions (or those of `mutants`, such as bugs written apart),
    'file::Function': where its change is in the reference (none for a change outside every function:
    a table, a constant, a struct's field)."""
    texts = reference_texts(track) if texts is None else texts
    mutants = track.mutants if mutants is None else mutants
    functions = outline(track)
    if functions is None:
        return {}
    outlines = {name: functions(text) for name, text in texts.items() if any(m.file == name for m in mutants)}
    places = {}
    for mutant in mutants:
        lines = changed_lines(texts.get(mutant.file, ""), mutant)
        places[mutant.id] = tuple(sorted({f"{mutant.file}::{f.name}" for f in outlines.get(mutant.file, ())
                                          if any(f.first <= n <= f.last for n in lines)}))
    return places


# --- the claims ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Known:
    """What the hints know of a track: each documented mutant's recorded signature and functions
    ('file::Function'), its pitfall, and the functions each pitfall's text is about (the manifest's
    `places`, by name)."""

    signatures: Mapping[str, frozenset[str]]
    places: Mapping[str, tuple[str, ...]]
    pitfall_of: Mapping[str, int | None]  # None: a documented bug of no pitfall
    pitfall_places: Mapping[int, tuple[str, ...]]

    @classmethod
    def recorded(cls, track: Track, chapter: Chapter) -> Known:
        signatures, places = recorded.load(chapter, track), recorded.load_places(chapter, track)
        return cls(signatures, places, {m.id: m.pitfall for m in track.mutants}, dict(track.places))

    def without(self, mutant: str) -> Known:
        """As if `mutant` had never been documented (how precision.py tries a documented bug as unseen)."""
        return Known({m: s for m, s in self.signatures.items() if m != mutant}, self.places, self.pitfall_of,
                     self.pitfall_places)


@dataclass(frozen=True)
class Hint:
    place: str = ""  # 'file::Function' (or 'file::Class'): where the failures come from
    pitfall: int | None = None
    also: str = ""  # where two functions' mutants fail alike: the other one ('file::Function'); the place is one of the two

    @property
    def places(self) -> tuple[str, ...]:
        return tuple(p for p in (self.place, self.also) if p)


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard index of two signatures compared as the same evidence would give them on any machine
    (course.signatures.comparable: a timed-out case reads as the other's failure of that case)."""
    a, b = recorded.comparable(a, b)
    return len(a & b) / len(a | b) if a | b else 0.0


def contains(outer: str, inner: str) -> bool:
    """Whether the place `outer` ('file::Name') is `inner` or holds it (a class its methods)."""
    return outer == inner or inner.startswith(outer + ".")


def _ranked(scores: Mapping) -> list:
    return sorted(scores.items(), key=lambda item: (-item[1], str(item[0])))


def _clear(ranked: list, least: float) -> object | None:
    """The first of `ranked` when it scores at least `least` and the runner-up below MARGIN of it."""
    if not ranked or ranked[0][1] < least:
        return None
    if len(ranked) > 1 and ranked[1][1] >= MARGIN * ranked[0][1]:
        return None
    return ranked[0][0]


def _check_of(marked: str) -> str:
    """A mark without its case: the test and the check that failed ('recorded_streams@t.py:407 AssertionError')."""
    case, how = recorded.case_of(marked)
    return f"{case.partition('[')[0]}@{how}"


def _crash(how: str) -> bool:
    """Whether a failure is a crash: the language's own exception (not an assert) or a panic."""
    kind = how.rsplit(" ", 1)[-1]
    if kind == "panic":
        return True
    found = getattr(builtins, kind, None)
    return isinstance(found, type) and issubclass(found, Exception) and found is not AssertionError


def crash_place(evidence: Evidence) -> str:
    """The learner's function every failure crashed in (the innermost frame of each), or ''; a class
    when they crashed in different methods of it."""
    broken = [m for m in evidence.marks if recorded.case_of(m)[1] != recorded.TIMED_OUT]
    if not broken or any(m not in evidence.frames or not _crash(recorded.case_of(m)[1]) for m in broken):
        return ""
    return _common({evidence.frames[m][-1] for m in broken})


def _common(places: set[str]) -> str:
    """The one place, or the class all of them are methods of, or ''."""
    if len(places) == 1:
        return next(iter(places))
    owners = {p.rpartition(".")[0] for p in places}
    owner = owners.pop() if len(owners) == 1 else ""
    return owner if owner and "::" in owner and not owner.endswith(":") else ""


def _checks(marks: Iterable[str]) -> frozenset[str]:
    """The checks of a signature, without their cases; a timed-out case stands for any check of its test."""
    return frozenset(f"{recorded.case_of(m)[0].partition('[')[0]}@" if recorded.case_of(m)[1] == recorded.TIMED_OUT
                     else _check_of(m) for m in marks)


def _shows(shown: frozenset[str], check: str) -> bool:
    """Whether the checks `shown` include `check` ('test@' for a timed-out case: any check of that test)."""
    return check in shown if not check.endswith("@") else any(c.startswith(check) for c in shown)


def score(evidence: Evidence, signature: frozenset[str]) -> float:
    """How close a failing run is to a mutant's signature: the Jaccard index of their marks, or, a little
    lower (CHECK_WEIGHT), of their checks, so that a bug failing the same asserts at other cases of a
    parametrized test still reads as close."""
    a, b = recorded.comparable(evidence.marks, signature)
    checks, theirs = _checks(a), _checks(b)
    by_check = len(checks & theirs) / len(checks | theirs) if checks | theirs else 0.0
    return max(len(a & b) / len(a | b) if a | b else 0.0, CHECK_WEIGHT * by_check)


def signature_place(evidence: Evidence, known: Known) -> tuple[str, ...]:
    """The function (or class) whose mutants' signatures the evidence clearly resembles, every failing
    check of it one those mutants fail too, and not all of them failed by another function's mutants
    as well (unless the evidence is one of the place's mutants' signatures exactly); or, where exactly
    two functions' mutants resemble it alike (not methods of one class), those two under the same
    conditions; or ()."""
    best: dict[str, float] = {}
    exact: set[str] = set()
    for mutant, signature in known.signatures.items():
        if not signature:
            continue
        close = score(evidence, signature)
        for place in known.places.get(mutant) or ("",):  # a change outside any function: no place
            best[place] = max(best.get(place, 0.0), close)
            if recorded.equivalent(evidence.marks, signature):
                exact.add(place)
    ranked = _ranked(best)
    if not ranked or ranked[0][1] < PLACE_SIMILARITY:
        return ()
    near = {p for p, close in ranked if close >= MARGIN * ranked[0][1]}  # the best, and those as close
    one = _common(near)  # the best alone, or the class of all of them
    if one:
        places: tuple[str, ...] = (one,)
    elif len(near) == 2 and "" not in near:
        places = tuple(sorted(near))
    else:
        return ()
    shown: dict[str, set[str]] = {}  # each function's mutants' checks
    for mutant, signature in known.signatures.items():
        for where in known.places.get(mutant, ()):
            shown.setdefault(where, set()).update(_check_of(m) for m in signature)

    def within(where: str) -> bool:
        return any(contains(place, where) for place in places)

    own = frozenset(c for where, checks in shown.items() if within(where) for c in checks)
    checks = _checks(evidence.marks)
    if not all(_shows(own, check) for check in checks):
        return ()  # a failing check none of the place's mutants fails: something else broke it
    if not any(within(p) for p in exact) and any(all(_shows(frozenset(theirs), check) for check in checks)
                                                 for where, theirs in shown.items() if not within(where)):
        return ()  # another function's mutants fail every one of these checks too
    return places


def by_class(place: str, functions: Sequence[Function], known: Known) -> str:
    """`place`, or its class (its Go type) when the class has another method of some length that no
    recorded mutant changes: the recordings cannot tell the methods apart from that one."""
    path, _, name = place.partition("::")
    owner = name.rpartition(".")[0]
    if not owner:
        return place
    changed = {p.partition("::")[2] for places in known.places.values() for p in places if p.startswith(path + "::")}
    unknown = [f for f in functions if f.name.startswith(owner + ".") and f.name != name and f.name not in changed
               and f.last - f.first + 1 >= UNKNOWN_METHOD_LINES]
    return f"{path}::{owner}" if unknown else place


def _closest(evidence: Evidence, known: Known) -> dict[int | None, tuple[float, int]]:
    """Each pitfall's closest documented mutant to the evidence: (its Jaccard index, the broken checks
    of the mutant that scored it); under None, the closest documented bug of no pitfall."""
    best: dict[int | None, tuple[float, int]] = {}
    for mutant, signature in known.signatures.items():
        if signature and mutant in known.pitfall_of:
            pitfall = known.pitfall_of[mutant]
            best[pitfall] = max(best.get(pitfall, (0.0, 0)), (similarity(evidence.marks, signature), len(signature)))
    return best


def name_pitfall(evidence: Evidence, known: Known, place: str = "") -> int | None:
    """The pitfall whose mutants' signatures the evidence clearly matches, consistent with `place`;
    with no place, only one whose mutant's signature the evidence is exactly."""
    best = _closest(evidence, known)
    ranked = _ranked({p: score for p, (score, _) in best.items()})
    pitfall = _clear(ranked, PITFALL_SIMILARITY if place else PITFALL_ALONE_SIMILARITY)
    # None also when a bug of no pitfall is as close; the recording's count, not the run's: a timeout
    # that left a test's other cases unrun counts them
    if pitfall is None or best[pitfall][1] < PITFALL_MIN_MARKS:  # type: ignore[index]
        return None
    if place and not _owns(known, pitfall, place):  # type: ignore[arg-type]
        return None  # the pitfall is about other functions than the one the failures point at
    return pitfall  # type: ignore[return-value]


def hint(evidence: Evidence, known: Known, functions: Callable[[str], Sequence[Function]] = lambda path: ()) -> Hint:
    """The hint for a failing run's evidence; `functions` outlines a file of the code under test."""
    places = signature_place(evidence, known)
    crashed = crash_place(evidence)
    if crashed and places:  # the crashes must agree with the signatures, and choose between two places
        places = tuple(p for p in places if contains(p, crashed) or contains(crashed, p))[:1]
    elif crashed:
        places = (crashed,)
    places = tuple(dict.fromkeys(by_class(p, functions(p.partition("::")[0]), known) for p in places))
    if len(places) == 2 and (contains(*places) or contains(places[1], places[0])):
        places = (min(places, key=len),)  # a method and its class: the class
    if len(places) == 1:
        return Hint(places[0], name_pitfall(evidence, known, places[0]))
    # two places, or none: a pitfall only from an exact match, and only one whose text is about one of them
    pitfall = name_pitfall(evidence, known)
    if pitfall is not None and places and not any(_owns(known, pitfall, p) for p in places):
        pitfall = None
    return Hint(places[0], pitfall, also=places[1]) if places else Hint(pitfall=pitfall)


def _owns(known: Known, pitfall: int, place: str) -> bool:
    """Whether the pitfall's text is about the place (the manifest's `places` of the pitfall)."""
    name = place.partition("::")[2]
    return any(contains(name, p) or contains(p, name) for p in known.pitfall_places.get(pitfall, ()))


# --- the line a learner reads ----------------------------------------------------------------------


def closeness(evidence: Evidence, known: Known) -> dict[int, float]:
    """Each pitfall's closest documented mutant to a failing run (the Jaccard index of signatures)."""
    return {pitfall: score for pitfall, (score, _) in _closest(evidence, known).items() if pitfall is not None}


def _found(chapter: Chapter, track: Track, result: CheckResult,
           code_root: Path) -> tuple[Hint, Evidence, Known, Mapping[str, str]] | None:
    """The hint a failing run gets, with what it was found from; None when no hint may speak (the run
    passed, could not run, or failed every test: stubs match everything a little)."""
    if result.problem or not result.failing or len(result.failing) == result.total:
        return None
    known = Known.recorded(track, chapter)  # none when stale: crashes alone can still name a place
    texts = learner_texts(track, code_root)
    evidence = Evidence.of(result, locator(track, texts))
    return hint(evidence, known, outliner(track, texts)), evidence, known, texts


def pitfall_scores(chapter: Chapter, track: Track, result: CheckResult,
                   code_root: Path) -> tuple[dict[int, float], int | None]:
    """For a class's report: how close the run's failures come to each pitfall (those above 0,
    rounded to two places), and the pitfall the hint line names (None when it names none)."""
    found = _found(chapter, track, result, code_root)
    if found is None:
        return {}, None
    named, evidence, known, _ = found
    return {p: round(v, 2) for p, v in closeness(evidence, known).items() if v > 0}, named.pitfall


def diagnose(chapter: Chapter, track: Track, result: CheckResult, code_root: Path) -> str:
    """The hint for a check's failures, in the learner's code at code_root: '' when there is none.
    A second line, when the pitfall is named, is indented to follow a 'hint: ' prefix."""
    hinted = _found(chapter, track, result, code_root)
    if hinted is None:
        return ""
    found, _, _, texts = hinted
    shown = [_shown_place(place, texts, track) for place in found.places]
    where = " or ".join(shown) if all(shown) else ""  # two places: one of them (both shown, or neither)
    pitfall = chapter.pitfall(found.pitfall) if found.pitfall is not None else None
    lines = [f"the failures come from {where}" if where else ""]
    if pitfall is not None:
        lines.append(f"{'they match' if where else 'the failures match'} pitfall {pitfall.id}: {pitfall.title} "
                     f"(`course show {chapter.id}`, Pitfalls)")
    return "\n      ".join(line for line in lines if line)


def _shown_place(place: str, texts: Mapping[str, str], track: Track) -> str:
    """'`Decoder.decode` (agent/provider/sse.py:88)' as the learner's file has it: the function, else
    its class, else '' (a learner who split the code otherwise gets no place rather than a wrong one)."""
    if not place:
        return ""
    path, _, name = place.partition("::")
    functions = outline(track)
    found = functions(texts[path]) if functions is not None and path in texts else []
    for wanted in (name, name.rpartition(".")[0]):
        exact = next((f for f in found if f.name == wanted), None)
        if exact is not None:
            return f"`{exact.name}` ({path}:{exact.first})"
        members = [f for f in found if wanted and f.name.startswith(wanted + ".")]
        if members:
            return f"`{wanted}` ({path}:{members[0].first})"
    return ""


def functions_of(names: Iterable[str]) -> set[str]:
    return {name.partition("::")[2] for name in names}
