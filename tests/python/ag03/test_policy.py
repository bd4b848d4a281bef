"""Catalog: the policies (agent/proxy/policy.py): when tools run, what the client is answered, and
that the upstream is closed whatever happens."""

from __future__ import annotations

import contextlib
import copy
import http.client
import io
import json
import socket
import threading

import pytest

from ag03_streams import (STREAMS, ScriptedUpstream, UpstreamBody, WeatherTools, body, events_of, frame, pieces,
                          response_problems, sdk_like_post, stream_problems)
from agent.proxy.errors import FailClosed
from agent.proxy.policy import MAX_TURNS, buffered_final_stream, handle, pass_through, progress_events
from agent.proxy.sse import read_events

REQUEST = {"model": "gpt-4.1-mini", "input": "What is the weather in Paris?", "stream": False,
           "tools": [{"type": "function", "name": "get_weather", "strict": True,
                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                     "required": ["city"], "additionalProperties": False}}]}


def _body(reply) -> bytes:
    return b"".join(reply.body)


def _error(reply) -> dict:
    doc = json.loads(_body(reply))
    assert set(doc) == {"error"} and {"message", "type", "param", "code"} <= set(doc["error"]), \
        f"an error answer has the API's error shape, got {doc}"
    return doc["error"]


def _not_retryable(reply) -> bool:
    return ("x-should-retry", "false") in [(name.lower(), value) for name, value in reply.headers]


@contextlib.contextmanager
def _serving(upstream, tools, **options):
    """The given server around handle, on 127.0.0.1; yields its port."""
    from agent.proxy.server import make_server

    server = make_server(upstream, tools, **options)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_tool_runs_after_complete_arguments():
    upstream = ScriptedUpstream("tool_call", "final_after_tools", read_size=7)
    tools = WeatherTools(upstream)
    turn = buffered_final_stream(copy.deepcopy(REQUEST), upstream, tools)
    assert tools.runs == [{"city": "Paris"}], f"get_weather runs exactly once, with the parsed arguments: {tools.runs}"
    assert tools.upstream_done_at_run == [True], "the tool runs only after the upstream response was read to its end"
    assert turn.text == "Paris: light rain, 14 C; Lisbon: sunny, 21 C.", f"the final answer is the text-only response: {turn.text!r}"
    second = upstream.requests[1]["input"]
    call = next(i for i in second if i.get("type") == "function_call")
    output = next(i for i in second if i.get("type") == "function_call_output")
    assert (call["call_id"], call["name"], call["arguments"]) == ("call_paris", "get_weather", '{"city":"Paris"}'), \
        f"the call goes back upstream as it was made: {call}"
    assert output["call_id"] == "call_paris" and json.loads(output["output"])["forecast"] == "light rain, 14 C", \
        f"its result goes back with the same call_id: {output}"
    assert second.index(call) < second.index(output), "the call comes before its result"
    both = ScriptedUpstream("interleaved_calls", "final_after_tools")
    tools = WeatherTools(both)
    buffered_final_stream(copy.deepcopy(REQUEST), both, tools)
    assert tools.runs == [{"city": "Paris"}, {"city": "Lisbon"}], f"both interleaved calls run once each, in output order: {tools.runs}"


@pytest.mark.parametrize("name", ["unknown_tool", "second_call_bad_arguments", "arguments_not_json", "arguments_not_object"])
def test_batch_validated_before_any_call(name):
    upstream = ScriptedUpstream(name, "final_after_tools")
    tools = WeatherTools(upstream)
    with pytest.raises(FailClosed) as caught:
        buffered_final_stream(copy.deepcopy(REQUEST), upstream, tools)
    assert tools.runs == [], f"{name}: no call of the batch runs when one of them cannot ({caught.value.code}): ran {tools.runs}"
    assert caught.value.code in ("unknown_tool", "bad_arguments"), f"{name}: got {caught.value.code!r}"
    assert len(upstream.requests) == 1, "nothing is sent upstream after a batch fails"


def test_tool_failure_fails_closed():
    upstream = ScriptedUpstream("interleaved_calls", "final_after_tools")
    ran = []

    def weather(arguments):
        ran.append(arguments["city"])
        raise RuntimeError("the weather service is down")

    reply = handle(copy.deepcopy(REQUEST), upstream, {"get_weather": weather})
    assert reply.status == 502 and _error(reply)["code"] == "tool_failed" and _not_retryable(reply), \
        f"a tool that raises is a failure answered like any other, never a crash: {reply.status} {_body(reply)[:200]!r}"
    assert "weather service is down" in _error(reply)["message"] and ran == ["Paris"], \
        f"its words are kept, and the batch stops at the tool that raised: {ran}"
    assert len(upstream.requests) == 1 and upstream.all_closed, "nothing more goes upstream"


FAILURES = {  # fixture -> the code the client is answered with, and words of the upstream it keeps
    "cut_after_arguments": ("missing_terminal", ""), "cut_mid_arguments": ("missing_terminal", ""),
    "cut_inside_event": ("truncated", ""), "failed_after_done": ("upstream_failed", "failed to finish"),
    "error_event_nested": ("upstream_error", "overloaded"), "completed_mismatch": ("mismatch", ""),
    "repeated_sequence": ("protocol", ""), "mismatched_arguments": ("mismatch", ""), "text_done_differs": ("mismatch", ""),
    "completed_text_differs": ("mismatch", ""), "item_done_differs": ("mismatch", ""), "unknown_item_delta": ("protocol", ""),
    "terminal_id_mismatch": ("protocol", ""), "completed_before_arguments_done": ("incomplete_call", ""),
    "event_after_completed": ("protocol", ""),
}
# response.completed ends the response, not the reading: the body is read to its end, and whatever comes
# after the terminal event (here another delta) breaks the stream's own bookkeeping
AFTER_COMPLETED = (b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", '
                   b'"sequence_number": 999, "item_id": "msg_late", "output_index": 1, "content_index": 0, '
                   b'"delta": "one more thing"}\n\n')


