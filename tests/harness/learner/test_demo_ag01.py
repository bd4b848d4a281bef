"""`course run ag01`: one scripted answer from the course fake model streamed through the learner's
client with retry, in each track: on the reference, on fresh stubs, on a client that does not retry."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import REPO, copy_reference

COLLECTED = "Streams arrive in pieces; the client puts them together."
needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="the Go track needs Go on PATH")


def _shows_the_whole_story(out: str) -> None:
    assert "HTTP 503 with Retry-After: 0.2" in out, out
    assert out.count("delta: ") == 11, "nine text deltas, usage, done:\n" + out
    assert f"collected: {COLLECTED!r}".replace("'", '"') in out.replace("'", '"'), out
    assert "usage: 14 in, 9 out; the fake model received 2 requests" in out, out


def test_python_demonstration(course, learner: Path) -> None:
    ran = course("run", "ag01", "--reference", cwd=learner)
    assert ran.code == 0, ran.out + ran.err
    _shows_the_whole_story(ran.out)
    assert "retry: waiting 0.2 s" in ran.out, ran.out

    assert course("start", "ag01", cwd=learner).code == 0
    stubs = course("run", cwd=learner)
    assert stubs.code == 1 and "Not written yet" in stubs.out and "course run ag01" in stubs.out, stubs.out + stubs.err
    assert "Traceback" not in stubs.out + stubs.err, stubs.out + stubs.err

    copy_reference("ag01", learner)
    retry = learner / "agent" / "provider" / "retry.py"
    text = retry.read_text()
    wrapper = "    return RetryingProvider(provider, policy or RetryPolicy())\n"
    assert text.count(wrapper) == 1, "the reference's with_retry changed: update this test"
    retry.write_text(text.replace(wrapper, "    return provider  # no retry at all\n"))
    none = course("run", cwd=learner)
    assert none.code == 1 and "your client raised APIError" in none.out and "503" in none.out, none.out + none.err
    assert "Traceback" not in none.out + none.err, none.out + none.err

    retry.write_text(text + "\nraise RuntimeError('broken as it is imported')\n")
    broken = course("run", cwd=learner)
    assert broken.code == 1 and "your client raised RuntimeError: broken as it is imported" in broken.out, (
        broken.out + broken.err)
    assert "agent/provider/retry.py" in broken.out and "Traceback" not in broken.out + broken.err, broken.out + broken.err


@needs_go
def test_go_demonstration(course, learner: Path) -> None:
    before = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "reference" / "go").rglob("*"))
    ran = course("run", "ag01", "--reference", "--language", "go", cwd=learner, timeout=900)
    assert ran.code == 0, ran.out + ran.err
    _shows_the_whole_story(ran.out)
    assert "retry: waiting 200ms" in ran.out and 'types.TextDelta{Text:"Streams "}' in ran.out, ran.out
    assert sorted(p.relative_to(REPO).as_posix() for p in (REPO / "reference" / "go").rglob("*")) == before, (
        "the demonstration is built through the overlay: nothing is written into the reference")

    assert course("start", "ag01", "--language", "go", cwd=learner).code == 0
    stubs = course("run", cwd=learner, timeout=900)
    assert stubs.code == 1 and "Not written yet: types.IsContent panics" in stubs.out, stubs.out + stubs.err
    assert "goroutine" not in stubs.out + stubs.err, "a stub is one line, not a Go traceback:\n" + stubs.out + stubs.err
    assert not (learner / "go" / "cmd").exists(), "nothing is written into the learner's module"

    shutil.copytree(REPO / "reference" / "go" / "ag01", learner, dirs_exist_ok=True)
    retry = learner / "go" / "agent" / "provider" / "retry.go"
    text = retry.read_text()
    constructor = "\treturn &retrying{inner: p, pol: pol.withDefaults()}\n"
    assert text.count(constructor) == 1, "the reference's WithRetry changed: update this test"
    retry.write_text(text.replace(constructor, "\treturn p // no retry at all\n"))
    none = course("run", cwd=learner, timeout=900)
    assert none.code == 1 and "your client returned an error instead of a stream" in none.out and "503" in none.out, (
        none.out + none.err)
