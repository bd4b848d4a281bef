"""How often the `hint:` line of `course check` is right, wrong or silent, at both of its levels: the
place (a function of the learner's) and the pitfall.

    python tooling/hints/precision.py CHAPTER [--language L] [--bugs FILE] [--json OUT]
                                      [--cache FILE] [--replay OUT] [--recorded [--unseen-only]]

Each documented mutant of the track, and each bug of FILE, is run against the catalog as `course
verify` runs mutants; what each run shows (its signature, and the functions its exceptions or panics
came through) is the evidence the hint engine reads (course/pitfall_hints.py). Then, with the same
engine `course check` uses:

own recording present   every documented mutant's recording, its own included: does the hint name
                        the mutant's pitfall and function? (a learner who makes exactly a documented
                        mistake)
leave-one-out           the mutant's own recording removed, as if nobody had documented that bug
unseen bugs (--bugs)    a YAML file mapping chapter ids to lists of bugs written without the catalog
                        at hand, in the manifest's mutant form (id, file, find/replace or diff), each
                        with `pitfall:` (the pitfall its text describes, or null for none) and
                        `function:` (the function or method the change is in). A pitfall hint is
                        right when it names the label, wrong otherwise (any pitfall for a bug
                        labelled null is wrong). A place hint is right when the function it names
                        is the bug's function or contains it (a class containing its method); one
                        of two places, when either of them is.

Per set it reports the kills, pitfall hints right / wrong / silent, place hints right / wrong /
silent, and the share of the kills whose bug has a pitfall that get any hint (place or pitfall).

--cache FILE keeps each run's evidence, by what decides it (the catalog, the reference, the bug's
change), so that a second measurement with another engine runs only what changed; --replay OUT judges
the evidence a --json OUT of an earlier measurement holds, running nothing. --recorded judges with
the chapter's recording, as `course check` does, rather than with the documented mutants' runs of
this measurement: comparing machines (quiet against loaded), the same recording then judges runs made
on each (run without --cache).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

# This checkout's harness, here and in the processes the catalog runs start (whatever else is installed)
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

from course import chapters  # noqa: E402
from course import pitfall_hints as hints  # noqa: E402
from course.chapters import Chapter, Mutant, Track  # noqa: E402
from course.errors import StaleMutant  # noqa: E402
from course.mutant import applied  # noqa: E402
from course.mutation.documented import KILLED, TIMED_OUT, run_mutants  # noqa: E402
from course.signatures import staleness  # noqa: E402

EVIDENCE_FORMAT = 2  # bumped when what a run's evidence holds changes: cached runs are then run again


def load_bugs(path: Path, chapter: Chapter) -> list[tuple[Mutant, str]]:
    """The chapter's bugs in FILE, each with the function it changes."""
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise SystemExit(f"{path}: map each chapter id to its list of bugs ({chapter.id}: [...])")
    bugs = []
    for item in data.get(chapter.id) or []:
        label = item.get("pitfall")
        # an id of its own: a bug file written apart from the manifest may reuse a documented mutant's id
        bugs.append((Mutant(id=f"bug-{item['id']}", pitfall=int(label) if label is not None else 0,
                            description=item.get("description", ""), file=item["file"], caught_by=(),
                            find=item.get("find", ""), replace=item.get("replace", ""), diff=item.get("diff", "")),
                     str(item.get("function") or "")))
    return bugs


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def run_key(track: Track, mutant: Mutant) -> str:
    """What decides a run's evidence: the harness's evidence format, the catalog, the reference, the change."""
    reference = {name: (track.reference / name).read_text(encoding="utf-8") for name in track.files
                 if (track.reference / name).is_file()}
    change = {k: v for k, v in asdict(mutant).items() if k in ("file", "find", "replace", "diff")}
    return _digest(EVIDENCE_FORMAT, track.language, track.catalog_digest(), reference, change)


def collect(chapter: Chapter, track: Track, mutants: list[Mutant], cache: dict) -> dict[str, dict]:
    """Each mutant's run: its status, failing tests and evidence, from the cache or run now."""
    keys = {m.id: run_key(track, m) for m in mutants}
    todo = [m for m in mutants if keys[m.id] not in cache]
    if todo:
        texts = hints.reference_texts(track)
        for result in run_mutants(chapter, track, todo):
            mutant = result.mutant
            record = {"status": str(result.status), "failing": result.failing, "detail": result.detail}
            if result.check is not None:
                evidence = hints.Evidence.of(result.check, hints.locator(track, code_of(texts, mutant)))
                record["evidence"] = evidence.as_json()
            cache[keys[mutant.id]] = record
    return {m.id: cache[keys[m.id]] for m in mutants}


def judge_pitfall(named: int | None, label: int) -> str:
    return "silent" if named is None else "right" if named == label else "wrong"


