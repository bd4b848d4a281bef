"""The ag01 catalog: a streaming client for OpenAI-compatible chat completions, and its retry wrapper.

Tests run in catalog order. The recorded streams live in fixtures/ag01/streams.json (the harness names
the folder in COURSE_FIXTURES); network tests talk
only to the course fake model on 127.0.0.1; retry waits go to a recorder, never to time.sleep.
"""

from __future__ import annotations

import contextlib
import gc
import http.client
import itertools
import json
import os
import random
import re
import threading
import time
import tracemalloc
from pathlib import Path
from types import BuiltinFunctionType, FunctionType, GeneratorType, ModuleType

import pytest

from agent import types
from agent.provider import errors, openai, retry, sse
import ag01_fake as fake_model
from ag01_http import Answer, PiecesReader, chunk, json_answer, sse_answer, sse_head

FIXTURES = Path(os.environ["COURSE_FIXTURES"])
STREAMS = json.loads((FIXTURES / "streams.json").read_text(encoding="utf-8"))
READ_SIZES = (1, 7, 65536)

WEATHER_TOOL_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


# ---- helpers ------------------------------------------------------------------------------------


def neutral(delta: object) -> dict:
    """A delta in the language-neutral form of streams.json."""
    if isinstance(delta, types.TextDelta):
        return {"type": "text", "text": delta.text}
    if isinstance(delta, types.ToolCallStartDelta):
        return {"type": "tool_start", "index": delta.index, "id": delta.id, "name": delta.name}
    if isinstance(delta, types.ToolCallArgsDelta):
        return {"type": "tool_args", "index": delta.index, "fragment": delta.fragment}
    if isinstance(delta, types.ToolCallEndDelta):
        c = delta.call
        return {"type": "tool_end", "index": delta.index, "id": c.id, "name": c.name, "arguments": c.arguments}
    if isinstance(delta, types.UsageDelta):
        return {"type": "usage", "input": delta.input_tokens, "output": delta.output_tokens}
    if isinstance(delta, types.DoneDelta):
        return {"type": "done", "finish_reason": delta.finish_reason}
    if isinstance(delta, types.ErrorDelta):
        return {"type": "error", **error_form(delta.error)}
    return {"type": f"not a delta: {delta!r}"}


def error_form(error: object) -> dict:
    if isinstance(error, errors.StreamCutError):
        return {"error": "stream_cut"}
    if isinstance(error, errors.StreamError):
        return {"error": "stream_error", "error_type": error.type, "message": error.message}
    return {"error": type(error).__name__, "message": str(error)}


def error_kind(error: object) -> str | None:
    return None if error is None else error_form(error)["error"]


def mismatch(got: list, want: list) -> str:
    """Where two delta sequences first differ, in words."""
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"delta #{i} differs: got {g}, want {w}"
    if len(got) > len(want):
        return f"{len(got) - len(want)} extra delta(s) at the end: {got[len(want):]}"
    if len(got) < len(want):
        return f"{len(want) - len(got)} delta(s) missing at the end: {want[len(got):]}"
    return "equal"


def read_body(body: bytes, size: int, chunked) -> list:
    """The deltas of a whole body: EventReader over reads of `size` bytes, then the Decoder.

    The body ending before the decoder says "finished" is a cut stream, as the provider reports it.
    """
    reader = sse.EventReader(chunked(body, size), read_size=size)
    decoder = sse.Decoder()
    out: list = []
    for event in reader:
        deltas, finished = decoder.decode(event.data)
        out.extend(deltas)
        if finished:
            return out
    out.append(types.ErrorDelta(errors.StreamCutError()))
    return out


def role_value(role: object) -> object:
    return getattr(role, "value", role)


def message_form(m: types.Message) -> dict:
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls]
    return {"role": role_value(m.role), "content": m.content, "tool_calls": calls}


def user(text: str) -> types.Message:
    return types.Message(types.Role.USER, text)


def provider(fm: fake_model.FakeModel, **config) -> openai.OpenAIProvider:
    settings = {"api_key": "sk-test", "model": "test-model", "timeout": 5.0, **config}
    return openai.OpenAIProvider(openai.Config(base_url=fm.base_url, **settings))


def retrying(fm: fake_model.FakeModel, sleeps, **policy) -> object:
    settings = {"initial": 0.1, "sleep": sleeps, **policy}
    return retry.with_retry(provider(fm), retry.RetryPolicy(**settings))


def texts(deltas: list) -> list[str]:
    return [d.text for d in deltas if isinstance(d, types.TextDelta)]


def hold_references(root: object, limit: int = 5000) -> list:
    """Strong references to everything `root` holds: generator locals and object attributes, recursively.

    CPython closes a socket as soon as nothing references it, so a stream that forgets to close its
    connection would look right once its generator frame is dropped. Holding these references makes
    an explicit close the only way the connection can end.
    """
    seen: set[int] = set()
    held: list = []
    todo = [root]
    while todo and len(held) < limit:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, (type, ModuleType, FunctionType, BuiltinFunctionType, str, bytes, int, float)):
            continue
        seen.add(id(obj))
        held.append(obj)
        if isinstance(obj, GeneratorType):
            if obj.gi_frame is not None:
                todo.extend(obj.gi_frame.f_locals.values())
            if obj.gi_yieldfrom is not None:
                todo.append(obj.gi_yieldfrom)
        elif isinstance(obj, dict):
            todo.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            todo.extend(obj)
        elif hasattr(obj, "__dict__"):
            todo.extend(vars(obj).values())
    return held


def requests_made(fm: fake_model.FakeModel) -> int:
    return sum(1 for r in fm.requests if r.path.split("?")[0] == fake_model.CHAT_PATH)


def api_chunk(delta: dict | None = None, finish_reason: str | None = None, *, usage: dict | None = None, choices: bool = True) -> str:
    """The data of one chunk shaped like the real API's: id, created, model, system_fingerprint, logprobs,
    and "usage": null on every chunk but the usage chunk (what a request with include_usage gets)."""
    obj: dict = {
        "id": "chatcmpl-9xYz", "object": "chat.completion.chunk", "created": 1700000000,
        "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_0ba0d124f1",
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish_reason}] if choices else [],
        "usage": usage,
    }
    return json.dumps(obj, separators=(",", ":"))


def call_entry(index: int, call_id: str | None = None, name: str | None = None, arguments: str | None = "") -> dict:
    """One entry of delta.tool_calls; id and name only when given (the first fragment of a call carries them)."""
    entry: dict = {"index": index}
    if call_id is not None:
        entry.update(id=call_id, type="function")
    function: dict = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    entry["function"] = function
    return entry


def decode_all(events: list[str]) -> list:
    """The deltas of a list of event data, in order, through one Decoder; stops when it says finished."""
    decoder = sse.Decoder()
    out: list = []
    for data in events:
        deltas, finished = decoder.decode(data)
        out.extend(deltas)
        if finished:
            break
    return out


# ---- the catalog --------------------------------------------------------------------------------


def test_hand_example(chunked):
    """Section 3 by hand: 'Hello' in five chunks read 7 bytes at a time gives exactly four deltas."""
    hand = STREAMS["hand_example"]
    decoder = sse.Decoder()
    for i, step in enumerate(hand["events"], 1):
        deltas, finished = decoder.decode(step["data"])
        got = [neutral(d) for d in deltas]
        assert got == step["deltas"], f"event {i} ({step['data'][:70]}...): got deltas {got}, want {step['deltas']}"
        want_finished = step["data"] == "[DONE]"
        assert finished == want_finished, f"event {i}: got finished={finished!r}, want {want_finished!r}"

    deltas = read_body(hand["body"].encode("utf-8"), hand["read_size"], chunked)
    want = [types.TextDelta("Hel"), types.TextDelta("lo"), types.UsageDelta(5, 2), types.DoneDelta("stop")]
    assert deltas == want, f"read 7 bytes at a time: got {deltas!r}, want {want!r}"

    message, usage = types.collect(deltas)
    want_message = types.Message(types.Role.ASSISTANT, "Hello")
    assert message == want_message, f"collect: got message {message!r}, want {want_message!r}"
    assert usage == types.Usage(5, 2), f"collect: got usage {usage!r}, want Usage(input_tokens=5, output_tokens=2)"



def test_decoder_follows_choice_zero(chunked):
    """A second answer (choice index 1) in the same chunks changes nothing: only choice 0 is decoded."""
    hand = STREAMS["hand_example"]
    want = [types.TextDelta("Hel"), types.TextDelta("lo"), types.UsageDelta(5, 2), types.DoneDelta("stop")]

    def chunk(*choices: dict, usage: dict | None = None) -> str:
        obj = {"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1700000000, "model": "m", "choices": list(choices)}
        if usage is not None:
            obj["usage"] = usage
        return json.dumps(obj, separators=(",", ":"))

    def choice(index: int, delta: dict, finish_reason: str | None = None) -> dict:
        return {"index": index, "delta": delta, "finish_reason": finish_reason}

    other_call = {"index": 0, "id": "call_other", "type": "function", "function": {"name": "get_time", "arguments": '{"tz":"UTC"}'}}
    events = [
        chunk(choice(0, {"role": "assistant", "content": ""}), choice(1, {"role": "assistant", "content": ""})),
        chunk(choice(1, {"content": "Bye"})),
        chunk(choice(0, {"content": "Hel"})),
        chunk(choice(1, {"tool_calls": [other_call]}), choice(0, {"content": "lo"})),
        chunk(choice(0, {}, "stop"), choice(1, {}, "length")),
        chunk(usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}),
        "[DONE]",
    ]
    body = "".join(f"data: {e}\n\n" for e in events).encode("utf-8")
    deltas = read_body(body, hand["read_size"], chunked)
    assert deltas == want, (
        f"'Hello' as choice 0 beside a second answer (choice 1: 'Bye', a get_time call, finish 'length'): "
        f"got {deltas!r}, want {want!r} (only choice 0 is ours)"
    )



