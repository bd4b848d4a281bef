"""What the TypeScript track runs on: `node` on PATH (20.3 or newer), and the tools pinned in
toolchain/package-lock.json (the TypeScript compiler, Node's types, the reader of V8 coverage),
installed once with `npm ci` into the user's cache and used from there, offline, afterwards.

Learners' code needs none of these tools at run time: its package has no dependencies.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from course import cache
from course.errors import ToolMissing

MINIMUM = (20, 3)  # AbortSignal.any, which the reference's provider uses, came in Node 20.3
INSTALL = "install Node.js 20.3 or newer (npm comes with it) from https://nodejs.org/ and put it on PATH"
PINNED = Path(__file__).with_name("toolchain")  # package.json and package-lock.json of the tools
INSTALL_LIMIT = 900.0


@dataclass(frozen=True)
class Toolchain:
    node: str  # the node command
    version: str  # "20.20.2"
    tools: Path  # the folder holding the installed tools' node_modules

    @property
    def tsc(self) -> list[str]:
        """The compiler's command: TypeScript 7's native binary, run directly (no node in between)."""
        native = sorted((self.tools / "node_modules" / "@typescript").glob("typescript-*/lib/tsc"))
        if native:
            return [str(native[0])]
        return [self.node, str(self.tools / "node_modules" / "typescript" / "bin" / "tsc")]

    @property
    def typescript(self) -> str:
        """The pinned compiler's version ("7.0.2")."""
        try:
            return json.loads((self.tools / "node_modules" / "typescript" / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            return "unknown"


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment node runs in: the learner's, without what would make a check depend on more
    than their code and the catalog (options and module paths of their own shell)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NODE_OPTIONS", "NODE_PATH", "NODE_V8_COVERAGE")}
    env.update(extra or {})
    return env


@lru_cache(maxsize=1)
def find() -> Toolchain:
    node = shutil.which("node")
    if node is None:
        raise ToolMissing(f"the TypeScript track needs Node.js, and there is no `node` on PATH: {INSTALL}")
    return Toolchain(node=node, version=_version(node), tools=install(PINNED, node, what="the TypeScript track's pinned tools"))


def _version(node: str) -> str:
    """node's version, asked once per node binary (the answer is kept in the user's cache)."""
    key = f"{os.path.realpath(node)}:{os.stat(node).st_mtime_ns}"
    known = cache.read_json(cache.folder() / "node-toolchain.json")
    if isinstance(known, dict) and known.get("key") == key and isinstance(known.get("version"), str):
        return known["version"]
    try:
        done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60, check=False,
                              env=environment())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolMissing(f"`{node} --version` did not answer ({exc}): {INSTALL}") from None
    found = re.match(r"v(\d+)\.(\d+)\.(\d+)", done.stdout.strip())
    if done.returncode != 0 or found is None:
        raise ToolMissing(f"`{node}` did not say its version: {INSTALL}")
    if (int(found.group(1)), int(found.group(2))) < MINIMUM:
        raise ToolMissing(f"the TypeScript track needs Node.js 20.3 or newer; `{node}` is {found.group(0)}: {INSTALL}")
    version = found.group(0)[1:]
    cache.write_json(cache.folder() / "node-toolchain.json", {"key": key, "version": version})
    return version


def install(pinned: Path, node: str, *, what: str) -> Path:
    """The packages a lockfile pins (`pinned` holds package.json and package-lock.json), in a folder of
    the user's cache named by the lockfile's digest: installed by `npm ci` for the first command that
    needs them (others wait for it), whole or not at all, and used offline from then on."""
    lock = (pinned / "package-lock.json").read_bytes()
    digest = hashlib.sha256(lock + (pinned / "package.json").read_bytes()).hexdigest()[:16]
    home = cache.folder() / "typescript-tools"
    folder = home / digest
    if (folder / ".installed").is_file():
        return folder
    home.mkdir(parents=True, exist_ok=True)
    with open(home / f"{digest}.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if (folder / ".installed").is_file():  # another command installed it while we waited
            return folder
        npm = shutil.which("npm") or (str(Path(node).with_name("npm")) if Path(node).with_name("npm").is_file() else None)
        if npm is None:
            raise ToolMissing(f"the TypeScript track installs {what} once with npm, and there is no `npm` on PATH: {INSTALL}")
        print(f"course: installing {what} into {folder} (once)", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix=".install-", dir=home) as tmp:
            for name in ("package.json", "package-lock.json"):
                shutil.copy2(pinned / name, Path(tmp) / name)
            try:
                done = subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                                      cwd=tmp, capture_output=True, text=True, timeout=INSTALL_LIMIT, check=False,
                                      env=environment())
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise ToolMissing(f"`npm ci` of {what} did not finish ({exc}); "
                                  "run the command again where the npm registry is reachable") from None
            if done.returncode != 0:
                said = (done.stderr.strip().splitlines() or ["no output"])[-1]
                raise ToolMissing(f"`npm ci` of {what} failed ({said}); "
                                  "run the command again where the npm registry is reachable")
            (Path(tmp) / ".installed").write_text(f"npm ci of {pinned}\n")
            shutil.rmtree(folder, ignore_errors=True)  # half of an install a killed command left
            os.replace(tmp, folder)
            os.mkdir(tmp)  # for TemporaryDirectory to remove
    return folder
