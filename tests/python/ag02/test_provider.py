"""ag02 catalog, the boundary the loop awaits: retries around opening only, one stream consumed and closed."""

from __future__ import annotations

import asyncio
import random

import pytest

from agent.responses import provider
from agent.responses.types import Message, OpenFailure, ResponseFailure

import ag02_samples as samples

HISTORY = [Message("user", "The test for add() fails. Find the bug and fix it.")]


class FixedRandom(random.Random):
    """uniform(a, b) always returns the same point of [a, b]: `at` 0 is a, 1 is b."""

    def __init__(self, at: float) -> None:
        super().__init__(0)
        self.at = at
        self.calls: list[tuple[float, float]] = []

    def uniform(self, a: float, b: float) -> float:
        self.calls.append((a, b))
        return a + (b - a) * self.at


def make(script: samples.Script, recorder: samples.Recorder | None = None, rng: random.Random | None = None):
    recorder = recorder or samples.Recorder()
    return provider.ResponsesProvider(script, samples.MODEL, report=recorder, sleep=recorder.sleep,
                                      rng=rng or random.Random(7)), recorder


def complete(p) -> Message:
    return asyncio.run(p.complete(list(HISTORY), samples.tools()))


def fails(p) -> BaseException:
    try:
        got = complete(p)
    except Exception as exc:  # noqa: BLE001 - the failure itself is what is checked
        return exc
    raise AssertionError(f"complete() returned {got!r}; a failure was expected")


def test_complete_returns_the_decision():
    script = samples.Script(samples.replay("single_call"))
    p, recorder = make(script)
    decision = complete(p)
    assert samples.message_form(decision) == samples.sequence("single_call")["expect"]["message"], (
        f"complete() returns the validated decision: got {samples.message_form(decision)}")
    assert len(script.requests) == 1, f"one request, got {len(script.requests)}"
    sent = script.requests[0]
    assert sent["stream"] is True and sent["store"] is False and sent["model"] == samples.MODEL, (
        f"the request comes from build_request: got stream={sent.get('stream')!r} store={sent.get('store')!r} model={sent.get('model')!r}")
    assert [i.get("content") for i in sent["input"]] == [HISTORY[0].content], f"the history is sent as input: {sent['input']}"
    assert [t["name"] for t in sent["tools"]] == ["read", "edit"], "the tools are sent"
    assert script.log[-1] == "close" and script.log.count("close") == 1, (
        f"the stream is closed once, before complete() returns: {script.log}")
    assert recorder.sleeps == [], f"no wait without a failure: {recorder.sleeps}"
    assert any(kind == "arguments" for kind, _ in recorder.reports), "argument progress reaches the report observer"


@pytest.mark.parametrize("name", ["done_then_failed", "cut_after_last_argument", "reset_mid_arguments", "valid_then_malformed",
                                  "output_limit", "reasoning_item"])
def test_failed_stream_not_retried(name):
    stream = samples.replay(name)
    spare = samples.replay("single_call")
    script = samples.Script(stream, spare)
    p, recorder = make(script)
    exc = fails(p)
    want = samples.sequence(name)["expect"]["failure"]
    assert samples.failure_code(exc) == want, f"{name}: got {type(exc).__name__}: {exc}, want failure {want!r}"
    assert len(script.requests) == 1, f"{name}: {len(script.requests)} requests; a stream, once acquired, is never retried"
    assert stream.closed == 1, f"{name}: the acquired stream was closed {stream.closed} times, want once"
    assert spare.taken == 0 and recorder.sleeps == [], f"{name}: no wait and no second stream"