def test_decoder_bad_events():
    """Data that is not a JSON object of the chunk's shape, and an in-band error, end the stream with one ErrorDelta."""
    for data in ("{not json", "", "[1, 2]", '"text"', "null", '{"choices": 5}', '{"choices": [{"index": 0, "delta": "hi"}]}'):
        got, finished = sse.Decoder().decode(data)
        kinds = [type(d).__name__ for d in got]
        assert kinds == ["ErrorDelta"] and finished is True, (
            f"Decoder().decode({data!r}): got {got!r}, finished={finished!r}; want one ErrorDelta and finished=True"
        )
        assert isinstance(got[0].error, errors.ProviderError), (
            f"Decoder().decode({data!r}): the ErrorDelta holds {got[0].error!r}, want a ProviderError"
        )

    decoder = sse.Decoder()
    opened, _ = decoder.decode(api_chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{"}}]}))
    assert len(opened) == 2, f"a chunk opening a call with a fragment: got {opened!r}, want a start and an args delta"
    event = {"error": {"message": "The server had an error", "type": "server_error", "param": None, "code": "overloaded"}}
    got, finished = decoder.decode(json.dumps(event))
    assert [type(d).__name__ for d in got] == ["ErrorDelta"] and finished is True, (
        f"an error event (while a call is open): got {got!r}, finished={finished!r}; want only one ErrorDelta and finished=True"
    )
    error = got[0].error
    fields = (type(error).__name__, getattr(error, "type", None), getattr(error, "code", None), getattr(error, "message", None))
    want = ("StreamError", "server_error", "overloaded", "The server had an error")
    assert fields == want, f"the error event's ErrorDelta (class, type, code, message): got {fields!r}, want {want!r}"
    assert str(error) == "stream error server_error: The server had an error", f"str() of the StreamError: got {str(error)!r}"

    # the API writes "code": null and "param": null when it has none: null is no code, not the text "None"
    got, _ = sse.Decoder().decode('{"error": {"message": "Rate limited", "type": null, "param": null, "code": null}}')
    error = got[0].error if len(got) == 1 and isinstance(got[0], types.ErrorDelta) else None
    fields = (getattr(error, "type", None), getattr(error, "code", None), getattr(error, "message", None))
    assert fields == ("", "", "Rate limited"), (
        f"an error event whose type and code are null: the StreamError's (type, code, message) got {fields!r}, "
        "want ('', '', 'Rate limited')"
    )

    got, finished = sse.Decoder().decode('{"error": "upstream overloaded"}')
    error = got[0].error if len(got) == 1 and isinstance(got[0], types.ErrorDelta) else None
    assert isinstance(error, errors.StreamError) and error.message == "upstream overloaded" and finished is True, (
        f"an error event whose error is a plain string: got {got!r}, finished={finished!r}; "
        "want one ErrorDelta(StreamError(message='upstream overloaded')) and finished=True"
    )


def test_decoder_tool_calls():
    """Fragments go to the call their index names (indexes 10 and 2, a provider repeating id and name in every
    chunk); calls close at finish_reason, lowest index first, even when it is "length"; no fragment is '{}'."""
    A, B = "call_a", "call_b"
    events = [
        api_chunk({"role": "assistant", "content": None}),
        api_chunk({"tool_calls": [call_entry(10, A, "get_weather", "")]}),
        api_chunk({"tool_calls": [call_entry(2, B, "get_time", '{"tz"')]}),
        # this provider repeats id and name with every fragment: they open nothing new
        api_chunk({"tool_calls": [call_entry(10, A, "get_weather", '{"city":')]}),
        api_chunk({"tool_calls": [call_entry(2, B, "get_time", ':"UTC"}')]}),
        api_chunk({"tool_calls": [call_entry(10, A, "get_weather", '"Paris"}')]}),
        api_chunk({}, "tool_calls"),
        api_chunk(usage={"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}, choices=False),
        "[DONE]",
    ]
    got = [neutral(d) for d in decode_all(events)]
    want = [
        {"type": "tool_start", "index": 10, "id": A, "name": "get_weather"},
        {"type": "tool_start", "index": 2, "id": B, "name": "get_time"},
        {"type": "tool_args", "index": 2, "fragment": '{"tz"'},
        {"type": "tool_args", "index": 10, "fragment": '{"city":'},
        {"type": "tool_args", "index": 2, "fragment": ':"UTC"}'},
        {"type": "tool_args", "index": 10, "fragment": '"Paris"}'},
        {"type": "tool_end", "index": 2, "id": B, "name": "get_time", "arguments": '{"tz":"UTC"}'},
        {"type": "tool_end", "index": 10, "id": A, "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "usage", "input": 9, "output": 4},
        {"type": "done", "finish_reason": "tool_calls"},
    ]
    assert got == want, f"two calls at indexes 10 and 2, id and name repeated: {mismatch(got, want)}\n  got:  {got}\n  want: {want}"

    # A call cut short by the token limit still ends when finish_reason comes, before the usage chunk;
    # a call whose arguments never came (null, or "") ends with "{}".
    events = [
        api_chunk({"role": "assistant", "content": None, "tool_calls": [call_entry(0, "call_x", "list_files", None)]}),
        api_chunk({"tool_calls": [call_entry(1, "call_y", "read_file", '{"path": "/et')]}),
        api_chunk({}, "length"),
        api_chunk(usage={"prompt_tokens": 3, "completion_tokens": 16, "total_tokens": 19}, choices=False),
        "[DONE]",
    ]
    got = [neutral(d) for d in decode_all(events)]
    want = [
        {"type": "tool_start", "index": 0, "id": "call_x", "name": "list_files"},
        {"type": "tool_start", "index": 1, "id": "call_y", "name": "read_file"},
        {"type": "tool_args", "index": 1, "fragment": '{"path": "/et'},
        {"type": "tool_end", "index": 0, "id": "call_x", "name": "list_files", "arguments": "{}"},
        {"type": "tool_end", "index": 1, "id": "call_y", "name": "read_file", "arguments": '{"path": "/et'},
        {"type": "usage", "input": 3, "output": 16},
        {"type": "done", "finish_reason": "length"},
    ]
    assert got == want, f"calls open when finish_reason 'length' comes: {mismatch(got, want)}\n  got:  {got}\n  want: {want}"

    # a server that sends no finish_reason at all: [DONE] closes the call that is still open
    events = [api_chunk({"tool_calls": [call_entry(0, "call_z", "now", "{}")]}), "[DONE]"]
    got = [neutral(d) for d in decode_all(events)]
    want = [
        {"type": "tool_start", "index": 0, "id": "call_z", "name": "now"},
        {"type": "tool_args", "index": 0, "fragment": "{}"},
        {"type": "tool_end", "index": 0, "id": "call_z", "name": "now", "arguments": "{}"},
        {"type": "done", "finish_reason": ""},
    ]
    assert got == want, f"a call still open at [DONE], no finish_reason: {mismatch(got, want)}\n  got:  {got}\n  want: {want}"


def test_decoder_nulls_and_usage():
    """Explicit nulls where real chunks carry them produce nothing; the usage chunk gives its two counts."""
    events = [
        api_chunk({"role": "assistant", "content": "", "refusal": None}),
        api_chunk({"content": None, "tool_calls": None, "function_call": None}),
        api_chunk({"content": "Bonjour"}),
        api_chunk({}, "stop"),
        # usage without total_tokens, with the details objects real servers add
        api_chunk(usage={"prompt_tokens": 12, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 0}}, choices=False),
        "[DONE]",
    ]
    got = [neutral(d) for d in decode_all(events)]
    want = [
        {"type": "text", "text": "Bonjour"},
        {"type": "usage", "input": 12, "output": 1},
        {"type": "done", "finish_reason": "stop"},
    ]
    assert got == want, f"chunks with null fields, a usage chunk without total_tokens: {mismatch(got, want)}\n  got:  {got}\n  want: {want}"

    # a chunk that carries both the last text and the usage (some servers merge them) gives both, text first
    merged = api_chunk({"content": "!"}, "stop", usage={"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5})
    got = [neutral(d) for d in decode_all([merged, "[DONE]"])]
    want = [{"type": "text", "text": "!"}, {"type": "usage", "input": 2, "output": 3}, {"type": "done", "finish_reason": "stop"}]
    assert got == want, f"text, finish and usage in one chunk: {mismatch(got, want)}\n  got:  {got}\n  want: {want}"


RECORDED_CASES = [
    pytest.param(stream, size, id=f"{stream['name']}-{size}")
    for stream in STREAMS["streams"]
    for size in (*READ_SIZES, "http")
] + [pytest.param(None, "one provider", id="one-provider")]


@pytest.mark.parametrize("stream, size", RECORDED_CASES)
def test_recorded_streams(stream, size, chunked, request):
    """Six recorded streams give the same deltas at read sizes 1, 7 and 65536, and through the provider;
    and through one provider, one after another, after a stream cut while a call was open."""
    if stream is None:
        return recorded_through_one_provider(request.getfixturevalue("server"))
    name, body = stream["name"], stream["body"].encode("utf-8")
    want = stream["expected"]
    if size == "http":
        # The body in HTTP chunks of 7 bytes, sent in one write: the provider's reads of it return at most
        # one chunk each, so its reader meets the splits of a 7-byte read, without a wake-up per chunk.
        srv = request.getfixturevalue("server")
        sevens = b"".join(chunk(body[i : i + 7]) for i in range(0, len(body), 7))
        srv.script(Answer(sse_head() + sevens + b"0\r\n\r\n"))
        deltas = list(provider(srv).chat_stream([user("hi")]))
        how = "through OpenAIProvider (the recorded body served in HTTP chunks of 7 bytes)"
    else:
        deltas = read_body(body, size, chunked)
        how = f"read {size} byte(s) at a time"
    got = [neutral(d) for d in deltas]
    assert got == want["deltas"], (
        f"{name}, {how}: {mismatch(got, want['deltas'])}\n  got:  {got}\n  want: {want['deltas']}"
    )

    acc = types.Accumulator()
    for d in deltas:
        acc.add(d)
    got_message = message_form(acc.message())
    assert got_message == want["message"], f"{name}: Accumulator.message(): got {got_message}, want {want['message']}"
    u = acc.usage()
    got_usage = {"input": u.input_tokens, "output": u.output_tokens}
    assert got_usage == want["usage"], f"{name}: Accumulator.usage(): got {got_usage}, want {want['usage']}"
    assert acc.finish_reason == want["finish_reason"], (
        f"{name}: Accumulator.finish_reason: got {acc.finish_reason!r}, want {want['finish_reason']!r}"
    )
    assert error_kind(acc.error) == want["error"], (
        f"{name}: Accumulator.error: got {acc.error!r} ({error_kind(acc.error)}), want {want['error']}"
    )


def request_fixture() -> tuple[list, list, types.CallOptions, dict, list]:
    """A conversation with every kind of message, two tools and options; and the body they must give."""
    messages = [
        types.Message(types.Role.SYSTEM, "You are terse."),
        types.Message(types.Role.USER, "Weather in Paris, and the time in UTC?", name="alice"),
        types.Message(
            types.Role.ASSISTANT,
            "",
            tool_calls=[
                types.ToolCall("call_1", "get_weather", '{"city":"Paris"}'),
                types.ToolCall("call_2", "get_time", ""),
            ],
        ),
        types.Message(types.Role.TOOL, '{"temp_c": 18}', tool_call_id="call_1"),
        types.Message(types.Role.TOOL, "12:00", tool_call_id="call_2"),
        types.Message(
            types.Role.ASSISTANT,
            "Paris is 18 °C. Now Lyon.",
            tool_calls=[types.ToolCall("call_3", "get_weather", '{"city":"Lyon"}')],
        ),
        types.Message(types.Role.TOOL, '{"temp_c": 21}', tool_call_id="call_3"),
        types.Message(types.Role.ASSISTANT, "18 °C in Paris, 21 °C in Lyon, at noon."),
    ]
    tools = [
        types.ToolDef("get_weather", "Current weather in a city", json.loads(json.dumps(WEATHER_TOOL_SCHEMA))),
        types.ToolDef("get_time", "Current time in a time zone", {"type": "object", "properties": {"tz": {"type": "string"}}}),
    ]
    options = types.CallOptions(temperature=0.2, max_tokens=64)
    want_messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris, and the time in UTC?", "name": "alice"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}},
                {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "content": '{"temp_c": 18}', "tool_call_id": "call_1"},
        {"role": "tool", "content": "12:00", "tool_call_id": "call_2"},
        {
            # text beside tool calls stays text: only an empty one becomes null
            "role": "assistant",
            "content": "Paris is 18 °C. Now Lyon.",
            "tool_calls": [{"id": "call_3", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Lyon"}'}}],
        },
        {"role": "tool", "content": '{"temp_c": 21}', "tool_call_id": "call_3"},
        {"role": "assistant", "content": "18 °C in Paris, 21 °C in Lyon, at noon."},
    ]
    want = {
        "model": "test-model",
        "messages": want_messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city", "parameters": WEATHER_TOOL_SCHEMA}},
            {
                "type": "function",
                "function": {
                    "name": "get_time",
                    "description": "Current time in a time zone",
                    "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}},
                },
            },
        ],
        "temperature": 0.2,
        "max_tokens": 64,
    }
    return messages, tools, options, want, want_messages


def check_body(got: object, want: dict, want_messages: list, where: str) -> None:
    """Compares a request body as data (JSON written differently is the same body), key by key."""
    assert isinstance(got, dict), f"{where}: got {got!r}, want a JSON object"
    assert sorted(got) == sorted(want), f"{where}: got keys {sorted(got)}, want {sorted(want)}"
    for key in ("model", "stream", "stream_options", "tools", "temperature", "max_tokens"):
        assert got[key] == want[key], f"{where}: {key!r}: got {got[key]!r}, want {want[key]!r}"
    got_messages = got["messages"]
    assert len(got_messages) == len(want_messages), f"{where}: got {len(got_messages)} messages, want {len(want_messages)}"
    for i, (g, w) in enumerate(zip(got_messages, want_messages)):
        assert g == w, f"{where}: message {i} ({w['role']}): got {g!r}, want {w!r}"


def recorded_through_one_provider(srv) -> None:
    """Every recorded stream through one provider, one after another, the first cut while a call was
    open: what a stream leaves behind belongs to that stream alone."""
    cut = {
        "name": "call_cut_short",
        "body": "data: " + api_chunk({"tool_calls": [call_entry(0, "call_cut", "get_weather", '{"city":')]}) + "\n\n",
        "expected": {"deltas": [
            {"type": "tool_start", "index": 0, "id": "call_cut", "name": "get_weather"},
            {"type": "tool_args", "index": 0, "fragment": '{"city":'},
            {"type": "error", "error": "stream_cut"},
        ]},
    }
    p = provider(srv)
    wrong = []
    for stream in [cut, *STREAMS["streams"]]:
        srv.script(Answer(sse_head() + chunk(stream["body"].encode("utf-8")) + b"0\r\n\r\n"))
        got = [neutral(d) for d in p.chat_stream([user(stream["name"])])]
        want = stream["expected"]["deltas"]
        if got != want:
            wrong.append(f"{stream['name']}, through one provider after the others: {mismatch(got, want)}\n  got:  {got}\n  want: {want}")
    assert not wrong, "\n".join(wrong)


def test_request_body():
    """request_body(): model, stream with usage, tools, options, assistant calls (content null, string
    arguments), tool results with their ids; a body that shares nothing with the caller's objects."""
    messages, tools, options, want, want_messages = request_fixture()
    built = openai.request_body("test-model", messages, tools, options)
    check_body(json.loads(json.dumps(built)), want, want_messages, "request_body()")
    minimal = json.loads(json.dumps(openai.request_body("m", [user("hi")])))
    want_minimal = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True, "stream_options": {"include_usage": True}}
    assert minimal == want_minimal, f"request_body() with no tools and no options: got {minimal!r}, want {want_minimal!r}"
    cold = json.loads(json.dumps(openai.request_body("m", [user("hi")], None, types.CallOptions(temperature=0.0))))
    assert cold.get("temperature") == 0.0 and "max_tokens" not in cold, \
        f"a temperature of 0 is set, so it is sent (only an unset option is left out): got {cold!r}"

    # Changing the body (a caller adding a field before sending it) must not change the caller's tool
    # definitions or messages, however deep the change; nor may a later change to those reach the body.
    snapshot = json.dumps(built, sort_keys=True)
    built["tools"][0]["function"]["parameters"]["properties"]["city"]["enum"] = ["Paris"]
    built["tools"][0]["function"]["parameters"]["required"].append("country")
    built["messages"][2]["tool_calls"][0]["function"]["name"] = "changed"
    assert tools[0].parameters == WEATHER_TOOL_SCHEMA, (
        f"after changing the body's nested tool schema, the caller's ToolDef.parameters is {tools[0].parameters!r}: "
        "the body must not share nested objects with the caller's"
    )
    assert messages[2].tool_calls[0].name == "get_weather", "changing the body changed the caller's message"
    fresh = openai.request_body("test-model", messages, tools, options)
    tools[1].parameters["properties"]["tz"]["enum"] = ["UTC"]
    assert json.dumps(fresh, sort_keys=True) == snapshot, (
        "a body built, then the caller's ToolDef.parameters changed: the body changed with it (it must hold its own copy)"
    )


def test_request_wire(fake, server):
    """On the wire: POST to base_url + /chat/completions, bearer key (none without a key), JSON content
    type, event-stream accept, the caller's extra headers (which win over ours, under any spelling of
    the name), each header sent once, the body as data."""
    messages, tools, options, want, want_messages = request_fixture()

    fake.script(fake_model.text("ok"), fake_model.text("ok"))
    p = provider(fake, headers={"X-Course-Trace": "t-1"})
    list(p.chat_stream(messages, tools, options))
    req = fake.requests[-1]
    assert (req.method, req.path) == ("POST", "/v1/chat/completions"), (
        f"request line: got {req.method} {req.path}, want POST /v1/chat/completions (base_url + /chat/completions)"
    )
    checks = {
        "authorization": "Bearer sk-test",
        "accept": "text/event-stream",
        "x-course-trace": "t-1",
    }
    for name, value in checks.items():
        assert req.headers.get(name) == value, f"header {name}: got {req.headers.get(name)!r}, want {value!r}"
    content_type = req.headers.get("content-type", "")
    assert content_type.split(";")[0].strip() == "application/json", f"header content-type: got {content_type!r}, want 'application/json'"
    check_body(req.body, want, want_messages, "the body on the wire")

    list(provider(fake, api_key="").chat_stream([user("hi")]))
    sent = fake.requests[-1].headers.get("authorization")
    assert sent is None, f"with no api_key: got an Authorization header {sent!r}, want none"

    for bad in ("127.0.0.1:8080/v1", "ftp://127.0.0.1/v1", "http:///v1"):
        try:
            openai.OpenAIProvider(openai.Config(base_url=bad))
        except ValueError:
            pass
        else:
            pytest.fail(f"OpenAIProvider(Config(base_url={bad!r})): no error, want ValueError (not an http(s) URL with a host)", pytrace=False)

    fake.script(fake_model.text("ok"))
    list(openai.OpenAIProvider(openai.Config(base_url=fake.base_url + "/", model="m")).chat_stream([user("hi")]))
    path = fake.requests[-1].path
    assert path == "/v1/chat/completions", f"base_url ending in '/': got path {path!r}, want '/v1/chat/completions'"

    fake.script(fake_model.text("ok"))
    list(provider(fake, headers={"Authorization": "Basic Z2F0ZXdheQ==", "Accept": "text/event-stream; q=1"}).chat_stream([user("hi")]))
    got = {name: fake.requests[-1].headers.get(name) for name in ("authorization", "accept")}
    want_headers = {"authorization": "Basic Z2F0ZXdheQ==", "accept": "text/event-stream; q=1"}
    assert got == want_headers, f"Config.headers setting Authorization and Accept: got {got!r}, want {want_headers!r} (the caller's headers win)"

    # Each header goes out once, with its value: ours, the caller's, and ours replaced by the caller's
    # under any spelling of the name (header names ignore case). The raw server sees every header line,
    # where the fake model keeps one value per name.
    ours = {"authorization": "Bearer sk-test", "accept": "text/event-stream", "content-type": "application/json"}
    wrong = []
    for what, headers, theirs in (
        ("Config.headers adding X-Course-Trace", {"X-Course-Trace": "t-1"}, {"x-course-trace": "t-1"}),
        ("Config.headers replacing Authorization and Accept", {"Authorization": "Basic Z2F0ZXdheQ==", "Accept": "text/event-stream; q=1"},
         {"authorization": "Basic Z2F0ZXdheQ==", "accept": "text/event-stream; q=1"}),
        ("Config.headers replacing them in lower case, and adding one of its own",
         {"authorization": "Basic Z2F0ZXdheQ==", "accept": "text/event-stream; q=1", "x-course-trace": "t-2"},
         {"authorization": "Basic Z2F0ZXdheQ==", "accept": "text/event-stream; q=1", "x-course-trace": "t-2"}),
    ):
        server.script(sse_answer([]))
        list(provider(server, headers=headers).chat_stream([user("hi")]))
        sent = header_lines(server.requests[-1][0])
        for name, value in {**ours, **theirs}.items():
            if sent.get(name) != [value]:
                wrong.append(f"{what}: header {name} went out as {sent.get(name)!r}, want once, as {value!r} (the caller's replaces ours, whatever its case)")
    assert not wrong, "\n".join(wrong)


def header_lines(head: bytes) -> dict[str, list[str]]:
    """A request head's header lines: lower-case name -> every value sent under it, in order."""
    found: dict[str, list[str]] = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        found.setdefault(name.strip().lower(), []).append(value.strip())
    return found


def test_api_error_raised(fake):
    """A non-2xx answer is raised as APIError with the status and the body's type, code and message (the
    body's text when it holds no JSON error object); a Retry-After that is not a finite number >= 0 is None."""
    fake.script(fake_model.http_error(400, "invalid_request_error", "bad model", code="model_not_found"))
    with pytest.raises(errors.APIError) as caught:
        provider(fake).chat_stream([user("hi")])
    err = caught.value
    got = (err.status, err.type, err.code, err.message, err.retry_after)
    want = (400, "invalid_request_error", "model_not_found", "bad model", None)
    assert got == want, f"APIError (status, type, code, message, retry_after): got {got!r}, want {want!r}"
    assert str(err) == "HTTP 400 invalid_request_error: bad model", (
        f"str(APIError): got {str(err)!r}, want 'HTTP 400 invalid_request_error: bad model'"
    )

    page = "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>nginx</body>\n</html>"
    fake.script(fake_model.raw(f"\n{page}\n\n", status=502, content_type="text/html"))
    with pytest.raises(errors.APIError) as caught:
        provider(fake).chat_stream([user("hi")])
    err = caught.value
    got = (err.status, err.type, err.code, err.message)
    want = (502, "", "", page)
    assert got == want, (
        f"a 502 with a proxy's HTML page as its body, APIError (status, type, code, message): got {got!r}, "
        f"want {want!r} (no JSON error object: the body's text, stripped, is the message)"
    )
    assert str(err) == f"HTTP 502: {page}", f"str() of an APIError without a type: got {str(err)!r}, want 'HTTP 502: ' and the page"
    assert str(errors.APIError(503)) == "HTTP 503", f"str(APIError(503)): got {str(errors.APIError(503))!r}, want 'HTTP 503'"

    # Retry-After is delta-seconds, a finite number >= 0; anything else (the HTTP-date form included) is no hint
    for header in ("-1", "inf", "nan", "Wed, 21 Oct 2015 07:28:00 GMT"):
        fake.script(fake_model.http_error(503, retry_after=header))
        with pytest.raises(errors.APIError) as caught:
            provider(fake).chat_stream([user("hi")])
        got = caught.value.retry_after
        assert got is None, f"APIError.retry_after for 'Retry-After: {header}': got {got!r}, want None"


STATUS_CASES = [
    # (status, reason, a stream?)  2xx is a stream; anything else, 3xx included, is an APIError
    (200, "OK", True),
    (201, "Created", True),
    (299, "Whatever", True),
    (300, "Multiple Choices", False),
    (302, "Found", False),
    (304, "Not Modified", False),
    (404, "Not Found", False),
    (418, "I'm a teapot", False),
    (599, "Network Connect Timeout", False),
]


@pytest.mark.parametrize("status, reason, is_stream", STATUS_CASES, ids=[str(s) for s, _, _ in STATUS_CASES])
def test_status_boundaries(server, status, reason, is_stream):
    """Every 2xx status starts a stream; every other status, 3xx included, raises APIError with it."""
    answer = sse_answer([api_chunk({"content": "hi"}), api_chunk({}, "stop")], status=status, reason=reason)
    server.script(answer)
    try:
        deltas = list(provider(server).chat_stream([user("hi")]))
    except errors.APIError as error:
        assert not is_stream, f"HTTP {status}: got {error!r} raised, want a stream (every 2xx status is a success)"
        assert error.status == status, f"HTTP {status}: got APIError with status {error.status!r}, want {status}"
        return
    assert is_stream, f"HTTP {status}: got a stream of {len(deltas)} deltas, want APIError({status}) raised (only 2xx is a success)"
    got = [neutral(d) for d in deltas]
    want = [{"type": "text", "text": "hi"}, {"type": "done", "finish_reason": "stop"}]
    assert got == want, f"HTTP {status}: got deltas {got}, want {want}"


def test_api_error_not_retried(fake, sleeps):
    """A 400, even one carrying Retry-After, and a 501 are raised after ONE request, with no wait."""
    for status, retry_after in ((400, None), (400, 1), (501, None)):
        fake.clear()
        sleeps.clear()
        fake.script(fake_model.http_error(status, retry_after=retry_after), fake_model.text("this answer must never be asked for"))
        with pytest.raises(errors.APIError) as caught:
            retrying(fake, sleeps, max_attempts=5).chat_stream([user("hi")])
        label = f"HTTP {status}" + (f" with Retry-After: {retry_after}" if retry_after is not None else "")
        assert caught.value.status == status, f"{label}: got APIError status {caught.value.status!r}, want {status}"
        assert requests_made(fake) == 1, f"{label}: got {requests_made(fake)} requests, want 1 (it fails the same way every time)"
        assert list(sleeps) == [], f"{label}: got sleeps {list(sleeps)}, want []"


def test_retry_backoff_schedule(fake, sleeps):
    """Delay doubles from initial up to max; 503, 503, 200 waits 0.1 s then 0.2 s."""
    policy = retry.RetryPolicy(initial=0.1, max=1.0, multiplier=2.0, sleep=sleeps)
    got = [round(policy.delay(n), 9) for n in range(1, 7)]
    want = [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert got == want, f"RetryPolicy(initial=0.1, max=1.0).delay(1..6): got {got}, want {want}"
    defaults = retry.RetryPolicy()
    got_defaults = (defaults.max_attempts, defaults.initial, defaults.max, defaults.multiplier, defaults.max_retry_after)
    assert got_defaults == (3, 0.5, 30.0, 2.0, 60.0), (
        f"RetryPolicy() (max_attempts, initial, max, multiplier, max_retry_after): got {got_defaults}, want (3, 0.5, 30.0, 2.0, 60.0)"
    )
    got = [round(defaults.delay(n), 9) for n in (1, 2, 3, 8)]
    assert got == [0.5, 1.0, 2.0, 30.0], f"RetryPolicy().delay(1, 2, 3, 8): got {got}, want [0.5, 1.0, 2.0, 30.0]"
    # the cap cuts in between two doublings, and any multiplier works the same way
    got = [round(retry.RetryPolicy(initial=0.1, max=0.3).delay(n), 9) for n in (1, 2, 3, 4)]
    assert got == [0.1, 0.2, 0.3, 0.3], f"RetryPolicy(initial=0.1, max=0.3).delay(1..4): got {got}, want [0.1, 0.2, 0.3, 0.3]"
    got = [round(retry.RetryPolicy(initial=1.0, max=100.0, multiplier=3.0).delay(n), 9) for n in (1, 2, 3, 5)]
    assert got == [1.0, 3.0, 9.0, 81.0], f"RetryPolicy(initial=1, max=100, multiplier=3).delay(1, 2, 3, 5): got {got}, want [1.0, 3.0, 9.0, 81.0]"
    # a long run of failures stays at the cap: the doubling must never overflow or wrap around
    for n in (30, 36, 64, 100, 1100, 5000):
        try:
            got = defaults.delay(n)
        except OverflowError as exc:
            pytest.fail(f"RetryPolicy().delay({n}): raised OverflowError ({exc}), want 30.0 (the cap)", pytrace=False)
        assert got == 30.0, f"RetryPolicy().delay({n}): got {got!r}, want 30.0 (the cap, however many failures)"

    fake.script(fake_model.http_error(503), fake_model.http_error(503), fake_model.text("Hel", "lo"))
    tools = [types.ToolDef("get_weather", "Current weather in a city", WEATHER_TOOL_SCHEMA)]
    options = types.CallOptions(temperature=0.2, max_tokens=64)
    stream = retrying(fake, sleeps, max_attempts=3).chat_stream([user("hi")], tools, options)
    message, _ = types.collect(stream)
    waits = [round(s, 9) for s in sleeps]
    assert waits == [0.1, 0.2], f"sleeps after 503, 503, 200: got {list(sleeps)}, want [0.1, 0.2]"
    assert requests_made(fake) == 3, f"requests: got {requests_made(fake)}, want 3"
    assert message.content == "Hello", f"text: got {message.content!r}, want 'Hello'"
    # every attempt is the caller's request: the wrapper passes the tools and options on, each time
    for n, req in enumerate(fake.requests, 1):
        body = req.body if isinstance(req.body, dict) else {}
        got = (
            [t.get("function", {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)],
            body.get("temperature"),
            body.get("max_tokens"),
        )
        want = (["get_weather"], 0.2, 64)
        assert got == want, (
            f"request {n} of 3 (tool names, temperature, max_tokens): got {got!r}, want {want!r} "
            "(the retry wrapper must pass the caller's tools and options to the inner provider)"
        )


def test_retry_after_honored(fake, sleeps):
    """A 429 with Retry-After: 3 waits 3 s (not the backoff) before the retry."""
    e429 = errors.APIError(429, retry_after=3.0)
    policy = retry.RetryPolicy(initial=0.1, sleep=sleeps)
    assert policy.delay(1, e429) == 3.0, f"delay(1, APIError(429, retry_after=3.0)): got {policy.delay(1, e429)!r}, want 3.0"
    plain = round(policy.delay(1, errors.APIError(503)), 9)
    assert plain == 0.1, f"delay(1, APIError(503)) without Retry-After: got {plain!r}, want 0.1 (the backoff)"
    for seconds in (0.0, 45.0, 3600.0):  # delay() reports the server's wish; whether to wait that long is decided elsewhere
        got = policy.delay(2, errors.APIError(503, retry_after=seconds))
        assert got == seconds, f"delay(2, APIError(503, retry_after={seconds})): got {got!r}, want {seconds}"

    for header, want in (("3", 3.0), ("0", 0.0), ("soon", None)):
        fake.script(fake_model.http_error(429, retry_after=header))
        with pytest.raises(errors.APIError) as caught:
            provider(fake).chat_stream([user("hi")])
        got = caught.value.retry_after
        assert got == want, f"APIError.retry_after for 'Retry-After: {header}': got {got!r}, want {want!r}"

    before = requests_made(fake)
    fake.script(fake_model.http_error(429, retry_after=3), fake_model.text("ok"))
    message, _ = types.collect(retrying(fake, sleeps).chat_stream([user("hi")]))
    assert list(sleeps) == [3.0], f"sleeps after a 429 with Retry-After: 3: got {list(sleeps)}, want [3.0]"
    assert requests_made(fake) - before == 2, f"requests: got {requests_made(fake) - before}, want 2"
    assert message.content == "ok", f"text: got {message.content!r}, want 'ok'"

    # Between the two caps: 45 s is more than the backoff's max (30 s) but within max_retry_after (60 s)
    sleeps.clear()
    fake.script(fake_model.http_error(503, retry_after=45), fake_model.http_error(429, retry_after=0), fake_model.text("ok"))
    message, _ = types.collect(retry.with_retry(provider(fake), retry.RetryPolicy(sleep=sleeps)).chat_stream([user("hi")]))
    assert list(sleeps) == [45.0, 0.0], (
        f"RetryPolicy() after a 503 with Retry-After: 45 then a 429 with Retry-After: 0: got sleeps {list(sleeps)}, "
        "want [45.0, 0.0] (the header wins over the backoff and its max, up to max_retry_after; 0 means at once)"
    )
    assert message.content == "ok", f"text after two honored Retry-Afters: got {message.content!r}, want 'ok'"


def test_retry_gives_up_at_max_attempts(fake, sleeps):
    """max_attempts=3 makes exactly 3 requests; the last failure comes back as it came (raised or as ErrorDelta)."""
    fake.script(
        fake_model.http_error(503, message="first"),
        fake_model.http_error(503, message="second"),
        fake_model.http_error(503, message="third"),
        fake_model.text("a fourth attempt must not happen"),
    )
    with pytest.raises(errors.APIError) as caught:
        retrying(fake, sleeps, max_attempts=3).chat_stream([user("hi")])
    assert requests_made(fake) == 3, f"requests: got {requests_made(fake)}, want 3 (max_attempts counts the first)"
    assert caught.value.message == "third", f"raised error: got message {caught.value.message!r}, want 'third' (the last failure)"
    waits = [round(s, 9) for s in sleeps]
    assert waits == [0.1, 0.2], f"sleeps: got {list(sleeps)}, want [0.1, 0.2] (none after the last attempt)"

    fake.clear()
    sleeps.clear()
    fake.script(fake_model.reset_after(), fake_model.reset_after(), fake_model.reset_after(), fake_model.text("too late"))
    deltas = list(retrying(fake, sleeps, max_attempts=3).chat_stream([user("hi")]))
    assert requests_made(fake) == 3, f"resets before content: got {requests_made(fake)} requests, want 3"
    got = [neutral(d)["type"] for d in deltas]
    assert got == ["error"], f"after the third reset: got deltas {[neutral(d) for d in deltas]}, want one ErrorDelta"
    assert len(sleeps) == 2, f"sleeps: got {list(sleeps)}, want two waits"

    # raised failures and failures inside the stream count against the same limit
    fake.clear()
    sleeps.clear()
    fake.script(fake_model.http_error(503), fake_model.reset_after(), fake_model.reset_after(), fake_model.text("too late"))
    deltas = list(retrying(fake, sleeps, max_attempts=3).chat_stream([user("hi")]))
    got = [neutral(d)["type"] for d in deltas]
    assert requests_made(fake) == 3 and got == ["error"], (
        f"a 503, then two resets before content: got {requests_made(fake)} requests and deltas {got}, "
        "want 3 requests (every failure counts) and one ErrorDelta"
    )

    fake.clear()
    sleeps.clear()
    fake.script(fake_model.http_error(503), fake_model.text("too late"))
    with pytest.raises(errors.APIError):
        retrying(fake, sleeps, max_attempts=1).chat_stream([user("hi")])
    assert requests_made(fake) == 1, f"max_attempts=1: got {requests_made(fake)} requests, want 1"
    assert list(sleeps) == [], f"max_attempts=1: got sleeps {list(sleeps)}, want []"

    # every call has attempts of its own: the same wrapper, asked again after it gave up, tries three times more
    fake.clear()
    sleeps.clear()
    fake.script(*[fake_model.http_error(503)] * 5, fake_model.text("third time lucky"))
    wrapper = retrying(fake, sleeps, max_attempts=3)
    with pytest.raises(errors.APIError):
        wrapper.chat_stream([user("hi")])
    message, _ = types.collect(wrapper.chat_stream([user("hi again")]))
    assert requests_made(fake) == 6 and message.content == "third time lucky", (
        f"one wrapper asked twice, against five 503s and then an answer: got {requests_made(fake)} requests and {message.content!r}, "
        "want 6 and the answer (each call counts its own attempts)"
    )


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(fake_model.reset_after(), id="reset-after-role-chunk"),
        pytest.param(fake_model.error_event("server_error"), id="server_error-event"),
        # usage is not content: a stream that sent only usage, then ended without [DONE], is retried
        pytest.param(fake_model.raw("data: " + api_chunk(usage={"prompt_tokens": 7, "completion_tokens": 0, "total_tokens": 7}, choices=False) + "\n\n"), id="usage-then-cut"),
        pytest.param(fake_model.cut_mid_chunk(), id="closed-mid-chunk-after-role-chunk"),
        pytest.param(fake_model.truncated(), id="event-cut-short-after-role-chunk"),
    ],
)
def test_retry_before_first_content(fake, sleeps, failure):
    """A failure after the role chunk (or a usage chunk) but before any content is retried; 'Hello' arrives
    exactly once, and nothing the failed attempt sent reaches the caller."""
    fake.script(failure, fake_model.text("Hel", "lo", usage=(5, 2)))
    deltas = list(retrying(fake, sleeps).chat_stream([user("hi")]))
    got = [neutral(d) for d in deltas]
    assert texts(deltas) == ["Hel", "lo"], f"text deltas: got {texts(deltas)}, want ['Hel', 'lo'] once (all deltas: {got})"
    usages = [d for d in got if d["type"] == "usage"]
    assert usages == [{"type": "usage", "input": 5, "output": 2}], (
        f"usage deltas: got {usages}, want only the successful attempt's (5, 2) (all deltas: {got})"
    )
    assert got[-1] == {"type": "done", "finish_reason": "stop"}, f"last delta: got {got[-1]}, want done/stop (all: {got})"
    assert not any(d["type"] == "error" for d in got), f"an error reached the caller although the retry succeeded: {got}"
    assert requests_made(fake) == 2, f"requests: got {requests_made(fake)}, want 2 (the failed one and the retry)"
    assert [round(s, 9) for s in sleeps] == [0.1], f"sleeps: got {list(sleeps)}, want [0.1]"


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(fake_model.reset_after("a", " b", " c"), id="reset-after-three-tokens"),
        pytest.param(fake_model.error_event("server_error", after=["a", " b", " c"]), id="server_error-after-three-tokens"),
        pytest.param(fake_model.cut_mid_chunk("a", " b", " c"), id="closed-mid-chunk-after-three-tokens"),
        pytest.param(fake_model.truncated("a", " b", " c"), id="event-cut-short-after-three-tokens"),
    ],
)
def test_no_retry_after_content(fake, sleeps, failure):
    """A failure after 'a b c' reached the caller ends in an ErrorDelta after ONE request: no text repeated."""
    fake.script(failure, fake_model.text("a", " b", " c", " d"))
    deltas = list(retrying(fake, sleeps, max_attempts=3).chat_stream([user("hi")]))
    got = [neutral(d) for d in deltas]
    assert texts(deltas) == ["a", " b", " c"], f"text deltas: got {texts(deltas)}, want ['a', ' b', ' c'] (all deltas: {got})"
    assert got[-1]["type"] == "error", f"last delta: got {got[-1]}, want an ErrorDelta (all: {got})"
    assert not any(d["type"] == "done" for d in got), f"a cut stream must not end in a DoneDelta: {got}"
    assert requests_made(fake) == 1, f"requests: got {requests_made(fake)}, want 1 (no retry once text was passed on)"
    assert list(sleeps) == [], f"sleeps: got {list(sleeps)}, want []"


TOOL_CALL_START = {"index": 0, "id": "call_w", "type": "function", "function": {"name": "get_weather", "arguments": ""}}


@pytest.mark.parametrize(
    "events, end",
    [
        pytest.param([TOOL_CALL_START], "reset", id="reset-after-call-start"),
        pytest.param([TOOL_CALL_START, call_entry(0, arguments='{"ci')], "eof", id="eof-after-first-fragment"),
    ],
)
def test_no_retry_after_tool_call_began(server, sleeps, events, end):
    """A stream that breaks after a tool call began (no text at all) is not retried: the caller already
    holds the call's start, so the failure reaches it as an ErrorDelta after ONE request."""
    head = [api_chunk({"role": "assistant", "content": None})] + [api_chunk({"tool_calls": [e]}) for e in events]
    body = sse_head() + b"".join(chunk(f"data: {e}\n\n".encode()) for e in head)
    if end == "eof":
        server.script(Answer(body + b"0\r\n\r\n"))  # a complete body, cleanly ended, without [DONE]
    else:
        server.script(Answer(body, end="reset"))
    server.script(sse_answer([api_chunk({"content": "a second answer must never be asked for"}), api_chunk({}, "stop")]))
    deltas = list(retry.with_retry(provider(server), retry.RetryPolicy(initial=0.1, sleep=sleeps)).chat_stream([user("hi")]))
    got = [neutral(d) for d in deltas]
    assert got[:1] == [{"type": "tool_start", "index": 0, "id": "call_w", "name": "get_weather"}], (
        f"first delta: got {got[:1]}, want the tool call's start (all deltas: {got})"
    )
    assert got[-1]["type"] == "error", f"last delta: got {got[-1]}, want an ErrorDelta (all: {got})"
    assert sum(1 for d in got if d["type"] == "tool_start") == 1, f"the call started twice: {got}"
    assert len(server.requests) == 1, f"requests: got {len(server.requests)}, want 1 (a tool call is content: no retry after it)"
    assert list(sleeps) == [], f"sleeps: got {list(sleeps)}, want []"


def _text_events(*pieces: str) -> bytes:
    """The role chunk and one text chunk per piece, each event in its own HTTP chunk."""
    events = [api_chunk({"role": "assistant", "content": ""})] + [api_chunk({"content": p}) for p in pieces]
    return b"".join(chunk(f"data: {e}\n\n".encode()) for e in events)


NEXT_EVENT = f"data: {api_chunk({'content': ' d'})}\n\n".encode()
TRANSPORT_FAULTS = {
    # the server closes the connection in the middle of a chunk's data
    "closed-mid-chunk": Answer(sse_head() + _text_events("a", " b", " c") + b"%x\r\n" % len(NEXT_EVENT) + NEXT_EVENT[:20], end="close"),
    # the last chunk's size line is cut short, then the connection closes
    "truncated-chunk-size": Answer(sse_head() + _text_events("a", " b", " c") + b"1", end="close"),
    # a chunk whose size line is not hexadecimal
    "malformed-chunk-size": Answer(sse_head() + _text_events("a", " b", " c") + b"zz\r\n" + NEXT_EVENT + b"\r\n", end="close"),
    # a reset in the middle of a chunk
    "reset-mid-chunk": Answer(sse_head() + _text_events("a", " b", " c") + b"%x\r\n" % len(NEXT_EVENT) + NEXT_EVENT[:20], end="reset"),
    # a body framed by Content-Length that ends short of it
    "short-content-length": Answer(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 100000\r\n\r\n"
        + b"".join(f"data: {api_chunk({'content': p})}\n\n".encode() for p in ("a", " b", " c")), end="close"),
}


@pytest.mark.parametrize("fault", list(TRANSPORT_FAULTS))
@pytest.mark.parametrize("wrapped", [False, True], ids=["direct", "with_retry"])
def test_transport_faults_in_band(server, sleeps, fault, wrapped):
    """A connection that breaks in the middle of the body (mid-chunk, a truncated or malformed chunk, a
    reset, a short Content-Length) ends the stream with an ErrorDelta; no exception escapes it."""
    server.script(TRANSPORT_FAULTS[fault], sse_answer([api_chunk({"content": "a retry after content must not happen"})]))
    p = retry.with_retry(provider(server), retry.RetryPolicy(sleep=sleeps)) if wrapped else provider(server)
    deltas: list = []
    try:
        for delta in p.chat_stream([user("hi")]):
            deltas.append(delta)
    except Exception as error:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{fault}: the stream raised {error!r} after {[neutral(d) for d in deltas]}; "
                    "want the failure as a final ErrorDelta (a stream never raises once it has started)", pytrace=False)
    got = [neutral(d) for d in deltas]
    assert texts(deltas) == ["a", " b", " c"], f"{fault}: text deltas: got {texts(deltas)}, want ['a', ' b', ' c'] (all: {got})"
    assert got[-1]["type"] == "error", f"{fault}: last delta: got {got[-1]}, want an ErrorDelta (all: {got})"
    assert len(server.requests) == 1, f"{fault}: got {len(server.requests)} requests, want 1"


def test_stalled_stream_times_out(server, second_server, fresh_server, sleeps):
    """A server that goes silent in the middle of a stream: after Config.timeout without a byte, the stream
    ends with an ErrorDelta holding a TimeoutError, directly and through with_retry (no retry).

    The timeout is short (0.01 s) to keep the catalog fast, and the two runs wait it out at the same
    time, each against a server of its own (the direct run in a second thread): they share nothing but
    the clock, so the test costs one timeout instead of two. On a busy machine even the answer's head
    can come later than 0.01 s: a short run that goes wrong in any way is run again with a 0.5 s
    timeout, and that run is the one judged. It runs against a new server: the short run's requests
    (a retry of a head that came late) may still be on their way to the old one, and must not be
    counted as the second run's. A slow machine costs time, never a wrong verdict, and a client that is
    wrong is wrong at both timeouts."""

    def run_once(srv, wrapped: bool, timeout: float) -> tuple[list, int, list]:
        """The deltas, the number of requests and the waits asked for (only the wrapped run has any)."""
        srv.requests.clear()
        srv.script(Answer(sse_head() + _text_events("a"), end="stall"))
        p = openai.OpenAIProvider(openai.Config(base_url=srv.base_url, timeout=timeout))
        if wrapped:
            sleeps.clear()
            p = retry.with_retry(p, retry.RetryPolicy(sleep=sleeps))
        deltas = list(p.chat_stream([user("hi")]))
        return deltas, len(srv.requests), list(sleeps) if wrapped else []

    def run(srv, wrapped: bool) -> tuple[list, int, list]:
        try:
            short = run_once(srv, wrapped, 0.01)
        except Exception:  # noqa: BLE001 - judged at the longer timeout below
            pass
        else:
            deltas, requests, waits = short
            last = deltas[-1] if deltas else None
            timed_out = isinstance(last, types.ErrorDelta) and isinstance(last.error, TimeoutError)
            if texts(deltas) == ["a"] and timed_out and requests == 1 and not waits:
                return short
        return run_once(spare[wrapped], wrapped, 0.5)

    spare = {wrapped: fresh_server() for wrapped in (False, True)}  # made here: the fixture's stack is not thread-safe

    outcome: dict[bool, object] = {}

    def run_direct() -> None:
        try:
            outcome[False] = run(second_server, False)
        except BaseException as error:  # noqa: BLE001 - raised again below, in the test's own thread
            outcome[False] = error

    helper = threading.Thread(target=run_direct, daemon=True)
    helper.start()
    outcome[True] = run(server, True)
    helper.join()  # as long as the direct run takes: the per-test time limit still applies
    for wrapped in (False, True):
        label = "through with_retry" if wrapped else "directly"
        if isinstance(outcome[wrapped], BaseException):
            raise outcome[wrapped]
        deltas, requests, waits = outcome[wrapped]
        last = deltas[-1] if deltas else None
        got = [neutral(d) for d in deltas]
        assert texts(deltas) == ["a"], f"{label}: text deltas: got {texts(deltas)}, want ['a'] (all: {got})"
        assert isinstance(last, types.ErrorDelta) and isinstance(last.error, TimeoutError), (
            f"{label}: last delta: got {last!r}, want ErrorDelta(TimeoutError) (Config.timeout bounds every read)"
        )
        assert requests == 1 and waits == [], (
            f"{label}: got {requests} requests and sleeps {waits}, want 1 request and no "
            "sleep (a timeout after content is not retried)"
        )


def _keep_alive_cut(*pieces: str) -> Answer:
    """A complete chunked body without [DONE]: the client sees the body end, the connection stays open."""
    return Answer(sse_head() + _text_events(*pieces) + b"0\r\n\r\n")


CLOSE_CASES = ["read-to-end", "api-error", "retried-after-503", "retried-after-cut", "closed-early"]


@pytest.mark.parametrize("case", CLOSE_CASES)
def test_connections_closed(server, sleeps, case):
    """The client closes its connection itself (the server sees it go) when a stream is read to its end,
    when an answer is an error, before the wait that precedes a retry, and when it is closed early."""
    open_at_sleep: list[int] = []

    def look(seconds: float) -> None:  # the server's view while the retry wrapper waits
        server.wait_all_closed(1.0)
        open_at_sleep.append(server.open_connections)

    sleeps.on_sleep = look
    good = sse_answer([api_chunk({"content": "ok"}), api_chunk({}, "stop")])
    error = json_answer(503, "Service Unavailable", '{"error": {"message": "busy", "type": "server_error"}}')
    if case == "read-to-end":
        server.script(good)
        list(provider(server).chat_stream([user("hi")]))
    elif case == "api-error":
        server.script(json_answer(400, "Bad Request", '{"error": {"message": "no", "type": "invalid_request_error"}}'))
        with pytest.raises(errors.APIError) as caught:
            provider(server).chat_stream([user("hi")])
        assert caught.value.status == 400, f"got {caught.value!r}, want APIError 400"
    elif case == "closed-early":
        server.script(good)
        stream = provider(server).chat_stream([user("hi")])
        held = hold_references(stream)  # noqa: F841 - only an explicit close may end the connection
        stream.close()
    else:
        server.script(error if case == "retried-after-503" else _keep_alive_cut(), good)
        deltas = list(retry.with_retry(provider(server), retry.RetryPolicy(sleep=sleeps)).chat_stream([user("hi")]))
        assert texts(deltas) == ["ok"], f"{case}: got {[neutral(d) for d in deltas]}, want the retried answer 'ok'"
        assert open_at_sleep == [0], (
            f"{case}: connections the server still saw open while the wrapper waited to retry: {open_at_sleep}, want [0] "
            "(close the failed attempt before waiting)"
        )
    assert server.wait_all_closed(1.0), (
        f"{case}: the server still sees {server.open_connections} open connection(s) 1 s later: the client must close "
        "the connection itself, not leave it to the garbage collector"
    )


@pytest.mark.parametrize(
    "wrapped, read_first",
    [(False, True), (True, True), (False, False)],
    ids=["direct", "with_retry", "closed_before_reading"],
)
def test_cancel_stops_stream(fake, sleeps, wrapped, read_first):
    """Closing the stream closes the connection at once, even before anything was read from it."""
    fake.script(fake_model.slow(interval=0.01, duration=3.0))
    p = retrying(fake, sleeps) if wrapped else provider(fake)
    stream = p.chat_stream([user("count slowly")])
    if read_first:
        first = next((d for d in stream if isinstance(d, types.TextDelta)), None)
        assert first is not None, "the slow stream ended before its first text delta"
    assert not fake.client_gone.is_set(), "the server saw the client leave before the test closed the stream"
    held = hold_references(stream)  # noqa: F841 - kept alive on purpose until the end of the test
    stream.close()
    gone = fake.client_gone.wait(0.5)
    assert gone, "after stream.close() the fake model still had a connected client 0.5 s later: close the response AND the connection"
    left = next(stream, None)
    assert left is None, f"a closed stream must yield nothing more: got {left!r}"


def test_faketool_tool_call(fake):
    """Against the fake model's default: a call sent in two halves is rebuilt, its result goes back, the answer follows."""
    p = provider(fake)
    tools = [types.ToolDef("get_weather", "Current weather in a city", WEATHER_TOOL_SCHEMA)]
    convo = [user("What is the weather in Paris?")]
    deltas = list(p.chat_stream(convo, tools))
    got = [neutral(d) for d in deltas]
    fragments = [d.fragment for d in deltas if isinstance(d, types.ToolCallArgsDelta)]
    assert len(fragments) == 2, f"argument fragments: got {fragments}, want the two halves the fake sends (all: {got})"
    message, usage = types.collect(deltas)
    assert len(message.tool_calls) == 1, f"tool calls: got {message.tool_calls!r}, want one get_weather call"
    call = message.tool_calls[0]
    assert call.name == "get_weather", f"tool name: got {call.name!r}, want 'get_weather'"
    assert call.arguments == "".join(fragments), f"arguments: got {call.arguments!r}, want the fragments joined {''.join(fragments)!r}"
    assert json.loads(call.arguments) == {"city": "Paris"}, f"arguments: got {call.arguments!r}, want JSON {{'city': 'Paris'}}"
    assert call.id in fake.issued_call_ids, f"call id: got {call.id!r}, want the id the fake sent ({sorted(fake.issued_call_ids)})"
    assert usage.input_tokens > 0 and usage.output_tokens > 0, (
        f"usage: got {usage!r}; the fake (like OpenAI) sends usage only when stream_options.include_usage is true"
    )

    convo += [message, types.Message(types.Role.TOOL, '{"temp_c": 18}', tool_call_id=call.id)]
    answer, _ = types.collect(p.chat_stream(convo, tools))
    assert answer.tool_calls == [], f"second turn: got tool calls {answer.tool_calls!r}, want a text answer (was the tool_call_id sent?)"
    assert '{"temp_c": 18}' in answer.content, f"second turn: got text {answer.content!r}, want it to quote the tool result"

    wire = fake.requests[-1].body["messages"]
    want_call = {"id": call.id, "type": "function", "function": {"name": "get_weather", "arguments": call.arguments}}
    assert wire[-2].get("tool_calls") == [want_call], f"assistant message sent back: got {wire[-2]!r}, want tool_calls [{want_call!r}]"
    want_result = {"role": "tool", "content": '{"temp_c": 18}', "tool_call_id": call.id}
    assert wire[-1] == want_result, f"tool message sent back: got {wire[-1]!r}, want {want_result!r}"


class ScriptedStream:
    """An inner provider's stream: yields the given deltas, raises an exception given among them, records close()."""

    def __init__(self, items: list) -> None:
        self._items = list(items)
        self.closed = False

    def __iter__(self):
        return self

    def __next__(self):
        if self.closed or not self._items:
            raise StopIteration
        item = self._items.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self) -> None:
        self.closed = True


class ScriptedProvider:
    """A Provider without a network: each chat_stream call returns the next ScriptedStream, and notes
    how many of the streams it gave before were still open (not closed) at that call."""

    def __init__(self, *streams: ScriptedStream) -> None:
        self.streams = list(streams)
        self.calls = 0
        self.given: list[ScriptedStream] = []
        self.open_at_call: list[int] = []

    def open_streams(self) -> int:
        return sum(not stream.closed for stream in self.given)

    def chat_stream(self, messages, tools=(), options=None):  # noqa: ANN001, ANN201
        self.calls += 1
        self.open_at_call.append(self.open_streams())
        self.given.append(self.streams.pop(0))
        return self.given[-1]


def test_retry_wraps_any_provider(sleeps):
    """with_retry over any Provider: an exception raised while reading the inner stream reaches the caller
    and closes that stream; an inner stream that just ends is passed on as it is; an exception inside the
    caller's own loop, once closing() closes the outer stream, closes the inner one too; a failed
    attempt's stream is closed before the wait and the next attempt."""
    policy = retry.RetryPolicy(sleep=sleeps)
    broken = ScriptedStream([types.UsageDelta(1, 0), RuntimeError("provider bug")])
    try:
        retry.with_retry(ScriptedProvider(broken), policy).chat_stream([user("hi")])
    except RuntimeError:
        pass
    else:
        pytest.fail("an inner stream raising RuntimeError before content: no exception, want it raised to the caller", pytrace=False)
    assert broken.closed, "an inner stream that raised while the wrapper read it: never closed, want close() called"

    short = ScriptedStream([types.UsageDelta(2, 0)])
    deltas = list(retry.with_retry(ScriptedProvider(short), policy).chat_stream([user("hi")]))
    assert deltas == [types.UsageDelta(2, 0)], f"an inner stream that ends after a usage delta: got {deltas!r}, want [UsageDelta(2, 0)] as it came"
    assert short.closed, "an inner stream read to its end through the wrapper: never closed, want close() called"

    inner = ScriptedStream([types.TextDelta("a"), types.TextDelta("b"), types.DoneDelta("stop")])
    outer = retry.with_retry(ScriptedProvider(inner), policy).chat_stream([user("hi")])
    try:
        with contextlib.closing(outer) as stream:
            for delta in stream:
                raise KeyError(f"the caller failed on {delta!r}")
    except KeyError:
        pass
    assert inner.closed, "the caller's loop raised inside `with closing(stream)`: the inner stream was not closed"
    assert list(sleeps) == [], f"sleeps: got {list(sleeps)}, want [] (nothing here is retryable)"

    # a failed attempt's stream is closed before the wait and before the next attempt, so that two
    # attempts' connections are never open at once
    failed = ScriptedStream([types.UsageDelta(3, 0), types.ErrorDelta(errors.StreamCutError())])
    answer = [types.TextDelta("ok"), types.DoneDelta("stop")]
    scripted = ScriptedProvider(failed, ScriptedStream(list(answer)))
    open_at_sleep = []
    sleeps.on_sleep = lambda seconds: open_at_sleep.append(scripted.open_streams())
    deltas = list(retry.with_retry(scripted, policy).chat_stream([user("hi")]))
    assert deltas == answer, f"a failed attempt, then a good one: got {deltas!r}, want {answer!r}"
    assert open_at_sleep == [0] and scripted.open_at_call == [0, 0], (
        f"inner streams still open at the wait {open_at_sleep} and at each attempt {scripted.open_at_call}, want [0] and [0, 0] "
        "(close the failed attempt's stream, then wait, then try again)"
    )


def retryable_table() -> list:
    """(label, error, want): built when the test runs, so a broken errors module fails only this test."""
    return [
        *[(f"APIError({s})", errors.APIError(s), True) for s in (408, 429, 500, 502, 503, 504)],
        *[(f"APIError({s})", errors.APIError(s), False) for s in (400, 401, 403, 404, 407, 409, 410, 422, 499, 501, 505, 599)],
        ("StreamCutError()", errors.StreamCutError(), True),
        ("StreamError(server_error)", errors.StreamError(type="server_error"), True),
        ("StreamError(invalid_request_error)", errors.StreamError(type="invalid_request_error"), False),
        ("ProviderError(invalid JSON)", errors.ProviderError("invalid JSON in stream event: '{'"), False),
        ("ConnectionRefusedError", ConnectionRefusedError(111, "Connection refused"), True),
        ("ConnectionResetError", ConnectionResetError(104, "Connection reset by peer"), True),
        ("ConnectionAbortedError", ConnectionAbortedError(103, "Software caused connection abort"), True),
        ("BrokenPipeError (a ConnectionError)", BrokenPipeError(32, "Broken pipe"), True),
        ("StreamError(type='')", errors.StreamError(), False),
        ("http.client.RemoteDisconnected", http.client.RemoteDisconnected("Remote end closed connection"), True),
        ("http.client.IncompleteRead", http.client.IncompleteRead(b"", 10), True),
        ("TimeoutError", TimeoutError("timed out"), True),
        ("ValueError", ValueError("no"), False),
        ("types.IncompleteStreamError", types.IncompleteStreamError(), False),
    ]


def test_retryable_table():
    """Which failures could succeed if the same request were sent again."""
    wrong = []
    for label, error, want in retryable_table():
        got = retry.retryable(error)
        if got is not want:
            wrong.append(f"retryable({label}): got {got!r}, want {want!r}")
    assert not wrong, "\n".join(wrong)


def test_accumulator_orders_calls_by_index():
    """Tool calls come out sorted by index (0, 1, 2, 10), whatever order they ended in."""
    calls = {i: types.ToolCall(f"call_{i}", f"tool_{i}", f'{{"n": {i}}}') for i in (10, 2, 0, 1)}
    acc = types.Accumulator()
    for i in (10, 2, 0, 1):
        acc.add(types.ToolCallStartDelta(i, calls[i].id, calls[i].name))
    for i in (2, 10, 1, 0):
        acc.add(types.ToolCallEndDelta(i, calls[i]))
    acc.add(types.DoneDelta("tool_calls"))
    got = [c.id for c in acc.message().tool_calls]
    want = ["call_0", "call_1", "call_2", "call_10"]
    assert got == want, f"tool calls ended in index order 2, 10, 1, 0: got ids {got}, want {want} (index order)"


def test_accumulator_message():
    """message(): text joined, calls as their end deltas carry them ('{}' for no arguments), a fresh Message
    each time; usage() the last UsageDelta; finish_reason '' until the DoneDelta."""
    acc = types.Accumulator()
    assert acc.finish_reason == "", f"finish_reason before any delta: got {acc.finish_reason!r}, want ''"
    assert acc.usage() == types.Usage(), f"usage() before any delta: got {acc.usage()!r}, want Usage(0, 0)"
    for d in [
        types.TextDelta("Let me "),
        types.ToolCallStartDelta(0, "call_0", "list_files"),
        types.ToolCallStartDelta(1, "call_1", "read_file"),
        types.TextDelta("check."),
        types.ToolCallArgsDelta(1, '{"path": "a"}'),
        types.UsageDelta(3, 1),
        types.ToolCallEndDelta(0, types.ToolCall("call_0", "list_files", "")),
        types.UsageDelta(12, 7),
    ]:
        acc.add(d)
    assert acc.finish_reason == "", f"finish_reason before the DoneDelta: got {acc.finish_reason!r}, want ''"
    acc.add(types.DoneDelta("length"))
    message = acc.message()
    got = message_form(message)
    want = {"role": "assistant", "content": "Let me check.", "tool_calls": [{"id": "call_0", "name": "list_files", "arguments": "{}"}]}
    assert got == want, (
        f"message(): got {got}, want {want} (text joined; a call counts once its end delta came; no arguments is '{{}}')"
    )
    assert acc.usage() == types.Usage(12, 7), f"usage(): got {acc.usage()!r}, want Usage(12, 7) (the last UsageDelta)"
    assert acc.finish_reason == "length", f"finish_reason: got {acc.finish_reason!r}, want 'length'"

    # what the caller does with the message it got must not change the accumulator
    message.tool_calls.append(types.ToolCall("call_x", "rm", "{}"))
    message.content += " (edited)"
    again = message_form(acc.message())
    assert again == want, f"message() after the caller changed the previous result: got {again}, want {want} again"


def test_accumulator_errors():
    """error is None after a DoneDelta, the ErrorDelta's error after one, IncompleteStreamError with neither;
    collect() returns the message and usage, or raises that error."""
    opened = [types.ToolCallStartDelta(0, "call_0", "get_weather"), types.ToolCallArgsDelta(0, '{"city":')]
    acc = types.Accumulator()
    for d in opened:
        acc.add(d)
    assert isinstance(acc.error, types.IncompleteStreamError), f"error with no DoneDelta yet: got {acc.error!r}, want IncompleteStreamError"
    assert acc.message().tool_calls == [], f"a call with no end delta: got {acc.message().tool_calls!r}, want no tool call"
    try:
        types.collect(opened)
    except types.IncompleteStreamError:
        pass
    else:
        pytest.fail("collect() of a stream with no done or error delta: returned, want IncompleteStreamError raised", pytrace=False)

    cut = errors.StreamCutError()
    acc = types.Accumulator()
    for d in [types.TextDelta("Hel"), types.ErrorDelta(cut)]:
        acc.add(d)
    assert acc.error is cut, f"error after an ErrorDelta: got {acc.error!r}, want that delta's error"
    try:
        types.collect([types.TextDelta("Hel"), types.ErrorDelta(cut)])
    except errors.StreamCutError as raised:
        assert raised is cut, f"collect() raised {raised!r}, want the ErrorDelta's own error object"
    else:
        pytest.fail("collect() of a stream ending in ErrorDelta(StreamCutError()): returned, want the error raised", pytrace=False)

    acc = types.Accumulator()
    acc.add(types.DoneDelta("stop"))
    assert acc.error is None, f"error after a DoneDelta: got {acc.error!r}, want None"
    message, usage = types.collect([types.TextDelta("hi"), types.DoneDelta("stop")])
    assert (message.content, usage) == ("hi", types.Usage()), f"collect: got {(message.content, usage)!r}, want ('hi', Usage(0, 0))"


def test_call_context_default_tainted():
    """With no call context set (in this thread, or in a new one), current_call_context() is tainted."""
    got = types.current_call_context()
    assert got == types.CallContext(tainted=True), f"no call context set: got {got!r}, want CallContext(tainted=True) (err on the cautious side)"
    seen: list = []
    with types.call_context(types.CallContext(tainted=False, iter=1)):
        t = threading.Thread(target=lambda: seen.append(types.current_call_context()))
        t.start()
        t.join()
    assert seen == [types.CallContext(tainted=True)], (
        f"a new thread (a thread starts with no context): got {seen!r}, want [CallContext(tainted=True)]"
    )


def test_call_context_restores():
    """call_context(cc) sets cc for its block and gives it back; afterwards the previous context is back,
    nested or not, and also when the block raises (the exception goes on to the caller)."""
    outer = types.CallContext(tainted=False, iter=1)
    inner = types.CallContext(tainted=True, iter=2)
    with types.call_context(outer) as given:
        assert given is outer, f"with call_context(outer) as x: got x={given!r}, want outer itself"
        assert types.current_call_context() == outer, f"inside call_context(outer): got {types.current_call_context()!r}, want {outer!r}"
        with types.call_context(inner):
            assert types.current_call_context() == inner, f"nested: got {types.current_call_context()!r}, want {inner!r}"
        assert types.current_call_context() == outer, f"after the nested block: got {types.current_call_context()!r}, want {outer!r} restored"
        try:
            with types.call_context(inner):
                raise KeyError("a tool failed")
        except KeyError:
            pass
        else:
            pytest.fail("an exception raised inside call_context(...) did not reach the code around the block", pytrace=False)
        assert types.current_call_context() == outer, (
            f"after a nested block that raised: got {types.current_call_context()!r}, want {outer!r} restored"
        )
    assert types.current_call_context() == types.CallContext(tainted=True), (
        f"after every block: got {types.current_call_context()!r}, want the default again (tainted=True)"
    )


def test_step_names():
    """llm_step and tool_step build "llm/3" and "tool/3/0/get_weather"; step_tool_name reads the tool name
    back (names may contain "/"), and gives None for anything else (non-ASCII digits included)."""
    names = [(types.llm_step(3), "llm/3"), (types.tool_step(3, 0, "get_weather"), "tool/3/0/get_weather"), (types.llm_step(0), "llm/0")]
    for got, want in names:
        assert got == want, f"step name: got {got!r}, want {want!r}"
    parse = {
        "tool/3/0/get_weather": "get_weather",
        "tool/12/4/fs/read_file": "fs/read_file",
        types.tool_step(7, 2, "mcp/github/open_pr"): "mcp/github/open_pr",
        "llm/3": None,
        "tool/3/0": None,
        "tool/3/0/": None,
        "tool/x/0/get_weather": None,
        "tool/3/y/get_weather": None,
        "tool/3.5/0/get_weather": None,
        "tool/-1/0/get_weather": None,
        "tool//0/get_weather": None,
        "tool/\u0663/0/get_weather": None,  # ARABIC-INDIC DIGIT THREE: a digit, but not an ASCII one
        "tool/3/\u00b2/get_weather": None,  # SUPERSCRIPT TWO
        "tools/3/0/get_weather": None,
        "": None,
    }
    for step, want in parse.items():
        got = types.step_tool_name(step)
        assert got == want, f"step_tool_name({step!r}): got {got!r}, want {want!r}"


def test_content_and_verdicts():
    """is_content is true for text and the three tool-call deltas only; Verdict's constructors; Direct runs the step."""
    content = [
        (types.TextDelta("x"), True),
        (types.ToolCallStartDelta(0, "c", "n"), True),
        (types.ToolCallArgsDelta(0, "{"), True),
        (types.ToolCallEndDelta(0, types.ToolCall("c", "n")), True),
        (types.UsageDelta(1, 1), False),
        (types.DoneDelta("stop"), False),
        (types.ErrorDelta(errors.StreamCutError()), False),
    ]
    for delta, want in content:
        got = types.is_content(delta)
        assert got is want, f"is_content({delta!r}): got {got!r}, want {want!r}"

    verdicts = [
        (types.Verdict.allow(), types.Verdict(types.Decision.ALLOW)),
        (types.Verdict.deny("writes outside the sandbox"), types.Verdict(types.Decision.DENY, reason="writes outside the sandbox")),
        (types.Verdict.need_approval("ask-42"), types.Verdict(types.Decision.NEED_APPROVAL, marker="ask-42")),
    ]
    for got, want in verdicts:
        assert got == want, f"Verdict constructor: got {got!r}, want {want!r}"
    assert [d.value for d in types.Decision] == ["allow", "deny", "need_approval"], "Decision values: want allow, deny, need_approval"

    ran = types.Direct().run_step("tool/1/0/get_weather", types.StepKind.TOOL, lambda: b'{"temp_c": 18}')
    assert ran == b'{"temp_c": 18}', f"Direct().run_step: got {ran!r}, want what fn returned"


# (case id, body, expected events as (data, event type) pairs, or (data, event type, id) where the id matters)
SSE_EDGES = [
    ("lone_cr_line_ends", b"data: a\rdata: b\r\rdata: c\r\r", [("a\nb", "message"), ("c", "message")]),
    ("crlf_split_across_reads", b"data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", [("a\nb", "message"), ("c", "message")]),
    ("mixed_line_ends", b"data: a\ndata: b\r\ndata: c\r\r\ndata: d\n\n", [("a\nb\nc", "message"), ("d", "message")]),
    ("leading_bom_stripped", b"\xef\xbb\xbfdata: a\n\n", [("a", "message")]),
    ("only_one_bom_stripped", b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n", [("b", "message")]),
    ("line_without_colon_is_field_with_empty_value", b"data\ndata\ndata: x\n\n", [("\n\nx", "message")]),
    ("blank_lines_without_data_dispatch_nothing", b"\n\n\r\n\rid: 5\n\nretry: 100\n\ndata: a\n\n", [("a", "message")]),
    ("event_only_block_not_dispatched", b"event: ping\n\ndata: a\n\n", [("a", "message")]),
    ("event_type_applies_to_one_event", b"event: update\ndata: x\n\ndata: y\n\n", [("x", "update"), ("y", "message")]),
    ("one_leading_space_removed", b"data:x\n\ndata:  y\n\ndata: z \n\n", [("x", "message"), (" y", "message"), ("z ", "message")]),
    ("value_split_at_first_colon", b"data: a:b: c\n\n", [("a:b: c", "message")]),
    ("comments", b": ping\ndata: a\n: in the middle\ndata: b\n\n:\n\n", [("a\nb", "message")]),
    ("unknown_fields_ignored", b"foo: bar\nData: no\nretry: 10\ndata: a\nDATA: b\n\n", [("a", "message")]),
    ("pending_event_at_eof_discarded", b"data: a\n\ndata: [DONE]", [("a", "message")]),
    ("pending_event_after_one_line_end_discarded", b"data: a\n\ndata: b\n", [("a", "message")]),
    ("utf8_split_across_reads", "data: héllo — €5 𝄞👋\n\n".encode("utf-8"), [("héllo — €5 𝄞👋", "message")]),
    # a stray byte, a character cut short before a letter, and one cut short before the line end
    ("invalid_utf8_replaced", b"data: a\xffb\xe2\x82c\xf0\x9f\x98\n\n", [("a\ufffdb\ufffdc\ufffd", "message")]),
    ("id_kept", b"id: 7\ndata: a\n\n", [("a", "message", "7")]),
    # an id alone dispatches nothing but is the last event id from then on, until an empty id resets it
    (
        "id_from_earlier_block_kept_until_reset",
        b"id: 7\n\ndata: x\n\ndata: y\n\nid\ndata: z\n\ndata: w\n\n",
        [("x", "message", "7"), ("y", "message", "7"), ("z", "message", ""), ("w", "message", "")],
    ),
    ("id_with_nul_ignored", b"id: 1\x002\ndata: a\n\n", [("a", "message", "")]),
    ("unicode_line_separators_are_not_line_ends", "data: a\u2028b\u2029c\u0085d\x0be\x0cf\x1cg\n\n".encode("utf-8"), [("a\u2028b\u2029c\u0085d\x0be\x0cf\x1cg", "message")]),
]
EDGE_READ_SIZES = (1, 2, 3, 5, 8, 65536)


@pytest.mark.parametrize("body, want", [pytest.param(b, w, id=name) for name, b, w in SSE_EDGES])
def test_sse_spec_edges(body, want, chunked):
    """The WHATWG event-stream rules, at read sizes that split lines, line ends and characters."""
    with_id = any(len(w) == 3 for w in want)
    for size in EDGE_READ_SIZES:
        try:
            events = list(sse.EventReader(chunked(body, size), read_size=size))
        except UnicodeDecodeError as error:
            pytest.fail(f"body {body!r} read {size} byte(s) at a time: got {error!r}, want U+FFFD for undecodable bytes")
        got = [(e.data, e.event, e.id) if with_id else (e.data, e.event) for e in events]
        assert got == want, f"body {body!r} read {size} byte(s) at a time: got events {got!r}, want {want!r}"


def spec_events(body: bytes) -> list[tuple[str, str]]:
    """What the WHATWG rules give for a whole body: the (data, event type) pairs, by a plain reading of
    section 2.2 (lines cut at CRLF, LF or CR; one BOM dropped; U+FFFD for undecodable bytes)."""
    text = body.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = re.split("\r\n|\r|\n", text)[:-1]  # the last piece has no line end: never part of an event
    events, data, kind = [], [], ""
    for line in lines:
        if not line:
            if data:
                events.append(("\n".join(data), kind or "message"))
            data, kind = [], ""
            continue
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            kind = value
    return events


def events_read(pieces: list[bytes]) -> list[tuple[str, str]]:
    return [(e.data, e.event) for e in sse.EventReader(PiecesReader(pieces), read_size=65536)]


def cut(body: bytes, points: tuple[int, ...]) -> list[bytes]:
    bounds = [0, *points, len(body)]
    return [body[a:b] for a, b in zip(bounds, bounds[1:])]


LINE_ENDS = ("\n", "\r\n", "\r")


def line_end_bodies() -> list[bytes]:
    """Two events, with every combination of LF, CRLF and CR after a data line and as the blank line."""
    return [
        f"data: a{x}data: b{y}{z}data: c{w}{w}".encode()
        for x, y, z, w in itertools.product(LINE_ENDS, LINE_ENDS, LINE_ENDS, LINE_ENDS[:2])
    ]


def test_sse_line_ends_every_split():
    """Every mix of LF, CRLF and CR in data lines and blank lines gives the events the rules give, whatever
    the split into reads: at every point, one byte alone in its read, two bytes alone, and one byte per read."""
    failures = []
    for body in line_end_bodies():
        want = spec_events(body)
        n = len(body)
        ways = [(i,) for i in range(1, n)]  # two reads, split at i
        ways += [(i, i + 1) for i in range(1, n - 1)]  # the byte at i alone in the middle read
        ways += [(i, i + 2) for i in range(1, n - 2)]  # the two bytes at i alone
        ways.append(tuple(range(1, n)))  # one byte per read
        for points in ways:
            got = events_read(cut(body, points))
            if got != want:
                reads = cut(body, points)
                failures.append(f"body {body!r} read as {reads if len(reads) < 6 else f'{len(reads)} one-byte reads'}: got {got}, want {want}")
                break
        if len(failures) >= 3:
            break
    assert not failures, "\n".join(failures)


PROPERTY_LINES = ("data: a", "data:b ", "data", "data:  \u00e9\u2028x", "data: \U0001f44b:", "event: x", "event", ": c", ":", "", "", "id: 1", "retry: 5")
PROPERTY_TAILS = ("", "data: pending", "\r", "data: \u20ac")


def random_case(rng: random.Random) -> tuple[list[str], tuple[int, ...]]:
    """A body as (lines each with its line end, plus a last unterminated piece) and read boundaries."""
    lines = [rng.choice(PROPERTY_LINES) + rng.choice(LINE_ENDS) for _ in range(rng.randrange(13))]
    if rng.random() < 0.2:
        lines.insert(0, "\ufeff")
    lines.append(rng.choice(PROPERTY_TAILS))
    data = "".join(lines).encode("utf-8")
    if len(data) < 2:
        return lines, ()
    mode = rng.random()
    if mode < 0.1:  # one byte per read
        return lines, tuple(range(1, len(data)))
    # reads that end or begin right at a CR or LF, where line ends are split: all such points, or some
    near = sorted({i + d for i, byte in enumerate(data) if byte in b"\r\n" for d in (0, 1) if 0 < i + d < len(data)})
    if mode < 0.4 and near:
        return lines, tuple(near)
    if mode < 0.7 and near:
        return lines, tuple(sorted(rng.sample(near, min(len(near), rng.randrange(1, 9)))))
    return lines, tuple(sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randrange(9)))))


