"""Statement coverage of a Go run, read from the profiles its workers wrote (-test.coverprofile).

Go measures blocks of statements, not branches: a file's statements are the lines its blocks cover,
and a line is missing when no block covering it ever ran. A block of no statement (the body of an
empty method) has nothing to run: go's own figure leaves it out, and so does this one.
"""

from __future__ import annotations

import re
from pathlib import Path

from course.results import FileCoverage

_BLOCK = re.compile(r"^(.+\.go):(\d+)\.\d+,(\d+)\.\d+ (\d+) (\d+)$")


def read(coverage_dir: Path | None, module_root: Path, code_root: Path, files: tuple[str, ...]) -> dict[str, FileCoverage]:
    if coverage_dir is None:
        return {}
    mod = (module_root / "go.mod").read_text(encoding="utf-8") if (module_root / "go.mod").is_file() else ""
    found = re.search(r"(?m)^module\s+(\S+)", mod)
    module = found.group(1) if found else ""
    prefix = module_root.resolve().relative_to(code_root.resolve()).as_posix() if module_root.resolve().is_relative_to(code_root.resolve()) else ""
    lines: dict[str, dict[int, bool]] = {}
    for profile in sorted(coverage_dir.glob("cover.*")):
        for raw in profile.read_text(encoding="utf-8").splitlines():
            block = _BLOCK.match(raw)
            if not block or not block.group(1).startswith(module + "/") or block.group(4) == "0":
                continue
            name = block.group(1)[len(module) + 1:]
            name = f"{prefix}/{name}" if prefix and prefix != "." else name
            seen = lines.setdefault(name, {})
            for n in range(int(block.group(2)), int(block.group(3)) + 1):
                seen[n] = seen.get(n, False) or int(block.group(5)) > 0
    return {name: FileCoverage(path=name, statements=sorted(seen), missing=sorted(n for n, ran in seen.items() if not ran))
            for name, seen in sorted(lines.items()) if name in files}
