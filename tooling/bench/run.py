"""Benchmarks: the course's speed targets, each measured side by side with what it is compared to.

    python tooling/bench/run.py [cli] [sse] [mutants] [go-sse] [go-check] [go-mutants]
                                [ts-sse] [ts-check] [ts-mutants]   (all when none is named)
                                [--rounds N] [--no-cold] [--chapter CH]... [--against OTHER_CHECKOUT]

cli      `course check ag01 --reference` and `course check ag02 --reference` against a bare
         `python -m pytest` of one trivial test
         (target: median within 2x), and against bare pytest running the same ag01 catalog (the
         harness's own cost), and `course --help` (target: under 150 ms), runs interleaved. With
         --against, the same three `course` commands of another checkout (an earlier commit), each
         right after this checkout's, the rounds' order alternating, and each one's ratio to it.
sse      the reference EventReader against httpx-sse's decoders (and openai-python's) on the same
         4 MB chat-completions stream read 4 KiB at a time, with short chunks (150 bytes an event)
         and with chunks shaped like the real API's (281 bytes; target: at least 2x httpx-sse on
         both), and linearity on events of 1 to 16 MiB and on 1-byte reads. httpx-sse is measured
         twice: its decoders called inline (the target's peer, the faster of the two) and its own
         EventSource.iter_sse generator over the same decoded reads.
mutants  `course mutants ag01`: all documented mutants on 2 cores (target: under 10 s wall).
go-sse   the Go reference's EventReader against openai-go v3.99.0's packages/ssestream and tmaxmax/go-sse
         v0.12.0 on the same 4 MB stream, 4 KiB reads (a testing.B benchmark in tooling/bench/go/, a
         module of its own so the peers never reach a learner's or the reference's go.mod; targets:
         2x openai-go, at least go-sse), and its linearity on one long event, 4 KiB and 1-byte reads.
go-check `course check CH --language go --reference` against a bare `go test -json -count=1` of
         the same catalog on the same code in the same environment, interleaved rounds, warm build
         cache (target: within 1.3x); the same in a learner's repository after an edit before every
         run; then each once with empty caches (GOCACHE, and the course's own cache folder). Wall
         and CPU time (the command and all it waits for). For each chapter with a Go track.
go-mutants `course mutants CH --language go` (target: under 40 s wall on 2 cores), wall and CPU, for
         each chapter with a Go track.
ts-sse   the TypeScript reference's EventReader against eventsource-parser 4.1.3 (its callback parser,
         and its stream of events read with for await, the shape of ours) and the openai Node
         package 7.55's own SSE decoder on the same 4 MB stream, 4 KiB reads, short and
         real-API-shaped chunks (tooling/bench/ts/, a package of its own that holds the peers;
         target: 2x the faster peer), and its linearity on one long event.
ts-check `course check ag01 --language typescript --reference` against a bare `node --test` of the
         same compiled catalog in the same environment, interleaved rounds, warm (target: within
         1.3x); then `course check` in a learner's repository after an edit before every run (it
         compiles again). Wall and CPU time.
ts-mutants `course mutants ag01 --language typescript`, wall and CPU.

Needs the bench extra for the peers: pip install '.[bench]'. Figures are medians; the machine is
noisy, which is why every comparison runs in the same process, interleaved.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable


# Commands run as on a learner's machine: compiled files cached (some sandboxes set
# PYTHONDONTWRITEBYTECODE, which makes every start compile every module anew); `course` is this
# checkout's, whatever else is installed.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(REPO)}


def wall(args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(args, cwd=cwd, env=env or ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def interleaved(commands: dict[str, tuple], runs: int, *, alternate: bool = False) -> dict[str, float]:
    """Median wall time of each command, (args, cwd) or (args, cwd, env), run in turn round after round.
    `alternate`: every other round runs them in the reverse order, so that neither of two commands
    compared side by side always comes first (a command is slower right after a heavy one)."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(runs):
        for name, command in (reversed(commands.items()) if alternate and round_ % 2 else commands.items()):
            times[name].append(wall(*command))
    return {name: statistics.median(t) for name, t in times.items()}


