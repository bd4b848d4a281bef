"""The fake model's Responses API (POST /v1/responses) against two clients: the official openai SDK (the
`test` extra) and the ag02 reference adapter. On every authored sequence of fixtures/ag02 and on scripted
turns, `responses.create(stream=True)`, `responses.stream()` and the adapter must agree on the final
response: text, refusal, and each call's id, name and arguments.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import random
from pathlib import Path

import pytest

from conftest import reference_package
from course import fake_model

openai = pytest.importorskip("openai")

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "fixtures" / "ag02"
TOOLS_SPEC = json.loads((FIXTURES / "tools.json").read_text())["tools"]
SDK_TOOLS = [{"type": "function", "name": t["name"], "description": t["description"], "strict": True,
              "parameters": {"type": "object", "properties": {p: {"type": "string"} for p in t["parameters"]},
                             "required": list(t["parameters"]), "additionalProperties": False}} for t in TOOLS_SPEC]
INPUT = [{"role": "user", "content": "The test for add() fails. Find the bug and fix it."}]


def sequence(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def decided_sequences() -> list[str]:
    """The authored sequences that end in a decision: the ones both clients can finish."""
    names = sorted(p.stem for p in FIXTURES.glob("*.json") if p.stem not in ("tools", "scenarios"))
    return [n for n in names if "message" in sequence(n)["expect"]]


@pytest.fixture
def adapter():
    """The ag02 reference adapter behind its given HTTP transport, imported for this test only."""
    with reference_package("ag02"):
        provider = importlib.import_module("agent.responses.provider")
        transport = importlib.import_module("agent.responses.transport")
        types = importlib.import_module("agent.responses.types")
        tools = [types.ToolSpec(t["name"], t["description"], tuple(t["parameters"])) for t in TOOLS_SPEC]

        def complete(base_url: str):
            p = provider.ResponsesProvider(transport.HTTPTransport(base_url, "sk-test", timeout=20), "gpt-4.1-mini",
                                           rng=random.Random(0), sleep=_no_sleep)
            return asyncio.run(p.complete([types.Message("user", INPUT[0]["content"])], tools))

        yield complete, types


async def _no_sleep(seconds: float) -> None:
    return None


def final_form(response) -> dict:
    """An SDK Response (or our neutral message) as {content, refusal, calls: [(call_id, name, arguments)]}."""
    content, refusal, calls = [], [], []
    for item in response.output:
        if item.type == "message":
            for part in item.content:
                (content.append(part.text) if part.type == "output_text" else refusal.append(part.refusal))
        elif item.type == "function_call":
            calls.append((item.call_id, item.name, json.loads(item.arguments)))
    return {"content": "".join(content), "refusal": "".join(refusal), "calls": calls}


def ours(message) -> dict:
    return {"content": message.content, "refusal": message.refusal,
            "calls": [(c.id, c.name, dict(c.arguments)) for c in message.tool_calls]}


@pytest.mark.parametrize("name", decided_sequences())
def test_sdk_and_adapter_agree_on_every_authored_sequence(fm, sdk, adapter, name):
    complete, _ = adapter
    events = sequence(name)["events"]
    fm.script(fake_model.events(*events), fake_model.events(*events), fake_model.events(*events))

    ours_final = ours(complete(fm.base_url))

    with sdk.responses.create(model="gpt-4.1-mini", input=INPUT, tools=SDK_TOOLS, stream=True, store=False) as stream:
        seen = list(stream)
    assert [e.type for e in seen] == [e["type"] for e in events], f"{name}: the SDK saw every event, in order"
    assert seen[-1].type == "response.completed", f"{name}: the stream ends with response.completed"
    created = final_form(seen[-1].response)

    with sdk.responses.stream(model="gpt-4.1-mini", input=INPUT, tools=SDK_TOOLS, store=False) as helper:
        helped = final_form(helper.get_final_response())

    assert created == ours_final == helped, (
        f"{name}: create(stream=True) {created}\n stream() {helped}\n adapter {ours_final}")
    want = sequence(name)["expect"]["message"]
    assert ours_final["calls"] == [(c["id"], c["name"], c["arguments"]) for c in want["tool_calls"]], name
    for request in fm.requests:
        assert fake_model.contract_problems("CreateResponseRequest", request.body) == [], f"{name}: a request broke the contract"


@pytest.mark.parametrize("turn", ["text", "call", "text_and_calls"])
def test_scripted_turns_stream_the_real_events(fm, sdk, adapter, turn):
    complete, _ = adapter
    reply = {
        "text": fake_model.text("The bug ", "is in add()."),
        "call": fake_model.tool_call("read", '{"path": ', '"calculator.py"}', call_id="call_r"),
        "text_and_calls": fake_model.Turn(text=("Reading both.",), calls=(
            fake_model.ScriptedCall("call_a", "read", ('{"path": "a.py"}',)),
            fake_model.ScriptedCall("call_b", "edit", ('{"path": "b.py", "old": "x", ', '"new": "y"}')))),
    }[turn]
    fm.script(reply, reply)
    ours_final = ours(complete(fm.base_url))
    with sdk.responses.create(model="m", input=INPUT, tools=SDK_TOOLS, stream=True) as stream:
        events = [e.model_dump(exclude_none=False) for e in stream]
    for event in events:
        problems = fake_model.contract_problems("ResponseStreamEvent", json.loads(json.dumps(event)))
        assert problems == [], f"{turn}: {event['type']} breaks the contract: {problems}"
    assert [e["sequence_number"] for e in events] == list(range(len(events))), f"{turn}: sequence numbers count from 0"
    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed", turn
    final = events[-1]["response"]
    assert final_form(_Obj(final)) == ours_final, f"{turn}: SDK {final_form(_Obj(final))}, adapter {ours_final}"


@pytest.mark.parametrize("case", ["cut_after_last_argument", "done_then_failed", "output_limit", "reset_mid_arguments"])
def test_failed_sequences_never_complete_for_either_client(fm, sdk, adapter, case):
    complete, types = adapter
    seq = sequence(case)
    reply = fake_model.events(*seq["events"], ending="reset" if seq["end"] == "reset" else "eof")
    # a reset discards what the client has not read yet: pause after the last event so it reads them all
    reply = reply.with_delivery(stall_after=len(seq["events"]), stall=0.2)
    fm.script(reply, reply)
    with pytest.raises(types.ResponseFailure) as failure:
        complete(fm.base_url)
    assert failure.value.code == seq["expect"]["failure"], f"{case}: adapter failed with {failure.value.code!r}"
    with pytest.raises(Exception) as sdk_failure:  # noqa: PT011 - the SDK's own classes differ per case
        with sdk.responses.stream(model="m", input=INPUT, tools=SDK_TOOLS) as helper:
            helper.get_final_response()
    assert sdk_failure.value is not None, f"{case}: the SDK's stream helper returned a final response"


def test_non_streaming_and_the_input_rules(fm, sdk):
    fm.script(fake_model.text("Hello", " there."))
    whole = sdk.responses.create(model="m", input="hi")
    assert whole.status == "completed" and whole.output_text == "Hello there.", whole
    assert fake_model.contract_problems("Response", whole.model_dump()) == [], "the whole response matches the contract"

    def rejected(**body) -> openai.APIStatusError:
        with pytest.raises(openai.APIStatusError) as info:
            sdk.responses.create(model="m", **body)
        return info.value

    orphan = rejected(input=[{"type": "function_call_output", "call_id": "call_9", "output": "x"}])
    assert orphan.status_code == 400 and "No tool call found for function call output with call_id call_9." in str(orphan)
    unanswered = rejected(input=[{"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{}"}])
    assert unanswered.status_code == 400 and "No tool output found for function call call_1." in str(unanswered)
    stored = rejected(store=False, input=[{"type": "function_call", "id": "fc_1", "call_id": "c", "name": "read", "arguments": "{}"},
                                          {"type": "function_call_output", "call_id": "c", "output": "x"}])
    assert stored.status_code == 404 and "Items are not persisted when `store` is set to false" in str(stored)
    previous = rejected(input="hi", previous_response_id="resp_old")
    assert previous.status_code == 400 and "resp_old" in str(previous)
    budget = rejected(input="hi", max_output_tokens=5)
    assert budget.status_code == 400 and budget.body["param"] == "max_output_tokens", budget.body
    assert fm.pending == 0, "a rejected request consumes no scripted reply"


def test_events_reply_round_trips_as_json(fm):
    reply = fake_model.events(*sequence("single_call")["events"], ending="reset")
    again = fake_model.from_json(json.loads(json.dumps(reply.to_json())))
    assert again == reply, "an events reply scripted over HTTP or from a file is the same reply"
    with pytest.raises(ValueError):
        fake_model.from_json({"kind": "events", "events": [{"no": "type"}]})


class _Obj:
    """Attribute access over a response dict, for final_form."""

    def __init__(self, data):
        self._data = data

    def __getattr__(self, name):
        value = self._data[name]
        if isinstance(value, dict):
            return _Obj(value)
        if isinstance(value, list):
            return [_Obj(v) if isinstance(v, dict) else v for v in value]
        return value
