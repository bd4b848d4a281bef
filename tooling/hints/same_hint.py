"""Does a bug get the same hint on a quiet machine and on a loaded one?

    python tooling/hints/same_hint.py QUIET.json LOADED.json [QUIET.json LOADED.json ...]

Each file is a `precision.py --json` measurement of the same bugs, judged with the same recording
(`--recorded`, no `--cache`: every bug run again), one made on a quiet machine and one with a busy
loop on each core. For each pair, and over all of them, it counts the bugs both runs killed and those
whose `hint:` line (the place and the pitfall) is the same in both, and lists the others. Exit 0
when every hint is the same.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's harness

from course.mutation.documented import KILLED, TIMED_OUT  # noqa: E402

KILLS = (KILLED, TIMED_OUT)  # what precision.py counts as the catalog catching a bug


def rows(path: Path) -> tuple[str, dict[str, dict]]:
    """The measurement's chapter and track, and its bugs' rows by id."""
    measured = json.loads(path.read_text(encoding="utf-8"))
    if not measured:
        raise SystemExit(f"{path}: no measurement in it")
    first = measured[0]
    return f"{first['chapter']} {first['language']}", {row["id"]: row for row in first["rows"]}


def compare(quiet: Path, loaded: Path) -> tuple[str, int, int, list[str]]:
    """The chapter and track, the bugs killed in both runs, how many of them got the same hint, and a
    line for each that did not (or was killed in one run only)."""
    track, before = rows(quiet)
    other, after = rows(loaded)
    if track != other:
        raise SystemExit(f"{quiet} measures {track}, {loaded} measures {other}: not the same bugs")
    both = same = 0
    differing = []
    for bug in sorted(before.keys() & after.keys()):
        killed = [row["status"] in KILLS for row in (before[bug], after[bug])]
        if killed == [True, True]:
            both += 1
            if before[bug]["hint"] == after[bug]["hint"]:
                same += 1
            else:
                differing.append(f"{track} {bug}: quiet {before[bug]['hint']}, loaded {after[bug]['hint']}")
        elif any(killed):
            differing.append(f"{track} {bug}: killed only {'quiet' if killed[0] else 'loaded'} "
                             f"(quiet {before[bug]['status']}, loaded {after[bug]['status']})")
    return track, both, same, differing


def main(argv: list[str]) -> int:
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    total_both = total_same = 0
    everything_same = True
    for quiet, loaded in zip(argv[::2], argv[1::2]):
        track, both, same, differing = compare(Path(quiet), Path(loaded))
        total_both, total_same = total_both + both, total_same + same
        everything_same = everything_same and not differing
        print(f"{track}: {same} of {both} kills with the same hint")
        for line in differing:
            print(f"  {line}")
    print(f"all: {total_same} of {total_both} kills with the same hint")
    return 0 if everything_same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
