"""Catalog: the policies (agent/proxy/policy.py): when tools run, what the client is answered, and
that the upstream is closed whatever happens."""

from __future__ import annotations

import copy
import json

import pytest

from ag03_streams import STREAMS, ScriptedUpstream, WeatherTools, body, pieces
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


@pytest.mark.parametrize("name", ["cut_after_arguments", "cut_mid_arguments", "cut_inside_event", "failed_after_done",
                                  "completed_mismatch", "repeated_sequence"])
@pytest.mark.parametrize("stream", [False, True])
def test_fail_closed_answers_502(name, stream):
    upstream = ScriptedUpstream(name, "final_after_tools")
    tools = WeatherTools(upstream)
    reply = handle({**copy.deepcopy(REQUEST), "stream": stream}, upstream, tools)
    assert reply.status == 502, f"{name}: a stream that fails closed is answered 502, never {reply.status}"
    assert reply.content_type == "application/json", f"{name}: the error is JSON, got {reply.content_type!r}"
    assert _error(reply)["code"], f"{name}: the error names its code"
    assert tools.runs == [], f"{name}: nothing ran: {tools.runs}"


def test_upstream_closed_every_time():
    for script in (("final_text",), ("tool_call", "final_after_tools"), ("cut_mid_arguments",), ("error_event",),
                   ("tool_call", "cut_inside_event"), ("unknown_tool",)):
        for policy in ("buffered_final_stream", "progress_events"):
            upstream = ScriptedUpstream(*script, read_size=7)
            reply = handle({**copy.deepcopy(REQUEST), "stream": True}, upstream, WeatherTools(upstream), policy=policy)
            _body(reply)
            assert upstream.bodies and upstream.all_closed, f"{policy} on {script}: every upstream body is closed"
    upstream = ScriptedUpstream("final_text", read_size=7)
    stateless = {k: v for k, v in REQUEST.items() if k != "tools"}
    reply = handle(stateless, upstream, WeatherTools())
    next(iter(reply.body))
    reply.body.close()
    assert upstream.all_closed, "a pass-through the client left early closes the upstream too"
    upstream = ScriptedUpstream("final_text", read_size=7)
    assert _body(handle(stateless, upstream, WeatherTools())) == body("final_text"), "the whole body passes through"
    assert upstream.all_closed, "a pass-through read to its end closes the upstream"


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


def _sse_events(data: bytes) -> list[dict]:
    return list(read_events(pieces(data, 5)))


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
    first, final = STREAMS["text_then_call"]["events"][0]["response"], STREAMS["final_after_tools"]["events"][-1]["response"]
    assert (created["id"], created["model"], created["created_at"], created["status"]) == \
        (first["id"], first["model"], first["created_at"], "in_progress"), f"the downstream response is named after the first upstream one: {created}"
    assert (completed["id"], completed["model"], completed["created_at"], completed["status"]) == \
        (first["id"], first["model"], first["created_at"], "completed"), f"and completes under the same name: {completed}"
    assert completed["usage"] == final["usage"], f"with the usage of the final upstream response: {completed['usage']}"
    message = completed["output"][0]
    assert message["content"][0]["text"] == text and message["id"].startswith("msg_"), f"holding all the text forwarded: {message}"
    item_events = [e for e in events if e["type"].startswith("response.output_item")]
    assert [e["item"]["status"] for e in item_events] == ["in_progress", "completed"], \
        f"the message item is added in progress and done completed: {[e['item'] for e in item_events]}"
    deltas = [e for e in events if e["type"] == "response.output_text.delta"]
    assert all((e["item_id"], e["output_index"], e["content_index"]) == (message["id"], 0, 0) for e in deltas), \
        "each forwarded delta belongs to the downstream message item"
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
    forwarding = ScriptedUpstream("tool_call", "final_after_tools")
    events = _sse_events(_body(handle(copy.deepcopy(REQUEST), forwarding, WeatherTools(forwarding),
                                      policy="progress_events", forward_tool_events=True)))
    kinds = [e["type"] for e in events]
    assert "response.function_call_arguments.delta" in kinds and "response.function_call_arguments.done" in kinds, \
        f"with forward_tool_events the call's events are forwarded: {kinds}"
    items = [e["item"]["type"] for e in events if e["type"] == "response.output_item.added"]
    assert sorted(items) == ["function_call", "message"], \
        f"the function call's item events are forwarded, the upstream's message items are not: {items}"
    forwarded = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    assert (forwarded["item_id"], forwarded["arguments"]) == ("fc_1", '{"city":"Paris"}'), f"forwarded as they came: {forwarded}"
    assert [e["sequence_number"] for e in events] == list(range(len(events))), "forwarded events are renumbered too"