def property_failure(lines: list[str], points: tuple[int, ...]) -> str:
    """Why this case breaks the property, or ''."""
    data = "".join(lines).encode("utf-8")
    whole = events_read([data])
    want = spec_events(data)
    if whole != want:
        return f"body {data!r} read whole: got {whole}, want {want}"
    got = events_read(cut(data, points))
    if got != whole:
        return f"body {data!r} read as {cut(data, points)}: got {got}, want {whole} (as when read whole)"
    return ""


def shrink(lines: list[str], points: tuple[int, ...]) -> tuple[list[str], tuple[int, ...]]:
    """A smaller case that still fails: drop lines and read boundaries while the failure remains."""
    progress = True
    while progress:
        progress = False
        for k in range(len(lines)):
            fewer = lines[:k] + lines[k + 1 :]
            size = len("".join(fewer).encode("utf-8"))
            kept = tuple(p for p in points if p < size)
            if fewer and property_failure(fewer, kept):
                lines, points, progress = fewer, kept, True
                break
        for k in range(len(points)):
            fewer_points = points[:k] + points[k + 1 :]
            if property_failure(lines, fewer_points):
                points, progress = fewer_points, True
                break
    return lines, points


def test_sse_any_reads_same_events():
    """A property, checked on 400 generated cases (always the same ones, from a fixed seed): for any stream
    of data, event, id, comment and blank lines with any line ends, cut into reads anywhere, the events
    are those of reading it whole, and those the rules give. A failure is shown shrunk to a small case."""
    rng = random.Random(20261130)
    for _ in range(400):
        lines, points = random_case(rng)
        if property_failure(lines, points):
            small_lines, small_points = shrink(lines, points)
            pytest.fail(property_failure(small_lines, small_points), pytrace=False)


