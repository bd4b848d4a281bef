"""Turn bugs of a development set into documented mutants of a track, where they teach the hints
something the recording does not know yet.

    python tooling/hints/document_bugs.py CHAPTER --language L --bugs FILE --evidence RUNS.json
                                          [--evidence RUNS2.json ...] --prefix P [--write]

A held-out set measures the hints only while nothing of it is in the recording; once measured, it
becomes a development set, and its bugs may join the documented mutants (`course verify --record`
then records them). Taken are the bugs that each `--evidence` file (a `precision.py --json` of the
set, one per machine it ran on) shows killed with the same failing tests, not by timing-sensitive
tests alone, whose change no documented mutant makes already, and that add knowledge:

confusers   a bug of no pitfall (labelled null) whose failures come close to a pitfall's mutant's
            (Jaccard index 0.6 or more): documented, it keeps that pitfall from being named where
            other bugs fail the same way (pitfall_hints: the bugs of no pitfall compete); and a bug
            the hint would send to another function, or to another pitfall, than its own;
new checks  a bug that fails a check no documented mutant fails, or whose failures no function's
            mutants resemble (score below PLACE_SIMILARITY): it gives a place hint somewhere to stand.

A labelled bug joins under its pitfall only when the function it changes is among that pitfall's
places (as `course verify` requires); else it is left out. Each new mutant is named P-<the bug's id>
and documented as caught by the tests that failed on it. Without --write the choice is printed only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

from course import chapters  # noqa: E402
from course import pitfall_hints as hints  # noqa: E402
from course.chapters import Chapter, Track  # noqa: E402
from course.mutant import Mutant  # noqa: E402

CONFUSER_SIMILARITY = 0.6


def runs_of(path: Path, chapter: Chapter, track: Track) -> dict[str, dict]:
    for report in json.loads(path.read_text(encoding="utf-8")):
        if (report["chapter"], report["language"]) == (chapter.id, track.language):
            return report["runs"]
    raise SystemExit(f"{path}: no runs of {chapter.id} {track.language}")


def last_recording(chapter: Chapter, track: Track) -> hints.Known:
    """What the track's recording knows, even when the manifest changed since it was made (a mutant
    relabelled, bugs documented by an earlier run of this tool): it only decides what is new here."""
    recorded = json.loads(chapter.signatures_path.read_text(encoding="utf-8")).get(track.language) or {}
    return hints.Known({m: frozenset(s) for m, s in recorded.get("signatures", {}).items()},
                       {m: tuple(p) for m, p in recorded.get("places", {}).items()},
                       {m.id: m.pitfall for m in track.mutants}, dict(track.places))


def as_mutant(item: dict, prefix: str) -> Mutant:
    return Mutant(id=f"{prefix}-{item['id']}", pitfall=item.get("pitfall"), description=item.get("description", ""),
                  file=item["file"], caught_by=(), find=item.get("find", ""), replace=item.get("replace", ""),
                  diff=item.get("diff", ""))


def change_of(mutant: Mutant) -> tuple[str, str, str, str]:
    """What a mutant does to the reference: two mutants with the same change are the same bug."""
    return mutant.file, mutant.find, mutant.replace, mutant.diff


def steady(bug_id: str, evidence: list[dict[str, dict]], timing: set[str]) -> dict | None:
    """The bug's run when every measurement killed it with the same failing tests, not by
    timing-sensitive tests alone; else None."""
    runs = [runs.get(f"bug-{bug_id}") for runs in evidence]
    if any(r is None or r["status"] != "killed" or "evidence" not in r for r in runs):
        return None
    if any(sorted(r["failing"]) != sorted(runs[0]["failing"]) for r in runs) or set(runs[0]["failing"]) <= timing:
        return None
    return runs[0]


def choose(chapter: Chapter, track: Track, items: list[dict], evidence: list[dict[str, dict]],
           prefix: str) -> list[tuple[dict, list[str], str]]:
    """The bugs to document: (the bug, the tests that failed on it, why it was taken)."""
    known = last_recording(chapter, track)
    texts = hints.reference_texts(track)
    timing = {e.name for e in chapter.catalog if e.timing_sensitive}
    functions = hints.outliner(track, texts)  # the reference outlined once, for every bug's hint
    existing = {change_of(m) for m in track.mutants}
    mutants = {item["id"]: as_mutant(item, prefix) for item in items}
    places = hints.mutant_places(track, texts, list(mutants.values()))
    failed = set().union(*(hints._checks(s) for s in known.signatures.values() if s))
    chosen = []
    for item in items:
        mutant = mutants[item["id"]]
        run = steady(item["id"], evidence, timing)
        if run is None or change_of(mutant) in existing:
            continue
        changed = hints.functions_of(places.get(mutant.id, ()))
        if mutant.pitfall is not None:
            owned = track.places.get(mutant.pitfall, ())
            if not changed or not all(any(hints.contains(o, f) for o in owned) for f in changed):
                continue  # documented under its pitfall, it would have to be where the pitfall's text is
        found = hints.Evidence.from_json(run["evidence"])
        shown = hints.hint(found, known, functions)
        close = max((hints.similarity(found.marks, s) for m, s in known.signatures.items()
                     if s and known.pitfall_of.get(m) is not None), default=0.0)
        resembles = max((hints.score(found, s) for s in known.signatures.values() if s), default=0.0)
        if mutant.pitfall is None and close >= CONFUSER_SIMILARITY:
            why = f"confuser: {close:.2f} to a pitfall's mutant"
        elif shown.places and changed and not any(hints.contains(place.partition("::")[2], f)
                                                  for place in shown.places for f in changed):
            why = f"fails as {' or '.join(sorted(hints.functions_of(shown.places)))}'s mutants do"
        elif shown.pitfall is not None and shown.pitfall != mutant.pitfall:
            why = f"fails as pitfall {shown.pitfall}'s mutants do"
        elif not hints._checks(found.marks) <= failed:
            why = "new checks"
        elif resembles < hints.PLACE_SIMILARITY:
            why = f"no function's mutants resemble it ({resembles:.2f})"
        else:
            continue
        existing.add(change_of(mutant))
        chosen.append((item, sorted(run["failing"]), why))
    return chosen


def entry_text(item: dict, caught_by: list[str], prefix: str, indent: str) -> str:
    """The manifest's mutant entry, as a list item at `indent`."""
    entry = {"id": f"{prefix}-{item['id']}", "pitfall": item.get("pitfall"),
             "description": item.get("description", "")}
    entry.update({k: item[k] for k in ("file", "find", "replace", "diff") if item.get(k) or k in ("file", "replace") and k in item})
    text = yaml.safe_dump(entry, sort_keys=False, allow_unicode=True, width=10_000, default_flow_style=False)
    text += f"caught_by: [{', '.join(caught_by)}]\n"
    lines = text.splitlines()
    return "".join((f"{indent}- " if i == 0 else f"{indent}  ") + line + "\n" for i, line in enumerate(lines))