def contains(named: str, function: str) -> bool:
    """Whether naming `named` points at `function`: the same, or a class (type) holding it."""
    return bool(function) and (named == function or function.startswith(named + "."))


def judge_place(named: tuple[str, ...], functions: set[str]) -> str:
    """A hint's places (one, or two of which it says one): right when one of them points at the bug."""
    if not named:
        return "silent"
    return "right" if any(contains(place.partition("::")[2], f) for place in named for f in functions) else "wrong"


def code_of(texts: dict[str, str], mutant: Mutant) -> dict[str, str]:
    """The code a run judged: the reference's files with the mutant's change made."""
    try:
        return {**texts, mutant.file: applied(mutant, texts[mutant.file])}
    except (StaleMutant, KeyError):
        return texts


def evaluate(chapter: Chapter, track: Track, runs: dict[str, dict], bugs: list[tuple[Mutant, str]],
             recorded: bool = False) -> list[dict]:
    """Each run's hints. The documented mutants' knowledge is this measurement's own runs of them, or
    with `recorded` what `course verify --record` recorded (what `course check` reads)."""
    texts = hints.reference_texts(track)
    places = hints.mutant_places(track, texts)
    documented = {m.id: m for m in track.mutants}
    killed = {i: hints.Evidence.from_json(r["evidence"]) for i, r in runs.items()
              if r["status"] in (KILLED, TIMED_OUT) and "evidence" in r}
    if recorded:
        known = hints.Known.recorded(track, chapter)
        if not known.signatures:
            raise SystemExit(f"{chapter.id} {track.language}: no recording to judge with: {staleness(chapter, track)}")
    else:
        known = hints.Known(signatures={i: e.marks for i, e in killed.items() if i in documented}, places=places,
                            pitfall_of={m.id: m.pitfall for m in track.mutants}, pitfall_places=track.places)
    rows = []
    for mutant in [m for m in track.mutants if m.id in runs]:  # a replay of runs made before a mutant was added
        row = {"id": mutant.id, "pitfall": mutant.pitfall, "set": "documented", "status": runs[mutant.id]["status"],
               "function": ", ".join(hints.functions_of(places.get(mutant.id, ())))}
        if mutant.id in killed:
            functions = hints.outliner(track, code_of(texts, mutant))
            own = hints.hint(killed[mutant.id], known, functions)
            loo = hints.hint(killed[mutant.id], known.without(mutant.id), functions)
            truth = hints.functions_of(places.get(mutant.id, ()))
            row.update(own=asdict(own), leave_one_out=asdict(loo),
                       own_pitfall=judge_pitfall(own.pitfall, mutant.pitfall),
                       own_place=judge_place(own.places, truth),
                       loo_pitfall=judge_pitfall(loo.pitfall, mutant.pitfall),
                       loo_place=judge_place(loo.places, truth))
        rows.append(row)
    # where each bug's change is, read as the documented mutants' places are: the writer's `function`
    # may name the public function a helper's change sits under
    changed = hints.mutant_places(track, texts, [bug for bug, _ in bugs])
    for bug, function in bugs:
        where = hints.functions_of(changed.get(bug.id, ()))
        row = {"id": bug.id, "pitfall": bug.pitfall or None, "set": "unseen", "status": runs[bug.id]["status"],
               "function": function, "changed": sorted(where)}
        if bug.id in killed:
            shown = hints.hint(killed[bug.id], known, hints.outliner(track, code_of(texts, bug)))
            row.update(hint=asdict(shown), pitfall_verdict=judge_pitfall(shown.pitfall, bug.pitfall),
                       place_verdict=judge_place(shown.places, {function}),
                       place_by_change=judge_place(shown.places, where or {function}))
        rows.append(row)
    return rows


def tally(rows: list[dict], key: str) -> dict[str, int]:
    counts = {"right": 0, "wrong": 0, "silent": 0}
    for row in rows:
        if key in row:
            counts[row[key]] += 1
    return counts


def share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "n/a"


def describe(counts: dict[str, int]) -> str:
    shown = counts["right"] + counts["wrong"]
    return f"{shown} shown: {counts['right']} right, {counts['wrong']} wrong ({share(counts['right'], shown)} right); " \
           f"{counts['silent']} silent"


def summary(rows: list[dict]) -> dict:
    unseen = [r for r in rows if r["set"] == "unseen"]
    kills = [r for r in unseen if "hint" in r]
    labelled = [r for r in kills if r["pitfall"]]
    pitfall = tally(kills, "pitfall_verdict")
    return {"bugs": len(unseen), "kills": len(kills), "pitfall": pitfall, "place": tally(kills, "place_verdict"),
            "place_by_change": tally(kills, "place_by_change"),
            "labelled_kills": len(labelled),
            "labelled_silent_pitfall": sum(r["pitfall_verdict"] == "silent" for r in labelled),
            "labelled_any_hint": sum(bool(r["hint"]["place"] or r["hint"]["pitfall"]) for r in labelled)}


