"""The fake model's API: the contract it enforces, the shapes it sends, its scripted replies and faults, its CLI."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from course import fake_model
from test_fake_model_http import exchange, post

REPO = Path(__file__).resolve().parents[3]
USER = {"role": "user", "content": "Weather in Paris?"}


@pytest.fixture
def fm():
    with fake_model.FakeModel() as server:
        yield server


def call(fm: fake_model.FakeModel, body: object, *, method: str = "POST", path: str = "/v1/chat/completions") -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", fm.port, timeout=20)
    try:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request(method, path, body=data if method != "GET" else None, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def events(raw: bytes) -> list[str]:
    return [block[len("data: ") :] for block in raw.decode().split("\n\n") if block]


def chunks(raw: bytes) -> list[dict]:
    return [json.loads(e) for e in events(raw) if e != "[DONE]"]


def call_msg(*ids: str) -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": i, "type": "function", "function": {"name": "get_weather", "arguments": "{}"}} for i in ids]}


def tool_msg(call_id: str) -> dict:
    return {"role": "tool", "content": "18 C", "tool_call_id": call_id}


# ---- the contract: bad requests get the real API's 400 ---------------------------------------------------------

BAD_REQUESTS = {
    "no messages": ({"model": "m"}, "messages", "missing_required_parameter", "Missing required parameter: 'messages'."),
    "no model": ({"messages": [USER]}, "model", "missing_required_parameter", "Missing required parameter: 'model'."),
    "empty messages": ({"model": "m", "messages": []}, "messages", "empty_array",
                       "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead."),
    "unknown argument": ({"model": "m", "messages": [USER], "top_k": 3}, None, None, "Unrecognized request argument supplied: top_k"),
    "unknown role": ({"model": "m", "messages": [{"role": "bot", "content": "x"}]}, "messages[0].role", "invalid_value",
                     "Invalid value: 'bot'. Supported values are: 'system', 'developer', 'user', 'assistant', 'tool', and 'function'."),
    "no role": ({"model": "m", "messages": [{"content": "x"}]}, "messages[0].role", "missing_required_parameter",
                "Missing required parameter: 'messages[0].role'."),
    "content a number": ({"model": "m", "messages": [{"role": "user", "content": 3}]}, "messages[0].content", "invalid_type",
                         "Invalid type for 'messages[0].content': expected one of a string or an array, but got an integer instead."),
    "arguments an object": ({"model": "m", "messages": [USER, {**call_msg("c1"), "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": "f", "arguments": {}}}]}, tool_msg("c1")]},
                            "messages[1].tool_calls[0].function.arguments", "invalid_type",
                            "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, but got an object instead."),
    "empty tool_calls": ({"model": "m", "messages": [USER, {"role": "assistant", "content": "x", "tool_calls": []}]},
                         "messages[1].tool_calls", "empty_array", None),
    "assistant without content or calls": ({"model": "m", "messages": [USER, {"role": "assistant"}]}, "messages[1].content",
                                           "missing_required_parameter", "Missing required parameter: 'messages[1].content'."),
    "tool without tool_call_id": ({"model": "m", "messages": [USER, call_msg("c1"), {"role": "tool", "content": "x"}]},
                                  "messages[2].tool_call_id", "missing_required_parameter", None),
    "unknown message field": ({"model": "m", "messages": [{**USER, "tool_call_id": "c1"}]}, "messages[0].tool_call_id", "unknown_parameter",
                              "Unknown parameter: 'messages[0].tool_call_id'."),
    "temperature too high": ({"model": "m", "messages": [USER], "temperature": 2.5}, "temperature", "decimal_above_max_value",
                             "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 2.5 instead."),
    "stream not a boolean": ({"model": "m", "messages": [USER], "stream": "yes"}, "stream", "invalid_type", None),
    "empty tools": ({"model": "m", "messages": [USER], "tools": []}, "tools", "empty_array", None),
    "tool name with a space": ({"model": "m", "messages": [USER], "tools": [{"type": "function", "function": {"name": "get weather"}}]},
                               "tools[0].function.name", "invalid_value", None),
    "body an array": ([USER], None, "invalid_type", "Invalid type for the request body: expected an object, but got an array instead."),
    # the conversation rules, worded as the real API words them
    "tool without a call before it": ({"model": "m", "messages": [USER, tool_msg("c1")]}, "messages.[1].role", None,
                                      "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."),
    "tool after a text answer": ({"model": "m", "messages": [USER, call_msg("c1"), tool_msg("c1"), {"role": "assistant", "content": "ok"},
                                                             tool_msg("c1")]}, "messages.[4].role", None, None),
    "tool answering an unknown id": ({"model": "m", "messages": [USER, call_msg("c1"), tool_msg("c9")]}, "messages.[2].tool_call_id", None,
                                     "Invalid parameter: 'tool_call_id' of 'c9' not found in 'tool_calls' of previous message."),
    "a call answered twice": ({"model": "m", "messages": [USER, call_msg("c1"), tool_msg("c1"), tool_msg("c1")]}, "messages.[3].tool_call_id",
                              None, None),
    "a call never answered": ({"model": "m", "messages": [USER, call_msg("c1", "c2"), tool_msg("c1"), {"role": "user", "content": "and?"}]},
                              "messages.[1].role", None,
                              "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "
                              "The following tool_call_ids did not have response messages: c2"),
    "calls left open at the end": ({"model": "m", "messages": [USER, call_msg("c1")]}, "messages.[1].role", None, None),
}


@pytest.mark.parametrize("name", list(BAD_REQUESTS))
def test_bad_request_gets_the_real_apis_400(fm, name):
    body, param, code, message = BAD_REQUESTS[name]
    fm.script(fake_model.text("kept for the next valid request"))
    status, headers, raw = call(fm, body)
    assert status == 400, raw
    error = json.loads(raw)["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param and error["code"] == code, error
    if message is not None:
        assert error["message"] == message
    assert fm.pending == 1, "a rejected request must not consume a scripted reply"
    assert fake_model.contract_problems("ErrorResponse", json.loads(raw)) == []


GOOD_REQUESTS = {
    "minimal": {"model": "m", "messages": [USER]},
    "full conversation": {"model": "m", "messages": [{"role": "system", "content": "Be terse."}, {**USER, "name": "alice"},
                                                     call_msg("c1", "c2"), tool_msg("c2"), tool_msg("c1"),
                                                     {"role": "assistant", "content": "Paris is 18 C."}, {"role": "user", "content": "thanks"}],
                          "stream": True, "stream_options": {"include_usage": True}, "temperature": 0.2, "max_tokens": 64,
                          "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": {"type": "object"}}}],
                          "tool_choice": "auto", "parallel_tool_calls": True},
    "text beside calls": {"model": "m", "messages": [USER, {**call_msg("c1"), "content": "Let me look."}, tool_msg("c1")]},
    "content parts": {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
    "assistant content empty with calls": {"model": "m", "messages": [USER, {**call_msg("c1"), "content": ""}, tool_msg("c1")]},
    "developer message and nulls": {"model": "m", "messages": [{"role": "developer", "content": "x"}, USER], "stream": None, "temperature": None},
}


@pytest.mark.parametrize("name", list(GOOD_REQUESTS))
def test_valid_requests_are_accepted(fm, name):
    status, _, raw = call(fm, GOOD_REQUESTS[name])
    assert status == 200, raw


def test_a_body_sent_again_gets_the_same_verdict(fm):
    """Bytes found valid are remembered and not validated again: that never changes a verdict."""
    good = json.dumps(GOOD_REQUESTS["full conversation"]).encode()
    bad = json.dumps(BAD_REQUESTS["unknown role"][0]).encode()
    open_call = json.dumps(BAD_REQUESTS["calls left open at the end"][0]).encode()  # valid by the schema alone
    for attempt in (1, 2):
        assert call(fm, good)[0] == 200, f"attempt {attempt}"
        status, _, raw = call(fm, bad)
        assert status == 400 and json.loads(raw)["error"]["param"] == "messages[0].role", (attempt, raw)
        status, _, raw = call(fm, open_call)  # the conversation rules are checked every time
        assert status == 400 and json.loads(raw)["error"]["param"] == "messages.[1].role", (attempt, raw)
    # valid for one API is not valid for another: each is judged by its own schema
    status, _, raw = call(fm, good, path="/v1/responses")
    assert status == 400, raw


# ---- what the fake sends matches the contract and the real API's shapes ------------------------------------------


def test_stream_chunks_match_the_contract(fm):
    fm.script(fake_model.text("Hel", "lo"),
              fake_model.Turn(calls=(fake_model.ScriptedCall("c1", "get_weather", ('{"city":', '"Paris"}')), fake_model.ScriptedCall("c2", "now"))),
              fake_model.Turn(text=("Looking.",), calls=(fake_model.ScriptedCall("c3", "now"),)))
    for _ in range(3):
        status, headers, raw = call(fm, {"model": "m", "messages": [USER], "stream": True, "stream_options": {"include_usage": True}})
        assert status == 200 and headers["content-type"].startswith("text/event-stream")
        assert events(raw)[-1] == "[DONE]"
        got = chunks(raw)
        for chunk in got:
            assert fake_model.contract_problems("CreateChatCompletionStreamResponse", chunk) == [], chunk
        assert all("usage" in c for c in got) and [c["usage"] is not None for c in got].count(True) == 1
        assert got[-1]["choices"] == [] and got[-1]["usage"]["total_tokens"] > 0


def streamed_fragments(got: list[dict]) -> list[str]:
    return [tc["function"]["arguments"] for c in got if c["choices"] for tc in c["choices"][0]["delta"].get("tool_calls") or ()]


def test_tool_call_turn_shapes(fm):
    """content null on the role chunk of a tool-call turn, "" on a text turn; "{}" for a call without arguments."""
    body = {"model": "m", "messages": [USER], "stream": True}
    fm.script(fake_model.tool_call("now"), fake_model.text("hi"), fake_model.tool_call("now", no_argument_fragment=True))
    call_turn, text_turn, bare_turn = (chunks(call(fm, body)[2]) for _ in range(3))
    assert call_turn[0]["choices"][0]["delta"] == {"role": "assistant", "content": None, "refusal": None}
    assert streamed_fragments(call_turn) == ["", "{}"], "a call without arguments streams the fragment '{}'"
    assert text_turn[0]["choices"][0]["delta"] == {"role": "assistant", "content": "", "refusal": None}
    assert streamed_fragments(text_turn) == []
    assert streamed_fragments(bare_turn) == [""], "no_argument_fragment plays a server that sends no fragment"


@pytest.mark.parametrize("reply", [fake_model.text("Hel", "lo"), fake_model.tool_call("now"), fake_model.tool_call("get_weather", '{"ci', 'ty":1}'),
                                   fake_model.Turn(text=("a",), calls=(fake_model.ScriptedCall("c1", "x", ("{}",)),), usage=(3, 4))],
                         ids=["text", "call-no-args", "call-args", "text-and-call"])
def test_non_streaming_answer_matches_the_stream(fm, reply):
    fm.script(reply, reply)
    status, headers, raw = call(fm, {"model": "m", "messages": [USER]})
    assert status == 200 and headers["content-type"] == "application/json"
    completion = json.loads(raw)
    assert fake_model.contract_problems("CreateChatCompletionResponse", completion) == []
    message = completion["choices"][0]["message"]
    streamed = chunks(call(fm, {"model": "m", "messages": [USER], "stream": True})[2])
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in streamed if c["choices"])
    assert message["content"] == (text if reply.text or not reply.calls else None)
    args = {}
    for c in streamed:
        for tc in (c["choices"][0]["delta"].get("tool_calls") or []) if c["choices"] else []:
            args[tc["index"]] = args.get(tc["index"], "") + tc["function"]["arguments"]
    assert [tc["function"]["arguments"] for tc in message.get("tool_calls", [])] == [args[i] for i in sorted(args)]
    assert completion["choices"][0]["finish_reason"] == streamed[-1]["choices"][0]["finish_reason"]


def test_models_list(fm):
    status, _, raw = call(fm, None, method="GET", path="/v1/models")
    assert status == 200 and fake_model.contract_problems("ListModelsResponse", json.loads(raw)) == []
    assert [m["id"] for m in json.loads(raw)["data"]] == [fake_model.MODEL_NAME]


def test_faketool_conversation(fm):
    tools = [{"type": "function", "function": {"name": "lookup"}}, {"type": "function", "function": {"name": "get_weather"}}]
    first = json.loads(call(fm, {"model": "m", "messages": [USER], "tools": tools})[2])["choices"][0]["message"]
    (tc,) = first["tool_calls"]
    assert tc["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'} and tc["id"] in fm.issued_call_ids
    second = json.loads(call(fm, {"model": "m", "messages": [USER, first, tool_msg(tc["id"])], "tools": tools})[2])
    assert "18 C" in second["choices"][0]["message"]["content"]
    other = json.loads(call(fm, {"model": "m", "messages": [USER], "tools": tools[:1]})[2])["choices"][0]["message"]
    assert other["tool_calls"][0]["function"] == {"name": "lookup", "arguments": "{}"}, "only an offered tool is ever called"


# ---- faults --------------------------------------------------------------------------------------------------------


def stream_raw(fm) -> bytes:
    """The raw bytes after the head of one streamed answer, until the server closes (or resets: "<RST>")."""
    body = json.dumps({"model": "m", "messages": [USER], "stream": True}).encode()
    return exchange(fm.port, post(body, "Connection: close")).partition(b"\r\n\r\n")[2]


def test_cut_mid_chunk_closes_inside_an_http_chunk(fm):
    fm.script(fake_model.cut_mid_chunk("a", "b"))
    body = stream_raw(fm)
    last_size_line = body.rsplit(b"\n\n\r\n", 1)[1]  # after the last complete event: "<hex>\r\n<half an event>"
    size, _, partial = last_size_line.partition(b"\r\n")
    assert int(size, 16) > len(partial) > 0 and not body.endswith(b"0\r\n\r\n")
    conn = http.client.HTTPConnection("127.0.0.1", fm.port, timeout=20)
    fm.script(fake_model.cut_mid_chunk())
    conn.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": [USER], "stream": True}))
    with pytest.raises(http.client.IncompleteRead):
        conn.getresponse().read()
    conn.close()


def test_truncated_event_then_a_clean_end(fm):
    fm.script(fake_model.truncated("a"))
    conn = http.client.HTTPConnection("127.0.0.1", fm.port, timeout=20)
    conn.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": [USER], "stream": True}))
    data = conn.getresponse().read()  # well framed: no transport error
    conn.close()
    assert data.count(b"\n\n") == 2 and not data.endswith(b"\n\n") and b"[DONE]" not in data, data


def test_reset_after_events(fm):
    fm.script(fake_model.reset_after("a"))
    body = stream_raw(fm)
    assert body.endswith(b"<RST>") and body.count(b"data: ") == 2


def test_error_event_and_no_done(fm):
    fm.script(fake_model.error_event("server_error", "boom", after=["x"]), fake_model.no_done("x"))
    first = stream_raw(fm)
    assert b'data: {"error":{"message":"boom","type":"server_error","param":null,"code":null}}' in first and first.endswith(b"0\r\n\r\n")
    second = stream_raw(fm)
    assert b"[DONE]" not in second and b'"finish_reason":"stop"' in second and second.endswith(b"0\r\n\r\n")


def test_200_with_an_error_body(fm):
    fm.script(fake_model.error_200("overloaded", "server_error"))
    status, headers, raw = call(fm, {"model": "m", "messages": [USER], "stream": True})
    assert status == 200 and headers["content-type"] == "application/json"
    assert json.loads(raw) == {"error": {"message": "overloaded", "type": "server_error", "param": None, "code": None}}


def test_stall_before_head_outlasts_a_short_client_timeout(fm):
    fm.script(fake_model.stall(30.0))
    conn = http.client.HTTPConnection("127.0.0.1", fm.port, timeout=0.3)
    conn.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": [USER], "stream": True}))
    with pytest.raises(socket.timeout):
        conn.getresponse()
    conn.close()  # stopping the fake ends the stall at once (the fixture's stop joins every thread)


def test_stall_between_events_sends_the_first_events_first(fm):
    fm.script(fake_model.stall(30.0, after=1))
    body = json.dumps({"model": "m", "messages": [USER], "stream": True}).encode()
    with socket.create_connection(("127.0.0.1", fm.port), timeout=20) as s:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        got = b""
        while got.count(b"\n\n") < 1:
            got += s.recv(65536)
        s.settimeout(0.3)
        with pytest.raises(socket.timeout):
            s.recv(65536)
    assert got.count(b"data: ") == 1


def test_slow_head_is_sent_whole_in_the_end(fm):
    fm.script(fake_model.slow_head(0.0005))
    status, _, raw = call(fm, {"model": "m", "messages": [USER], "stream": True})
    assert status == 200 and events(raw)[-1] == "[DONE]"


def test_small_pieces(fm):
    fm.script(fake_model.text("Hel", "lo").with_delivery(piece=3))
    status, _, raw = call(fm, {"model": "m", "messages": [USER], "stream": True})
    assert status == 200 and "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks(raw)) == "Hello"


@pytest.mark.parametrize("reply, what", [(fake_model.no_done("x"), "eof"), (fake_model.error_event(), "error"), (fake_model.slow(), "slow")])
def test_stream_only_replies_refuse_a_non_streaming_request(fm, reply, what):
    fm.script(reply)
    status, _, raw = call(fm, {"model": "m", "messages": [USER]})
    error = json.loads(raw)["error"]
    assert status == 400 and error["param"] == "stream" and "stream" in error["message"]


def test_faults_on_a_non_streaming_answer(fm):
    fm.script(fake_model.truncated(), fake_model.cut_mid_chunk())
    conn = http.client.HTTPConnection("127.0.0.1", fm.port, timeout=20)
    conn.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": [USER]}))
    with pytest.raises(ValueError):
        json.loads(conn.getresponse().read())  # well framed, but half a JSON document
    conn.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": [USER]}))
    with pytest.raises(http.client.IncompleteRead):
        conn.getresponse().read()
    conn.close()


# ---- replies as data, scripted over HTTP or by file ------------------------------------------------------------

EVERY_REPLY = [
    fake_model.text("a", "b", usage=(1, 2)), fake_model.tool_call("f", '{"a"', ":1}", call_id="c9", text=["x"]),
    fake_model.tool_call("f", no_argument_fragment=True), fake_model.http_error(429, retry_after=2.5, code="rate_limit_exceeded"),
    fake_model.error_200(), fake_model.reset_after("a"), fake_model.cut_mid_chunk("a"), fake_model.truncated(), fake_model.no_done(),
    fake_model.error_event(after=["a"]), fake_model.stall(1.5), fake_model.stall(2, after=3), fake_model.slow_head(0.01),
    fake_model.slow(0.1, 2.0), fake_model.raw(b"\xff\x00data", status=502, content_type="text/html", piece=2),
]


@pytest.mark.parametrize("reply", EVERY_REPLY, ids=lambda r: r.kind)
def test_reply_json_round_trip(reply):
    as_json = json.loads(json.dumps(reply.to_json()))
    assert fake_model.from_json(as_json) == reply


@pytest.mark.parametrize("bad, says", [
    ({"kind": "nope"}, "unknown reply kind"),
    ({"kind": "turn", "colour": 1}, "no field 'colour'"),
    ({"kind": "turn", "text": "abc"}, "'text' must be a list"),
    ({"kind": "turn", "ending": "boom"}, "ending must be one of"),
    ({"kind": "http_error"}, "status"),
    ({"kind": "http_error", "status": "503"}, "'status' must be an integer"),
    ({"kind": "turn", "stall": -1}, "stall must be >= 0"),
    ({"kind": "raw", "body_base64": "%%%"}, "not valid base64"),
    ([], "a JSON object"),
])
def test_malformed_reply_json_is_one_clear_error(bad, says):
    with pytest.raises(ValueError, match=None) as info:
        fake_model.from_json(bad)
    assert says in str(info.value)


def test_scripting_over_http(fm):
    script = {"replies": [fake_model.http_error(503).to_json(), {"kind": "turn", "text": ["over ", "HTTP"]}]}
    status, _, raw = call(fm, script, path="/_fake/script")
    assert status == 200 and json.loads(raw) == {"queued": 2, "pending": 2}
    assert call(fm, {"model": "m", "messages": [USER]})[0] == 503
    answer = json.loads(call(fm, {"model": "m", "messages": [USER]})[2])
    assert answer["choices"][0]["message"]["content"] == "over HTTP"
    state = json.loads(call(fm, None, method="GET", path="/_fake/state")[2])
    assert state["pending"] == 0 and [r["path"] for r in state["requests"]] == ["/v1/chat/completions"] * 2
    assert state["requests"][0]["body"]["messages"] == [USER]
    status, _, raw = call(fm, [{"kind": "turn", "text": 5}], path="/_fake/script")
    assert status == 400 and "reply #1" in json.loads(raw)["error"]["message"]
    assert call(fm, {}, path="/_fake/reset")[0] == 200 and fm.requests == [] and fm.pending == 0


def test_script_file(fm, tmp_path):
    path = tmp_path / "script.json"
    path.write_text(json.dumps([fake_model.text("from ", "a file").to_json()]))
    fm.script_file(path)
    assert json.loads(call(fm, {"model": "m", "messages": [USER]})[2])["choices"][0]["message"]["content"] == "from a file"
    path.write_text("{")
    with pytest.raises(ValueError, match="is not JSON"):
        fm.script_file(path)


# ---- the command line ---------------------------------------------------------------------------------------------


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "course", "fake-model", *args], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.parametrize("args, says", [(["--host", "8.8.8.8"], "loopback"), (["--script", "/nonexistent/s.json"], "cannot read"),
                                        (["--port", "99999"], "99999")])
def test_cli_usage_errors(args, says):
    done = run_cli(*args)
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_cli_serves_a_script_until_interrupted(tmp_path):
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"replies": [{"kind": "turn", "text": ["scripted"]}]}))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "course", "fake-model", "--script", str(script), "--quiet"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = proc.stdout.readline()
        url = first.split("listening on ")[1].split()[0]
        host, port = url.removeprefix("http://").removesuffix("/v1").rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=20)
        conn.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": [USER]}))
        assert json.loads(conn.getresponse().read())["choices"][0]["message"]["content"] == "scripted"
        conn.close()
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in err, err