def test_opening_retry_boundary():
    # Exercise 3: the same network failure, first while opening, then moved into iteration.
    reset = ConnectionResetError("connection reset by peer")
    opening = samples.Script(OpenFailure(f"no answer: {reset}"), samples.replay("text_only"))
    p, recorder = make(opening)
    decision = complete(p)
    assert decision.content == "The bug is in add(): it subtracts.", f"a failed opening is retried: got {decision!r}"
    assert len(opening.requests) == 2 and len(recorder.sleeps) == 1, (
        f"one retry: {len(opening.requests)} requests, {len(recorder.sleeps)} waits")
    assert opening.requests[0] == opening.requests[1], "the retry sends the same request"

    broken = samples.ReplayStream(samples.events("text_only")[:3], end="reset")
    iteration = samples.Script(broken, samples.replay("text_only"))
    p, recorder = make(iteration)
    exc = fails(p)
    assert isinstance(exc, ConnectionResetError), f"the mid-stream failure reaches the caller: got {type(exc).__name__}: {exc}"
    assert len(iteration.requests) == 1 and recorder.sleeps == [], (
        f"a failure after the stream was acquired is not retried: {len(iteration.requests)} requests, waits {recorder.sleeps}")
    assert broken.closed == 1, f"the broken stream is closed: closed {broken.closed} times"

    empty = samples.Script(samples.ReplayStream([]), samples.replay("text_only"))
    p, _ = make(empty)
    exc = fails(p)
    assert samples.failure_code(exc) == "stream_ended", f"an empty stream: got {exc!r}, want failure 'stream_ended'"
    assert len(empty.requests) == 1, f"an empty acquired stream is not retried: {len(empty.requests)} requests"


@pytest.mark.parametrize("at", [0.0, 0.5, 1.0])
def test_retry_schedule(at):
    failures = [OpenFailure("connection refused"), OpenFailure("HTTP 503: overloaded", 503), OpenFailure("HTTP 502", 502)]
    script = samples.Script(*failures)
    rng = FixedRandom(at)
    p, recorder = make(script, rng=rng)
    exc = fails(p)
    assert exc is failures[2], f"after three failed openings the last failure is raised: got {exc!r}"
    assert len(script.requests) == 3, f"at most three opening attempts: got {len(script.requests)}"
    factor = 0.9 + 0.2 * at
    want = [0.25 * factor, 0.5 * factor]
    assert recorder.sleeps == pytest.approx(want), f"waits 0.25 s then 0.5 s, scaled by a jitter factor in [0.9, 1.1]: got {recorder.sleeps}, want {want}"
    assert rng.calls == [pytest.approx((0.9, 1.1))] * 2, f"jitter drawn from the injected random source as uniform(0.9, 1.1): {rng.calls}"
    retries = [d for k, d in recorder.reports if k == "retry"]
    assert len(retries) == 2, f"each retry is reported as ('retry', ...): {recorder.reports}"

    ok = samples.Script(OpenFailure("refused"), OpenFailure("HTTP 500", 500), samples.replay("text_only"))
    p, recorder = make(ok, rng=FixedRandom(at))
    assert complete(p).content.startswith("The bug"), "the third attempt may still open the stream"
    assert len(ok.requests) == 3 and len(recorder.sleeps) == 2, f"3 requests, 2 waits: {len(ok.requests)}, {recorder.sleeps}"


def test_jitter_spreads_waits():
    seen = set()
    for seed in range(20):
        script = samples.Script(OpenFailure("refused"), samples.replay("text_only"))
        p, recorder = make(script, rng=random.Random(seed))
        complete(p)
        assert len(recorder.sleeps) == 1, f"one wait: {recorder.sleeps}"
        wait = recorder.sleeps[0]
        assert 0.225 <= wait <= 0.275, f"the first wait stays within 0.25 s ± 10%: {wait}"
        seen.add(round(wait, 6))
    assert len(seen) > 10, f"waits drawn from the random source differ between seeds: {sorted(seen)}"


@pytest.mark.parametrize("status, retried", [(None, True), (500, True), (502, True), (503, True), (599, True),
                                             (400, False), (401, False), (403, False), (404, False), (408, False),
                                             (409, False), (429, False), (499, False), (600, False), (302, False)])
def test_retry_classification(status, retried):
    failure = OpenFailure(f"HTTP {status}" if status else "connection refused", status)
    assert provider.retryable(failure) is retried, f"retryable(status {status}) must be {retried}"
    script = samples.Script(failure, samples.replay("text_only"))
    p, recorder = make(script)
    if retried:
        complete(p)
        assert len(script.requests) == 2, f"status {status}: retried once, got {len(script.requests)} requests"
    else:
        exc = fails(p)
        assert exc is failure, f"status {status}: the failure is raised as it came, got {exc!r}"
        assert len(script.requests) == 1 and recorder.sleeps == [], (
            f"status {status} is not retried: {len(script.requests)} requests, waits {recorder.sleeps}")