def bench_cli(runs: int = 15, against: Path | None = None) -> None:
    import site
    import sysconfig

    # The interpreter's own start-up differs between machines (a site .pth file can import a lot: here
    # a sandbox's certificate hook does), so it is measured too, and `course --help` once more with
    # -S (no site hooks; site-packages and the project put on the path by hand).
    bare_path = os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"], *site.getsitepackages()])
    with tempfile.TemporaryDirectory() as tmp:
        trivial = Path(tmp) / "test_trivial.py"
        trivial.write_text("def test_trivial():\n    assert 1 + 1 == 2\n")
        pytest_args = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(trivial)]
        course = [PY, "-m", "course"]
        # The same ag01 catalog run by bare pytest on the reference, plugins off: what the tests cost
        # without the harness (no worker process, no per-test timer, no events).
        catalog = ["env", "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1", f"COURSE_FIXTURES={REPO / 'fixtures' / 'ag01'}",
                   f"PYTHONPATH={REPO / 'reference' / 'python' / 'ag01'}{os.pathsep}{REPO}",
                   PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--assert=plain", str(REPO / "tests" / "python" / "ag01")]
        commands = {
            "python -c pass": ([PY, "-c", "pass"], None),
            "pytest, one trivial test": (pytest_args, Path(tmp)),
            "pytest, one trivial test, no plugin autoload": (["env", "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1", *pytest_args], Path(tmp)),
            "course check ag01 --reference": (course + ["check", "ag01", "--reference"], Path(tmp)),
            "pytest, the ag01 catalog on the reference": (catalog, Path(tmp)),
            "course check ag02 --reference": (course + ["check", "ag02", "--reference"], Path(tmp)),
            "course --help": (course + ["--help"], Path(tmp)),
            "python -S -c pass": ([PY, "-S", "-c", "pass"], None),
            "course --help, python -S": (["env", f"PYTHONPATH={bare_path}", PY, "-S", "-m", "course", "--help"], Path(tmp)),
        }
        if against:  # each command of the other checkout right after this one's, the pair's order alternating
            theirs = {**ENV, "PYTHONPATH": str(against)}
            commands = {key: value for name, command in commands.items() for key, value in
                        [(name, command)] + ([(f"{name}, {against.name}", (command[0], command[1], theirs))]
                                             if name in COMPARED else [])}
        medians = interleaved(commands, runs, alternate=against is not None)
    for name, median in medians.items():
        print(f"  {name:<46} {median * 1000:7.0f} ms (median of {runs})")
    for chapter in ("ag01", "ag02"):
        check = medians[f"course check {chapter} --reference"]
        for peer in ("pytest, one trivial test", "pytest, one trivial test, no plugin autoload"):
            print(f"  check {chapter} --reference / {peer}: {check / medians[peer]:.2f}x (target <= 2x)")
    print(f"  check ag01 --reference / pytest of the same catalog: "
          f"{medians['course check ag01 --reference'] / medians['pytest, the ag01 catalog on the reference']:.2f}x "
          "(the harness's own cost)")
    print(f"  course --help: {medians['course --help'] * 1000:.0f} ms, {medians['course --help, python -S'] * 1000:.0f} ms "
          f"without site hooks (target < 150 ms)")
    for name in COMPARED if against else ():
        print(f"  {name}: this checkout / {against}: {medians[name] / medians[f'{name}, {against.name}']:.3f}x")


# What --against times of the other checkout, beside this one's.
COMPARED = ("course check ag01 --reference", "course check ag02 --reference", "course --help")


def chat_stream(size: int, realistic: bool = False) -> bytes:
    """A chat-completions stream of about `size` bytes: text chunks, then finish, usage, [DONE].

    `realistic` chunks carry what the real API sends with every chunk (id, created, model,
    system_fingerprint, logprobs, "usage": null): 281 bytes an event instead of about 150.
    """
    chunks = []
    words = ["Hel", "lo", " wor", "ld", ", ", "caf\u00e9", " \u2014 ", "stream", "ing", " \U0001f680"]
    total, i = 0, 0
    while total < size:
        if realistic:
            body = {"id": "chatcmpl-AZ3fK9qLmT7xWvB2nR8sYdE1uC4hJ", "object": "chat.completion.chunk", "created": 1732950000,
                    "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_0ba0d124f1",
                    "choices": [{"index": 0, "delta": {"content": words[i % len(words)]}, "logprobs": None, "finish_reason": None}],
                    "usage": None}
        else:
            body = {"id": "c1", "object": "chat.completion.chunk", "model": "m",
                    "choices": [{"index": 0, "delta": {"content": words[i % len(words)]}, "finish_reason": None}]}
        event = f"data: {json.dumps(body, separators=(',', ':') if realistic else None)}\n\n".encode()
        chunks.append(event)
        total += len(event)
        i += 1
    chunks.append(b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n')
    chunks.append(b"data: [DONE]\n\n")
    return b"".join(chunks)


class Chunked(io.RawIOBase):
    """A binary stream that returns at most `size` bytes per read, like a socket would."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size, self.pos = data, size, 0

    def read(self, n: int = -1) -> bytes:
        n = self.size if n < 0 else min(n, self.size)
        piece = self.data[self.pos : self.pos + n]
        self.pos += len(piece)
        return piece


def ours(data: bytes, size: int) -> int:
    from agent.provider.sse import EventReader

    return sum(1 for _ in EventReader(Chunked(data, size), read_size=size))


def httpx_sse(data: bytes, size: int) -> int:
    from httpx_sse._decoders import SSEDecoder, SSELineDecoder

    # What httpx-sse's iter_sse does over httpx's iter_text: incremental UTF-8, its line and event decoders.
    text = codecs.getincrementaldecoder("utf-8")()
    lines, events, count = SSELineDecoder(), SSEDecoder(), 0
    stream = Chunked(data, size)
    while chunk := stream.read(size):
        for line in lines.decode(text.decode(chunk)):
            if events.decode(line.rstrip("\n")) is not None:
                count += 1
    for line in lines.flush():
        if events.decode(line.rstrip("\n")) is not None:
            count += 1
    return count


class _TextResponse:
    """The two things httpx-sse's EventSource uses of an httpx.Response: its headers, and iter_text()
    (here an incremental UTF-8 decoder over the reads, which is what httpx's iter_text does)."""

    headers = {"content-type": "text/event-stream"}

    def __init__(self, stream: Chunked, size: int) -> None:
        self.stream, self.size = stream, size

    def iter_text(self):
        text = codecs.getincrementaldecoder("utf-8")()
        while chunk := self.stream.read(self.size):
            yield text.decode(chunk)


def httpx_sse_iter(data: bytes, size: int) -> int:
    from httpx_sse import EventSource

    return sum(1 for _ in EventSource(_TextResponse(Chunked(data, size), size)).iter_sse())


def openai_python(data: bytes, size: int) -> int:
    from openai._streaming import SSEDecoder

    stream = Chunked(data, size)
    return sum(1 for _ in SSEDecoder().iter_bytes(iter(lambda: stream.read(size), b"")))


def medians(fns: dict, data: bytes, size: int, rounds: int) -> dict[str, float]:
    """MB/s of each function on the same input, run in interleaved rounds so noise hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            started = time.perf_counter()
            fn(data, size)
            times[name].append(time.perf_counter() - started)
    return {name: len(data) / statistics.median(t) / 1e6 for name, t in times.items()}


def bench_sse() -> None:
    sys.path.insert(0, str(REPO / "reference" / "python" / "ag01"))
    for label, realistic in (("short chunks", False), ("real-API-shaped chunks", True)):
        data = chat_stream(4_000_000, realistic)
        expected = ours(data, 4096)
        peers = {"reference EventReader": ours, "httpx-sse 0.4 decoder": httpx_sse, "httpx-sse 0.4 iter_sse": httpx_sse_iter,
                 "openai-python SSEDecoder": openai_python}
        for name, fn in list(peers.items()):
            try:
                count = fn(data, 4096)  # also the warm-up
            except ImportError:
                print(f"  {name:<26} not installed (pip install '.[bench]')")
                del peers[name]
                continue
            assert count == expected, f"{name} saw {count} events, the reference {expected}"
        speeds = medians(peers, data, 4096, rounds=9)
        print(f"  {label} ({len(data) / 1e6:.1f} MB, {len(data) // expected} bytes an event, 4 KiB reads, median of 9):")
        for name, speed in speeds.items():
            print(f"    {name:<26} {speed:7.1f} MB/s")
        for peer, target in (("httpx-sse 0.4 decoder", " (target >= 2x)"), ("httpx-sse 0.4 iter_sse", "")):
            if peer in speeds:
                print(f"    reference / {peer}: {speeds['reference EventReader'] / speeds[peer]:.2f}x{target}")
        print(f"    load average (1, 5, 15 min) after the rounds: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")

    print("  linearity (the same MB/s at every size means linear; each size in a fresh process):")
    for mib in (1, 2, 4, 8, 16):
        done = subprocess.run([PY, __file__, "one-event", str(mib)], env=ENV, capture_output=True, text=True)
        print(f"    one {mib} MiB event, 4 KiB reads {done.stdout.strip()}")
    for kb in (32, 64, 128):
        speed = medians({"ours": ours}, chat_stream(kb * 1000), 1, rounds=3)["ours"]
        print(f"    {kb} KB stream, 1-byte reads {speed:8.2f} MB/s")


def bench_mutants() -> None:
    started = time.perf_counter()
    done = subprocess.run([PY, "-m", "course", "mutants", "ag01"], cwd=REPO, env=ENV, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    last = done.stdout.strip().splitlines()[-2:] if done.stdout else [done.stderr.strip()]
    print(f"  course mutants ag01: {elapsed:.1f} s wall on {os.cpu_count()} cores (target < 10 s): {' / '.join(last)}")


def one_event(mib: int) -> None:
    """Read one event of `mib` MiB, 4 KiB at a time: MB/s and ms, the median of 7."""
    sys.path.insert(0, str(REPO / "reference" / "python" / "ag01"))
    event = b"data: " + b"x" * (mib << 20) + b"\n\n"
    speed = medians({"ours": ours}, event, 4096, rounds=7)["ours"]
    print(f"{speed:8.1f} MB/s ({len(event) / speed / 1e3:.1f} ms)")


GO_BENCH = REPO / "tooling" / "bench" / "go"


def bench_go_sse(rounds: int = 7) -> None:
    """Each round runs the three parsers once, one after the other, in one `go test -bench`: noise
    hits them alike; the medians over the rounds are reported."""
    speeds: dict[str, list[float]] = {}
    for _ in range(rounds):
        done = subprocess.run(["go", "test", "-run", "^$", "-bench", "ChatStream", "-benchtime", "20x", "-count", "1", "."],
                              cwd=GO_BENCH, capture_output=True, text=True, env={**ENV, "GOFLAGS": "-buildvcs=false"})
        if done.returncode != 0:
            print(f"  go test -bench failed: {(done.stdout + done.stderr).strip()[-500:]}")
            return
        for line in done.stdout.splitlines():
            parts = line.split()
            if line.startswith("BenchmarkChatStream/") and "MB/s" in parts:
                name = parts[0].split("/", 1)[1].rsplit("-", 1)[0]
                speeds.setdefault(name, []).append(float(parts[parts.index("MB/s") - 1]))
    medians_ = {name: statistics.median(v) for name, v in speeds.items()}
    for name, speed in medians_.items():
        print(f"  {name:<22} {speed:8.1f} MB/s  (4 MB stream, 4 KiB reads, median of {rounds} rounds)")
    ours_ = medians_.get("reference", 0.0)
    for peer, target in (("openai-go-ssestream", "target >= 2x"), ("go-sse", "target >= 1x")):
        if medians_.get(peer):
            print(f"  reference / {peer}: {ours_ / medians_[peer]:.2f}x ({target})")
    done = subprocess.run(["go", "test", "-run", "^$", "-bench", "OneEvent", "-benchtime", "5x", "-count", "1", "."],
                          cwd=GO_BENCH, capture_output=True, text=True, env={**ENV, "GOFLAGS": "-buildvcs=false"})
    print("  linearity (the same MB/s at every size means linear):")
    for line in done.stdout.splitlines():
        parts = line.split()
        if line.startswith("BenchmarkOneEvent/") and "MB/s" in parts:
            print(f"    {parts[0].split('/', 1)[1].rsplit('-', 1)[0]:<20} {parts[parts.index('MB/s') - 1]:>9} MB/s")


def timed_run(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the command and everything it waited for, exit code)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.returncode


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def compare(commands: dict[str, tuple[list[str], Path]], env: dict[str, str], rounds: int, label: str,
            before_each=None) -> None:  # noqa: ANN001
    """Run the commands in interleaved rounds (`before_each(name)` first, when given); print medians,
    the ratio of the second to the first, and the load average around the runs."""
    before = load()
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, (args, cwd) in commands.items():
            if before_each:
                before_each(name)
            elapsed, cpu, code = timed_run(args, cwd, env)
            if code != 0:
                print(f"  {name} failed (exit {code}) {label}: the figures would compare nothing")
                return
            walls[name].append(elapsed)
            cpus[name].append(cpu)
    print(f"  {label}, median of {rounds} interleaved rounds ({before}; after: {load()}):")
    for name in commands:
        print(f"    {name:<40} wall {statistics.median(walls[name]):5.2f} s  CPU {statistics.median(cpus[name]):5.2f} s"
              f"  (walls {' '.join(f'{w:.2f}' for w in walls[name])})")
    (first, base), (second, other) = walls.items()
    print(f"    {second} / {first}: {statistics.median(other) / statistics.median(base):.2f}x of the medians, "
          f"{statistics.median(o / b for b, o in zip(base, other)):.2f}x the median of each round's ratio (target <= 1.3x)")


CHOSEN: list[str] = []  # --chapter: the Go benchmarks measure these chapters only


def go_chapters() -> list[str]:
    """The chapters with a Go track, in course order (those chosen with --chapter, when any)."""
    sys.path.insert(0, str(REPO))
    from course import chapters

    return [c.id for c in chapters.load_all() if "go" in c.tracks and (not CHOSEN or c.id in CHOSEN)]


def learner_repository(into: Path, language: str, env: dict[str, str]) -> Path:
    """A learner's repository in `into` with the chapter ag01 started in `language` and the
    reference's files in place of the stubs."""
    learner = into / "learner"
    (learner / ".git").mkdir(parents=True)
    subprocess.run([PY, "-m", "course", "start", "ag01", "--language", language], cwd=learner, env=env,
                   capture_output=True, check=True)
    shutil.copytree(REPO / "reference" / language / "ag01", learner, dirs_exist_ok=True)
    return learner


def bench_go_check(rounds: int = 9, cold: bool = True) -> None:
    for chapter in go_chapters():
        print(f" {chapter}:")
        bench_go_check_of(chapter, rounds, cold)


def bench_go_check_of(chapter: str, rounds: int, cold: bool) -> None:
    """course check against bare `go test -json` of the same catalog on the same code, in the same
    environment (fixtures, a fake model); the bare run has -count=1 so that it runs the tests rather
    than replaying a cached result, as course check always does. Three ways: unchanged code (warm
    caches), after an edit of the learner's code before every run, and with empty caches."""
    sys.path.insert(0, str(REPO))
    from course import chapters, content, fake_model

    track = chapters.get(chapter).track("go")
    tests = REPO / "tests" / "go" / chapter
    packages = sorted({"./" + p.parent.relative_to(tests).as_posix() for p in tests.rglob("*_test.go")})

    def bare(module: Path, into: Path) -> list[str]:
        overlay = into / "overlay.json"
        overlay.write_text(json.dumps({"Replace": {str(module / p.relative_to(tests)): str(p) for p in tests.rglob("*_test.go")}}))
        return ["go", "test", "-json", "-count=1", "-overlay", str(overlay), *packages]

    with tempfile.TemporaryDirectory() as tmp, fake_model.FakeModel() as fake:
        env = {**ENV, "COURSE_FIXTURES": str(content.fixtures_dir(chapter)), "COURSE_FAKE_MODEL_URL": fake.base_url,
               "GOFLAGS": "-buildvcs=false", "NO_COLOR": "1"}
        module = REPO / "reference" / "go" / chapter / "go"
        commands = {"bare go test -json": (bare(module, Path(tmp)), module),
                    "course check --language go --reference": ([PY, "-m", "course", "check", chapter, "--language", "go", "--reference"], Path(tmp))}
        for args, cwd in commands.values():
            timed_run(args, cwd, env)  # both warm
        compare(commands, env, rounds, "unchanged code, warm caches")

        # a learner's loop: an edit, then a check (the edited package is compiled and linked again)
        learner = Path(tmp) / "learner"
        (learner / ".git").mkdir(parents=True)
        subprocess.run([PY, "-m", "course", "start", chapter, "--language", "go"], cwd=learner, env=env,
                       capture_output=True, check=True)
        shutil.copytree(REPO / "reference" / "go" / chapter, learner, dirs_exist_ok=True)
        edited = learner / next(f for f in track.files if f.endswith(".go") and f not in track.given)
        original = edited.read_text(encoding="utf-8")
        edits = iter(range(1_000_000))

        def edit(_: str) -> None:
            edited.write_text(original + f"\n// edit {next(edits)}\n", encoding="utf-8")

        mine = learner / "go"
        compare({"bare go test -json": (bare(mine, Path(tmp)), mine),
                 "course check": ([PY, "-m", "course", "check"], learner)}, env, rounds, "after an edit", edit)
        if not cold:
            return
        print(f"  empty caches (GOCACHE, and the course's own: kept binaries, the toolchain's answers), once each:")
        for name, (args, cwd) in commands.items():
            with tempfile.TemporaryDirectory() as gocache, tempfile.TemporaryDirectory() as xdg:
                before = load()
                elapsed, cpu, code = timed_run(args, cwd, {**env, "GOCACHE": gocache, "XDG_CACHE_HOME": xdg})
                print(f"    {name:<40} wall {elapsed:6.1f} s  CPU {cpu:6.1f} s  exit {code}  ({before}; after: {load()})")


def bench_go_mutants(rounds: int = 1) -> None:
    for chapter in go_chapters():
        for _ in range(rounds):
            before = load()
            elapsed, cpu, code = timed_run([PY, "-m", "course", "mutants", chapter, "--language", "go"], REPO, ENV)
            print(f"  course mutants {chapter} --language go: wall {elapsed:.1f} s, CPU {cpu:.1f} s on {os.cpu_count()} cores, "
                  f"exit {code} (target < 40 s wall; {before}; after: {load()})")


TS_BENCH = REPO / "tooling" / "bench" / "ts"


def _ts_reference(into: Path) -> Path:
    """The TypeScript reference and its catalog compiled with the course's pinned tools; the compiled folder."""
    sys.path.insert(0, str(REPO))
    from course import chapters
    from course.languages.typescript import build

    track = chapters.get("ag01").track("typescript")
    built, problem = build.build(track, track.reference, into)
    if problem:
        raise SystemExit(f"the TypeScript reference does not compile: {problem}")
    return built.out


def bench_ts_sse(rounds: int = 9) -> None:
    """Each run of sse_bench.mjs reads the same stream with every parser in interleaved rounds."""
    if not (TS_BENCH / "node_modules").is_dir():
        done = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=TS_BENCH,
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(f"  the peers are not installed and `npm ci` failed in {TS_BENCH}: {done.stderr.strip()[-300:]}")
            return
    with tempfile.TemporaryDirectory() as tmp:
        sse = _ts_reference(Path(tmp)) / "agent" / "provider" / "sse.js"
        for label, flag in (("short chunks", []), ("real-API-shaped chunks", ["--realistic"])):
            done = subprocess.run(["node", "sse_bench.mjs", str(sse), "--rounds", str(rounds), *flag], cwd=TS_BENCH,
                                  capture_output=True, text=True)
            if done.returncode != 0:
                print(f"  sse_bench.mjs failed: {done.stderr.strip()[-500:]}")
                return
            result = json.loads(done.stdout)
            counts = set(result["events"].values())
            assert len(counts) == 1, f"the parsers disagree on the number of events: {result['events']}"
            speeds = result["mbps"]
            print(f"  {label} ({result['bytes'] / 1e6:.1f} MB, {result['bytes'] // counts.pop()} bytes an event, "
                  f"4 KiB reads, median of {rounds}):")
            for name, speed in speeds.items():
                print(f"    {name:<36} {speed:7.1f} MB/s")
            ours_ = speeds["reference EventReader"]
            peers = {name: speed for name, speed in speeds.items() if name != "reference EventReader"}
            for name, speed in peers.items():
                target = " (the faster peer: target >= 2x)" if speed == max(peers.values()) else ""
                print(f"    reference / {name}: {ours_ / speed:.2f}x{target}")
            print(f"    {load()}")
        done = subprocess.run(["node", "--input-type=module", "-e", _ONE_EVENT.replace("SSE", str(sse))], capture_output=True,
                              text=True)
        print("  linearity (the same MB/s at every size means linear):")
        print("\n".join("    " + line for line in (done.stdout or done.stderr).strip().splitlines()))


_ONE_EVENT = """
import { EventReader } from "SSE";
for (const mib of [1, 2, 4, 8, 16]) {
  const data = new Uint8Array((mib << 20) + 8).fill(120);
  data.set(new TextEncoder().encode("data: "));
  data.set([10, 10], data.length - 2);
  const times = [];
  for (let round = 0; round < 5; round++) {
    let at = 0;
    const body = new ReadableStream({ pull(c) { if (at >= data.length) c.close(); else { c.enqueue(data.subarray(at, at + 4096)); at += 4096; } } },
      { highWaterMark: 0 });
    const started = performance.now();
    for await (const event of new EventReader(body)) { void event; }
    times.push(performance.now() - started);
  }
  const ms = times.sort((a, b) => a - b)[2];
  console.log(`one ${mib} MiB event, 4 KiB reads: ${(data.length / ms / 1000).toFixed(1)} MB/s (${ms.toFixed(1)} ms)`);
}
"""


def bench_ts_check(rounds: int = 9) -> None:
    """course check against a bare `node --test` of the same compiled catalog, in the same environment
    (fixtures, a fake model); then a learner's loop: an edit before every run, then course check
    (which compiles again)."""
    sys.path.insert(0, str(REPO))
    from course import content, fake_model
    from course.languages.typescript import toolchain

    tools = toolchain.find()
    with tempfile.TemporaryDirectory() as tmp, fake_model.FakeModel() as fake:
        env = {**ENV, "COURSE_FIXTURES": str(content.fixtures_dir("ag01")), "COURSE_FAKE_MODEL_URL": fake.base_url,
               "NO_COLOR": "1"}
        out = _ts_reference(Path(tmp) / "build")
        bare = [tools.node, "--test", str(out / "catalog" / "ag01.test.js")]
        commands = {"bare node --test": (bare, Path(tmp)),
                    "course check --language typescript --reference": (
                        [PY, "-m", "course", "check", "ag01", "--language", "typescript", "--reference"], Path(tmp))}
        for args, cwd in commands.values():
            timed_run(args, cwd, env)  # both warm
        compare(commands, env, rounds, "unchanged code, warm")

        # a learner's loop: an edit, then a check, which compiles again (the pinned tsc, type checking)
        learner = learner_repository(Path(tmp), "typescript", env)
        edited = learner / "ts" / "agent" / "provider" / "sse.ts"
        original = edited.read_text(encoding="utf-8")
        walls, cpus = [], []
        for n in range(rounds):
            edited.write_text(original + f"\n// edit {n}\n", encoding="utf-8")
            elapsed, cpu, _ = timed_run([PY, "-m", "course", "check"], learner, env)
            walls.append(elapsed)
            cpus.append(cpu)
        print(f"  after an edit (course check compiles again), median of {rounds}: wall {statistics.median(walls):.2f} s, "
              f"CPU {statistics.median(cpus):.2f} s ({load()})")


def bench_ts_mutants(rounds: int = 1) -> None:
    for _ in range(rounds):
        before = load()
        elapsed, cpu, code = timed_run([PY, "-m", "course", "mutants", "ag01", "--language", "typescript"], REPO, ENV)
        print(f"  course mutants ag01 --language typescript: wall {elapsed:.1f} s, CPU {cpu:.1f} s on {os.cpu_count()} cores, "
              f"exit {code} ({before}; after: {load()})")


def main(argv: list[str]) -> None:
    if argv[:1] == ["one-event"]:
        return one_event(int(argv[1]))
    import argparse

    benches = {"cli": bench_cli, "sse": bench_sse, "mutants": bench_mutants, "go-sse": bench_go_sse,
               "go-check": bench_go_check, "go-mutants": bench_go_mutants, "ts-sse": bench_ts_sse,
               "ts-check": bench_ts_check, "ts-mutants": bench_ts_mutants}
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("names", nargs="*", metavar="NAME", help=", ".join(benches) + " (all when none is named)")
    parser.add_argument("--rounds", type=int, help="rounds of cli (15), go-check, ts-sse, ts-check (9), go-mutants or ts-mutants (1)")
    parser.add_argument("--against", type=Path, metavar="DIR", help="cli: also time this other checkout's course")
    parser.add_argument("--no-cold", action="store_true", help="go-check: leave out the empty build cache runs")
    parser.add_argument("--chapter", action="append", default=[], metavar="CH",
                        help="go-check and go-mutants: this chapter only (again for more; all with a Go track by default)")
    args = parser.parse_args(argv)
    CHOSEN[:] = args.chapter
    unknown = [name for name in args.names if name not in benches]
    if unknown:
        parser.error(f"no benchmark named {', '.join(unknown)}; choose from {', '.join(benches)}")
    for name in args.names or list(benches):
        print(f"{name}:")
        if name == "go-check":
            bench_go_check(args.rounds or 9, cold=not args.no_cold)
        elif name == "go-mutants":
            bench_go_mutants(args.rounds or 1)
        elif name in ("ts-sse", "ts-check", "ts-mutants"):
            benches[name](*([args.rounds] if args.rounds else []))
        elif name == "cli":
            bench_cli(args.rounds or 15, args.against.resolve() if args.against else None)
        else:
            benches[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
