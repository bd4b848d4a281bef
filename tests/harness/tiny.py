"""A tiny chapter written into a temporary content folder (COURSE_CONTENT points the harness at it):
one module, a few tests, so that a harness test shapes exactly the catalog or reference it needs."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import yaml

CHAPTER = "tiny"

TEXT = """\
# tiny · A chapter for the harness's own tests

## Rules

`add(a, b)` returns the sum.
"""

STARTER = '''\
"""Adding numbers."""


def add(a, b):
    """The sum of a and b."""
    raise NotImplementedError("add")
'''


def tiny_chapter(root: Path, *, tests: str, reference: str, starter: str = STARTER, text: str = TEXT,
                 stated_in: list[dict] | None = None, mutants: list[dict] | None = None,
                 pitfalls: list[dict] | None = None, selftest: str = "") -> Path:
    """Write the chapter under `root` (a content folder) and return `root`. Every test_ function of
    `tests` becomes a catalog entry, in file order. `selftest`, when given, is the example of the
    learner's own tests that `start` writes (as tests_mine/tiny/test_mine.py)."""
    names = re.findall(r"^def test_(\w+)\(", textwrap.dedent(tests), flags=re.M)
    catalog = [{"name": name, "kind": "unit", "checks": f"{name} works", "why": "a harness test needs it",
                "stated_in": stated_in if stated_in is not None else [{"section": "Rules"}],
                "hints": [f"{name}: the idea", f"{name}: the rule, in Rules", f"{name}: the shape of the code"]}
               for name in names]
    manifest = {
        "format_version": 1, "id": CHAPTER, "title": "Tiny", "order": 99,
        "pitfalls": pitfalls or [{"id": 1, "title": "a wrong sum"}],
        "catalog": catalog,
        # like the real chapters' tracks, it lists the catalog entries it runs
        "tracks": {"python": {"files": ["calc.py"], "modules": ["calc"], "catalog": names, "mutants": mutants or [],
                              **({"selftest": f"tests_mine/{CHAPTER}/test_mine.py"} if selftest else {})}},
    }
    files = {
        f"chapters/{CHAPTER}/chapter.yaml": yaml.safe_dump(manifest, sort_keys=False),
        f"chapters/{CHAPTER}/text.md": text,
        f"starter/python/{CHAPTER}/calc.py": starter,
        f"reference/python/{CHAPTER}/calc.py": textwrap.dedent(reference),
        f"tests/python/{CHAPTER}/test_tiny.py": "import calc\n\n" + textwrap.dedent(tests),
        **({f"starter/python/{CHAPTER}/tests_mine/{CHAPTER}/test_mine.py": textwrap.dedent(selftest)} if selftest else {}),
    }
    for name, body in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body, encoding="utf-8")
    (root / "fixtures").mkdir(exist_ok=True)
    return root
