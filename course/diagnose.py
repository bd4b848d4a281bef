"""Name the pitfall a learner's failures look like.

`course verify` records each documented mutant's kill signature (the set of catalog test cases it fails)
in the chapter's signatures.json. When a learner's failing set is close to a signature, the check ends
with one line naming that mutant's pitfall: a hint at where to look, never the fix.
"""

from __future__ import annotations

import json

from course.chapters import Chapter, Track
from course.check.results import CheckResult

# How close a learner's failing set must be to a signature (Jaccard index) to name its pitfall.
MIN_SIMILARITY = 0.75


def load_signatures(chapter: Chapter, track: Track) -> dict[str, frozenset[str]]:
    path = chapter.signatures_path
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {mutant: frozenset(tests) for mutant, tests in data.get(track.language, {}).items()}


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def diagnose(chapter: Chapter, track: Track, result: CheckResult) -> str:
    if result.problem or not result.failing or len(result.failing) == result.total:
        return ""
    failing = result.failing_cases
    signatures = load_signatures(chapter, track)
    scored = [(similarity(failing, sig), mutant) for mutant, sig in signatures.items() if sig]
    best = max((score for score, _ in scored), default=0.0)
    if best < MIN_SIMILARITY:
        return ""
    by_id = {m.id: m for m in track.mutants}
    pitfalls = sorted({by_id[m].pitfall for score, m in scored if score == best and m in by_id})
    named = [p for p in (chapter.pitfall(n) for n in pitfalls) if p]
    if not named:
        return ""
    described = " or ".join(f"pitfall {p.id}: {p.title}" for p in named[:2])
    return f"this pattern of failures matches {described} (see `course show {chapter.id}`, Pitfalls)"