@pytest.mark.parametrize("name", list(FAILURES))
@pytest.mark.parametrize("stream", [False, True])
def test_fail_closed_answers_502(name, stream):
    first = body("tool_call") + AFTER_COMPLETED if name == "event_after_completed" else name
    upstream = ScriptedUpstream(first, "final_after_tools")
    tools = WeatherTools(upstream)
    reply = handle({**copy.deepcopy(REQUEST), "stream": stream}, upstream, tools)
    assert reply.status == 502, f"{name}: a stream that fails closed is answered 502, never {reply.status}"
    assert reply.content_type == "application/json", f"{name}: the error is JSON, got {reply.content_type!r}"
    code, words = FAILURES[name]
    error = _error(reply)
    assert error["code"] == code and words in error["message"], \
        f"{name}: the error names its code ({code!r}) and keeps the upstream's words ({words!r}): {error}"
    assert _not_retryable(reply), f"{name}: the 502 says x-should-retry: false, or an SDK sends it again: {reply.headers}"
    assert tools.runs == [], f"{name}: nothing ran: {tools.runs}"


def test_upstream_closed_every_time():
    for script in (("final_text",), ("tool_call", "final_after_tools"), ("cut_mid_arguments",), ("error_event",),
                   ("tool_call", "cut_inside_event"), ("unknown_tool",), ("mismatched_arguments",)):
        for policy in ("buffered_final_stream", "progress_events"):
            upstream = ScriptedUpstream(*script, read_size=7)
            reply = handle({**copy.deepcopy(REQUEST), "stream": True}, upstream, WeatherTools(upstream), policy=policy)
            _body(reply)
            assert upstream.bodies and upstream.all_closed, f"{policy} on {script}: every upstream body is closed"
    broken = UpstreamBody(pieces(body("tool_call"), 20), breaks_after=3, error=FailClosed("truncated", "connection reset"))
    upstream = ScriptedUpstream(broken)
    reply = handle(copy.deepcopy(REQUEST), upstream, WeatherTools(upstream))
    assert reply.status == 502 and broken.closed, "an upstream body that breaks mid-way is closed all the same"
    broken = UpstreamBody([b": one\n\n", b": two\n\n"], breaks_after=1, error=FailClosed("truncated", "connection reset"))
    reply = handle({"model": "m", "input": "hi", "stream": True}, ScriptedUpstream(broken), WeatherTools())
    with pytest.raises(FailClosed):
        _body(reply)
    assert broken.closed, "a pass-through whose upstream breaks closes it"
    upstream = ScriptedUpstream("final_text", read_size=7)
    stateless = {k: v for k, v in REQUEST.items() if k != "tools"}
    reply = handle(stateless, upstream, WeatherTools())
    next(iter(reply.body))
    reply.body.close()
    assert upstream.all_closed, "a pass-through the client left early closes the upstream too"
    upstream = ScriptedUpstream("final_text", read_size=7)
    assert _body(handle(stateless, upstream, WeatherTools())) == body("final_text"), "the whole body passes through"
    assert upstream.all_closed, "a pass-through read to its end closes the upstream"


def test_client_disconnect_closes_upstream():
    stateless = {k: v for k, v in REQUEST.items() if k != "tools"}
    upstream = ScriptedUpstream("final_text", read_size=7)
    handle(copy.deepcopy(stateless), upstream, WeatherTools()).body.close()
    assert upstream.all_closed, "a pass-through closed before its first chunk was read closes the upstream (a client gone at once)"
    for forwarding in (False, True):
        upstream = ScriptedUpstream("text_then_call", "final_after_tools", read_size=7)
        tools = WeatherTools(upstream)
        reply = handle(copy.deepcopy(REQUEST), upstream, tools, policy="progress_events", forward_tool_events=forwarding)
        first = next(iter(reply.body))
        assert first.startswith(b"event: response.created"), f"progress mode answers with its first event: {first[:60]!r}"
        reply.body.close()  # the client went away after the first event
        assert upstream.bodies[0].closed and not upstream.bodies[0].exhausted, \
            f"progress mode (forwarding {forwarding}): the client gone, the upstream is closed at once, by the proxy"
        assert tools.runs == [] and len(upstream.requests) == 1, "and nothing more runs or goes upstream"
    upstream = ScriptedUpstream("text_then_call", "final_after_tools", read_size=7)
    reply = handle(copy.deepcopy(REQUEST), upstream, WeatherTools(upstream), policy="progress_events")
    reply.body.close()
    assert upstream.bodies[0].closed, "progress mode closed before its first chunk was read closes the upstream"

    class Source:
        """An upstream body that is not its own iterator: each iter() gives a new one; close() is its own."""

        closed = False

        def __iter__(self):
            yield from (b"event: a\ndata: {}\n\n", b"event: b\ndata: {}\n\n")

        def close(self) -> None:
            self.closed = True

    source = Source()
    reply = handle(copy.deepcopy(stateless), lambda request: source, WeatherTools())
    next(iter(reply.body))
    reply.body.close()
    assert source.closed, "the client gone, the upstream body itself is closed (not only an iterator taken from it)"

    gate, released = threading.Event(), threading.Event()

    class Gated(UpstreamBody):
        """Gives its first chunk, then waits for the client to be gone before offering thousands more."""

        def __next__(self) -> bytes:
            if self.read == 1:
                gate.wait(10)
            return super().__next__()

        def close(self) -> None:
            super().close()
            released.set()

    gated = Gated([b": first\n\n"] + [b": keep-alive " + b"x" * 1000 + b"\n\n"] * 10_000)
    with _serving(ScriptedUpstream(gated), WeatherTools()) as port:
        client = socket.create_connection(("127.0.0.1", port), timeout=10)
        payload = json.dumps({**stateless, "stream": True}).encode()
        client.sendall(b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload))
        head = b""
        while b": first" not in head:
            head += client.recv(4096)
        client.close()  # the client stops reading and goes away
        gate.set()
        released.wait(10)
    assert gated.closed and not gated.exhausted, \
        f"over HTTP, a client that goes away closes the upstream within a few chunks ({gated.read} of 10,001 read)"