def test_other_errors_propagate():
    bug = KeyError("bug in the transport")
    script = samples.Script(bug, samples.replay("text_only"))
    p, recorder = make(script)
    assert fails(p) is bug, "an exception that is not an OpenFailure propagates unchanged"
    assert len(script.requests) == 1 and recorder.sleeps == [], "and is never retried"


@pytest.mark.parametrize("case", ["success", "assembly_failure", "transport_failure", "eof", "cancelled", "close_fails"])
def test_stream_closed_always(case):
    if case == "cancelled":
        class Stalling(samples.ReplayStream):
            async def _iterate(self):  # the model is still thinking when the caller gives up
                for event in self.events[:3]:
                    yield event
                await asyncio.Event().wait()

        async def scenario() -> tuple[samples.ReplayStream, str]:
            stream = Stalling(samples.events("single_call"))
            p, _ = make(samples.Script(stream))
            task = asyncio.ensure_future(p.complete(list(HISTORY), samples.tools()))
            for _ in range(50):
                await asyncio.sleep(0)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                return stream, "cancelled"
            return stream, "finished"

        stream, how = asyncio.run(scenario())
        assert how == "cancelled", f"the task was cancelled: {how}"
        assert stream.closed == 1, f"a cancelled complete() still closes the stream: closed {stream.closed} times"
        return
    if case == "close_fails":
        stream = samples.replay("single_call", close_error=OSError("close failed"))
        script = samples.Script(stream)
        exc = fails(make(script)[0])
        assert isinstance(exc, OSError) and "close failed" in str(exc), (
            f"a failure to close stops the decision reaching the loop: got {exc!r}, want the OSError from aclose()")
        return
    stream = {
        "success": samples.replay("single_call"),
        "assembly_failure": samples.replay("valid_then_malformed"),
        "transport_failure": samples.replay("reset_mid_arguments"),
        "eof": samples.replay("cut_after_last_argument"),
    }[case]
    script = samples.Script(stream)
    p, _ = make(script)
    if case == "success":
        complete(p)
        assert script.log[-2:] == ["event response.completed", "close"], f"closed after the last event, before returning: {script.log[-3:]}"
    else:
        fails(p)
    assert stream.closed == 1, f"{case}: the stream was closed {stream.closed} times, want exactly once"


def test_batch_validated_before_execution():
    # Exercise 2, through the loop: a valid edit beside a malformed one executes nothing; fixed, both run.
    tools = samples.tools()
    files = {"calculator.py": "def add(a, b):\n    return a - b\n", "test_calculator.py": "assert add(2, 3) == 1\n"}
    workspace = samples.Workspace(files)
    p, _ = make(samples.Script(samples.replay("valid_then_malformed")))
    with pytest.raises(ResponseFailure) as info:
        asyncio.run(samples.run_loop(p.complete, list(HISTORY), tools, workspace.execute))
    assert info.value.code == "bad_arguments", f"the malformed second call fails the response: {info.value.code!r}"
    assert workspace.executed == [], f"no call of a refused batch runs, not even the valid first: ran {workspace.executed}"
    assert workspace.files == files, "no file changed"

    script = samples.Script(samples.replay("valid_then_valid"), samples.replay("demo_answer"))
    p, _ = make(script)
    answer = asyncio.run(samples.run_loop(p.complete, list(HISTORY), tools, workspace.execute))
    assert [c.id for c in workspace.executed] == ["call_edit_1", "call_edit_2"], f"both calls run, in order: {workspace.executed}"
    assert workspace.files["calculator.py"].endswith("return a + b\n"), "the first edit applied"
    assert answer.content == "add() now returns a + b.", f"the loop ends with the answer: {answer!r}"
    outputs = [i for i in script.requests[1]["input"] if i.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == ["call_edit_1", "call_edit_2"], f"the results go back by call id: {outputs}"
