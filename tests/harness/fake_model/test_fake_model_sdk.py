"""The fake model driven by a client we did not write: the official openai SDK (the `test` extra).

The SDK must get from the fake what it would get from the real API: streamed and whole answers, tool
calls, the real error classes with the real codes, and transport failures where the fake breaks a stream.
The course's reference client and the SDK must agree on every scripted reply.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from conftest import reference_package
from course import fake_model

openai = pytest.importorskip("openai")
# The HTTP library the installed SDK is built on, as it comes: httpx before openai 3, httpx2 since.
_SDK_NEEDS = [Requirement(r) for r in importlib.metadata.requires("openai") or ()]
_SDK_HTTP = next((r.name for r in _SDK_NEEDS if r.name.startswith("httpx") and r.marker is None), "httpx")
httpx = pytest.importorskip(_SDK_HTTP, reason=f"the openai SDK's HTTP library ({_SDK_HTTP}) is not importable")

REPO = Path(__file__).resolve().parents[3]
USER = {"role": "user", "content": "Weather in Paris?"}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
         {"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}}]


@pytest.fixture
def reference():
    """The ag01 reference client, imported for this test only."""
    with reference_package("ag01"):
        yield importlib.import_module("agent.provider.openai"), importlib.import_module("agent.types")


def sdk_stream(sdk, **extra) -> tuple[str | None, list[tuple[str, str, str]], str]:
    """Text, calls (id, name, arguments) and finish reason of a streamed answer, assembled by call index."""
    text, calls, finish = None, {}, ""
    for chunk in sdk.chat.completions.create(model="m", messages=[USER], tools=TOOLS, stream=True, **extra):
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content is not None:
                text = (text or "") + delta.content
            for tc in delta.tool_calls or []:
                entry = calls.setdefault(tc.index, ["", "", ""])
                entry[0] += tc.id or ""
                entry[1] += (tc.function.name or "") if tc.function else ""
                entry[2] += (tc.function.arguments or "") if tc.function else ""
            finish = choice.finish_reason or finish
    return text, [tuple(calls[i]) for i in sorted(calls)], finish


SCRIPTED = {
    "text": fake_model.text("Hel", "lo", " wörld ☃"),
    "one call in halves": fake_model.tool_call("get_weather", '{"city":', '"Paris"}', call_id="call_a"),
    "call without arguments": fake_model.tool_call("now", call_id="call_b"),
    "text then a call": fake_model.tool_call("now", '{"tz":"UTC"}', call_id="call_c", text=["Checking", " now."]),
    "two calls": fake_model.Turn(calls=(fake_model.ScriptedCall("call_d", "get_weather", ('{"city":"Lyon"}',)),
                                     fake_model.ScriptedCall("call_e", "now", ()))),
    "length": fake_model.text("cut", finish_reason="length"),
}


@pytest.mark.parametrize("name", list(SCRIPTED))
def test_sdk_and_reference_agree_on_every_scripted_reply(fm, sdk, reference, name):
    provider_mod, types = reference
    reply = SCRIPTED[name]
    fm.script(reply, reply, reply)
    text, calls, finish = sdk_stream(sdk, stream_options={"include_usage": True})

    whole = sdk.chat.completions.create(model="m", messages=[USER], tools=TOOLS).choices[0]
    assert whole.finish_reason == finish
    assert whole.message.content == text
    assert [(c.id, c.function.name, c.function.arguments) for c in whole.message.tool_calls or []] == calls

    provider = provider_mod.OpenAIProvider(provider_mod.Config(base_url=fm.base_url, api_key="sk-test", model="m", timeout=20))
    tool_defs = [types.ToolDef(t["function"]["name"], "", t["function"]["parameters"]) for t in TOOLS]
    message, usage = types.collect(provider.chat_stream([types.Message(types.Role.USER, USER["content"])], tool_defs))
    assert message.content == (text or "")
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == calls
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    if reply.calls and not reply.text:
        assert text is None, "the role chunk of a tool-call turn carries content null"
    for _id, _name, arguments in calls:
        assert json.loads(arguments) is not None, "every call's arguments are JSON ('{}' when there are none)"


def test_sdk_full_tool_loop_against_faketool(fm, sdk):
    first = sdk.chat.completions.create(model="m", messages=[USER], tools=TOOLS).choices[0].message
    (call,) = first.tool_calls
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
    history = [USER, first.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 18}'}]
    answer = sdk.chat.completions.create(model="m", messages=history, tools=TOOLS).choices[0].message
    assert '{"temp_c": 18}' in answer.content


def test_sdk_sees_the_real_error_for_a_wrong_tool_call_id(fm, sdk):
    first = sdk.chat.completions.create(model="m", messages=[USER], tools=TOOLS).choices[0].message
    history = [USER, first.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": "call_wrong", "content": "18"}]
    with pytest.raises(openai.BadRequestError) as info:
        sdk.chat.completions.create(model="m", messages=history, tools=TOOLS)
    assert info.value.status_code == 400 and info.value.param == "messages.[2].tool_call_id"
    assert "'tool_call_id' of 'call_wrong' not found in 'tool_calls' of previous message" in info.value.message


def test_sdk_sees_schema_errors_with_code_and_param(fm, sdk):
    with pytest.raises(openai.BadRequestError) as info:
        sdk.chat.completions.create(model="m", messages=[])
    assert info.value.code == "empty_array" and info.value.param == "messages"
    with pytest.raises(openai.BadRequestError) as info:
        sdk.chat.completions.create(model="m", messages=[USER], extra_body={"top_k": 1})
    assert info.value.message.endswith("Unrecognized request argument supplied: top_k")


@pytest.mark.parametrize("status, error", [(401, "AuthenticationError"), (404, "NotFoundError"), (429, "RateLimitError"),
                                           (500, "InternalServerError"), (503, "InternalServerError")])
def test_sdk_error_classes(fm, sdk, status, error):
    fm.script(fake_model.http_error(status, code="some_code"))
    with pytest.raises(getattr(openai, error)) as info:
        sdk.chat.completions.create(model="m", messages=[USER], stream=True)
    assert info.value.status_code == status and info.value.code == "some_code"


def test_sdk_in_band_error_event_raises(fm, sdk):
    fm.script(fake_model.error_event("server_error", "the engine crashed", after=["par", "tial"]))
    got = []
    with pytest.raises(openai.APIError, match="the engine crashed"):
        for chunk in sdk.chat.completions.create(model="m", messages=[USER], stream=True):
            got += [c.delta.content for c in chunk.choices]
    assert "".join(t for t in got if t) == "partial"


@pytest.mark.parametrize("fault", [fake_model.cut_mid_chunk("a"), fake_model.reset_after("a")], ids=["cut_mid_chunk", "reset"])
def test_sdk_transport_faults_raise(fm, sdk, fault):
    fm.script(fault)
    with pytest.raises((httpx.TransportError, openai.APIConnectionError)):
        for _ in sdk.chat.completions.create(model="m", messages=[USER], stream=True):
            pass


def test_sdk_takes_a_stream_without_done_as_complete(fm, sdk):
    """The SDK's known gap (a cut stream looks complete): the fake reproduces the case the course teaches."""
    fm.script(fake_model.no_done("looks ", "whole"))
    text, _, finish = sdk_stream(sdk)
    assert (text, finish) == ("looks whole", "stop")


def test_sdk_lists_the_model(fm, sdk):
    assert [m.id for m in sdk.models.list()] == [fake_model.MODEL_NAME]