def test_pass_through_byte_identical():
    odd = [b": keep-alive\r\n", b"event: response.created\r\ndata: {\"type\":\"response.created\",",
           b"\"response\":{\"id\":\"r\"}}\r\n\r\n", b"data: not even json\n\n", b"\xef\xbb\xbftrailing"]
    upstream = ScriptedUpstream(odd)
    stateless = {"model": "m", "input": "hi", "stream": True, "store": False}
    reply = handle(copy.deepcopy(stateless), upstream, WeatherTools())
    assert reply.status == 200 and reply.content_type == "text/event-stream", f"a streamed pass-through: {reply.status} {reply.content_type}"
    first = next(iter(reply.body))
    assert first == odd[0] and not upstream.bodies[0].exhausted, \
        f"each chunk goes out as it arrives, unchanged, not after the upstream ends: first {first!r}"
    rest = list(reply.body)
    assert [first, *rest] == odd, f"every chunk forwarded unchanged: no parsing, no re-framing, no tidying: {[first, *rest]}"
    assert upstream.requests == [stateless], f"the client's request goes upstream unchanged: {upstream.requests}"
    assert upstream.all_closed, "a pass-through read to its end closes the upstream"
    json_upstream = ScriptedUpstream(b'{"id": "resp_1",  "object":"response"}', read_size=3)
    plain = handle({"model": "m", "input": "hi"}, json_upstream, WeatherTools())
    assert plain.content_type == "application/json" and _body(plain) == b'{"id": "resp_1",  "object":"response"}', \
        "a non-streamed pass-through forwards the JSON body byte for byte"
    assert json_upstream.requests == [{"model": "m", "input": "hi"}], \
        f"a non-streamed request goes upstream as it is, not turned into a stream: {json_upstream.requests}"
    assert list(pass_through(iter([b"a", b"", b"b"]))) == [b"a", b"", b"b"], "pass_through yields each chunk as it is"
    empty_tools = ScriptedUpstream("final_text")
    reply = handle({"model": "m", "input": "hi", "stream": True, "tools": []}, empty_tools, WeatherTools())
    assert _body(reply) == body("final_text") and empty_tools.requests[0]["tools"] == [], \
        "a request whose tools are an empty list has nothing to run either: it passes through"


def test_pass_through_cut_visible():
    stateless = {"model": "m", "input": "hi", "stream": True}
    for error in (FailClosed("truncated", "the upstream connection broke"), OSError("connection reset by peer")):
        broken = UpstreamBody([b"event: a\ndata: {}\n\n", b"event: b\n"], breaks_after=2, error=error)
        reply = handle(copy.deepcopy(stateless), ScriptedUpstream(broken), WeatherTools())
        got = []
        with pytest.raises(type(error)):
            for chunk in reply.body:
                got.append(chunk)
        assert got == [b"event: a\ndata: {}\n\n", b"event: b\n"], f"what arrived before the break went out: {got}"
        assert broken.closed, f"the broken upstream is closed ({type(error).__name__})"
    cut = UpstreamBody(pieces(body("final_text"), 40), breaks_after=3, error=FailClosed("truncated", "reset"))
    errors = io.StringIO()
    whole = body("final_text")
    with contextlib.redirect_stderr(errors), _serving(ScriptedUpstream(cut, [whole[:10], b"", whole[10:]]), WeatherTools()) as port:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("POST", "/v1/responses", json.dumps(stateless), {"Content-Type": "application/json"})
        answer = connection.getresponse()
        assert answer.status == 200 and answer.getheader("Transfer-Encoding") == "chunked", \
            f"a pass-through streams in chunks, so that a cut can show: {answer.status} {answer.getheaders()}"
        with pytest.raises(http.client.IncompleteRead) as incomplete:
            answer.read()
        connection.close()
        assert incomplete.value.partial == body("final_text")[:120], \
            f"the client gets the bytes before the break, then a body without its last chunk: {incomplete.value.partial[-40:]!r}"
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("POST", "/v1/responses", json.dumps(stateless), {"Content-Type": "application/json"})
        assert connection.getresponse().read() == whole, "the proxy goes on serving after a cut, an empty upstream chunk included"
        connection.close()
    assert "Traceback" not in errors.getvalue(), f"a cut upstream is no crash of the proxy: {errors.getvalue()[-600:]}"


def _sse_events(data: bytes) -> list[dict]:
    return list(read_events(pieces(data, 5)))


