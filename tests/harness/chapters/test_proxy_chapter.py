"""Chapter ag03 end to end: the learner's loop on it, and real clients reading what its proxy says.

The official openai SDK, with its default retries, must read the reference proxy's answers in every
mode exactly as it reads the real API's, and no request may cost more than one execution of a tool;
every object the proxy writes must pass the SDK's own types with strict validation (sdk_shapes.py)."""

from __future__ import annotations

import contextlib
import http.client
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import REPO, copy_reference

CHAPTER = "ag03"


def test_the_learner_loop_on_the_proxy_chapter(course, learner: Path) -> None:
    assert course("start", CHAPTER, cwd=learner).code == 0
    stubs = course("check", cwd=learner, timeout=300)
    assert stubs.code == 1 and " passed, " in stubs.out and stubs.out.count("PASS ") == 0, stubs.out + stubs.err
    copy_reference(CHAPTER, learner)
    passing = course("check", cwd=learner, timeout=300)
    assert passing.code == 0, passing.out + passing.err
    same = course("diff", cwd=learner)
    assert same.code == 0 and "no differences" in same.out, same.out + same.err
    demo = course("run", cwd=learner, timeout=300)
    assert demo.code == 0 and "all scenarios behaved as the chapter says" in demo.out, demo.out + demo.err


@pytest.fixture
def proxy_chapter(monkeypatch):  # noqa: ANN201
    """The ag03 reference and its catalog's helpers (ag03_streams), importable for this test only."""
    root = REPO / "reference" / "python" / CHAPTER
    tests = REPO / "tests" / "python" / CHAPTER
    monkeypatch.setenv("COURSE_FIXTURES", str(REPO / "fixtures" / CHAPTER))
    for name in [m for m in sys.modules if m == "agent" or m.startswith("agent.") or m == "ag03_streams"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(tests))
    monkeypatch.syspath_prepend(str(root))
    import ag03_streams
    from agent.proxy import server

    yield ag03_streams, server
    for name in [m for m in sys.modules if m == "agent" or m.startswith("agent.") or m == "ag03_streams"]:
        del sys.modules[name]


