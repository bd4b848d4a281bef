"""`course start`: render a chapter's stubs and write the ones the learner does not have yet.

A learner's file is never overwritten or deleted: files are created with exclusive-create, so even a
file that appears between the check and the write is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from course.chapters import Chapter, Track
from course.errors import ManifestError


@dataclass
class ScaffoldResult:
    written: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # file -> why it could not be written


def render(chapter: Chapter, track: Track, name: str) -> str:
    """One file as the learner receives it. A file with learner regions (course.regions) is the
    reference with each region replaced by the starter's block of that name; a given file is the
    reference as it is; a file whose reference marks no region is its starter rendered whole (a
    chapter written before regions existed)."""
    from course import content, regions

    path = content.require(track.reference) / name
    reference = path.read_text(encoding="utf-8") if path.is_file() else ""  # a file only the learner has
    where = f"{track.reference.name}/{name}"
    if name in track.given:
        return regions.strip(reference, where)
    source = (content.require(track.starter) / name).read_text(encoding="utf-8")
    if not regions.regions(reference, where):
        return _environment(blocks=False).from_string(source).render(chapter=chapter)
    template = _environment(blocks=True).from_string(source)
    context = template.new_context({"chapter": chapter})
    blocks = {block: "".join(render_block(context)) for block, render_block in template.blocks.items()}
    unused = sorted(set(blocks) - {r.name for r in regions.regions(reference, where)})
    if unused:
        raise ManifestError(f"{track.starter.name}/{name}: block {unused[0]!r} matches no region of the reference")
    return regions.fill(reference, blocks, where)


def _environment(*, blocks: bool):  # noqa: ANN202
    import jinja2

    # with blocks, a block's text starts on the line after its {% block %} tag, as it reads
    return jinja2.Environment(keep_trailing_newline=True, trim_blocks=blocks, lstrip_blocks=blocks,
                              undefined=jinja2.StrictUndefined)


def starter_problems(chapter: Chapter, track: Track) -> list[str]:
    """What would make `course start` write something out of step with the reference: a region
    without guidance, guidance for no region, markers that do not pair up, a template that fails."""
    problems = []
    for name in track.files:
        if name not in track.given and not (track.starter / name).is_file():
            continue  # reported by the manifest check
        if name in track.given and (track.reference / name).is_file():
            from course import regions

            try:
                marked = regions.regions((track.reference / name).read_text(encoding="utf-8"), name)
            except ManifestError as exc:
                problems.append(exc.message)
                continue
            if marked:
                problems.append(f"{name} is given, yet its reference marks learner regions ({marked[0].name})")
        try:
            render(chapter, track, name)
        except ManifestError as exc:
            problems.append(exc.message)
        except Exception as exc:  # noqa: BLE001 - a template error, named with its file
            problems.append(f"{track.starter.name}/{name}: {type(exc).__name__}: {exc}")
    return problems


def render_all(chapter: Chapter, track: Track, into: Path) -> None:
    """Render every stub of the track under `into` (a fresh folder): how verify tests the stubs."""
    for name in track.files:
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(chapter, track, name), encoding="utf-8")


def scaffold(chapter: Chapter, track: Track, root: Path) -> ScaffoldResult:
    """Write the track's stubs, and the example of the learner's own tests when it has one."""
    result = ScaffoldResult()
    for name in (*track.files, *([track.selftest] if track.selftest else [])):
        if (root / name).exists():
            result.kept.append(name)
            continue
        write_new(root, name, render(chapter, track, name), result)
    return result


def write_new(root: Path, name: str, text: str, result: ScaffoldResult) -> None:
    """Create root/name holding text, unless a file is there already; record what happened."""
    target = root / name
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file where one of its folders should be: not the file itself
        result.failed[name] = f"{target.parent.relative_to(root)} is a file, not a folder"
        return
    except OSError as exc:
        result.failed[name] = exc.strerror or str(exc)
        return
    try:
        out = open(target, "x", encoding="utf-8")
    except FileExistsError:
        result.kept.append(name)
        return
    except OSError as exc:  # a file where a folder should be, no permission
        result.failed[name] = exc.strerror or str(exc)
        return
    try:
        with out:
            out.write(text)
    except OSError as exc:  # a full disk: remove the half stub we created, or start keeps it
        target.unlink(missing_ok=True)
        result.failed[name] = exc.strerror or str(exc)
        return
    result.written.append(name)


BACKUP_DIR = ".course/backup"


@dataclass
class Restored:
    name: str
    backup: Path | None = None  # where the learner's version went; None when there was none to keep
    unchanged: bool = False  # the file already was the stub


def changed_given(chapter: Chapter, track: Track, root: Path) -> list[str]:
    """The given files in root that differ from what this version of the course gives: an edit, or a
    copy from an older version (a given file is never written over once the learner has it)."""
    changed = []
    for name in track.given:
        path = root / name
        try:
            if path.is_file() and path.read_text(encoding="utf-8", errors="replace") != render(chapter, track, name):
                changed.append(name)
        except OSError:
            continue  # unreadable: the check itself says what it could not run
    return changed


def restore(chapter: Chapter, track: Track, root: Path, names: list[str], *, stamp: str) -> list[Restored]:
    """Put the stubs of `names` back. A learner's version is first moved (never copied over, never
    deleted) to root/.course/backup/<stamp>/<name>; a file that already is the stub is left alone."""
    import os

    done = []
    for name in names:
        target = root / name
        text = render(chapter, track, name)
        if target.is_file() and target.read_text(encoding="utf-8", errors="replace") == text:
            done.append(Restored(name, unchanged=True))
            continue
        backup = None
        if target.exists():
            backup = root / BACKUP_DIR / stamp / name
            backup.parent.mkdir(parents=True, exist_ok=True)
            ignore = root / BACKUP_DIR / ".gitignore"
            if not ignore.exists():  # backups are the learner's safety net, not part of their history
                ignore.write_text("# course reset keeps your earlier versions here; git need not track them\n*\n",
                                  encoding="utf-8")
            if backup.exists():
                raise FileExistsError(f"{backup} already exists")
            os.replace(target, backup)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "x", encoding="utf-8") as out:
            out.write(text)
        done.append(Restored(name, backup))
    return done
