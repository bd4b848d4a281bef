"""Coverage of a TypeScript run: what node's V8 coverage (NODE_V8_COVERAGE, one file per process)
recorded of the compiled code, read back through its source maps into lines and branches of the
learner's TypeScript files (node/coverage.mjs does the reading, with v8-to-istanbul).

A line is a statement when code was compiled from it; a branch is a block V8 counted on its own
(either side of an if, a case, the right side of ?? or ||, a function body); one never run is named
by its line.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from course.results import FileCoverage
from course.languages.typescript import toolchain
from course.languages.typescript.build import Built

READER = Path(__file__).with_name("node") / "coverage.mjs"


def folder(coverage_dir: Path) -> Path:
    """Where the workers of a run record V8 coverage."""
    return coverage_dir / "v8"


def read(coverage_dir: Path | None, built: Built, files: tuple[str, ...]) -> dict[str, FileCoverage]:
    if coverage_dir is None or not folder(coverage_dir).is_dir():
        return {}
    wanted = {}
    for name in files:
        if not name.endswith(".ts"):
            continue
        relative = name[len(built.package) + 1:] if built.package not in ("", ".") else name
        wanted[str(built.source / relative)] = name
    tools = toolchain.find()
    request = {"v8": str(folder(coverage_dir)), "out": str(built.out), "files": wanted, "toolchain": str(tools.tools)}
    done = subprocess.run([tools.node, str(READER), json.dumps(request)], capture_output=True, text=True,
                          env=toolchain.environment(), timeout=300, check=False)
    if done.returncode != 0:
        return {}
    report = json.loads(done.stdout or "{}")
    return {name: FileCoverage(path=name, statements=f["statements"], missing=f["missing"], branches=f["branches"],
                               missing_branches=[tuple(b) for b in f["missing_branches"]])
            for name, f in sorted(report.items())}
