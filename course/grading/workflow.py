"""The GitHub Actions workflow a learner's repository receives with `course start --ci github`: on
every push it runs `course check --json results.json` and uploads the file, so an instructor builds
the class gradebook from the artifacts (`course grade --from-results DIR`) instead of re-running 500
checks on one machine."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

WORKFLOWS = {"github": (".github/workflows/course.yml", "github-workflow.yml")}


def text(ci: str) -> str:
    return resources.files("course.grading").joinpath(WORKFLOWS[ci][1]).read_text(encoding="utf-8")


def target(ci: str) -> Path:
    return Path(WORKFLOWS[ci][0])