def _usage_sum(*names: str) -> dict:
    usages = [STREAMS[n]["events"][-1]["response"]["usage"] for n in names]
    total = {"input_tokens": sum(u["input_tokens"] for u in usages),
             "input_tokens_details": {k: sum(u["input_tokens_details"][k] for u in usages) for k in ("cached_tokens", "cache_write_tokens")},
             "output_tokens": sum(u["output_tokens"] for u in usages),
             "output_tokens_details": {"reasoning_tokens": sum(u["output_tokens_details"]["reasoning_tokens"] for u in usages)}}
    total["total_tokens"] = total["input_tokens"] + total["output_tokens"]
    return total


def test_progress_forwards_text_not_tools():
    upstream = ScriptedUpstream("text_then_call", "final_after_tools", read_size=7)
    tools = WeatherTools(upstream)
    stream = progress_events(copy.deepcopy(REQUEST), upstream, tools)
    head = b""
    while b"response.output_text.delta" not in head:
        head += next(stream)
    assert not upstream.bodies[0].exhausted and tools.runs == [], \
        "text goes out while the upstream still streams, before any tool runs"
    events = _sse_events(head + b"".join(stream))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed", f"created first, completed last: {kinds}"
    assert not any("function_call" in k for k in kinds) and not any(
        e.get("item", {}).get("type") == "function_call" for e in events), f"no tool-call event reaches the client: {kinds}"
    assert [e["sequence_number"] for e in events] == list(range(len(events))), "one numbering for the downstream stream"
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == "Let me check.Paris: light rain, 14 C; Lisbon: sunny, 21 C.", f"every text delta forwarded: {text!r}"
    assert tools.runs == [{"city": "Paris"}], f"the tool still runs once, after its response completed: {tools.runs}"
    created, completed = events[0]["response"], events[-1]["response"]
    first = STREAMS["text_then_call"]["events"][0]["response"]
    assert (created["id"], created["model"], created["created_at"], created["status"]) == \
        (first["id"], first["model"], first["created_at"], "in_progress"), f"the downstream response is named after the first upstream one: {created}"
    assert (completed["id"], completed["model"], completed["created_at"], completed["status"]) == \
        (first["id"], first["model"], first["created_at"], "completed"), f"and completes under the same name: {completed}"
    assert completed["usage"] == _usage_sum("text_then_call", "final_after_tools"), \
        f"with the usage of every upstream response added up: {completed['usage']}"
    message = completed["output"][0]
    assert message["content"][0]["text"] == text and message["id"].startswith("msg_"), f"holding all the text forwarded: {message}"
    item_events = [e for e in events if e["type"].startswith("response.output_item")]
    assert [e["item"]["status"] for e in item_events] == ["in_progress", "completed"], \
        f"the message item is added in progress and done completed: {[e['item'] for e in item_events]}"
    deltas = [e for e in events if e["type"] == "response.output_text.delta"]
    assert all((e["item_id"], e["output_index"], e["content_index"]) == (message["id"], 0, 0) for e in deltas), \
        "each forwarded delta belongs to the downstream message item"
    assert stream_problems(events) == [], f"the stream reads as the official SDK reads one: {stream_problems(events)}"
    second = upstream.requests[1]
    assert second["stream"] is True and [i.get("type") for i in second["input"][1:]] == ["function_call", "function_call_output"], \
        f"progress mode sends the call and its result upstream as the buffered policy does: {second}"
    quiet = ScriptedUpstream("tool_call", "final_after_tools")
    reply = handle(copy.deepcopy(REQUEST), quiet, WeatherTools(quiet), policy="progress_events")
    events = _sse_events(_body(reply))
    assert reply.content_type == "text/event-stream" and events[0]["type"] == "response.created", \
        f"handle's progress reply is an event stream that opens with response.created: {reply.content_type}"
    assert not any("function_call" in e["type"] or e.get("item", {}).get("type") == "function_call" for e in events), \
        "handle forwards no tool-call event unless asked"
    forwarding = ScriptedUpstream("text_then_call", "interleaved_calls", "final_after_tools")
    events = _sse_events(_body(handle(copy.deepcopy(REQUEST), forwarding, WeatherTools(forwarding),
                                      policy="progress_events", forward_tool_events=True)))
    kinds = [e["type"] for e in events]
    assert kinds.count("response.function_call_arguments.delta") == 7 and kinds.count("response.function_call_arguments.done") == 3, \
        f"with forward_tool_events every call's events are forwarded: {kinds}"
    items = [e["item"]["type"] for e in events if e["type"] == "response.output_item.added"]
    assert items == ["message", "function_call", "function_call", "function_call"], \
        f"the function calls' item events are forwarded, the upstream's message items are not: {items}"
    places = [(e["output_index"], e["item"]["id"], e["item"].get("call_id")) for e in events if e["type"] == "response.output_item.added"]
    assert [p[0] for p in places] == [0, 1, 2, 3] and len({p[1] for p in places}) == 4, \
        f"each forwarded call takes an output index and an item id of the proxy's own, after its message: {places}"
    done = [e for e in events if e["type"] == "response.function_call_arguments.done"]
    assert [(e["item_id"], e["output_index"], e["arguments"]) for e in done] == \
        [(places[1][1], 1, '{"city":"Paris"}'), (places[3][1], 3, '{"city":"Lisbon"}'), (places[2][1], 2, '{"city":"Paris"}')], \
        f"each forwarded event names its call by the proxy's numbering, its arguments as they came: {done}"
    assert [e["sequence_number"] for e in events] == list(range(len(events))), "forwarded events are renumbered too"
    assert stream_problems(events) == [], f"forwarded events read as the official SDK reads a stream: {stream_problems(events)}"


