"""Catalog: what the client receives (agent/proxy/synthesize.py): a Responses object as JSON, and the
same response as a server-sent event stream."""

from __future__ import annotations

import copy
import json

from ag03_streams import EXPECTED, ScriptedUpstream, WeatherTools, pieces, response_problems, stream_problems
from agent.proxy.errors import FailClosed
from agent.proxy.policy import handle
from agent.proxy.sse import read_events
from agent.proxy.state import Turn
from agent.proxy.synthesize import EventWriter, failed, to_json, to_sse

TURN = Turn(**EXPECTED["final_text"]["turn"], calls=[])
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]


def _message_text(response: dict, kind: str = "output_text") -> str:
    field = "text" if kind == "output_text" else "refusal"
    return "".join(part[field] for item in response["output"] if item["type"] == "message"
                   for part in item["content"] if part["type"] == kind)


def test_synthesized_json_valid():
    doc = json.loads(to_json(TURN))
    assert doc["object"] == "response" and doc["status"] == "completed", f"a completed response object, got {doc.get('object')!r} {doc.get('status')!r}"
    got = (doc["id"], doc["model"], doc["created_at"], doc["usage"])
    assert got == (TURN.id, TURN.model, TURN.created_at, TURN.usage), f"metadata carried over unchanged: {got}"
    assert _message_text(doc) == TURN.text, f"one assistant message holds the text: {doc['output']}"
    message = doc["output"][0]
    assert (message["type"], message["role"], message["status"]) == ("message", "assistant", "completed"), \
        f"the output item is a completed assistant message: {message}"
    assert message["id"] and message["content"][0].get("annotations") == [], f"the item has an id and its part annotations: {message}"
    assert response_problems(doc) == [], f"the answer reads as the official SDK's Response type: {response_problems(doc)}"
    empty = json.loads(to_json(Turn(id="resp_e", model="m", created_at=1, text="", calls=[])))
    assert _message_text(empty) == "" and empty["output"][0]["content"][0]["type"] == "output_text", \
        "an empty answer is still a valid response with an empty text part"
    echoed = json.loads(to_json(Turn(id="resp_t", model="m", created_at=1, text="x", calls=[], tools=TOOLS,
                                     tool_choice="required", parallel_tool_calls=False)))
    assert (echoed["tools"], echoed["tool_choice"], echoed["parallel_tool_calls"]) == (TOOLS, "required", False), \
        f"the response echoes what the turn says its request asked for: {echoed['tools']} {echoed['tool_choice']}"
    refused = json.loads(to_json(Turn(id="resp_r", model="m", created_at=1, text="", calls=[], refusal="No.")))
    assert _message_text(refused, "refusal") == "No.", f"a turn's refusal is in its message: {refused['output']}"
    assert doc == EXPECTED["final_text"]["json"], \
        f"the answer is, field for field, the response object of fixtures/ag03/expected.json: got {doc}"


def _events(data: bytes) -> list[dict]:
    return list(read_events(pieces(data, 7)))


def test_synthesized_sse_valid():
    data = to_sse(TURN)
    events = _events(data)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "response.created", f"the stream opens with response.created, got {kinds[:1]}"
    assert kinds[-1] == "response.completed", f"the stream ends with response.completed, got {kinds[-1:]}"
    assert [e["sequence_number"] for e in events] == list(range(len(events))), \
        f"sequence numbers count from 0 without a gap or a repeat: {[e['sequence_number'] for e in events]}"
    for opened, closed in (("response.output_item.added", "response.output_item.done"),
                           ("response.content_part.added", "response.content_part.done")):
        assert kinds.count(opened) == kinds.count(closed) == 1 and kinds.index(opened) < kinds.index(closed), \
            f"{opened} then {closed}, once each: {kinds}"
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    done = [e["text"] for e in events if e["type"] == "response.output_text.done"]
    assert deltas == TURN.text and done == [TURN.text], f"the deltas spell the text and its done event states it: {deltas!r}, {done}"
    assert kinds.index("response.content_part.added") < kinds.index("response.output_text.delta"), \
        f"the text part is added before its first delta: {kinds}"
    assert kinds.index("response.output_text.done") < kinds.index("response.content_part.done") \
        < kinds.index("response.output_item.done") < kinds.index("response.completed"), f"done events close inside out: {kinds}"
    created, completed = events[0]["response"], events[-1]["response"]
    assert created["id"] == completed["id"] == TURN.id and created["status"] == "in_progress", \
        f"created (in progress) and completed name the same response: {created['id']}, {completed['id']}"
    assert completed == json.loads(to_json(TURN)), "the completed event carries exactly the response the JSON answer gives"
    assert stream_problems(events) == [], f"the stream reads as the official SDK reads one: {stream_problems(events)}"
    assert b"[DONE]" not in data, "the Responses API sends no [DONE] line"
    for event in events:
        framed = f"event: {event['type']}\ndata: ".encode()
        assert framed in data, f"each event is framed as 'event: TYPE' then 'data: JSON': {event['type']}"
    assert data.endswith(b"}\n\n") and b"\r" not in data, "every event ends with one blank line, LF only"
    for got, want in zip(events, EXPECTED["final_text"]["sse"]):
        assert got == want, f"event {want['sequence_number']} ({want['type']}) field for field: got {got}, want {want}"
    assert len(events) == len(EXPECTED["final_text"]["sse"]), f"{len(EXPECTED['final_text']['sse'])} events, got {len(events)}"
    blank_lines = data.count(b"\n\n")
    assert blank_lines == len(events), f"one blank line per event: {blank_lines} for {len(events)} events"


