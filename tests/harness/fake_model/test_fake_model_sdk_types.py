"""Every Responses object the fake model emits, and every authored fixture, read by the official SDK's own
types with strict validation and extra fields reported (see sdk_shapes.py for the differences live
traffic shows, each named). The contract file requires what the SDK requires, so it must agree too."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import pytest

from course import fake_model

pytest.importorskip("openai")

import sdk_shapes  # noqa: E402 - after the SDK is known to be there

REPO = Path(__file__).resolve().parents[3]
TOOLS = [{"type": "function", "name": "get_weather", "strict": True,
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                         "additionalProperties": False}}]

TURNS = {
    "text": fake_model.text("It is ", "raining."),
    "refusal": fake_model.refusal("I can't ", "help with that."),
    "text and refusal": fake_model.Turn(text=("Partly: ",), refusal=("the rest I decline.",)),
    "reasoning then text": fake_model.Turn(reasoning=("The user wants the weather.", "Paris is the city."), text=("Rain.",)),
    "call": fake_model.tool_call("get_weather", '{"city":', '"Paris"}', call_id="call_p"),
    "text and two calls": fake_model.Turn(text=("Checking both.",), calls=(
        fake_model.ScriptedCall("call_a", "get_weather", ('{"city": "Paris"}',)),
        fake_model.ScriptedCall("call_b", "get_weather", ('{"city": ', '"Lisbon"}')))),
    "length": fake_model.text("cut sho", finish_reason="length"),
    "content filter": fake_model.text("no", finish_reason="content_filter"),
    "scripted usage": fake_model.Turn(text=("x",), reasoning=("think",), usage=(10, 3)),
}
STREAM_ONLY = {
    "error event (live, nested)": fake_model.error_event("server_error", "the engine broke", after=["par", "tial"]),
    "error event (flat)": fake_model.error_event("server_error", "the engine broke", after=["par"], flat=True),
    "eof": fake_model.no_done("looks ", "whole"),
}


def post(fm, body: dict, headers: tuple[tuple[str, str], ...] = ()) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", fm.port, timeout=20)
    try:
        connection.putrequest("POST", "/v1/responses")
        data = json.dumps(body).encode()
        for name, value in (("Content-Type", "application/json"), ("Content-Length", str(len(data))), *headers):
            connection.putheader(name, value)
        connection.endheaders(data)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def events_of(raw: bytes) -> list[dict]:
    """The JSON data of each event of an SSE body (the fake writes one data line per event)."""
    return [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]


def problems_of_event(event: dict) -> list[str]:
    return sdk_shapes.check_event(event) + [f"contract: {p}" for p in fake_model.contract_problems("ResponseStreamEvent", event)]


@pytest.mark.parametrize("name", [*TURNS, *STREAM_ONLY])
def test_every_streamed_event_reads_strictly_as_the_sdk_types(fm, name):
    fm.script((TURNS | STREAM_ONLY)[name])
    status, raw = post(fm, {"model": "gpt-4.1-mini", "input": "Weather?", "tools": TOOLS, "stream": True})
    events = events_of(raw)
    assert status == 200 and events and events[0]["type"] == "response.created", (status, raw[:200])
    for event in events:
        assert problems_of_event(event) == [], f"{name}: {event['type']} {problems_of_event(event)}\n{event}"
    for event in events:
        if isinstance(event.get("response"), dict):
            assert event["response"]["tools"] == TOOLS, f"{name}: the response echoes the request's tools"
            usage = event["response"]["usage"]
            if event["type"] in ("response.created", "response.in_progress"):
                assert usage is None, f"{name}: usage is null until the response ends, as in live traffic"
            else:
                assert usage["input_tokens_details"]["cached_tokens"] == 0 and "reasoning_tokens" in usage["output_tokens_details"]
        assert not (event["type"] == "response.function_call_arguments.done" and "name" in event), \
            "live traffic sends no name on function_call_arguments.done"


@pytest.mark.parametrize("name", list(TURNS))
def test_every_whole_response_reads_strictly_as_the_sdk_type(fm, name):
    fm.script(TURNS[name])
    status, raw = post(fm, {"model": "gpt-4.1-mini", "input": "Weather?", "tools": TOOLS})
    response = json.loads(raw)
    assert status == 200, raw[:300]
    assert sdk_shapes.check_response(response) == [], f"{name}: {sdk_shapes.check_response(response)}"
    assert fake_model.contract_problems("Response", response) == [], f"{name}: {fake_model.contract_problems('Response', response)}"


def test_refusals_and_reasoning_items_come_out_as_the_api_sends_them(fm):
    fm.script(TURNS["refusal"], TURNS["reasoning then text"])
    refused = events_of(post(fm, {"model": "m", "input": "x", "stream": True})[1])
    kinds = [e["type"] for e in refused]
    assert kinds.count("response.refusal.delta") == 2 and "response.refusal.done" in kinds and "response.output_text.delta" not in kinds
    message = refused[-1]["response"]["output"][0]
    assert message["content"] == [{"type": "refusal", "refusal": "I can't help with that."}], message
    reasoned = events_of(post(fm, {"model": "m", "input": "x", "stream": True})[1])
    final = reasoned[-1]["response"]
    assert [i["type"] for i in final["output"]] == ["reasoning", "message"], final["output"]
    assert [p["text"] for p in final["output"][0]["summary"]] == ["The user wants the weather.", "Paris is the city."]
    assert final["usage"]["output_tokens_details"]["reasoning_tokens"] > 0, final["usage"]
    with pytest.raises(ValueError):
        fake_model.from_json({"kind": "turn", "refusal": "not a list"})
    again = fake_model.from_json(json.loads(json.dumps(TURNS["text and refusal"].to_json())))
    assert again == TURNS["text and refusal"], "a refusal scripted over HTTP or from a file is the same turn"


def test_the_error_event_has_live_traffics_shape_unless_asked_flat(fm):
    fm.script(STREAM_ONLY["error event (live, nested)"], STREAM_ONLY["error event (flat)"])
    nested = events_of(post(fm, {"model": "m", "input": "x", "stream": True})[1])[-1]
    assert nested == {"type": "error", "sequence_number": nested["sequence_number"],
                      "error": {"type": "server_error", "code": "server_error", "message": "the engine broke", "param": None}}
    # The documented difference is real: the SDK's own type refuses live traffic's shape.
    from openai.types.responses import ResponseErrorEvent
    from pydantic import ValidationError
    with pytest.raises(ValidationError):
        ResponseErrorEvent.model_validate(nested, strict=True)
    assert "nested error event" in sdk_shapes.LIVE_TRAFFIC
    flat = events_of(post(fm, {"model": "m", "input": "x", "stream": True})[1])[-1]
    assert {k: flat[k] for k in ("type", "code", "message")} == {"type": "error", "code": "server_error", "message": "the engine broke"}
    assert "error" not in flat and sdk_shapes.check_event(flat) == []


def test_store_is_live_traffics_extra_field():
    from openai.types.responses import Response

    assert "store" not in Response.model_fields, "if the SDK declares store now, LIVE_TRAFFIC has one entry too many"
    assert sdk_shapes._EXTRA_ALLOWED == {("Response", "store"): "store"} and "store" in sdk_shapes.LIVE_TRAFFIC
    response = {"id": "r", "object": "response", "created_at": 1, "model": "m", "output": [], "parallel_tool_calls": True,
                "tool_choice": "auto", "tools": [], "store": False}
    assert sdk_shapes.check_response(response) == []
    assert sdk_shapes.check_response({**response, "surprise": 1}) == ["(top): extra field 'surprise' (the SDK's Response has none)"]
    assert any("tools" in p for p in sdk_shapes.check_response({k: v for k, v in response.items() if k != "tools"}))


def _fixture_events() -> list[tuple[str, dict]]:
    found = []
    for path in sorted((REPO / "fixtures" / "ag02").glob("*.json")):
        for event in json.loads(path.read_text()).get("events", []):
            found.append((f"ag02/{path.stem}", event))
    for name, stream in json.loads((REPO / "fixtures" / "ag03" / "streams.json").read_text())["streams"].items():
        found += [(f"ag03/{name}", event) for event in stream["events"]]
    return found


def test_every_authored_fixture_reads_strictly_as_the_sdk_types():
    bad = [(where, event["type"], problems_of_event(event)) for where, event in _fixture_events() if problems_of_event(event)]
    assert bad == [], "\n".join(f"{w} {t}: {p}" for w, t, p in bad[:20])
    expected = json.loads((REPO / "fixtures" / "ag03" / "expected.json").read_text())
    for name, answer in expected.items():
        if name == "about":
            continue
        assert sdk_shapes.check_response(answer["json"]) == [], f"expected.json {name}: {sdk_shapes.check_response(answer['json'])}"
        for event in answer["sse"]:
            assert problems_of_event(event) == [], f"expected.json {name} {event['type']}: {problems_of_event(event)}"


def test_chat_completions_read_strictly_as_the_sdk_types(fm):
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    user = [{"role": "user", "content": "hi"}]
    for reply in (fake_model.text("a", "b"), fake_model.refusal("no"), TURNS["text and two calls"]):
        fm.script(reply, reply)
        connection = http.client.HTTPConnection("127.0.0.1", fm.port, timeout=20)
        connection.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": user}), {"Content-Type": "application/json"})
        whole = json.loads(connection.getresponse().read())
        connection.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": user, "stream": True,
                                                                        "stream_options": {"include_usage": True}}),
                           {"Content-Type": "application/json"})
        chunks = [json.loads(line[6:]) for line in connection.getresponse().read().decode().splitlines()
                  if line.startswith("data: {")]
        connection.close()
        assert sdk_shapes._extras(ChatCompletion.model_validate(whole, strict=True)) == []
        for chunk in chunks:
            assert sdk_shapes._extras(ChatCompletionChunk.model_validate(chunk, strict=True)) == [], chunk
    assert whole["choices"][0]["message"]["tool_calls"][1]["function"]["arguments"] == '{"city": "Lisbon"}'
    fm.script(fake_model.refusal("I decline."))
    connection = http.client.HTTPConnection("127.0.0.1", fm.port, timeout=20)
    connection.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": user}), {"Content-Type": "application/json"})
    message = json.loads(connection.getresponse().read())["choices"][0]["message"]
    connection.close()
    assert (message["content"], message["refusal"]) == (None, "I decline."), message
    fm.script(TURNS["reasoning then text"])
    status, raw = _chat(fm, user)
    assert status == 400 and "Responses API" in json.loads(raw)["error"]["message"], raw


def _chat(fm, messages: list[dict]) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", fm.port, timeout=20)
    try:
        connection.request("POST", "/v1/chat/completions", json.dumps({"model": "m", "messages": messages}),
                           {"Content-Type": "application/json"})
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def test_error_answers_read_as_the_sdk_reads_them(fm):
    fm.script(fake_model.http_error(503))
    status, raw = post(fm, {"model": "m", "input": "x"})
    assert status == 503 and sdk_shapes.check_error_body(json.loads(raw)) == []
    status, raw = post(fm, {"model": "m"})
    assert status == 400 and sdk_shapes.check_error_body(json.loads(raw)) == []


def test_headers_sent_twice_are_all_kept(fm):
    fm.script(fake_model.text("ok"))
    post(fm, {"model": "m", "input": "x"}, headers=(("X-Trace", "one"), ("x-trace", "two"), ("Authorization", "Bearer k")))
    request = fm.requests[-1]
    assert request.values("X-Trace") == ["one", "two"] and request.headers["x-trace"] == "two", request.header_values
    assert request.values("authorization") == ["Bearer k"] and request.values("x-absent") == []
    connection = http.client.HTTPConnection("127.0.0.1", fm.port, timeout=20)
    connection.request("GET", "/_fake/state")
    state = json.loads(connection.getresponse().read())
    connection.close()
    recorded = state["requests"][-1]
    assert recorded["header_values"]["x-trace"] == ["one", "two"] and recorded["headers"]["x-trace"] == "two", recorded