@contextlib.contextmanager
def serving(server_module, upstream, tools, **options) -> Iterator[str]:
    proxy = server_module.make_server(upstream, tools, **options)
    thread = threading.Thread(target=proxy.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{proxy.server_address[1]}/v1"
    finally:
        proxy.shutdown()
        proxy.server_close()
        thread.join(10)


def test_the_official_sdk_reads_the_synthesized_answers(proxy_chapter) -> None:
    openai = pytest.importorskip("openai")
    streams, server = proxy_chapter
    upstream = streams.ScriptedUpstream("tool_call", "final_after_tools", "tool_call", "final_after_tools", "final_text")
    tools = streams.WeatherTools(upstream)
    with serving(server, upstream, tools) as base:
        client = openai.OpenAI(base_url=base, api_key="offline")
        request = {"model": "gpt-4.1-mini", "input": "Weather in Paris?",
                   "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]}
        answer = client.responses.create(**request)
        assert answer.output_text == "Paris: light rain, 14 C; Lisbon: sunny, 21 C.", answer.output_text
        assert answer.status == "completed" and answer.id == "resp_call1", (answer.status, answer.id)
        assert answer.usage.input_tokens_details.cached_tokens == 32 and answer.usage.input_tokens == 89, answer.usage
        with client.responses.stream(**request) as stream:
            deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
            final = stream.get_final_response()
        assert "".join(deltas) == final.output_text == answer.output_text, (deltas, final.output_text)
        assert json.loads(final.model_dump_json())["usage"] == json.loads(answer.model_dump_json())["usage"]
        assert [t.name for t in final.tools] == ["get_weather"], "the request's tools are echoed"
        assert tools.runs == [{"city": "Paris"}, {"city": "Paris"}], f"the tool ran once per request: {tools.runs}"
        with client.responses.stream(model="gpt-4.1-mini", input="Hi") as stream:  # no tools: passed through
            stateless = stream.get_final_response()
        assert stateless.output_text == "It is raining in Paris.", "pass-through reaches the SDK unchanged"
        assert upstream.requests[-1].get("stream") is True and "tools" not in upstream.requests[-1], upstream.requests[-1]
        client.close()


MODES = {"buffered JSON": ({}, False), "buffered stream": ({}, True), "progress": ({"policy": "progress_events"}, True),
         "progress forwarding tool events": ({"policy": "progress_events", "forward_tool_events": True}, True)}
FAILURES = ["cut_after_arguments", "failed_after_done", "mismatched_arguments", "error_event_nested", "item_done_differs"]
TOOLS = [{"type": "function", "name": "get_weather", "strict": True,
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                         "additionalProperties": False}}]


def _raw(base: str, payload: dict) -> tuple[int, dict, bytes]:
    connection = http.client.HTTPConnection(base.split("//")[1].split("/")[0], timeout=30)
    try:
        connection.request("POST", "/v1/responses", json.dumps(payload), {"Content-Type": "application/json"})
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


def _check_strictly(status: int, data: bytes, stream: bool) -> list[str]:
    """Every object of a proxy answer, read by the SDK's own types, strictly."""
    import sdk_shapes

    if status != 200:
        return sdk_shapes.check_error_body(json.loads(data))
    if not stream:
        return sdk_shapes.check_response(json.loads(data))
    events = [json.loads(line[6:]) for line in data.decode().splitlines() if line.startswith("data: ")]
    return [f"{e['type']}: {p}" for e in events for p in sdk_shapes.check_event(e)]


@pytest.mark.parametrize("mode", list(MODES))
def test_the_official_sdk_with_default_retries_runs_each_tool_once(proxy_chapter, mode) -> None:
    openai = pytest.importorskip("openai")
    streams, server = proxy_chapter
    options, stream = MODES[mode]
    request = {"model": "gpt-4.1-mini", "input": "Weather in Paris?", "tools": TOOLS}
    for failing in [None, *FAILURES]:
        # Every attempt the client could make meets a model that calls the tool, then the failure.
        script = [step for attempt in range(3)
                  for step in (streams.body("interleaved_calls" if failing is None else "tool_call", f"a{attempt}"),
                               failing or "final_after_tools")]
        upstream = streams.ScriptedUpstream(*script)
        tools = streams.WeatherTools(upstream)
        with serving(server, upstream, tools, **options) as base:
            client = openai.OpenAI(base_url=base, api_key="offline")  # the SDK's defaults: max_retries=2
            assert client.max_retries == 2
            outcome = "completed"
            try:
                if not stream:
                    final = client.responses.create(**request)
                else:
                    with client.responses.stream(**request) as events:
                        kinds = [e.type for e in events]
                        final = events.get_final_response()
                    assert kinds[0] == "response.created" and kinds[-1] == "response.completed", kinds
            except openai.APIStatusError as error:
                outcome = f"{error.status_code} {error.code}"
                assert error.status_code == 502 and error.response.headers.get("x-should-retry") == "false", outcome
            except RuntimeError as error:  # the SDK's stream helper: a stream that ended in response.failed
                if "response.completed" not in str(error):
                    raise  # the SDK's stream reader refused the stream itself (a duplicate output index, ...)
                outcome = f"failed: {error}"
            client.close()
            requests_made = len(upstream.requests)
            # The same request again, raw: every object the proxy writes, read by the SDK's types strictly.
            status, headers, data = _raw(base, {**request, "stream": stream})
        per_request = 2 if failing is None else 1  # Paris and Lisbon, or the one call before the failure
        assert len(tools.runs) == 2 * per_request, \
            f"{mode}, {failing}: {len(tools.runs)} tool runs for two requests, want {per_request} each ({outcome})"
        assert requests_made == 2, f"{mode}, {failing}: the SDK's request cost {requests_made} upstream responses ({outcome})"
        if failing is None:
            assert outcome == "completed" and final.output_text.startswith("Paris:") and final.id == "resp_call2_a0", \
                (outcome, final.id)
            assert final.usage.total_tokens == 55 + 73, final.usage
        else:
            assert outcome != "completed", f"{mode}, {failing}: a failed upstream is never a completed answer"
        assert _check_strictly(status, data, stream) == [], f"{mode}, {failing}: {_check_strictly(status, data, stream)}"


def test_the_official_sdk_sees_a_cut_pass_through_as_cut(proxy_chapter) -> None:
    openai = pytest.importorskip("openai")
    streams, server = proxy_chapter
    from agent.proxy.errors import FailClosed

    cut = streams.UpstreamBody(streams.pieces(streams.body("final_text"), 900), breaks_after=3,
                               error=FailClosed("truncated", "the upstream connection broke"))
    upstream = streams.ScriptedUpstream(cut, "final_text")
    with serving(server, upstream, streams.WeatherTools()) as base:
        client = openai.OpenAI(base_url=base, api_key="offline")
        seen = []
        with pytest.raises(openai.APIConnectionError):
            with client.responses.stream(model="gpt-4.1-mini", input="Hi") as stream:
                for event in stream:
                    seen.append(event.type)
        assert seen[:2] == ["response.created", "response.in_progress"] and "response.completed" not in seen, seen
        assert cut.closed and len(upstream.requests) == 1, "the SDK does not retry a stream that began; the upstream was closed"
        with client.responses.stream(model="gpt-4.1-mini", input="Hi") as stream:
            assert stream.get_final_response().output_text == "It is raining in Paris.", "the proxy serves on after a cut"
        client.close()
