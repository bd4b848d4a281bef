"""Learner code in a sandbox: `course grade` (always) and `course check --sandbox` run the check inside
bubblewrap (`bwrap`: Flatpak's sandbox, the Debian package `bubblewrap`), on a copy of the learner's
repository made inside the sandbox. The isolation is bubblewrap's and the kernel's; this module only
chooses the flags, and says below why each one is there.

What the code in the sandbox sees:

- The machine read-only (`--ro-bind / /`): the interpreter, the toolchains, the harness and the course's
  content are where they are outside, and none of it can be changed.
- Hidden (an empty read-only folder in their place): the homes, /run, /var/tmp, /mnt, /media, the
  password hashes and ssh keys of /etc, and whatever the caller adds (a roster's folder: the other
  learners' work). Secrets live there, and so do sockets (Docker's, an ssh or gpg agent's, a session
  bus): a socket on a read-only mount still accepts connections. What the check itself needs from a
  hidden folder is put back read-only: the harness, the content, the Python installation and its
  import path, each folder on PATH (with the toolchain around a `bin` folder), and the user's cache
  folder (warm build caches; the sandbox cannot write them).
- One writable place, /tmp, a tmpfs of `Limits.disk` bytes: the copy of the repository (/tmp/repo), the
  run's temporary files, whatever its tests build; /dev/shm is a further tmpfs of `Limits.shm`. Both
  vanish with the sandbox, so nothing written there outlives the run. HOME is /tmp/home.
- No network but its own loopback (`--unshare-net`): the servers a catalog starts on 127.0.0.1 work,
  and nothing else can be reached.
- Its own process, IPC and host-name namespaces; a new session, so it cannot push keystrokes into the
  terminal; no capabilities (`--cap-drop ALL`: bubblewrap run by root keeps them otherwise, and root
  without them is bound by the read-only mounts); it dies with the process that started it.
- Only the environment variables of ENVIRONMENT (plus those the instructor names in
  COURSE_SANDBOX_ENV): API keys and tokens stay outside.
- Limits (`Limits`, below, with their defaults): address space written per process (RLIMIT_DATA:
  what a process has written or may write, not the virtual space a runtime reserves), CPU seconds per
  process (RLIMIT_CPU), bytes per file (RLIMIT_FSIZE), the total on disk (the tmpfs's size),
  processes and threads at once (RLIMIT_NPROC; the kernel does not apply it to root, so when root
  runs the sandbox a pids cgroup of its own holds the same limit where one can be made).

Inside, `python -m course.sandbox SPEC` copies the repository, sets the limits and runs the check;
the files the caller asked for (results.json) come back through a pipe the check never holds (its
holder is not dumpable, so no other process of the sandbox can open it through /proc), with the
exit code and the limits the run reached.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from course import cache, content
from course.errors import ToolMissing

TOOL = "bwrap"
INSTALL = "apt-get install bubblewrap"
MiB = 2**20

# Inside the sandbox: the one writable folder and where things are in it.
TMP = "/tmp"
SOURCE = "/tmp/source"  # the learner's repository, read-only
COPY = "/tmp/repo"  # the copy the check runs on
HOME = "/tmp/home"
CACHE = "/tmp/cache"  # the course's cache folder (its builds)
OUT = "/tmp/out"  # where the check writes the files brought back

# Left out of the copy: version control and caches are not the learner's code, and can be large.
LEFT_BEHIND = (".git", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache", ".pytest_cache")

# The environment the sandbox keeps: what the harness and the toolchains read to behave, never a
# credential. Names ending in "*" are prefixes.
ENVIRONMENT = ("PATH", "LANG", "LANGUAGE", "LC_*", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "COLUMNS",
               "LINES", "TZ", "COURSE_*", "PYTHONPATH", "PYTHONHASHSEED", "PYTHONUTF8", "PYTHONIOENCODING",
               "PYTHONDONTWRITEBYTECODE")
EXTRA_ENVIRONMENT = "COURSE_SANDBOX_ENV"  # more names to keep, separated by spaces or commas
HIDDEN = ("/home", "/root", "/run", "/var/tmp", "/mnt", "/media", "/srv")
HIDDEN_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/ssh", "/etc/sudoers",
                "/etc/sudoers.d")
MAX_BROUGHT = 32 * MiB  # the most of one file brought back out
OUT_SIZE = 64 * MiB  # the folder of the files brought back out, a tmpfs of its own
# What a write into a full disk fails with, in the words of every track's runtime (Python's OSError,
# Go's syscall.ENOSPC, Node's ENOSPC error), lowercased
DISK_FULL_ERROR = os.strerror(errno.ENOSPC).lower()


# An instructor's setting (a lab machine's environment): "1" (or "true", "yes") makes every `course
# check` run in the sandbox unless --no-sandbox says otherwise.
VARIABLE = "COURSE_SANDBOX"


def asked(flag: bool | None) -> bool:
    """Whether a check runs in the sandbox: --sandbox or --no-sandbox when given, else the setting."""
    if flag is not None:
        return flag
    return os.environ.get(VARIABLE, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Limits:
    """What one sandboxed run may use; each figure is a default the instructor may change."""

    disk: int = 512 * MiB  # everything written: the copy, temporary files, builds (the size of /tmp)
    shm: int = 64 * MiB  # /dev/shm (shared memory, semaphores), besides
    memory: int = 2048 * MiB  # per process: its written memory (RLIMIT_DATA)
    processes: int = 256  # processes and threads at once (RLIMIT_NPROC, or a pids cgroup for root)
    cpu: int = 600  # CPU seconds per process (RLIMIT_CPU); a test's wall-clock timeout comes first
    file: int = 64 * MiB  # bytes per file (RLIMIT_FSIZE)
    copy: int = 200 * MiB  # a repository larger than this is not copied

    def describe(self) -> str:
        return (f"{self.disk // MiB} MiB on disk, {self.memory // MiB} MiB of memory per process, "
                f"{self.processes} processes, {self.cpu} CPU seconds per process, {self.file // MiB} MiB per file")


def tool() -> str:
    """The bwrap command, or ToolMissing with the line that installs it."""
    found = shutil.which(TOOL)
    if found is None:
        raise ToolMissing(f"the sandbox needs bubblewrap, and there is no `{TOOL}` on PATH: `{INSTALL}`")
    return found


@lru_cache(maxsize=1)
def unusable() -> str:
    """Why bubblewrap cannot make a sandbox here ("" when it can): missing, or the kernel refuses it
    the namespaces it needs (user namespaces forbidden to ordinary users, a container's seccomp)."""
    try:
        bwrap = tool()
    except ToolMissing as exc:
        return exc.message
    try:
        done = subprocess.run([bwrap, *_isolation(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                               "--", "true"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`{TOOL}` did not run: {exc}"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        return f"`{TOOL}` cannot make a sandbox here: {said}"
    return ""


def _isolation() -> list[str]:
    return ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try",
            "--cap-drop", "ALL", "--die-with-parent", "--new-session"]


@dataclass
class Outcome:
    """What a sandboxed run gave: the command's exit code (None when it never ran to its end), the
    files brought back, the limits it reached, or why there is nothing to judge."""

    exit_code: int | None = None
    files: dict[str, str] = field(default_factory=dict)
    reached: list[str] = field(default_factory=list)  # "the disk limit (512 MiB)"
    problem: str = ""


class Sandbox:
    """One command run in a sandbox, on a copy of `source` (None: no copy; the command runs in /tmp).

    `bring` maps a name to a path inside the sandbox (under OUT) whose content comes back in
    Outcome.files; `chdir` is the folder of the copy the command starts in. start() gives the bwrap
    process (its own process group: signal the group to stop it); outcome() waits for what it sent.
    """

    def __init__(self, argv: list[str], *, source: Path | None, limits: Limits = Limits(), chdir: str = "",
                 bring: Mapping[str, str] | None = None, hide: tuple[Path, ...] = (),
                 env: Mapping[str, str] | None = None) -> None:
        self.argv = list(argv)
        self.source = source
        self.limits = limits
        self.chdir = chdir
        self.bring = dict(bring or {})
        self.hide = hide
        self.env = dict(os.environ if env is None else env)
        self._cgroup: Path | None = None
        self._received = b""
        self._reader: threading.Thread | None = None

    def command(self, fd: int) -> list[str]:
        spec = {"fd": fd, "source": SOURCE if self.source else None, "copy": COPY, "chdir": self.chdir,
                "bring": self.bring, "limits": asdict(self.limits), "argv": self.argv,
                "nproc": self._cgroup is None}
        return [tool(), *_isolation(), *self._mounts(), "--chdir", TMP, "--",
                sys.executable, "-m", "course.sandbox", json.dumps(spec)]

    def environment(self) -> dict[str, str]:
        names = ENVIRONMENT + tuple(self.env.get(EXTRA_ENVIRONMENT, "").replace(",", " ").split())
        kept = {k: v for k, v in self.env.items()
                if any(k.startswith(n[:-1]) if n.endswith("*") else k == n for n in names)}
        # the user's cache folder as it is outside, read-only (a compiler's cache stays warm: reads
        # only); the course's own, where a check keeps its builds, private and writable
        kept.update({"HOME": HOME, "TMPDIR": TMP, "XDG_CACHE_HOME": _user_cache(), cache.VARIABLE: CACHE})
        # the harness imports itself in the sandbox as it does here (a checkout is not installed)
        kept["PYTHONPATH"] = os.pathsep.join(p for p in (str(content.HARNESS_ROOT), kept.get("PYTHONPATH")) if p)
        return kept

    def start(self, *, stdout: Any = None, stderr: Any = None) -> subprocess.Popen:
        self._cgroup = _pids_cgroup(self.limits.processes)
        read, write = os.pipe()
        cgroup = self._cgroup

        def join_cgroup() -> None:  # in the child, before bwrap starts: everything it starts is counted
            if cgroup is not None:
                with open(cgroup / "cgroup.procs", "w") as procs:
                    procs.write(str(os.getpid()))

        try:
            process = subprocess.Popen(self.command(write), env=self.environment(), stdin=subprocess.DEVNULL,
                                       stdout=stdout, stderr=stderr, pass_fds=(write,), start_new_session=True,
                                       preexec_fn=join_cgroup if cgroup is not None else None)
        except BaseException:
            os.close(read)
            self.close()
            raise
        finally:
            os.close(write)
        self._reader = threading.Thread(target=self._receive, args=(read,), daemon=True)
        self._reader.start()
        return process

    def _receive(self, fd: int) -> None:
        chunks, size = [], 0
        with os.fdopen(fd, "rb") as pipe:
            while chunk := pipe.read(65536):
                size += len(chunk)
                if size <= MAX_BROUGHT * (len(self.bring) + 1):
                    chunks.append(chunk)
        self._received = b"".join(chunks)

    def outcome(self) -> Outcome:
        """After the process has ended: what it sent back, and the limits it reached."""
        if self._reader is not None:
            self._reader.join()
        try:
            sent = json.loads(self._received.decode("utf-8")) if self._received else {}
        except ValueError:
            sent = {}
        outcome = Outcome(exit_code=sent.get("exit"), files=sent.get("files") or {}, problem=sent.get("problem", ""))
        if sent.get("disk_full"):
            outcome.reached.append(f"the disk limit ({self.limits.disk // MiB} MiB)")
        if self._cgroup is not None and _cgroup_hits(self._cgroup):
            outcome.reached.append(f"the process limit ({self.limits.processes})")
        return outcome

    def close(self) -> None:
        """Remove the pids cgroup, once its processes are gone (the kernel ends them with the sandbox)."""
        if self._cgroup is None:
            return
        for _ in range(100):
            try:
                self._cgroup.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)
        self._cgroup = None

    def _mounts(self) -> list[str]:
        hidden = [p for p in (*HIDDEN, *HIDDEN_FILES, str(Path.home()), *map(str, self.hide))
                  if os.path.isdir(p) and not os.path.islink(p) and not _under(p, TMP)  # /tmp is new anyway
                  and os.path.dirname(p.rstrip("/")) != p.rstrip("/")]  # never the root itself
        hidden = sorted({h for h in hidden if not any(h != o and _under(h, o) for o in hidden)})
        args = ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                "--size", str(self.limits.shm), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
        for folder in hidden:
            args += ["--tmpfs", folder]
        for name in HIDDEN_FILES:
            if os.path.isfile(name):  # a file is hidden behind an empty one
                args += ["--ro-bind", "/dev/null", name]
        args += ["--size", str(self.limits.disk), "--tmpfs", TMP]
        # the files brought back out have a place of their own: code that fills the disk still gets
        # its results written, and judged
        args += ["--size", str(OUT_SIZE), "--tmpfs", OUT]
        for path in _needed(self.env):  # put back, read-only, what the check needs from a hidden folder
            if any(path != h and _under(path, h) for h in (*hidden, TMP)):
                args += ["--ro-bind", path, path]
        if self.source is not None:
            args += ["--ro-bind", str(self.source), SOURCE]
        for folder in hidden:
            args += ["--remount-ro", folder]
        return args


def _user_cache() -> str:
    return os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _needed(env: Mapping[str, str]) -> list[str]:
    """What the check reads that may lie in a hidden folder: the harness and the content, the Python
    installation and its import path, the folders on PATH (and the toolchain around a `bin` folder:
    a compiler's standard library sits beside its bin), the user's cache folder. Each both as named
    and as its real path; the outermost of nested ones only."""
    home = os.path.realpath(Path.home())
    found = [str(content.HARNESS_ROOT), str(content.root()), sys.prefix, sys.base_prefix, sys.exec_prefix,
             _user_cache()]
    found += [p for p in sys.path if p and os.path.isabs(p) and os.path.realpath(p) != os.path.realpath(os.getcwd())]
    for folder in env.get("PATH", "").split(os.pathsep):
        if not os.path.isabs(folder):
            continue
        found.append(folder)
        parent = os.path.dirname(os.path.realpath(folder))
        if os.path.basename(folder) == "bin" and parent not in (home, "/", os.path.realpath("/usr")):
            found.append(parent)
    paths = set()
    for path in found:
        for each in (os.path.normpath(path), os.path.realpath(path)):
            if os.path.exists(each):
                paths.add(each)
    return sorted(p for p in paths if not any(p != o and _under(p, o) for o in paths))


# --- processes: a pids cgroup where root runs the sandbox ---------------------------------------------


def _pids_cgroup(limit: int) -> Path | None:
    """A new pids cgroup holding `limit` tasks, for root only (the kernel does not hold root to
    RLIMIT_NPROC): under this process's own cgroup in the v1 pids hierarchy, or in the v2 hierarchy
    when this process sits at its root (a container's usual place). None where neither can be made:
    the run then goes without a process limit, and `process_limit()` says so."""
    if os.geteuid() != 0:
        return None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, where = line.split(":", 2)
        if "pids" in controllers.split(","):
            base = Path("/sys/fs/cgroup/pids") / where.lstrip("/")
        elif controllers == "" and where == "/":
            base = Path("/sys/fs/cgroup")
        else:
            continue
        folder = base / f"course-sandbox-{os.getpid()}-{next(_serial)}"
        try:
            folder.mkdir()
        except OSError:
            continue
        try:
            (folder / "pids.max").write_text(str(limit))
            return folder
        except OSError:
            folder.rmdir()
    return None


def _count() -> Any:
    n = 0
    while True:
        n += 1
        yield n


_serial = _count()


def _cgroup_hits(folder: Path) -> int:
    """How many times a fork failed at the cgroup's limit (pids.events: "max N")."""
    try:
        for line in (folder / "pids.events").read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "max":
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


@lru_cache(maxsize=1)
def process_limit() -> str:
    """How processes are limited here: "" when they are, else why not (one line)."""
    if os.geteuid() != 0:
        return ""
    folder = _pids_cgroup(1)
    if folder is None:
        return ("processes are not limited: run as root, where the kernel ignores RLIMIT_NPROC, and no pids "
                "cgroup can be made here (grade as an ordinary user to have the limit)")
    folder.rmdir()
    return ""


# --- inside the sandbox ---------------------------------------------------------------------------------


def _inside(spec: dict[str, Any]) -> int:
    """Copy the repository, run the command within the limits, send back what was asked for."""
    from course.processes import _prctl

    prctl = _prctl()
    if prctl is not None:
        prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no process here may open this one's pipe through /proc
    out = os.fdopen(spec["fd"], "w", encoding="utf-8")
    limits = Limits(**spec["limits"])
    for folder in (HOME, OUT):
        os.makedirs(folder, exist_ok=True)
    if spec["source"]:
        try:
            copy_repository(Path(spec["source"]), Path(spec["copy"]), limits.copy)
        except TooLarge:
            return _send(out, {"problem": f"repository larger than {limits.copy // MiB} MiB; not copied"}, 1)
        except OSError as exc:
            return _send(out, {"problem": f"could not copy the repository: {exc.strerror or exc}"}, 1)
    where = Path(spec["copy"]) / spec["chdir"] if spec["source"] else Path(TMP)
    watch = _DiskWatch(TMP)
    watch.start()

    def limit() -> None:
        import resource

        wanted = [(resource.RLIMIT_DATA, limits.memory), (resource.RLIMIT_CPU, limits.cpu),
                  (resource.RLIMIT_FSIZE, limits.file), (resource.RLIMIT_CORE, 0)]
        if spec["nproc"]:
            wanted.append((resource.RLIMIT_NPROC, limits.processes))
        for kind, value in wanted:
            hard = resource.getrlimit(kind)[1]
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(kind, (value, value))

    try:
        code = subprocess.call(spec["argv"], cwd=where, stdin=subprocess.DEVNULL, preexec_fn=limit)
    except OSError as exc:
        watch.stop()
        return _send(out, {"problem": f"the check did not start: {exc}"}, 1)
    watch.stop()
    files = {}
    for name, path in spec["bring"].items():
        try:
            with open(path, "rb") as f:
                files[name] = f.read(MAX_BROUGHT).decode("utf-8", "replace")
        except OSError:
            pass
    # A look every 20 ms misses a disk that was full for less (the check's own clean-up frees space
    # before it ends, and a busy machine looks late): the error a write got says so on any machine.
    full = watch.full or any(DISK_FULL_ERROR in text.lower() for text in files.values())
    return _send(out, {"exit": code, "files": files, "disk_full": full}, code)


def _send(out: Any, message: dict[str, Any], code: int) -> int:
    try:
        out.write(json.dumps(message, ensure_ascii=False))  # as large as the files, not six times
        out.close()
    except OSError:
        pass
    return code if code >= 0 else 128 - code


class _DiskWatch(threading.Thread):
    """Notices when the sandbox's disk fills up (free space under 1 MiB at any look, every 20 ms)."""

    def __init__(self, folder: str) -> None:
        super().__init__(daemon=True)
        self.folder = folder
        self.full = False
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.02):
            self._look()

    def _look(self) -> None:
        try:
            stat = os.statvfs(self.folder)
        except OSError:
            return
        if stat.f_bavail * stat.f_frsize < MiB:
            self.full = True

    def stop(self) -> None:
        self._done.set()
        self.join()
        self._look()


class TooLarge(Exception):
    """A repository larger than the copy may be."""


def copy_repository(source: Path, target: Path, budget: int) -> None:
    """Copy the repository (symbolic links as links, LEFT_BEHIND left out), at most `budget` bytes."""
    used = 0

    def copy_file(src: str, dst: str) -> None:
        nonlocal used
        info = os.lstat(src)
        if not stat.S_ISREG(info.st_mode):
            return  # a named pipe or a socket is no code, and reading a pipe would wait forever
        used += info.st_size
        if used > budget:
            raise TooLarge
        shutil.copy2(src, dst)

    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(*LEFT_BEHIND),
                    copy_function=copy_file)


if __name__ == "__main__":
    sys.exit(_inside(json.loads(sys.argv[1])))