def test_progress_failure_is_explicit():
    upstream = ScriptedUpstream("text_then_call", "cut_mid_arguments")
    tools = WeatherTools(upstream)
    reply = handle(copy.deepcopy(REQUEST), upstream, tools, policy="progress_events")
    assert reply.status == 200, "progress already went out: the failure is told inside the stream"
    events = _sse_events(_body(reply))
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "response.failed" and "response.completed" not in kinds, f"a failure ends the stream, never completed: {kinds}"
    failed = events[-1]["response"]
    assert failed["error"]["code"] == "server_error" and failed["error"]["message"].startswith("missing_terminal"), \
        f"with one of the API's error codes, the proxy's code leading the message: {failed['error']}"
    assert (failed["id"], failed["model"], failed["status"], failed["output"]) == \
        (events[0]["response"]["id"], events[0]["response"]["model"], "failed", []), f"the failed response is the one created: {failed}"
    assert stream_problems(events) == [], f"the failed stream still reads as the SDK reads one: {stream_problems(events)}"
    changed = ScriptedUpstream("text_done_differs")
    events = _sse_events(_body(handle(copy.deepcopy(REQUEST), changed, WeatherTools(changed), policy="progress_events")))
    assert events[-1]["type"] == "response.failed" and "mismatch" in events[-1]["response"]["error"]["message"], \
        f"text whose final statement disagrees with the deltas already forwarded ends in response.failed: {events[-1]}"
    slim = events_of("text_done_differs")
    slim[-1]["response"].pop("output")
    quiet = ScriptedUpstream(b"".join(frame(e) for e in slim))
    events = _sse_events(_body(handle(copy.deepcopy(REQUEST), quiet, WeatherTools(quiet), policy="progress_events")))
    assert events[-1]["type"] == "response.failed", \
        f"a text done event disagreeing with the deltas forwarded fails the stream, even under a completed event without output: {events[-1]}"
    before = ScriptedUpstream("created_missing")
    early = handle(copy.deepcopy(REQUEST), before, WeatherTools(before), policy="progress_events")
    assert early.status == 502 and _error(early)["code"] == "protocol" and _not_retryable(early), \
        f"a failure before anything went out is a 502, not to be retried, got {early.status}"


def test_turn_limit():
    upstream = ScriptedUpstream(*[body("tool_call", f"t{n}") for n in range(MAX_TURNS)])
    tools = WeatherTools(upstream)
    reply = handle(copy.deepcopy(REQUEST), upstream, tools)
    assert reply.status == 502 and _error(reply)["code"] == "turn_limit", f"a model that never stops calling tools is stopped: {reply.status}"
    assert len(upstream.requests) == MAX_TURNS and len(tools.runs) == MAX_TURNS, \
        f"at most {MAX_TURNS} upstream responses: {len(upstream.requests)} requests, {len(tools.runs)} runs"
    upstream = ScriptedUpstream(*[body("tool_call", f"t{n}") for n in range(MAX_TURNS)])
    events = _sse_events(_body(handle(copy.deepcopy(REQUEST), upstream, WeatherTools(upstream), policy="progress_events")))
    assert events[-1]["type"] == "response.failed" and events[-1]["response"]["error"]["message"].startswith("turn_limit"), \
        f"progress mode ends a runaway loop with response.failed, turn_limit: {events[-1]}"
    assert len(upstream.requests) == MAX_TURNS, f"progress mode keeps the same bound: {len(upstream.requests)} requests"
    upstream = ScriptedUpstream(*[body("tool_call", f"t{n}") for n in range(MAX_TURNS - 1)], "final_after_tools")
    turn = buffered_final_stream(copy.deepcopy(REQUEST), upstream, WeatherTools(upstream))
    assert turn.text.startswith("Paris:") and len(upstream.requests) == MAX_TURNS, \
        f"an answer in the last allowed response is still an answer: {turn.text!r} after {len(upstream.requests)} requests"


def test_call_ids_never_reused():
    upstream = ScriptedUpstream("reused_call_id", "final_after_tools")
    tools = WeatherTools(upstream)
    reply = handle(copy.deepcopy(REQUEST), upstream, tools)
    assert reply.status == 502 and _error(reply)["code"] == "protocol" and tools.runs == [], \
        f"two pending calls under one call id fail closed before anything runs: {reply.status} {tools.runs}"
    for policy in ("buffered_final_stream", "progress_events"):
        upstream = ScriptedUpstream("tool_call", "tool_call", "final_after_tools")
        tools = WeatherTools(upstream)
        data = _body(handle({**copy.deepcopy(REQUEST), "stream": True}, upstream, tools, policy=policy))
        assert b"protocol" in data and b"response.completed" not in data, \
            f"{policy}: a second response reusing the first one's call id fails closed: {data[-300:]!r}"
        assert tools.runs == [{"city": "Paris"}] and len(upstream.requests) == 2, \
            f"{policy}: the first call ran once, the reused id never runs, nothing more goes upstream: {tools.runs}"
    history = [{"role": "user", "content": "Weather in Paris?"},
               {"type": "function_call", "call_id": "call_paris", "name": "get_weather", "arguments": '{"city":"Paris"}'},
               {"type": "function_call_output", "call_id": "call_paris", "output": "rain"},
               {"role": "user", "content": "And now?"}]
    upstream = ScriptedUpstream("tool_call", "final_after_tools")
    tools = WeatherTools(upstream)
    reply = handle({**copy.deepcopy(REQUEST), "input": history}, upstream, tools)
    assert reply.status == 502 and tools.runs == [], f"a call id the client's history already answered is not run again: {tools.runs}"
    upstream = ScriptedUpstream(body("tool_call", "a"), body("tool_call", "b"), "final_after_tools")
    tools = WeatherTools(upstream)
    assert handle(copy.deepcopy(REQUEST), upstream, tools).status == 200 and len(tools.runs) == 2, \
        "calls with ids of their own run, one response after the other"


