"""What users install is what the tree holds: the wheel carries every track of every chapter.

The wheel is built here the way pip builds it, from the checkout and again from the sdist (what
`pip install course-*.tar.gz` does), and its course/_content/ is compared file for file with the
content tree: every chapter's folders, and each registered language's starter, reference and catalog.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from course import chapters, content
from course.languages.registry import ADAPTERS

ROOT = Path(__file__).resolve().parents[3]
pytest.importorskip("hatchling", reason="building the package needs hatchling (the test extra installs it)")


def _build(source: Path, target: str, into: Path) -> Path:
    done = subprocess.run([sys.executable, "-m", "hatchling", "build", "-t", target, "-d", str(into)],
                          cwd=source, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"hatchling build -t {target} failed:\n{done.stdout}\n{done.stderr}"
    suffix = ".whl" if target == "wheel" else ".tar.gz"
    (built,) = [p for p in into.iterdir() if p.name.endswith(suffix)]
    return built


def _packaged(wheel: Path) -> list[str]:
    prefix = "course/_content/"
    with zipfile.ZipFile(wheel) as archive:
        return sorted(n[len(prefix):] for n in archive.namelist() if n.startswith(prefix))


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    out = tmp_path_factory.mktemp("dist")
    from_tree = _build(ROOT, "wheel", out / "tree")
    sdist = _build(ROOT, "sdist", out / "sdist")
    with tarfile.open(sdist) as archive:
        archive.extractall(out / "unpacked", filter="data") if sys.version_info >= (3, 12) else \
            archive.extractall(out / "unpacked")  # noqa: S202 - our own archive, just built
    (unpacked,) = (out / "unpacked").iterdir()
    from_sdist = _build(unpacked, "wheel", out / "from-sdist")
    return {"tree": _packaged(from_tree), "sdist": _packaged(from_sdist)}


@pytest.mark.parametrize("how", ["tree", "sdist"])
def test_wheel_carries_the_content_tree_file_for_file(wheels: dict[str, list[str]], how: str) -> None:
    wanted = content.packaged_files(ROOT, ADAPTERS)
    packaged = wheels[how]
    missing = sorted(set(wanted) - set(packaged))
    extra = sorted(set(packaged) - set(wanted))
    assert not missing and not extra, f"wheel built from the {how}: missing {missing[:10]}, extra {extra[:10]}"


def test_every_track_of_every_chapter_is_packaged(wheels: dict[str, list[str]]) -> None:
    """Not a comparison of a list with itself: each chapter's manifest names its tracks, and each
    track's learner files, reference files and catalog must be in the wheel."""
    packaged = set(wheels["tree"])
    for chapter in chapters.load_all():
        assert f"chapters/{chapter.id}/chapter.yaml" in packaged
        for language, track in chapter.tracks.items():
            for name in track.files:
                assert f"reference/{language}/{chapter.id}/{name}" in packaged, (chapter.id, language, name)
                if name not in track.given:
                    assert f"starter/{language}/{chapter.id}/{name}" in packaged, (chapter.id, language, name)
            catalog = [p for p in packaged if p.startswith(f"tests/{language}/{chapter.id}/")]
            assert catalog, f"no catalog of {chapter.id} ({language}) in the wheel"
            if track.run:
                assert f"tests/{language}/{chapter.id}/{track.run}" in packaged, (chapter.id, language, track.run)


def test_the_harness_own_tests_and_leftovers_stay_out(wheels: dict[str, list[str]]) -> None:
    packaged = wheels["tree"]
    assert not [p for p in packaged if p.startswith("tests/harness/")]
    assert not [p for p in packaged if "__pycache__" in p or p.endswith(".pyc") or "node_modules" in p]