class ShortReads:
    """A stream whose read(n) gives between 1 and n bytes of `data` (lengths drawn from `rng`), then b""
    at the end, or raises `failure` there; every n asked for is kept in `asked`."""

    def __init__(self, data: bytes, rng: random.Random, failure: BaseException | None = None) -> None:
        self._data, self._rng, self._failure = data, rng, failure
        self._at = 0
        self.asked: list = []

    def read(self, n: int = -1) -> bytes:
        self.asked.append(n)
        if self._at >= len(self._data):
            if self._failure is not None:
                raise self._failure
            return b""
        size = self._rng.randint(1, n) if isinstance(n, int) and n > 0 else len(self._data)
        piece = self._data[self._at : self._at + size]
        self._at += len(piece)
        return piece


def test_sse_reader_contract():
    """What a stream's read(n) may do: return fewer bytes than asked for, any number of times; raise
    after data. The events a failure interrupts come out before it, then the failure itself, as it
    came; and every read asks for at least one byte (read(0) returns nothing, read(-1) waits for the
    whole body)."""
    rng = random.Random(15)
    bodies = {
        "the 'Hello' stream": STREAMS["hand_example"]["body"].encode("utf-8"),
        "CRLF, CR and comments": b"data: a\r\ndata: b\r\n\r\n: ping\n\nid: 7\nevent: x\ndata: c\rdata: [DONE]\r\r",
    }
    wrong = []
    for name, body in bodies.items():
        for size in (1, 5, 64):
            reader = ShortReads(body, rng)
            got = [(e.data, e.event) for e in sse.EventReader(reader, read_size=size)]
            if got != spec_events(body):
                wrong.append(f"{name}, reads of 1 to {size} byte(s): got events {got}, want {spec_events(body)}")
            if any(not isinstance(n, int) or n < 1 for n in reader.asked):
                wrong.append(f"{name}, read_size {size}: read() was asked for {sorted(set(reader.asked), key=repr)} byte(s), want at least 1 each time")

    failing = b"data: one\n\nevent: two\ndata: 2\n\ndata: thr"
    for size in (1, 7, 64):
        failure = ConnectionResetError(104, "Connection reset by peer")
        got, raised = [], None
        try:
            for event in sse.EventReader(ShortReads(failing, rng, failure), read_size=size):
                got.append((event.data, event.event))
        except Exception as error:  # noqa: BLE001 - which exception came is the point
            raised = error
        if got != [("one", "message"), ("2", "two")] or raised is not failure:
            wrong.append(f"two events and part of a third in reads of 1 to {size} byte(s), then a connection reset: got events {got} "
                         f"and then {raised!r}; want the two events, then the reader's own ConnectionResetError raised as it came")
    assert not wrong, "\n".join(wrong)