def insert(manifest: Path, language: str, entries: list[tuple[dict, list[str], str]], prefix: str) -> None:
    """Add entries at the end of the track's `mutants:` list, indented as its items are (the list
    ends at the first line that is neither blank nor one of its items')."""
    lines = manifest.read_text(encoding="utf-8").splitlines(keepends=True)
    track_at = next(i for i, line in enumerate(lines) if line == f"  {language}:\n")
    start = next(i for i in range(track_at + 1, len(lines)) if lines[i] == "    mutants:\n")
    first = lines[start + 1]
    indent = first[:len(first) - len(first.lstrip())]
    end = start + 1
    while end < len(lines) and (lines[end].startswith((indent + "- ", indent + "  ")) or not lines[end].strip()):
        end += 1
    while not lines[end - 1].strip():
        end -= 1
    lines[end:end] = [entry_text(item, failing, prefix, indent) for item, failing, _ in entries]
    manifest.write_text("".join(lines), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapter")
    parser.add_argument("--language", default="python")
    parser.add_argument("--bugs", type=Path, required=True)
    parser.add_argument("--evidence", type=Path, action="append", required=True)
    parser.add_argument("--prefix", required=True, help="the new mutants' ids begin with this (one per set)")
    parser.add_argument("--write", action="store_true", help="add them to the chapter's manifest")
    args = parser.parse_args()
    chapter = chapters.get(args.chapter)
    track = chapter.track(args.language)
    items = (yaml.safe_load(args.bugs.read_text(encoding="utf-8")) or {}).get(chapter.id) or []
    evidence = [runs_of(path, chapter, track) for path in args.evidence]
    chosen = choose(chapter, track, items, evidence, args.prefix)
    for item, failing, why in chosen:
        print(f"{args.prefix}-{item['id']}: pitfall {item.get('pitfall')}, {why}")
    print(f"{chapter.id} {track.language}: {len(chosen)} of {len(items)} bugs to document")
    if args.write and chosen:
        insert(chapter.folder / "chapter.yaml", track.language, chosen, args.prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