def test_final_text_only_stream_downstream():
    plain = Turn(id="resp_x", model="m", created_at=5, text="Ok.", calls=[], usage=None)
    events = _events(to_sse(plain))
    assert _message_text(events[-1]["response"]) == "Ok.", "a text-only answer becomes one message in the completed event"
    item_ids = {e.get("item_id") for e in events if "item_id" in e} | {e["item"]["id"] for e in events if "item" in e}
    assert len(item_ids) == 1, f"every item event names the one message item: {item_ids}"
    no_text = _events(to_sse(Turn(id="resp_y", model="m", created_at=5, text="", calls=[])))
    assert [e["type"] for e in no_text if e["type"] == "response.output_text.delta"] in ([], [
        "response.output_text.delta"]), "an empty answer streams at most one (empty) delta"
    assert no_text[-1]["type"] == "response.completed" and stream_problems(no_text) == [], \
        f"an empty answer still completes, its text part opened and closed: {stream_problems(no_text)}"


def test_refusal_passed_on():
    refusal = "I can't help with that request."
    alone = Turn(id="resp_r", model="m", created_at=5, text="", calls=[], refusal=refusal)
    doc = json.loads(to_json(alone))
    assert doc["status"] == "completed" and doc["output"][0]["content"] == [{"type": "refusal", "refusal": refusal}], \
        f"a refusal is the message's refusal part, as the API sends it, never an empty text: {doc['output']}"
    events = _events(to_sse(alone))
    kinds = [e["type"] for e in events]
    assert "response.refusal.delta" in kinds and "response.refusal.done" in kinds and "response.output_text.delta" not in kinds, \
        f"the stream spells the refusal in its own events: {kinds}"
    assert _message_text(events[-1]["response"], "refusal") == refusal and stream_problems(events) == [], \
        f"and completes with it: {stream_problems(events)}"
    both = Turn(id="resp_b", model="m", created_at=5, text="Partly.", calls=[], refusal=" No more.")
    content = json.loads(to_json(both))["output"][0]["content"]
    assert [p["type"] for p in content] == ["output_text", "refusal"], f"text, then the refusal: {content}"
    events = _events(to_sse(both))
    assert stream_problems(events) == [] and events[-1]["response"]["output"][0]["content"] == content, \
        f"streamed, each part opened and closed at its own place: {stream_problems(events)}"
    request = {"model": "m", "input": "Do something bad.", "tools": TOOLS}
    for stream, policy in ((False, "buffered_final_stream"), (True, "buffered_final_stream"), (True, "progress_events")):
        upstream = ScriptedUpstream("refusal")
        reply = handle({**copy.deepcopy(request), "stream": stream}, upstream, WeatherTools(upstream), policy=policy)
        data = b"".join(reply.body)
        answer = _events(data)[-1]["response"] if stream else json.loads(data)
        if stream:
            assert stream_problems(_events(data)) == [], f"{policy}: the refusal's stream reads as the SDK reads one: {stream_problems(_events(data))}"
        assert reply.status == 200 and _message_text(answer, "refusal") == refusal and _message_text(answer) == "", \
            f"{policy} (stream {stream}): an upstream refusal reaches the client as the refusal, not an empty success: {answer['output']}"


def test_failed_response_readable():
    writer = EventWriter()
    writer.next_sequence = 7
    shown = Turn(id="resp_f", model="m", created_at=5, text="", calls=[], tools=TOOLS)
    event = next(read_events([failed(writer, shown, FailClosed("missing_terminal", "the stream ended early"))]))
    response = event["response"]
    assert (event["type"], event["sequence_number"], response["id"], response["status"]) == ("response.failed", 7, "resp_f", "failed"), \
        f"one response.failed event, numbered by the writer, for the response shown: {event}"
    assert response["error"]["code"] == "server_error" and response["error"]["message"].startswith("missing_terminal"), \
        f"its code is one of the API's own, and the proxy's code leads the message: {response['error']}"
    assert response_problems(response) == [] and response["tools"] == TOOLS, \
        f"the failed response reads as the SDK's Response type, with the fields it requires: {response_problems(response)}"