def test_sse_linear_time():
    """How the work grows with the size of one event read in small pieces, measured two ways.

    First the memory each read takes up beyond what the reader held before it (tracemalloc's peak),
    summed over one event and divided by its size, at 16 KiB and at 4 times that, read 256 bytes at a
    time. The figure counts bytes, so it is the same on every machine and under any load: a linear
    reader's stays the same (about 2.2 for the reference), one that copies or joins its unfinished
    text on every read has it grow 4 times (from about 34 to 130).

    Then this thread's CPU time per event at 16 KiB and at 32 times that, read 512 bytes at a time,
    each the best of several runs taken in turns, for the work that allocates nothing, such as
    searching the unfinished text again from its start. A linear reader takes about 32 times as long
    for 32 times the bytes; a quadratic one, up to 1000 times. CPU time leaves out the time other
    processes held the core, and load slows every size alike: the ratio holds on a busy machine."""
    verdict = copy_verdict(16 << 10, 64 << 10, read=256)
    assert not verdict, verdict
    read = 512
    sizes = [16 << 10, 512 << 10]  # the verdict compares the two ends
    best = [float("inf")] * len(sizes)
    for round_ in range(5):
        for i, size in enumerate(sizes):
            if round_ and best[i] > 0.005:
                continue  # a long run is measured precisely enough once
            took, problem = timed_events(size, read)
            if problem:
                pytest.fail(f"an event of {size} bytes then [DONE], read {read} bytes at a time: {problem} "
                            "(test_sse_large_event checks the text in detail)", pytrace=False)
            best[i] = min(best[i], took)
    verdict = growth_verdict(sizes, best, read)
    assert not verdict, verdict