@pytest.mark.parametrize("mode", ["buffered_json", "buffered_sse", "progress", "progress_forwarding"])
def test_no_tool_runs_twice(mode):
    stream = mode != "buffered_json"
    options = {"policy": "progress_events" if mode.startswith("progress") else "buffered_final_stream",
               "forward_tool_events": mode == "progress_forwarding"}
    for failing in ("cut_after_arguments", "failed_after_done", "mismatched_arguments", "error_event_nested", "the same call",
                    "upstream 503"):
        attempts = [body("tool_call", f"a{attempt}") for attempt in range(3)]  # each attempt, a model choosing anew
        second = {"the same call": None, "upstream 503": FailClosed("upstream_status", "the upstream answered 503")}
        upstream = ScriptedUpstream(*[step for first in attempts
                                      for step in (first, second.get(failing, failing) or first)])
        tools = WeatherTools(upstream)
        with _serving(upstream, tools, **options) as port:
            status, headers, data, attempts = sdk_like_post(port, {**REQUEST, "stream": stream})
        assert len(tools.runs) == 1, \
            f"{mode}, then {failing}: a client retrying as the SDK does by default still runs the tool once, not {len(tools.runs)} times"
        assert attempts == 1 and len(upstream.requests) == 2, f"{mode}, {failing}: one client attempt, {attempts} made"
        if status == 502:
            assert headers.get("x-should-retry") == "false", f"{mode}: the 502 says not to retry: {headers}"
        else:
            assert status == 200 and _sse_events(data)[-1]["type"] == "response.failed", f"{mode}: {status} {data[-200:]!r}"


def test_downstream_response_consistent():
    request = {**copy.deepcopy(REQUEST), "tool_choice": "required", "parallel_tool_calls": False}
    first = STREAMS["tool_call"]["events"][0]["response"]
    answers = {}
    for mode in ("buffered_json", "buffered_sse", "progress", "progress_forwarding"):
        upstream = ScriptedUpstream("tool_call", body("text_then_call", "b"), "final_after_tools", read_size=7)
        options = {"policy": "progress_events" if mode.startswith("progress") else "buffered_final_stream",
                   "forward_tool_events": mode == "progress_forwarding"}
        reply = handle({**copy.deepcopy(request), "stream": mode != "buffered_json"}, upstream, WeatherTools(upstream), **options)
        if mode == "buffered_json":
            answer = json.loads(_body(reply))
        else:
            events = _sse_events(_body(reply))
            assert stream_problems(events) == [], f"{mode}: the stream reads as the official SDK reads one: {stream_problems(events)}"
            calls = [e for e in events if "function_call" in e["type"] or e.get("item", {}).get("type") == "function_call"]
            assert bool(calls) == (mode == "progress_forwarding"), f"{mode}: tool-call events go out only when forwarding: {len(calls)}"
            added = [e["item"]["id"] for e in events if e["type"] == "response.output_item.added"]
            assert len(added) == len(set(added)), f"{mode}: every item of the downstream response has an id of its own: {added}"
            answer = events[-1]["response"]
            opened = events[0]["response"]
            assert (opened["id"], opened["tools"], opened["tool_choice"]) == (answer["id"], request["tools"], "required"), \
                f"{mode}: created and completed name one response, echoing the request from the start: {opened}"
        assert response_problems(answer) == [], f"{mode}: the answer reads as the SDK's Response type: {response_problems(answer)}"
        answers[mode] = answer
        got = (answer["id"], answer["created_at"], answer["model"])
        assert got == (first["id"], first["created_at"], first["model"]), \
            f"{mode}: the answer is named after the first upstream response, whatever the mode: {got}"
        assert answer["usage"] == _usage_sum("tool_call", "text_then_call", "final_after_tools"), \
            f"{mode}: the usage of every upstream response, added up: {answer['usage']}"
        assert (answer["tools"], answer["tool_choice"], answer["parallel_tool_calls"]) == (request["tools"], "required", False), \
            f"{mode}: the answer echoes what the request asked for: {answer['tools']} {answer['tool_choice']} {answer['parallel_tool_calls']}"
        text = "".join(p.get("text", "") for i in answer["output"] for p in i["content"])
        assert text == "Let me check.Paris: light rain, 14 C; Lisbon: sunny, 21 C.", \
            f"{mode}: the text of every upstream response, in order: {text!r}"
    assert len({json.dumps(a, sort_keys=True) for a in answers.values()}) == 1, \
        "every mode gives the same final response for the same upstream answers"


@pytest.mark.parametrize("chunks, code", [
    ([b"event: response.created\ndata: {\"type\": \"response.created\", \"response\": {\"id\": \"r\"}}\n\n\xff\n\n"], "protocol"),
    ([b"data: [1, 2]\n\n"], "protocol"),
    ([b"data: {oops\n\n"], "protocol"),
    ([b"event: response.completed\ndata: {\"type\": \"response.created\", \"response\": {\"id\": \"r\"}}\n\n"], "protocol"),
    ([b"event: response.created\r", b"\ndata: {\"type\": \"response.created\", \"response\": {\"id\": \"r\"}}\r\n\r\n"], "missing_terminal"),
    ([b"\xef\xbb\xbfdata: {\"type\": \"response.created\", \"response\": {\"id\": \"r\"}}\n\ndata: [DONE]\n\n"], "missing_terminal"),
    ([b"id: 7\nretry: 10\n\n\n\ndata: {\"type\": \"response.created\", \"response\": {\"id\": \"r\"}}\n\n"], "missing_terminal"),
    ([b"data: {\"type\": \"error\", \"message\": \"caf", b"\xc3", b"\xa9 closed\"}\n\n"], "upstream_error"),
    ([b"data: {\"type\": \"response.created\"}\n\n", b"\xc3"], "protocol"),
], ids=["not-utf8", "not-an-object", "not-json", "name-disagrees", "split-crlf", "bom-and-done", "other-fields",
        "split-character", "cut-character"])