def test_progress_failure_is_explicit():
    upstream = ScriptedUpstream("text_then_call", "cut_mid_arguments")
    tools = WeatherTools(upstream)
    reply = handle(copy.deepcopy(REQUEST), upstream, tools, policy="progress_events")
    assert reply.status == 200, "progress already went out: the failure is told inside the stream"
    events = _sse_events(_body(reply))
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "response.failed" and "response.completed" not in kinds, f"a failure ends the stream, never completed: {kinds}"
    failed = events[-1]["response"]
    assert failed["error"]["code"] == "missing_terminal" and failed["error"]["message"], f"with its code and message: {failed['error']}"
    assert (failed["id"], failed["model"], failed["status"], failed["output"]) == \
        (events[0]["response"]["id"], events[0]["response"]["model"], "failed", []), f"the failed response is the one created: {failed}"
    before = ScriptedUpstream("created_missing")
    early = handle(copy.deepcopy(REQUEST), before, WeatherTools(before), policy="progress_events")
    assert early.status == 502 and _error(early)["code"] == "protocol", \
        f"a failure before anything went out is a 502, got {early.status}"


def test_turn_limit():
    upstream = ScriptedUpstream(*["tool_call"] * MAX_TURNS)
    tools = WeatherTools(upstream)
    reply = handle(copy.deepcopy(REQUEST), upstream, tools)
    assert reply.status == 502 and _error(reply)["code"] == "turn_limit", f"a model that never stops calling tools is stopped: {reply.status}"
    assert len(upstream.requests) == MAX_TURNS and len(tools.runs) == MAX_TURNS, \
        f"at most {MAX_TURNS} upstream responses: {len(upstream.requests)} requests, {len(tools.runs)} runs"
    upstream = ScriptedUpstream(*["tool_call"] * MAX_TURNS)
    events = _sse_events(_body(handle(copy.deepcopy(REQUEST), upstream, WeatherTools(upstream), policy="progress_events")))
    assert events[-1]["type"] == "response.failed" and events[-1]["response"]["error"]["code"] == "turn_limit", \
        f"progress mode ends a runaway loop with response.failed, turn_limit: {events[-1]}"
    assert len(upstream.requests) == MAX_TURNS, f"progress mode keeps the same bound: {len(upstream.requests)} requests"


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
    assert json.loads(_body(reply))["output"][0]["content"][0]["text"].startswith("Paris:"), "the JSON answer is the final response"
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
            status, data = script.pop(0)
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
    idle = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    unreachable_port = idle.server_address[1]
    idle.server_close()  # nothing listens there any more
    dead = make_server(HttpUpstream(f"http://127.0.0.1:{unreachable_port}/v1"), tools)
    impatient = make_server(HttpUpstream(f"http://127.0.0.1:{upstream.server_address[1]}/v1", timeout=0.1), tools)
    release = threading.Event()
    servers = [upstream, proxy, dead, impatient]
    for server in servers:
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def post(server, path: str, payload: bytes) -> tuple[int, str, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
        try:
            connection.request("POST", path, payload, {"Content-Type": "application/json"})
            answer = connection.getresponse()
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
        result = next(i for i in seen[1]["body"]["input"] if i.get("type") == "function_call_output")
        assert json.loads(result["output"])["forecast"] == "light rain, 14 C", f"the tool's output went upstream: {result}"
        stateless = json.dumps({"model": "m", "input": "hi", "stream": True}).encode()
        script[:] = [(200, body("final_text"))]
        assert post(proxy, "/v1/responses", stateless)[2] == body("final_text"), "pass-through over HTTP is byte for byte"
        for end, server in ((b"CUT", proxy), (b"STALL", impatient)):
            script[:] = [(200, body("tool_call")[:150] + end)]
            status, _, data = post(server, "/v1/responses", ask)
            assert status == 502 and json.loads(data)["error"]["code"] == "truncated", \
                f"a connection that ends early ({end.decode()}) mid-body: {data!r}"
        script[:] = [(200, body("cut_after_arguments"))]
        assert post(proxy, "/v1/responses", ask)[0] == 502, "a cut upstream is a 502 over HTTP too"
        script[:] = [(429, b'{"error": {"message": "slow down"}}')]
        status, _, data = post(proxy, "/v1/responses", ask)
        assert status == 502 and json.loads(data)["error"]["code"] == "upstream_status", f"an upstream 429 fails closed: {data!r}"
        status, _, data = post(dead, "/v1/responses", ask)
        assert status == 502 and json.loads(data)["error"]["code"] == "upstream_unreachable", f"no upstream: {data!r}"
        assert post(proxy, "/v1/other", ask)[0] == 404, "only /v1/responses is served"
        assert post(proxy, "/v1/responses", b"[1]")[0] == 400 and post(proxy, "/v1/responses", b"{")[0] == 400, \
            "a body that is not a JSON object is a 400"
        assert post(proxy, "/v1/responses", b"")[0] == 400, "an empty body is a 400"
    finally:
        release.set()
        for server in servers:
            server.shutdown()
            server.server_close()
    with pytest.raises(ValueError):
        HttpUpstream("ftp://example.invalid")