def report(chapter: Chapter, track: Track, rows: list[dict]) -> None:
    documented = [r for r in rows if r["set"] == "documented"]
    print(f"{chapter.id} {track.language}: {len(documented)} documented mutants")
    print(f"  own recording present: pitfall {describe(tally(documented, 'own_pitfall'))}")
    print(f"                         place   {describe(tally(documented, 'own_place'))}")
    print(f"  leave-one-out:         pitfall {describe(tally(documented, 'loo_pitfall'))}")
    print(f"                         place   {describe(tally(documented, 'loo_place'))}")
    for row in documented:
        if "wrong" in (row.get("loo_pitfall"), row.get("loo_place"), row.get("own_pitfall"), row.get("own_place")):
            print(f"    {row['id']} (pitfall {row['pitfall']}, {row['function']}): own {row['own']}, "
                  f"leave-one-out {row['leave_one_out']}")
    s = summary(rows)
    if not s["bugs"]:
        return
    stale = sum(r["set"] == "unseen" and r["status"] == "stale" for r in rows)
    print(f"  unseen bugs: {s['bugs']}, {s['kills']} killed, {s['bugs'] - s['kills'] - stale} not caught (no hint to "
          f"judge), {stale} no longer apply to the reference")
    print(f"    pitfall hints: {describe(s['pitfall'])}")
    print(f"    place hints:   {describe(s['place'])} (against the writer's label)")
    print(f"                   {describe(s['place_by_change'])} (against the function the change is in)")
    print(f"    kills whose bug has a pitfall: {s['labelled_kills']}; a hint (place or pitfall) shown for "
          f"{s['labelled_any_hint']} ({share(s['labelled_any_hint'], s['labelled_kills'])}); "
          f"no pitfall named for {s['labelled_silent_pitfall']}")
    for row in rows:
        if row["set"] == "unseen" and "wrong" in (row.get("pitfall_verdict"), row.get("place_verdict"),
                                                   row.get("place_by_change")):
            print(f"      {row['id']} (labelled {row['pitfall']}, {row['function']}; changed in "
                  f"{', '.join(row['changed']) or '-'}): {row['hint']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter ids (default: every chapter)")
    parser.add_argument("--bugs", type=Path, help="a YAML file of labelled bugs written apart from the catalog")
    parser.add_argument("--language", default="python")
    parser.add_argument("--json", type=Path, help="write every run's evidence and verdicts to this file")
    parser.add_argument("--cache", type=Path, help="keep each run's evidence here, and reuse what it holds")
    parser.add_argument("--replay", type=Path, help="judge the evidence of an earlier --json file; run nothing")
    parser.add_argument("--recorded", action="store_true",
                        help="judge with the chapter's recording (signatures.json), as course check does, "
                             "instead of this measurement's own runs of the documented mutants")
    parser.add_argument("--unseen-only", action="store_true",
                        help="with --recorded and --bugs: run the bugs only, not the documented mutants "
                             "(the recording stands for them)")
    parser.add_argument("--runs-only", action="store_true",
                        help="run and keep the evidence (--json) without judging it: judge it later with --replay")
    args = parser.parse_args()
    if args.runs_only and not args.json:
        parser.error("--runs-only needs --json")
    if args.unseen_only and not ((args.recorded or args.runs_only) and args.bugs):
        parser.error("--unseen-only goes with --bugs, and --recorded or --runs-only")
    selected = [chapters.get(c) for c in args.chapters] or list(chapters.load_all())
    replayed = {(d["chapter"], d["language"]): d for d in json.loads(args.replay.read_text())} if args.replay else {}
    cache = json.loads(args.cache.read_text()) if args.cache and args.cache.is_file() else {}

    reports = []
    for chapter in selected:
        track = chapter.track(args.language)
        bugs = load_bugs(args.bugs, chapter) if args.bugs else []
        if args.replay:
            runs = replayed[(chapter.id, track.language)]["runs"]
        else:
            documented = [] if args.unseen_only else list(track.mutants)
            runs = collect(chapter, track, documented + [b for b, _ in bugs], cache)
            if args.cache:
                args.cache.write_text(json.dumps(cache) + "\n", encoding="utf-8")
        if args.runs_only:  # the evidence alone, to judge later with --replay (a recording made since)
            reports.append({"chapter": chapter.id, "language": track.language, "runs": runs})
            continue
        rows = evaluate(chapter, track, runs, bugs, recorded=args.recorded)
        report(chapter, track, rows)
        reports.append({"chapter": chapter.id, "language": track.language, "summary": summary(rows),
                        "runs": runs, "rows": rows})
    if args.json:
        args.json.write_text(json.dumps(reports, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":  # the catalog runs start processes: this module must not run again in them
    sys.exit(main())