def test_malformed_bytes_fail_closed(chunks, code):
    upstream = ScriptedUpstream(chunks)
    tools = WeatherTools(upstream)
    reply = handle(copy.deepcopy(REQUEST), upstream, tools)
    assert reply.status == 502 and _error(reply)["code"] == code, \
        f"bytes the proxy cannot read as a whole response fail closed ({code}), got {reply.status} {_body(reply)[:120]!r}"
    assert upstream.all_closed and tools.runs == [], "the upstream is closed and nothing runs"


def test_request_forwarded_streaming():
    request = copy.deepcopy(REQUEST)
    original = copy.deepcopy(request)
    upstream = ScriptedUpstream("tool_call", "final_after_tools")
    reply = handle(request, upstream, WeatherTools(upstream))
    assert reply.status == 200 and reply.content_type == "application/json", f"a non-streamed client gets JSON: {reply.status}"
    answer = json.loads(_body(reply))
    assert answer["output"][0]["content"][0]["text"].startswith("Paris:"), "the JSON answer is the final response"
    assert (answer["id"], answer["tools"]) == ("resp_call1", REQUEST["tools"]), \
        f"named after the first upstream response, echoing the request's tools: {answer['id']} {answer['tools']}"
    sent = upstream.requests[0]
    assert sent["stream"] is True, "the proxy always streams from upstream, whatever the client asked"
    assert sent["input"] == [{"role": "user", "content": "What is the weather in Paris?"}], \
        f"a string input becomes one user message: {sent['input']}"
    assert (sent["model"], sent["tools"]) == (REQUEST["model"], REQUEST["tools"]), "model and tools go upstream unchanged"
    assert request == original, "the client's request is never changed in place"
    assert len(upstream.requests[1]["input"]) == 3, f"the second request holds the question, the call and its result: {upstream.requests[1]['input']}"
    streamed = handle({**copy.deepcopy(REQUEST), "stream": True}, ScriptedUpstream("final_text"), WeatherTools())
    events = _sse_events(_body(streamed))
    assert streamed.content_type == "text/event-stream" and events[-1]["type"] == "response.completed", \
        "a streaming client gets a synthesized event stream"
    with pytest.raises(ValueError):
        handle(copy.deepcopy(REQUEST), ScriptedUpstream("final_text"), WeatherTools(), policy="whatever")
    history = [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "Where?"}, {"role": "user", "content": "Paris"}]
    listed = ScriptedUpstream("final_text")
    handle({**copy.deepcopy(REQUEST), "input": copy.deepcopy(history)}, listed, WeatherTools())
    assert listed.requests[0]["input"] == history, f"a list input goes upstream as its items: {listed.requests[0]['input']}"