def copy_verdict(small: int, large: int, read: int) -> str:
    """'' when the memory the reader takes up per byte of event stays the same from `small` to
    `large`, else a message that says how it grew and why. A reader that copies its unfinished text
    on every read takes up about reads / 2 bytes per byte, which grows with the event; growth beyond
    half the size ratio fails (2x here, against 1x for a linear reader and 4x for a copying one)."""
    per_byte = [min(bytes_taken(size, read) for _ in range(3)) / size for size in (small, large)]
    scale = large / small
    if per_byte[1] <= per_byte[0] * scale / 2:
        return ""
    return (f"one event read {read} bytes at a time: the memory each read took up beyond what the reader "
            f"already held, summed, was {per_byte[0]:.1f} bytes per byte of event at {small >> 10} KiB and "
            f"{per_byte[1]:.1f} at {large >> 10} KiB ({per_byte[1] / per_byte[0]:.1f}x for {scale:.0f}x the size; "
            f"a linear reader's stays the same). Each read copies the unfinished text again: keep its "
            f"pieces in a list, join them once when the event ends, and look for line ends only in the "
            f"text the read brought")


def bytes_taken(size: int, read: int) -> int:
    """Reads one event of `size` x's, `read` bytes per read, under tracemalloc; gives the memory each
    step between two reads took up at its peak beyond what was in use when it began, summed over
    the event. Other threads' allocations can only add to it: the caller takes the least of a few."""
    pieces = MeteredReader(itertools.chain([b"data: "], itertools.repeat(b"x" * read, size // read), [b"\n\n"]))
    events = iter(sse.EventReader(pieces, read_size=read))
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        pieces.step()
        first = next(events, None)
        pieces.step()
    finally:
        if not tracing:
            tracemalloc.stop()
    if first is None or len(first.data) != size:
        pytest.fail(f"an event of {size} bytes read {read} bytes at a time came back with "
                    f"{len(first.data) if first else 0} characters (test_sse_large_event checks the text in detail)",
                    pytrace=False)
    return pieces.taken


class MeteredReader(PiecesReader):
    """A PiecesReader that adds up, from one read to the next, how far tracemalloc's peak rose above
    the memory in use when the step began: what the reader allocated in the step and still held at
    its busiest moment, including what it threw away before the next read."""

    def __init__(self, pieces) -> None:
        super().__init__(pieces)
        self.taken = 0
        self._in_use = 0

    def step(self, counted: bool = True) -> None:
        in_use, peak = tracemalloc.get_traced_memory()
        if counted and self._in_use:
            self.taken += peak - self._in_use
        self._in_use = in_use
        tracemalloc.reset_peak()

    def read(self, n: int = -1) -> bytes:
        self.step()
        data = super().read(n)
        self.step(counted=False)  # the piece handed over is the reader's input, not its work
        return data


def growth_verdict(sizes: list[int], times: list[float], read: int) -> str:
    """'' when the times grow in proportion to the sizes, else a message that says how they grew and
    what makes the work quadratic. Time grows as size ** k: k is 1 for a linear reader (a little less
    here: every event has a fixed cost too) and 2 for a quadratic one (a little less at these sizes:
    its linear part still counts at the smallest). Growth beyond k = 1.6 (256x) fails, with room on
    both sides: on a machine loaded with twenty processes and more, a linear reader's largest events
    fall out of the caches the others share and it grew up to about 125x (measured), while the
    documented quadratic mutants grow 1300x and more."""
    scale = sizes[-1] / sizes[0]
    limit = scale ** 1.6
    growth = times[-1] / max(times[0], 1e-9)
    if growth <= limit:
        return ""
    each = ", ".join(f"{size >> 10} KiB: {took * 1000:.3f} ms" for size, took in zip(sizes, times))
    return (f"one event read {read} bytes at a time, CPU time per event by size (best of 5): {each}; {scale:.0f}x the size "
            f"took {growth:.1f}x the time: a linear reader takes about {scale:.0f}x, a quadratic one up to {scale * scale:.0f}x, "
            f"and more than {limit:.0f}x (size ** 1.6) fails. The work of each read grows with the unfinished text: keep its pieces "
            "in a list, join them once when the event ends, and look for line ends only in the text the read brought")


def timed_events(size: int, read: int) -> tuple[float, str]:
    """Reads events of `size` x's ("data: " + x's + "\n\ndata: [DONE]\n\n"), `read` bytes per read, each
    with a fresh EventReader, until a millisecond of this thread's CPU time has passed or 1 MiB was
    read; gives the CPU time per event, or what went wrong. The cyclic garbage collector is off while
    it runs: its work would depend on what came before."""
    block = b"x" * read
    readers = [
        iter(sse.EventReader(PiecesReader(itertools.chain([b"data: "], itertools.repeat(block, size // read), [b"\n\ndata: [DONE]\n\n"])),
                             read_size=read))
        for _ in range(max(1, (1 << 20) // size))
    ]
    firsts = []
    collecting = gc.isenabled()
    gc.disable()
    try:
        started = time.thread_time()
        took = 0.0
        while len(firsts) < len(readers) and took < 0.001:
            firsts.append(next(readers[len(firsts)], None))
            took = time.thread_time() - started
    finally:
        if collecting:
            gc.enable()
    for first, events in zip(firsts, readers):
        if first is None or len(first.data) != size:
            return took, f"the event came back with {len(first.data) if first else 0} characters, want {size}"
        after = next(events, None)
        if after is None or after.data != "[DONE]":
            return took, f"the event after it: got {after!r}, want [DONE]"
    return took / len(firsts), ""


def small_events(n: int) -> tuple[bytes, int]:
    """About n bytes of events of 100 bytes or less, and how many there are."""
    out, count = bytearray(), 0
    while len(out) < n:
        out += b'data: {"n": %d, "pad": "%s"}\n\n' % (count, b"-" * min(70, n - len(out)))
        count += 1
    return bytes(out), count


def test_sse_large_event(chunked):
    """Every character of a large event arrives, whatever the reads: 1 MiB read 64 KiB at a time, 256
    KiB read 4 KiB at a time, 4 KiB read one byte at a time, an event of 300 lines, and an event of a short line and a long rest after
    earlier events of lengths from 0 to 72 KiB. The sizes are such that a reader doing quadratic work
    still finishes quickly: whether it is fast enough is test_sse_linear_time's question. Every check
    is made and each failure reported."""
    unit = "0123456789abcdef" * 15 + "é€👋 "
    big = (unit * (1024 * 1024 // len(unit.encode("utf-8")) + 1))[: 1024 * 1024]
    lines = [f"{i:04d}{big[:996]}" for i in range(40)]
    cases = [
        ("a comment, a 1 MiB event, [DONE]", b": big\ndata: " + big.encode("utf-8") + b"\n\ndata: [DONE]\n\n", 0, [big, "[DONE]"], (65536,)),
        ("a 256 KiB event", b"data: " + big[: 256 << 10].encode("utf-8") + b"\n\n", 0, [big[: 256 << 10]], (4096,)),
        ("a 4 KiB event with CRLF line ends", b"data: " + big[: 4 << 10].encode("utf-8") + b"\r\n\r\n", 0, [big[: 4 << 10]], (1,)),
        ("an event of 300 data lines of 1000 characters",
         ("data: " + "\ndata: ".join([big[:1000]] * 300) + "\n\ndata: y\n\n").encode("utf-8"), 0, ["\n".join([big[:1000]] * 300), "y"], (4096,)),
    ]
    # a short first line, then a long rest of the same event, after earlier events
    shapes = [
        ("40 more data lines of 1000 characters", "\ndata: " + "\ndata: ".join(lines), "first\n" + "\n".join(lines)),
        ("40 comment lines of 1000 characters, then a last data line", "\n:" + "\n:".join(lines) + "\ndata: last", "first\nlast"),
        ("one 40000-character data line", "\ndata: " + big[:40000], "first\n" + big[:40000]),
    ]
    for what, rest, want in shapes:
        for earlier in range(0, 72 << 10, 8191):
            prefix, count = small_events(earlier)
            body = prefix + ("data: first" + rest + "\n\ndata: after\n\n").encode("utf-8")
            cases.append((f"{len(prefix)} bytes of small events, then an event of a data line 'first' and {what}", body, count, [want, "after"], (4096,)))
    failures = []
    for what, body, skip, want, sizes in cases:
        for size in sizes:
            got = [e.data for e in sse.EventReader(chunked(body, size), read_size=size)][skip:]
            if got != want:
                failures.append(f"{what}, read {size} byte(s) at a time: {text_difference(got, want)}")
                break
    assert not failures, "\n".join(failures)


def text_difference(got: list[str], want: list[str]) -> str:
    """Where the events read first differ from the events wanted, briefly."""
    if len(got) != len(want):
        return f"got {len(got)} event(s), want {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            at = next((k for k, (a, b) in enumerate(zip(g, w)) if a != b), min(len(g), len(w)))
            return f"event {i + 1}: got {len(g)} characters, want {len(w)}; from character {at} they differ: got {g[max(0, at - 20):at + 40]!r}, want {w[max(0, at - 20):at + 40]!r}"
    return "equal"


def test_retry_after_capped(fake, sleeps):
    """A Retry-After longer than policy.max_retry_after is not waited for: the error comes back at once."""
    fake.script(fake_model.http_error(429, retry_after=3600), fake_model.text("an hour later"))
    with pytest.raises(errors.APIError) as caught:
        retrying(fake, sleeps, max_attempts=3, max_retry_after=60.0).chat_stream([user("hi")])
    assert caught.value.retry_after == 3600.0, f"APIError.retry_after: got {caught.value.retry_after!r}, want 3600.0"
    assert list(sleeps) == [], f"sleeps: got {list(sleeps)}, want [] (an hour is more than max_retry_after=60)"
    assert requests_made(fake) == 1, f"requests: got {requests_made(fake)}, want 1"

    fake.clear()
    fake.script(fake_model.http_error(429, retry_after=5), fake_model.text("ok"))
    message, _ = types.collect(retrying(fake, sleeps, max_attempts=3, max_retry_after=5.0).chat_stream([user("hi")]))
    assert list(sleeps) == [5.0], f"Retry-After: 5 with max_retry_after=5.0: got sleeps {list(sleeps)}, want [5.0] (at the cap is still honored)"
    assert message.content == "ok", f"text after the retry: got {message.content!r}, want 'ok'"

    # just above the cap, and the default cap (60 s)
    for header, policy in (("5.5", {"max_retry_after": 5.0}), ("61", {}), ("3600", {})):
        fake.clear()
        sleeps.clear()
        fake.script(fake_model.http_error(503, retry_after=header), fake_model.text("too late"))
        with pytest.raises(errors.APIError):
            retry.with_retry(provider(fake), retry.RetryPolicy(sleep=sleeps, **policy)).chat_stream([user("hi")])
        where = f"Retry-After: {header} with RetryPolicy({', '.join(f'{k}={v}' for k, v in policy.items())})"
        assert list(sleeps) == [] and requests_made(fake) == 1, (
            f"{where}: got sleeps {list(sleeps)} and {requests_made(fake)} requests, want no sleep and 1 request"
        )
