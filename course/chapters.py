"""Chapters as data: each chapter's manifest (chapters/<id>/chapter.yaml) loaded and validated.

The manifest drives everything the CLI does for a chapter: the learner files to scaffold and diff, the
catalog to show and run (in its order), the pitfalls, the documented mutants. A malformed manifest is
one ManifestError naming the chapter, the entry and the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Optional

from course import content
from course.errors import ManifestError, UnknownChapter, UnknownLanguage
from course.languages.registry import DEFAULT_LANGUAGE
from course.mutant import Mutant  # a track's documented mutants, read from its manifest: re-exported here

# The manifest format this harness reads; a manifest says which one it is written in.
FORMAT_VERSION = 1
KINDS = ("unit", "conformance", "boundary", "fault")
# Progressive hints per catalog test: the idea, then the rule or section, then the shape of the code.
HINT_LEVELS = 3
# The fields of a track section every language shares; any other field is the adapter's to read.
TRACK_FIELDS = ("files", "given", "run", "services", "run_services", "mutants", "selftest", "hints", "checks",
                "coverage_floor", "catalog", "places")
# Where a catalog entry's rule is stated for the learner: a heading of the chapter's text, or a
# symbol of a starter file that carries a docstring ("agent/provider/sse.py::EventReader.feed").
STATED_IN = ("section", "docstring")


@dataclass(frozen=True)
class Pitfall:
    id: int
    title: str
    symptom: str = ""


@dataclass(frozen=True)
class CatalogEntry:
    name: str  # language-neutral: "hand_example" (Python test_hand_example, Go TestHandExample)
    kind: str
    checks: str
    why: str
    weight: float = 1.0  # points the entry is worth when it passes (instructors' gradebooks)
    task: int = 0  # the task it belongs to (exercism's task_id); 0 for none
    stated_in: tuple[tuple[str, str], ...] = ()  # (kind, where): ("section", "2.2 Server-sent events")
    hints: tuple[str, ...] = ()  # HINT_LEVELS of them, from the idea to the shape of the code
    # The test waits on the clock (a read timeout, a connection seen closed within a deadline): `course
    # grade` judges a failure of it again, once, before the failure counts. A catalog must still pass
    # on correct code under load; this is the gradebook's second look, not a licence to be flaky.
    timing_sensitive: bool = False

    @property
    def section_label(self) -> str:
        """The first section that states the rule, as a learner looks for it: 'section 2.2', or
        'section "A round trip by hand"' for a heading without a number."""
        heading = next((where for kind, where in self.stated_in if kind == "section"), "")
        number = re.match(r"\d+(\.\d+)*", heading)
        if number:
            return f"section {number.group(0)}"
        return f'section "{heading}"' if heading else ""


@dataclass(frozen=True)
class DemoOption:
    """An option of the chapter's demonstration (`course run CH --NAME [VALUE]`), the same in every
    track: the harness refuses any other, and passes these on as the learner wrote them."""

    name: str  # without its dashes: "scenario"
    value: str = ""  # what it takes, as the help shows it ("NAME"); "" for a flag
    choices: tuple[str, ...] = ()  # the values it accepts; empty: any
    help: str = ""

    @property
    def usage(self) -> str:
        return f"--{self.name}" + (f" {self.value}" if self.value else "")


@dataclass(frozen=True)
class Track:
    """A chapter in one language: its learner files, demonstration, services and mutants, and the
    fields only its language's adapter reads (`options`, e.g. Python's `modules`)."""

    chapter_id: str
    language: str
    files: tuple[str, ...]
    given: tuple[str, ...] = ()  # files the learner receives as they are in the reference
    run: str = ""
    services: tuple[str, ...] = ()  # what the harness starts for a run (course.services)
    run_services: tuple[str, ...] = ()  # what `course run` starts besides: the demonstration needs it, the catalog not
    mutants: tuple[Mutant, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    # The example test `start` gives the learner; its folder holds the tests `course selftest` runs.
    selftest: str = ""
    # Where the tests run from, when not the chapter's catalog (selftest: the learner's own tests).
    tests_at: Optional[Path] = field(default=None, hash=False, compare=False)
    # Hints written for this track, by catalog name, in place of the entry's (which name another
    # language's functions at their later levels).
    hints: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False, compare=False)
    # What a catalog entry checks, in this track's words, by catalog name, where its test checks the
    # rule through this language's own types (a Go function cannot be handed None for a string).
    checks: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    # The least coverage (percent of lines and branches) verify accepts of the reference: 100 unless
    # the manifest records a track still short of it, so the figure can only go up.
    coverage_floor: float = 100.0
    # The catalog entries this track runs, by name, when it has not (yet) ported all of them; empty: all.
    catalog: tuple[str, ...] = ()
    # The functions each pitfall's text is about, by pitfall, named as the learner reads them
    # ('Decoder.decode', 'EventReader.Next'): where a pitfall hint may point (course.pitfall_hints).
    places: Mapping[int, tuple[str, ...]] = field(default_factory=dict, hash=False, compare=False)

    @property
    def for_demonstration(self) -> Track:
        """The track as `course run` sees it: its services and the demonstration's own."""
        return replace(self, services=tuple(dict.fromkeys((*self.services, *self.run_services))))

    def hints_for(self, entry: CatalogEntry) -> tuple[str, ...]:
        return self.hints.get(entry.name, entry.hints)

    @property
    def starter(self) -> Path:
        return content.starter_dir(self.language, self.chapter_id)

    @property
    def reference(self) -> Path:
        return content.reference_dir(self.language, self.chapter_id)

    @property
    def tests(self) -> Path:
        return self.tests_at or content.tests_dir(self.language, self.chapter_id)

    def catalog_digest(self) -> str:
        """A digest of the catalog's files: what recorded kill signatures and verify's default
        shuffle seed are tied to. The demonstration (`run`) lives beside the catalog but is no part
        of it: no test runs it, so changing it changes no verdict."""
        import hashlib

        digest = hashlib.sha256()
        demonstration = self.tests / self.run if self.run else None
        for path in sorted(p for p in self.tests.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                           and p != demonstration):
            digest.update(path.relative_to(self.tests).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()


@dataclass(frozen=True)
class Chapter:
    id: str
    title: str
    order: int
    summary: str
    catalog: tuple[CatalogEntry, ...]
    pitfalls: tuple[Pitfall, ...]
    tracks: dict[str, Track] = field(default_factory=dict)
    folder: Path = Path()
    # what `course run` takes besides its own options (the manifest's `demonstration: options:`)
    demonstration: tuple[DemoOption, ...] = ()

    @property
    def text_path(self) -> Path:
        return self.folder / "text.md"

    @property
    def signatures_path(self) -> Path:
        return self.folder / "signatures.json"

    def text(self, language: str = "") -> str:
        """The chapter's text as a learner of `language` reads it: text.md, with the numbered
        sections (and the opening) that text.<language>.md rewrites for that language replaced."""
        text = self.text_path.read_text(encoding="utf-8")
        own = self.folder / f"text.{language}.md"
        text = _with_sections(text, own.read_text(encoding="utf-8")) if language and own.is_file() else text
        return render_facts(text, self, language)

    def for_track(self, track: Track) -> Chapter:
        """This chapter as `track` sees it: only the catalog entries the track runs, in catalog order,
        each saying what it checks in the track's words when the track has its own."""
        if not track.catalog and not track.checks:
            return self
        return replace(self, catalog=tuple(replace(e, checks=track.checks.get(e.name, e.checks)) for e in self.catalog
                                           if not track.catalog or e.name in track.catalog))

    def track(self, language: str = DEFAULT_LANGUAGE) -> Track:
        try:
            return self.tracks[language]
        except KeyError:
            have = ", ".join(sorted(self.tracks)) or "none"
            raise UnknownLanguage(f"chapter {self.id} has no {language} track (tracks: {have})") from None

    def pitfall(self, number: int) -> Pitfall | None:
        return next((p for p in self.pitfalls if p.id == number), None)


# What a text says that the course knows, written as a placeholder that `Chapter.text` fills in, so
# the number read is the number that is true: {{tests}} the track's catalog tests, {{pitfalls}} the
# chapter's pitfalls, and of a string in a fixture (FILE:KEY.KEY, fixtures/<chapter>/FILE, JSON)
# {{bytes FILE:PATH}} its size in UTF-8 bytes, {{reads FILE:PATH N}} how many reads of N bytes it
# takes, {{event_read FILE:PATH N K}} the read after which its K-th event (a blank line) is complete.
# Numbers of four digits or more are written with a comma ("1,006"). A placeholder that cannot be
# filled stays as written, and `course verify` names it (fact_problems).
FACT = re.compile(r"\{\{\s*([a-z_]+)((?:\s+[^\s{}]+)*)\s*\}\}")


def fact(chapter: "Chapter", language: str, name: str, args: list[str]) -> int:
    """The value of one placeholder; ValueError (saying why) when it names nothing the course knows."""
    if name == "tests" and not args:
        track = chapter.tracks.get(language or DEFAULT_LANGUAGE)
        return len(track.catalog) if track is not None and track.catalog else len(chapter.catalog)
    if name == "pitfalls" and not args:
        return len(chapter.pitfalls)
    sizes = {"bytes": 1, "reads": 2, "event_read": 3}
    if name not in sizes:
        raise ValueError(f"unknown placeholder {name!r} (tests, pitfalls, bytes, reads, event_read)")
    if len(args) != sizes[name] or not all(a.isdigit() and int(a) > 0 for a in args[1:]):
        raise ValueError(f"{name} takes FILE:PATH" + " N" * (sizes[name] > 1) + " K" * (sizes[name] > 2)
                         + " (N, K whole numbers from 1)")
    data = _fixture_string(chapter, args[0]).encode("utf-8")
    if name == "bytes":
        return len(data)
    size = int(args[1])
    if name == "reads":
        return -(-len(data) // size)
    ends = [m.end() for m in re.finditer(b"\r\n\r\n|\n\n|\r\r", data)]
    if int(args[2]) > len(ends):
        raise ValueError(f"{args[0]} has {len(ends)} events, not {args[2]}")
    return -(-ends[int(args[2]) - 1] // size)


def _fixture_string(chapter: "Chapter", where: str) -> str:
    import json

    file, _, path = where.partition(":")
    source = content.fixtures_dir(chapter.id) / file
    try:
        value: Any = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read fixtures/{chapter.id}/{file} as JSON: {exc}") from None
    for key in path.split(".") if path else []:
        if not isinstance(value, dict) or key not in value:
            raise ValueError(f"fixtures/{chapter.id}/{file} has nothing at {path!r}")
        value = value[key]
    if not isinstance(value, str):
        raise ValueError(f"fixtures/{chapter.id}/{file} holds no string at {path!r}")
    return value


def render_facts(text: str, chapter: "Chapter", language: str = "") -> str:
    """The text with every placeholder the course can fill filled (see FACT)."""
    def filled(match: re.Match) -> str:
        try:
            return f"{fact(chapter, language, match.group(1), match.group(2).split()):,}"
        except ValueError:
            return match.group(0)

    return FACT.sub(filled, text) if "{{" in text else text


_HEADING = re.compile(r"(#{2,3}) +(?:(\d+(?:\.\d+)*)\.? +)?(.*?)[ #]*")


def _blocks(text: str) -> tuple[str, list[tuple[str, str, str]]]:
    """(the opening, before the first section heading; [(level, key, block)]): each block runs from
    its "##" or "###" heading to the next one, whatever its level. A heading's key is its number
    ("2.2" for "### 2.2 Server-sent events"), or its title when it has none ("Reading the body");
    lines inside fenced code are no headings."""
    lines = text.splitlines(keepends=True)
    starts: list[tuple[int, str, str]] = []  # (line, level, key)
    fence = ""
    for i, line in enumerate(lines):
        stripped = line.strip()
        if fence:
            fence = "" if stripped.startswith(fence) else fence
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        heading = _HEADING.fullmatch(line.rstrip("\n"))
        if heading:
            starts.append((i, heading.group(1), heading.group(2) or heading.group(3)))
    bounds = [line for line, _, _ in starts] + [len(lines)]
    opening = "".join(lines[: bounds[0]])
    return opening, [(level, key, "".join(lines[bounds[n]: bounds[n + 1]])) for n, (_, level, key) in enumerate(starts)]


def _with_sections(text: str, override: str) -> str:
    """text with each section of override put in place of the one of the same key: the same number
    ("## 4." replaces section 4), or for a heading without a number the same title. A "##" replaces
    its section with the subsections under it; a "###", that subsection alone. override's opening,
    when it has one, replaces the opening after the title line."""
    opening, blocks = _blocks(text)
    new_opening, new_blocks = _blocks(override)
    replacing: dict[str, str] = {}
    section = ""  # the key of the override's "##" whose subsections follow
    for level, key, block in new_blocks:
        if level == "###" and _under(section, key):
            replacing[section] += block.rstrip() + "\n\n"
            continue
        section = key if level == "##" else ""
        replacing[key] = block.rstrip() + "\n\n"
    if new_opening.strip():
        title, _, _ = opening.partition("\n")
        opening = title + "\n\n" + new_opening.strip() + "\n\n"
    out, replaced = [opening], ""
    for level, key, block in blocks:
        if level == "###" and _under(replaced, key):
            continue  # a subsection of a section replaced whole
        replaced = ""
        if key in replacing:
            out.append(replacing.pop(key))
            replaced = key if level == "##" else ""
        else:
            out.append(block)
    return "".join(out).rstrip() + "\n"


def section_of(text: str, wanted: str) -> str | None:
    """The section of a chapter's text a learner asks for (`course show ag01 2.2`): by its number
    ("3" is "## 3." with its subsections, "2.2" the subsection alone), or by the start of its title,
    case aside ("fail closed"); None when there is no such section."""
    _, blocks = _blocks(text)
    want = wanted.strip().rstrip(".").lower()
    for n, (level, key, block) in enumerate(blocks):
        title = _HEADING.fullmatch(block.splitlines()[0]).group(3).lower()
        if key.lower() == want or (not want[:1].isdigit() and title.startswith(want)):
            out = [block]
            if level == "##":  # its subsections come with it
                for deeper, _, more in blocks[n + 1:]:
                    if deeper == "##":
                        break
                    out.append(more)
            return "".join(out).rstrip() + "\n"
    return None


def section_names(text: str) -> list[str]:
    """What `course show CH SECTION` takes: each section's number, or its title where it has none."""
    return [key for _, key, _ in _blocks(text)[1]]


def _under(section: str, key: str) -> bool:
    """Whether the "###" of `key`, coming after the "##" of `section` (no "##" in between), is one of
    its subsections: "2.1" is under "2" and not under "3"; a title is under a title."""
    if not section:
        return False
    if section[0].isdigit():
        return key.startswith(section + ".")
    return not key[:1].isdigit()


def normalize_id(text: str) -> str:
    """Forgiving ids: 'XY-07', 'xy.07' and 'xy07' all normalize to 'xy07'."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _chapter_folders() -> list[Path]:
    base = content.chapters_dir()
    return sorted(p for p in base.iterdir() if (p / "chapter.yaml").is_file()) if base.is_dir() else []


@lru_cache(maxsize=None)
def load_all() -> tuple[Chapter, ...]:
    chapters = [load_folder(folder) for folder in _chapter_folders()]
    return tuple(sorted(chapters, key=lambda c: (c.order, c.id)))


def get(chapter_id: str) -> Chapter:
    """One chapter, by a forgiving spelling of its id; only its own manifest is read."""
    wanted = normalize_id(chapter_id)
    folders = _chapter_folders()
    for folder in folders:
        if normalize_id(folder.name) == wanted:
            return load_folder(folder)
    known = ", ".join(f.name for f in folders) or "none"
    raise UnknownChapter(f"unknown chapter {chapter_id!r}; the chapters are: {known}")


@lru_cache(maxsize=None)
def load_folder(folder: Path) -> Chapter:
    raw = _read_manifest(folder / "chapter.yaml", folder.name)
    check_format(raw, folder.name)
    chapter = parse(raw, where=folder.name, folder=folder)
    if chapter.id != folder.name:
        raise ManifestError(f"chapter {folder.name}: its manifest says id {chapter.id!r}; the folder must be named after the id")
    return chapter


def _read_manifest(path: Path, where: str) -> Any:
    """The manifest's data. Every command reads a manifest, and building the data of a large one
    from YAML costs more than the rest of a short command's start: it comes from the user's cache
    when the manifest's bytes are unchanged (see course.cache.parsed)."""
    from course import cache

    def from_yaml(data: bytes) -> Any:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser is ten times faster
        try:
            return yaml.load(data.decode("utf-8"), Loader=loader)  # noqa: S506 - a safe loader
        except UnicodeDecodeError as exc:
            raise ManifestError(f"chapter {where}: {path.name} is not UTF-8 text: {exc}") from None
        except yaml.YAMLError as exc:
            raise ManifestError(f"chapter {where}: {path.name} is not valid YAML: {exc}") from None

    return cache.parsed("manifests", path.read_bytes(), from_yaml)


def check_format(raw: Any, where: str) -> None:
    """A manifest must say which format it is written in, and it must be the one this course reads."""
    version = raw.get("format_version") if isinstance(raw, dict) else None
    if version == FORMAT_VERSION:
        return
    said = "has no format_version" if version is None else f"is in format_version {version!r}"
    newer = isinstance(version, int) and version > FORMAT_VERSION
    raise ManifestError(f"chapter {where}: its manifest {said}; this course reads format_version {FORMAT_VERSION}"
                        + ("; upgrade course" if newer else ""))


class Fields:
    """Reads one mapping of the manifest, naming chapter, entry and field in any error."""

    def __init__(self, raw: Any, where: str) -> None:
        if not isinstance(raw, dict):
            raise ManifestError(f"{where}: expected a mapping, got {type(raw).__name__}")
        self.raw = raw
        self.where = where

    def get(self, name: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
        if name not in self.raw or self.raw[name] is None:
            if default is ...:
                raise ManifestError(f"{self.where}: missing field {name!r}")
            return default
        value = self.raw[name]
        numeric = kind is int or (isinstance(kind, tuple) and int in kind)
        if not isinstance(value, kind) or (numeric and isinstance(value, bool)):
            want = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise ManifestError(f"{self.where}: field {name!r} must be {want}, got {value!r}")
        return value

    def strings(self, name: str, default: Any = ...) -> tuple[str, ...]:
        values = self.get(name, list, default)
        bad = [v for v in values if not isinstance(v, str) or not v]
        if bad:
            raise ManifestError(f"{self.where}: field {name!r} must list non-empty strings, got {bad[0]!r}")
        return tuple(values)


def _stated_in(f: Fields, name: str) -> tuple[tuple[str, str], ...]:
    places = []
    for i, item in enumerate(f.get("stated_in", list, [])):
        (kind, where), *more = item.items() if isinstance(item, dict) and item else [(None, None)]
        if more or kind not in STATED_IN or not isinstance(where, str) or not where.strip():
            raise ManifestError(f"{f.where} ({name}): stated_in item #{i + 1} must be "
                                f"'section: HEADING' or 'docstring: FILE::NAME', got {item!r}")
        places.append((kind, where))
    return tuple(places)


def _track_hints(f: "Fields", names: set[str]) -> dict[str, tuple[str, ...]]:
    raw = f.get("hints", dict, {})
    hints = {}
    for name in raw:
        if name not in names:
            raise ManifestError(f"{f.where}: hints for {name!r}, which is not in the catalog")
        hints[name] = Fields(raw, f"{f.where}, hints").strings(name)
    return hints


def _track_checks(f: "Fields", names: set[str]) -> dict[str, str]:
    raw = f.get("checks", dict, {})
    for name in raw:
        if name not in names:
            raise ManifestError(f"{f.where}: checks for {name!r}, which is not in the catalog")
    return {name: Fields(raw, f"{f.where}, checks").get(name, str) for name in raw}


def _demonstration(top: Fields) -> tuple[DemoOption, ...]:
    """The demonstration's options: `demonstration: {options: [{name, value, choices, help}]}`."""
    section = Fields(top.get("demonstration", dict, {}), f"{top.where}, demonstration")
    options = []
    for i, item in enumerate(section.get("options", list, [])):
        f = Fields(item, f"{section.where}, option #{i + 1}")
        option = DemoOption(name=f.get("name", str), value=f.get("value", str, ""), choices=f.strings("choices", ()),
                            help=f.get("help", str, ""))
        if not re.fullmatch(r"[a-z][a-z0-9-]*", option.name):
            raise ManifestError(f"{f.where}: name {option.name!r} must be a word of lower-case letters, digits and -")
        if option.choices and not option.value:
            raise ManifestError(f"{f.where} ({option.name}): choices need a value (what the option takes)")
        options.append(option)
    return tuple(options)
def _track_places(f: "Fields") -> dict[int, tuple[str, ...]]:
    raw = f.get("places", dict, {})
    places = {}
    for pitfall in raw:
        if not isinstance(pitfall, int) or isinstance(pitfall, bool):
            raise ManifestError(f"{f.where}: places are listed by pitfall number, got {pitfall!r}")
        places[pitfall] = Fields(raw, f"{f.where}, places").strings(pitfall)
    return places


def parse(raw: Any, *, where: str, folder: Path = Path()) -> Chapter:
    top = Fields(raw, f"chapter {where}")
    chapter_id = top.get("id", str)
    where = f"chapter {chapter_id}"
    top.where = where

    pitfalls = tuple(
        Pitfall(
            id=f.get("id", int),
            title=f.get("title", str),
            symptom=f.get("symptom", str, ""),
        )
        for i, item in enumerate(top.get("pitfalls", list, []))
        for f in [Fields(item, f"{where}, pitfall #{i + 1}")]
    )
    catalog = []
    for i, item in enumerate(top.get("catalog", list)):
        f = Fields(item, f"{where}, catalog entry #{i + 1}")
        entry = CatalogEntry(
            name=f.get("name", str),
            kind=f.get("kind", str),
            checks=f.get("checks", str),
            why=f.get("why", str),
            weight=float(f.get("weight", (int, float), 1)),
            task=f.get("task", int, 0),
            stated_in=_stated_in(f, f.get("name", str)),
            hints=f.strings("hints", ()),
            timing_sensitive=f.get("timing_sensitive", bool, False),
        )
        if entry.weight < 0 or entry.weight != entry.weight:
            raise ManifestError(f"{f.where} ({entry.name}): field 'weight' must be a number of points, 0 or more")
        if entry.task < 0:
            raise ManifestError(f"{f.where} ({entry.name}): field 'task' must be a task number, 1 or more")
        if entry.kind not in KINDS:
            raise ManifestError(f"{f.where} ({entry.name}): field 'kind' must be one of {', '.join(KINDS)}")
        catalog.append(entry)

    tracks = {}
    for language, body in top.get("tracks", dict).items():
        f = Fields(body, f"{where}, track {language}")
        mutants = []
        for i, item in enumerate(f.get("mutants", list, [])):
            m = Fields(item, f"{where}, track {language}, mutant #{i + 1}")
            mutant = Mutant(
                id=m.get("id", str),
                pitfall=m.get("pitfall", int, None),  # null or left out: a bug of no pitfall
                description=m.get("description", str),
                file=m.get("file", str),
                caught_by=m.strings("caught_by"),
                find=m.get("find", str, ""),
                replace=m.get("replace", str, ""),
                diff=m.get("diff", str, ""),
            )
            if not mutant.find and not mutant.diff:
                raise ManifestError(f"{m.where} ({mutant.id}): needs 'find' and 'replace', or 'diff'")
            mutants.append(mutant)
        tracks[language] = Track(
            chapter_id=chapter_id,
            language=language,
            files=f.strings("files"),
            given=f.strings("given", ()),
            run=f.get("run", str, ""),
            services=f.strings("services", ()),
            run_services=f.strings("run_services", ()),
            mutants=tuple(mutants),
            options={k: v for k, v in body.items() if k not in TRACK_FIELDS},
            selftest=f.get("selftest", str, ""),
            hints=_track_hints(f, {e.name for e in catalog}),
            checks=_track_checks(f, {e.name for e in catalog}),
            coverage_floor=float(f.get("coverage_floor", (int, float), 100)),
            catalog=f.strings("catalog", ()),
            places=_track_places(f),
        )
        if not 0 <= tracks[language].coverage_floor <= 100:
            raise ManifestError(f"{f.where}: field 'coverage_floor' must be a percentage, 0 to 100")

    return Chapter(
        demonstration=_demonstration(top),
        id=chapter_id,
        title=top.get("title", str),
        order=top.get("order", int, 0),
        summary=top.get("summary", str, ""),
        catalog=tuple(catalog),
        pitfalls=pitfalls,
        tracks=tracks,
        folder=folder,
    )
