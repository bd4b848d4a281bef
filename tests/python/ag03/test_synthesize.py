"""Catalog: what the client receives (agent/proxy/synthesize.py): a Responses object as JSON, and the
same response as a server-sent event stream."""

from __future__ import annotations

import json

from ag03_streams import EXPECTED, pieces
from agent.proxy.sse import read_events
from agent.proxy.state import Turn
from agent.proxy.synthesize import to_json, to_sse

TURN = Turn(**EXPECTED["final_text"]["turn"], calls=[])


def _message_text(response: dict) -> str:
    return "".join(part["text"] for item in response["output"] if item["type"] == "message"
                   for part in item["content"] if part["type"] == "output_text")


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
    empty = json.loads(to_json(Turn(id="resp_e", model="m", created_at=1, text="", calls=[])))
    assert _message_text(empty) == "", "an empty answer is still a valid response with an empty text"
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
    assert kinds.index("response.output_text.done") < kinds.index("response.content_part.done") \
        < kinds.index("response.output_item.done") < kinds.index("response.completed"), f"done events close inside out: {kinds}"
    created, completed = events[0]["response"], events[-1]["response"]
    assert created["id"] == completed["id"] == TURN.id and created["status"] == "in_progress", \
        f"created (in progress) and completed name the same response: {created['id']}, {completed['id']}"
    assert completed == json.loads(to_json(TURN)), "the completed event carries exactly the response the JSON answer gives"
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
    assert no_text[-1]["type"] == "response.completed", "an empty answer still completes"
