"""A learner's loop through every chapter and track, with the `course` installed in this environment.

    python tooling/ci/learner_loop.py [CHAPTER ...]

For each track of each chapter, in a fresh repository: `course start` writes the stubs, `course check`
on them exits 1, the reference's files (as a learner would have written them: no region markers) are
copied over the stubs, `course check` exits 0, `course run` (when the track has a demonstration) and
`course diff` exit 0. CI runs it from a virtual environment where the built wheel is installed, so
it proves what a user installs, not the checkout. Exit 0 when every loop went as described.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from course import chapters, regions
from course.chapters import Chapter, Track



def course(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`course` of this environment: the command installed next to the python running this script."""
    command = Path(sys.executable).with_name("course")
    return subprocess.run([str(command), *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False)


def loop(chapter: Chapter, track: Track, root: Path) -> list[str]:
    """The steps that did not exit as they should, each with the tail of what it printed."""
    wrong: list[str] = []

    def step(label: str, want: int, *args: str) -> None:
        done = course(*args, cwd=root)
        if done.returncode != want:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-6:])
            wrong.append(f"{label}: exit {done.returncode}, want {want}\n{tail}")

    step("start", 0, "start", chapter.id, "--language", track.language, "--dir", str(root))
    step("check on the stubs", 1, "check", chapter.id)
    for name in track.files:
        if name not in track.given:
            text = (track.reference / name).read_text(encoding="utf-8")
            (root / name).write_text(regions.strip(text, name), encoding="utf-8")
    step("check on the reference's code", 0, "check", chapter.id)
    if track.run:
        step("run", 0, "run", chapter.id)
    step("diff", 0, "diff", chapter.id)
    return wrong


def main(argv: list[str]) -> int:
    chosen = [chapters.get(name) for name in argv] or list(chapters.load_all())
    failed = 0
    for chapter in chosen:
        for track in chapter.tracks.values():
            with tempfile.TemporaryDirectory(prefix=f"learner-{chapter.id}-{track.language}-") as tmp:
                root = Path(tmp) / "repo"
                root.mkdir()
                (root / ".git").mkdir()  # a learner's repository
                wrong = loop(chapter, track, root)
            failed += bool(wrong)
            print(f"{'ok  ' if not wrong else 'FAIL'} {chapter.id} ({track.language}): start, check, run, diff")
            for line in wrong:
                print("     " + line.replace("\n", "\n     "))
    print(f"\nlearner loops: {'all passed' if not failed else f'{failed} failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
