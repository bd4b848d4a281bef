"""How often the `hint:` line of `course check` is wrong, and how often it names the right pitfall.

    python tooling/hints/precision.py [CHAPTER ...] [--bugs FILE] [--json OUT]

Each documented mutant of a chapter is run against its catalog, as `course verify` does, to get its
signature. Then, with the same matching `course check` uses (course/pitfall_hints.py):

own signature present   every signature recorded, the mutant's own included: does the hint name
                        the mutant's pitfall? (what a learner who makes exactly a documented
                        mistake sees)
leave-one-out           the mutant's own signature removed, as if nobody had documented that bug:
                        the hint must name the right pitfall or stay silent. A hint that names
                        another pitfall is a wrong hint.
unseen bugs (--bugs)    a YAML list of bugs written without looking at the catalog, in the
                        manifest's mutant form (id, file, find/replace or diff) with `pitfall:`
                        the number of the pitfall each is an instance of, or null for none. They
                        are judged against every recorded signature; naming any pitfall for a
                        bug labelled null is wrong. The file maps chapter ids to such lists.

The goal: under 5% of shown hints wrong (leave-one-out and unseen bugs together), while the hint
names the pitfall for most documented mutants with their own signature present.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# This checkout's harness, here and in the processes the catalog runs start (whatever else is installed)
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

from course import chapters  # noqa: E402
from course.chapters import Chapter, Mutant, Track  # noqa: E402
from course.pitfall_hints import name_pitfall  # noqa: E402
from course.mutation.documented import KILLED, TIMED_OUT, run_mutants  # noqa: E402


def load_bugs(path: Path, chapter: Chapter) -> list[Mutant]:
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise SystemExit(f"{path}: map each chapter id to its list of bugs ({chapter.id}: [...])")
    data = data.get(chapter.id) or []
    bugs = []
    for item in data:
        label = item.get("pitfall")
        # an id of its own: a bug file written apart from the manifest may reuse a documented mutant's id
        bugs.append(Mutant(id=f"bug-{item['id']}", pitfall=int(label) if label is not None else 0,
                           description=item.get("description", ""), file=item["file"], caught_by=(),
                           find=item.get("find", ""), replace=item.get("replace", ""), diff=item.get("diff", "")))
    return bugs


def judge(named: int | None, label: int) -> str:
    return "silent" if named is None else "right" if named == label else "wrong"


def measure(chapter: Chapter, track: Track, bugs: list[Mutant]) -> dict:
    results = run_mutants(chapter, track, list(track.mutants) + bugs)
    killed = {r.mutant.id: frozenset(r.signature) for r in results if r.status in (KILLED, TIMED_OUT)}
    documented = {m.id for m in track.mutants}
    signatures = {m: s for m, s in killed.items() if m in documented}
    pitfall_of = {m.id: m.pitfall for m in track.mutants}
    rows = []
    for r in results:
        mutant = r.mutant
        if mutant.id not in killed:
            rows.append({"id": mutant.id, "pitfall": mutant.pitfall, "set": "unseen" if mutant.id not in documented
                         else "documented", "status": r.status})
            continue
        failing = killed[mutant.id]
        if mutant.id in documented:
            own = name_pitfall(failing, signatures, pitfall_of)
            others = {m: s for m, s in signatures.items() if m != mutant.id}
            loo = name_pitfall(failing, others, pitfall_of)
            rows.append({"id": mutant.id, "pitfall": mutant.pitfall, "set": "documented", "status": r.status,
                         "own": own, "own_verdict": judge(own, mutant.pitfall),
                         "leave_one_out": loo, "leave_one_out_verdict": judge(loo, mutant.pitfall)})
        else:
            named = name_pitfall(failing, signatures, pitfall_of)
            rows.append({"id": mutant.id, "pitfall": mutant.pitfall or None, "set": "unseen", "status": r.status,
                         "named": named, "verdict": judge(named, mutant.pitfall)})
    return {"chapter": chapter.id, "rows": rows}


def tally(rows: list[dict], key: str) -> dict[str, int]:
    counts = {"right": 0, "wrong": 0, "silent": 0}
    for row in rows:
        if key in row:
            counts[row[key]] += 1
    return counts


def describe(counts: dict[str, int]) -> str:
    shown = counts["right"] + counts["wrong"]
    rate = f"{100 * counts['wrong'] / shown:.1f}%" if shown else "n/a"
    return (f"{shown} hints shown: {counts['right']} right, {counts['wrong']} wrong ({rate} of shown wrong); "
            f"{counts['silent']} silent")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter ids (default: every chapter)")
    parser.add_argument("--bugs", type=Path, help="a YAML file of labelled bugs written apart from the catalog")
    parser.add_argument("--language", default="python")
    parser.add_argument("--json", type=Path, help="write every bug's verdicts to this file")
    args = parser.parse_args()
    selected = [chapters.get(c) for c in args.chapters] or list(chapters.load_all())

    reports, totals = [], {"own": [], "leave_one_out": [], "unseen": []}
    for chapter in selected:
        track = chapter.track(args.language)
        bugs = load_bugs(args.bugs, chapter) if args.bugs else []
        report = measure(chapter, track, bugs)
        reports.append(report)
        rows = report["rows"]
        documented = [r for r in rows if r["set"] == "documented"]
        unseen = [r for r in rows if r["set"] == "unseen"]
        totals["own"] += documented
        totals["leave_one_out"] += documented
        totals["unseen"] += unseen
        own = tally(documented, "own_verdict")
        print(f"{chapter.id}: {len(documented)} documented mutants")
        print(f"  own signature present: the right pitfall named for {own['right']} of {len(documented)}, "
              f"a wrong one for {own['wrong']}")
        print(f"  leave-one-out:         {describe(tally(documented, 'leave_one_out_verdict'))}")
        for row in documented:
            if row.get("leave_one_out_verdict") == "wrong" or row.get("own_verdict") == "wrong":
                print(f"    {row['id']} (pitfall {row['pitfall']}): own -> {row.get('own')}, "
                      f"leave-one-out -> {row.get('leave_one_out')}")
        if unseen:
            survived = sum("verdict" not in r for r in unseen)
            print(f"  unseen bugs: {len(unseen)} ({survived} not caught, so no hint to judge); "
                  f"{describe(tally(unseen, 'verdict'))}")
            for row in unseen:
                if row.get("verdict") == "wrong":
                    print(f"    {row['id']} (labelled {row['pitfall']}): named pitfall {row['named']}")

    own = tally(totals["own"], "own_verdict")
    loo = tally(totals["leave_one_out"], "leave_one_out_verdict")
    unseen = tally(totals["unseen"], "verdict")
    shown = {k: loo[k] + unseen[k] for k in loo}
    print(f"\nall chapters: own signature present, right pitfall for {own['right']} of {len(totals['own'])} "
          f"documented mutants ({own['wrong']} wrong)")
    print(f"  leave-one-out and unseen bugs together: {describe(shown)}")
    if args.json:
        args.json.write_text(json.dumps(reports, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":  # the catalog runs start processes: this module must not run again in them
    sys.exit(main())
