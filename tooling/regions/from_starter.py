"""Turn a chapter's full-copy starter files into learner regions (course.regions): for each file the
starter and the reference both have, the lines where they differ become a region of the reference
(between `# course: begin NAME` / `# course: end NAME`) and a `{% block NAME %}` of the starter.
Differences in comments or blank lines only are dropped (the stub then shows the reference's), unless
the starter's comment says more.

    python tooling/regions/from_starter.py CHAPTER [LANGUAGE]

Run it from the repository root, then read the diff: region names come from the enclosing function or
class, and `course verify CHAPTER` proves the result. Files that already have regions are left alone.
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

DEFINITION = re.compile(r"^(\s*)(?:async\s+)?(?:def|class)\s+(\w+)")
MARKER = re.compile(r"^\s*(?:#|//)\s*course:\s*(?:begin|end)\b")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _cosmetic(lines: list[str]) -> bool:
    return all(not line.strip() or line.strip().startswith(("#", "//")) for line in lines)


def _enclosing(lines: list[str], at: int) -> str:
    """The qualified name (Outer_inner) of the definition holding line `at`, or 'module'."""
    at = min(at, len(lines) - 1)
    while at < len(lines) - 1 and not lines[at].strip():
        at += 1
    names, level = [], _indent(lines[at]) if lines else 0
    own = DEFINITION.match(lines[at]) if lines else None
    if own:
        names.append(own[2])
    for line in reversed(lines[:at]):
        found = DEFINITION.match(line)
        if found and _indent(line) < level:
            names.append(found[2])
            level = _indent(line)
            if level == 0:
                break
    return "_".join(reversed(names)) or "module"


def convert(reference: list[str], starter: list[str], comment: str) -> tuple[str, str]:
    hunks: list[list[int]] = []
    matcher = difflib.SequenceMatcher(None, reference, starter, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (_cosmetic(reference[i1:i2]) and _cosmetic(starter[j1:j2])
                              and len("".join(starter[j1:j2]).split()) <= len("".join(reference[i1:i2]).split()) + 2):
            continue  # comments reworded or blank lines moved: the reference's will do
        gap = reference[hunks[-1][1]:i1] if hunks else None
        if gap is not None and len(gap) <= 3 and (_cosmetic(gap) or _enclosing(reference, hunks[-1][0]) == _enclosing(reference, i1)):
            hunks[-1][1], hunks[-1][3] = i2, j2
        else:
            hunks.append([i1, i2, j1, j2])
    marked, blocks, used, done = [], [], {}, 0
    for i1, i2, j1, j2 in hunks:
        name = _enclosing(reference, i1)
        used[name] = used.get(name, 0) + 1
        name = name if used[name] == 1 else f"{name}_{used[name]}"
        probe = reference[i1] if i1 < len(reference) else ""
        pad = probe[:_indent(probe)] if probe.strip() else ""
        marked += reference[done:i1]
        marked += [f"{pad}{comment} course: begin {name}\n", *reference[i1:i2], f"{pad}{comment} course: end {name}\n"]
        done = i2
        blocks.append(f"{{% block {name} %}}\n{''.join(starter[j1:j2])}{{% endblock %}}\n")
    marked += reference[done:]
    return "".join(marked), "".join(blocks)


def main(chapter: str, language: str = "python") -> None:
    comment = "#" if language == "python" else "//"
    starters = Path("starter") / language / chapter
    for starter_path in sorted(p for p in starters.rglob("*") if p.is_file()):
        reference_path = Path("reference") / language / chapter / starter_path.relative_to(starters)
        if not reference_path.is_file():
            continue  # a file only the learner has (their own tests)
        reference = reference_path.read_text(encoding="utf-8").splitlines(keepends=True)
        if any(MARKER.match(line) for line in reference):
            continue
        marked, blocks = convert(reference, starter_path.read_text(encoding="utf-8").splitlines(keepends=True), comment)
        head = ("{#- What the learner receives in place of each region of the reference\n"
                f"    ({reference_path.as_posix()}, between `{comment} course: begin NAME` and `{comment} course: end NAME`);\n"
                "    everything else comes from the reference as it is (course.regions). -#}\n")
        reference_path.write_text(marked, encoding="utf-8")
        starter_path.write_text(head + blocks, encoding="utf-8")
        print(f"{reference_path}: {blocks.count('{% block')} regions")


if __name__ == "__main__":
    main(*sys.argv[1:])
