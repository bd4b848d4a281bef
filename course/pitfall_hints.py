"""Pitfall hints: the `hint:` line of `course check` and `course watch`, naming the pitfall a learner's
failures look like, or saying nothing. (Not `course hint`, which reveals a catalog test's written hints.)

`course verify --record` records each documented mutant's signature in the chapter's signatures.json
(course.signatures): every
case the mutant breaks, with the check that failed in it (the test lines down to the failing assert and
the exception's type; see CheckResult.signature). A broad test that many bugs fail therefore still
tells them apart by which of its asserts fails. A hint names a pitfall only when the learner's
signature and one of that pitfall's mutants share most of what either fails (Jaccard index at least
MIN_SIMILARITY), and no other pitfall comes within MARGIN of that score. Ties, weak matches and failures mostly outside
every signature give no hint: a wrong hint sends a learner to the wrong place, silence does not.
`tooling/hints/precision.py` measures how often a shown hint is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping

from course import signatures as recorded
from course.chapters import Chapter, Track
from course.results import CheckResult

# How close a learner's signature must be to a mutant's (Jaccard index) for its pitfall to be named.
# Chosen with tooling/hints/precision.py, leaving each documented mutant's own signature out: over
# 151 mutants of four chapters, 0.5 let about one shown hint in ten be wrong, 0.6 stayed under 5%.
MIN_SIMILARITY = 0.6
# The runner-up pitfall must score below this share of the best one, or the hint stays silent.
MARGIN = 0.8


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard index of two signatures, a timed-out case reading as the other's failure of that case
    (so a hint does not depend on whether a loaded machine turned an assertion into a timeout)."""
    a, b = recorded.aligned(a, b), recorded.aligned(b, a)
    return len(a & b) / len(a | b) if a | b else 0.0


def name_pitfall(failing: frozenset[str], signatures: Mapping[str, frozenset[str]],
                 pitfall_of: Mapping[str, int]) -> int | None:
    """The pitfall whose mutants' signatures the failing signature clearly resembles, or None."""
    best: dict[int, float] = {}
    for mutant, signature in signatures.items():
        if signature and mutant in pitfall_of:
            pitfall = pitfall_of[mutant]
            best[pitfall] = max(best.get(pitfall, 0.0), similarity(failing, signature))
    ranked = sorted(best.items(), key=lambda item: item[1], reverse=True)
    if not ranked or ranked[0][1] < MIN_SIMILARITY:
        return None
    if len(ranked) > 1 and ranked[1][1] >= MARGIN * ranked[0][1]:
        return None  # two pitfalls fit about as well: naming either could send the learner astray
    return ranked[0][0]


def diagnose(chapter: Chapter, track: Track, result: CheckResult) -> str:
    if result.problem or not result.failing or len(result.failing) == result.total:
        return ""
    signatures = recorded.load(chapter, track)
    pitfall = name_pitfall(result.signature, signatures, {m.id: m.pitfall for m in track.mutants})
    named = chapter.pitfall(pitfall) if pitfall is not None else None
    if named is None:
        return ""
    return f"this pattern of failures matches pitfall {named.id}: {named.title} (see `course show {chapter.id}`, Pitfalls)"
