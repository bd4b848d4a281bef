"""The GitHub Actions workflow a learner's repository receives with `course start --ci github --from
SOURCE`: on every push it runs `course check --json results.json` and uploads the file, so an
instructor builds the class gradebook from the artifacts (`course grade --from-results DIR`) instead
of re-running 500 checks on one machine.

What the workflow installs is written into it, from the one source the instructor names: a git URL
at a tag or commit, or a wheel's URL with its sha256 (pip checks it). Nothing resolves a bare name on
a public index, where whoever claims the name would run code in every learner's CI. The actions it
uses are pinned to commit SHAs (their version in a comment), so a moved tag changes nothing either.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from course.errors import UsageError

WORKFLOWS = {"github": (".github/workflows/course.yml", "github-workflow.yml")}

FORMS = ("a git URL at a tag or commit (git+https://host/org/course.git@v1), or a wheel's URL with its "
         "sha256 (https://host/course-0.1.0-py3-none-any.whl#sha256=HEX, HEX from `sha256sum`)")
# Only characters that mean nothing to a shell or to GitHub's ${{ }} expressions: the source is written
# into a `run:` line as it is.
_URL = r"[A-Za-z0-9._~:/%+=?&-]+"
_GIT = re.compile(rf"^git\+https://{_URL}@(?P<ref>[A-Za-z0-9][A-Za-z0-9._/-]*)$")
_WHEEL = re.compile(rf"^https://{_URL}\.whl#sha256=(?P<hash>[0-9a-f]{{64}})$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class Source:
    """Where the learners' CI installs the course from."""

    requirement: str  # what pip installs: "course @ <url>"
    note: str  # one line for the workflow's comments: how firmly it is pinned


def source(text: str) -> Source:
    """The source an instructor names with --from; UsageError for anything else (a bare name, a
    version on an index, plain http, a git URL without a ref, a wheel without its hash)."""
    text = text.strip()
    git = _GIT.match(text)
    if git:
        pinned = "a commit: it cannot change" if _COMMIT.match(git["ref"]) else \
            "a tag: it could be moved, a commit SHA could not"
        return Source(f"course @ {text}", f"git, at {pinned}")
    if _WHEEL.match(text):
        return Source(f"course @ {text}", "a wheel, checked against its sha256 by pip")
    if text.startswith("git+") and "@" not in text.split("//", 1)[-1]:
        raise UsageError(f"--from {text}: name the tag or commit to install (…/course.git@v1): a branch's "
                         f"head changes under the learners")
    if text.endswith(".whl") and text.startswith("https://"):
        raise UsageError(f"--from {text}: add the wheel's sha256 (#sha256=HEX, HEX from `sha256sum` of the file) "
                         f"so that pip refuses any other file")
    raise UsageError(f"--from {text!r} is not a source the course can be pinned to: give {FORMS}")


def own_source() -> Source | None:
    """This course's own origin, when it was installed from one a workflow can pin (PEP 610's
    direct_url.json: a git URL at its commit, or a wheel's URL with its sha256); None otherwise."""
    from importlib import metadata

    try:
        raw = metadata.distribution("course").read_text("direct_url.json")
        doc = json.loads(raw) if raw else None
    except (metadata.PackageNotFoundError, ValueError, OSError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("url"), str):
        return None
    url = doc["url"]
    vcs = doc.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs") == "git" and url.startswith("https://"):
        commit = vcs.get("commit_id")
        return source(f"git+{url}@{commit}") if isinstance(commit, str) and _COMMIT.match(commit) else None
    archive = doc.get("archive_info")
    if isinstance(archive, dict) and url.startswith("https://") and url.endswith(".whl"):
        hashes = archive.get("hashes") if isinstance(archive.get("hashes"), dict) else {}
        digest = hashes.get("sha256") or (archive.get("hash", "").partition("sha256=")[2] or None)
        return source(f"{url}#sha256={digest}") if digest else None
    return None


def text(ci: str, origin: Source) -> str:
    template = resources.files("course.grading").joinpath(WORKFLOWS[ci][1]).read_text(encoding="utf-8")
    return template.replace("{{ requirement }}", origin.requirement).replace("{{ pinned }}", origin.note)


def target(ci: str) -> Path:
    return Path(WORKFLOWS[ci][0])