def test_proxy_over_http():
    import http.client
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from agent.proxy.server import demo_tools, make_server
    from agent.proxy.upstream import HttpUpstream

    script: list[tuple[int, bytes]] = []
    seen: list[dict] = []

    class Upstream(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            seen.append({"path": self.path, "auth": self.headers.get("Authorization"),
                         "body": json.loads(self.rfile.read(int(self.headers["Content-Length"])))})
            status, data = getattr(self.server, "script", script).pop(0)  # a server may have a script of its own
            self.send_response(status)
            self.send_header("Content-Type", "text/event-stream" if status == 200 else "application/json")
            self.send_header("Content-Length", str(len(data) + (1000 if data.endswith((b"CUT", b"STALL")) else 0)))
            self.end_headers()
            self.wfile.write(data)  # a body that ends in CUT promises more than it sends, then closes
            self.close_connection = data.endswith(b"CUT")
            if data.endswith(b"STALL"):  # ... or goes silent: the reader's timeout ends it, as an error
                release.wait(30)

        def log_message(self, *args) -> None:
            pass

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    runs: list[dict] = []
    weather = demo_tools()["get_weather"]
    tools = {"get_weather": lambda args: (runs.append(args), weather(args))[1]}
    proxy = make_server(HttpUpstream(f"http://127.0.0.1:{upstream.server_address[1]}/v1", api_key="k-1"), tools)
    # a port bound but not listening refuses connections; held for the whole test, it cannot be
    # given to one of the servers below, as a port freed at once can (the proxy would then reach
    # that server, or itself)
    unreachable = socket.socket()
    unreachable.bind(("127.0.0.1", 0))
    dead = make_server(HttpUpstream(f"http://127.0.0.1:{unreachable.getsockname()[1]}/v1"), tools)

    def crashing(body):
        raise RuntimeError("a bug in the upstream client")

    crashed = make_server(crashing, tools)
    release = threading.Event()
    servers: list[ThreadingHTTPServer] = []

    def start(*started: ThreadingHTTPServer) -> None:
        for server in started:
            threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
            servers.append(server)  # once serving: shutdown() waits for a server that never served forever

    start(upstream, proxy, dead, crashed)

    def stalled(patience: float) -> tuple[int, str, bytes]:
        """Half a body, then silence, from an upstream of its own, behind a proxy of its own that waits
        `patience` seconds for each read: no earlier exchange, late on a busy machine, can reach them."""
        quiet = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
        quiet.script = [(200, body("tool_call")[:150] + b"STALL")]
        impatient = make_server(HttpUpstream(f"http://127.0.0.1:{quiet.server_address[1]}/v1", timeout=patience), tools)
        start(quiet, impatient)
        return post(impatient, "/v1/responses", ask)

    heads: list[dict[str, str]] = []

    def post(server, path: str, payload: bytes) -> tuple[int, str, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
        try:
            connection.request("POST", path, payload, {"Content-Type": "application/json"})
            answer = connection.getresponse()
            heads.append({k.lower(): v for k, v in answer.getheaders()})
            return answer.status, answer.getheader("Content-Type", ""), answer.read()
        finally:
            connection.close()

    try:
        ask = json.dumps({**REQUEST, "stream": True}).encode()
        script[:] = [(200, body("tool_call")), (200, body("final_after_tools"))]
        status, kind, data = post(proxy, "/v1/responses", ask)
        events = _sse_events(data)
        assert (status, kind, events[-1]["type"]) == (200, "text/event-stream", "response.completed"), \
            f"over HTTP the client gets the synthesized stream: {status} {kind}"
        assert runs == [{"city": "Paris"}] and seen[0]["path"] == "/v1/responses" and seen[0]["auth"] == "Bearer k-1", \
            f"the tool ran once and the upstream got POST /v1/responses with the key: {runs}, {seen[0]['path']}"
        assert stream_problems(events) == [] and heads[-1].get("content-length") == str(len(data)), \
            f"a synthesized stream is whole when it is sent, so it goes out with its length: {heads[-1]}"
        result = next(i for i in seen[1]["body"]["input"] if i.get("type") == "function_call_output")
        assert json.loads(result["output"])["forecast"] == "light rain, 14 C", f"the tool's output went upstream: {result}"
        stateless = json.dumps({"model": "m", "input": "hi", "stream": True}).encode()
        script[:] = [(200, body("final_text"))]
        assert post(proxy, "/v1/responses", stateless)[2] == body("final_text"), "pass-through over HTTP is byte for byte"
        whole_event = body("final_text").index(b"\n\n") + 2
        script[:] = [(200, body("final_text")[:whole_event] + b"CUT")]
        try:
            ended = post(proxy, "/v1/responses", stateless)
        except http.client.IncompleteRead:
            ended = None  # the chunked body ended without its last chunk: a cut the client sees
        assert ended is None, ("an upstream that closes short of the Content-Length it announced is a cut, passed on "
                               f"as one (no last chunk), never a clean end: the client read {ended}")
        script[:] = [(200, body("tool_call")[:150] + b"CUT")]
        status, _, data = post(proxy, "/v1/responses", ask)
        assert status == 502 and json.loads(data)["error"]["code"] == "truncated", \
            f"a connection that ends early (CUT) mid-body: {data!r}"
        assert heads[-1].get("x-should-retry") == "false", f"a fail-closed answer says not to retry it: {heads[-1]}"
        # An upstream that goes silent mid-body, behind a proxy that waits 0.1 s for each read. On a busy
        # machine even the head can come later than that: any other answer is judged again with 2 s, and
        # that one counts (a proxy that is wrong is wrong at both; a slow machine costs time only).
        for patience in (0.1, 2.0):
            status, _, data = stalled(patience)
            if status == 502 and b'"truncated"' in data:
                break
        assert status == 502 and json.loads(data)["error"]["code"] == "truncated", \
            f"a connection that goes silent (STALL) mid-body: {data!r}"
        assert heads[-1].get("x-should-retry") == "false", f"a fail-closed answer says not to retry it: {heads[-1]}"
        script[:] = [(200, body("cut_after_arguments"))]
        assert post(proxy, "/v1/responses", ask)[0] == 502, "a cut upstream is a 502 over HTTP too"
        script[:] = [(429, b'{"error": {"message": "slow down"}}')]
        status, _, data = post(proxy, "/v1/responses", ask)
        assert status == 502 and json.loads(data)["error"]["code"] == "upstream_status", f"an upstream 429 fails closed: {data!r}"
        status, _, data = post(dead, "/v1/responses", ask)
        assert status == 502 and json.loads(data)["error"]["code"] == "upstream_unreachable", f"no upstream: {data!r}"
        status, _, data = post(dead, "/v1/responses", stateless)
        assert status == 502 and json.loads(data)["error"]["code"] == "upstream_unreachable", \
            f"a pass-through fails closed the same way when there is no upstream: {status} {data!r}"
        status, kind, data = post(crashed, "/v1/responses", ask)
        assert (status, kind, heads[-1].get("x-should-retry")) == (500, "application/json", "false") and json.loads(data)["error"], \
            f"anything else that goes wrong is a 500 with the API's error shape, not to be retried, never a dropped connection: {status} {data!r}"
        assert post(proxy, "/v1/other", ask)[0] == 404, "only /v1/responses is served"
        assert post(proxy, "/v1/responses", b"[1]")[0] == 400 and post(proxy, "/v1/responses", b"{")[0] == 400, \
            "a body that is not a JSON object is a 400"
        assert post(proxy, "/v1/responses", b"")[0] == 400, "an empty body is a 400"
    finally:
        release.set()
        for server in servers:
            server.shutdown()
            server.server_close()
        unreachable.close()
    with pytest.raises(ValueError):
        HttpUpstream("ftp://example.invalid")
