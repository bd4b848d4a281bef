"""The wheel's content, worked out at build time: `course` reads chapters, starters, references,
catalogs and fixtures from course/_content/ in an installed package (course/content.py).

Which files go there is course.content.packaged_files applied to the languages registered in
course/languages/registry.py, so a track whose language has an adapter is packaged without anyone
listing its folders. Both modules are read from the source tree as files: a build imports no harness
code beyond them (they import nothing of the harness at module level).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_course_build_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def content_files(root: Path) -> list[str]:
    """What course/_content/ holds in a wheel built from `root`, relative to both."""
    content = _load(root / "course" / "content.py")
    registry = _load(root / "course" / "languages" / "registry.py")
    return content.packaged_files(root, registry.ADAPTERS)


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return  # an editable install reads the content from the checkout itself
        root = Path(self.root)
        for name in content_files(root):
            build_data["force_include"][str(root / name)] = f"course/_content/{name}"
