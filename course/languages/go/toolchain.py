"""The Go toolchain the Go track needs: `go` on PATH, version 1.22 or newer, asked once per command."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from course import cache
from course.errors import ToolMissing

MINIMUM = (1, 22)
INSTALL = "install Go 1.22 or newer from https://go.dev/dl/ and put its bin folder on PATH"


@dataclass(frozen=True)
class Toolchain:
    go: str  # the go command
    version: str  # "go1.26.8"
    test2json: str  # the converter of test output into JSON events, run directly (no go command in between)


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every go command and test binary runs in: the learner's, except what would
    make a check depend on more than their code and the catalog."""
    env = dict(os.environ)
    env.update({
        "GOTOOLCHAIN": "local",  # never download another toolchain because a go.mod asks for one
        "GOWORK": "off",  # a go.work elsewhere in the learner's tree must not change what is built
        "GOFLAGS": "-buildvcs=false",  # the learner's GOFLAGS (say -mod=vendor) must not either
    })
    env.update(extra or {})
    return env


@lru_cache(maxsize=1)
def find() -> Toolchain:
    go = shutil.which("go")
    if go is None:
        raise ToolMissing(f"the Go track needs Go, and there is no `go` on PATH: {INSTALL}")
    # asking go costs a few hundred milliseconds a command: the answer is kept, for this go binary
    key = f"{os.path.realpath(go)}:{os.stat(go).st_mtime_ns}"
    known = cache.read_json(_cache_file())
    try:
        if known.get("key") == key and Path(known["test2json"]).is_file():
            return Toolchain(go=go, version=known["version"], test2json=known["test2json"])
    except (AttributeError, KeyError, TypeError):
        pass  # absent or not ours: ask
    found = _ask(go)
    cache.write_json(_cache_file(), {"key": key, "version": found.version, "test2json": found.test2json})
    return found


def _cache_file() -> Path:
    return cache.folder() / "go-toolchain.json"


def _ask(go: str) -> Toolchain:
    try:
        done = subprocess.run([go, "env", "GOVERSION", "GOTOOLDIR"], capture_output=True, text=True,
                              env=environment(), timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolMissing(f"`{go} env` did not answer ({exc}): {INSTALL}") from None
    lines = done.stdout.split("\n")
    version = lines[0].strip() if done.returncode == 0 and lines else ""
    found = re.match(r"go(\d+)\.(\d+)", version)
    if found is None:
        said = (done.stderr.strip().splitlines() or ["no version"])[-1]
        raise ToolMissing(f"`{go}` did not say its version ({said}): {INSTALL}")
    if (int(found.group(1)), int(found.group(2))) < MINIMUM:
        raise ToolMissing(f"the Go track needs Go 1.22 or newer; `{go}` is {version}: {INSTALL}")
    test2json = Path(lines[1].strip()) / "test2json"
    if not test2json.is_file():  # since Go 1.24 some tools are built on first use, into the build cache
        built = subprocess.run([go, "tool", "-n", "test2json"], capture_output=True, text=True,
                               env=environment(), timeout=300, check=False)
        test2json = Path(built.stdout.strip())
        if built.returncode != 0 or not test2json.is_file():
            said = (built.stderr.strip().splitlines() or ["no path"])[-1]
            raise ToolMissing(f"{version} could not provide its test2json tool ({said}): {INSTALL}")
    return Toolchain(go=go, version=version, test2json=str(test2json))
