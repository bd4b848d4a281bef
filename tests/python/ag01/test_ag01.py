"""The ag01 catalog: a streaming client for OpenAI-compatible chat completions, and its retry wrapper.

Tests run in catalog order. The recorded streams live in fixtures/ag01/streams.json (the harness names
the folder in COURSE_FIXTURES); network tests talk
only to the course fake model on 127.0.0.1; retry waits go to a recorder, never to time.sleep.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
from pathlib import Path
from types import BuiltinFunctionType, FunctionType, GeneratorType, ModuleType

import pytest

from agent import types
from agent.provider import errors, openai, retry, sse
from course import fake_model

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

    # The same answer beside a second one (choice index 1: text, a tool call, its own finish reason).
    # We ask for one answer, so the decoder follows choice 0 and the four deltas stay the same.
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

    # An event the decoder cannot read ends the stream with an error, never silently.
    for data in ("{not json", "[1, 2]", '{"choices": 5}'):
        got, finished = sse.Decoder().decode(data)
        kinds = [type(d).__name__ for d in got]
        assert kinds == ["ErrorDelta"] and finished is True, (
            f"Decoder().decode({data!r}): got {got!r}, finished={finished!r}; want one ErrorDelta and finished=True"
        )
        assert isinstance(got[0].error, errors.ProviderError), (
            f"Decoder().decode({data!r}): the ErrorDelta holds {got[0].error!r}, want a ProviderError"
        )


RECORDED_CASES = [
    pytest.param(stream, size, id=f"{stream['name']}-{size}")
    for stream in STREAMS["streams"]
    for size in (*READ_SIZES, "http")
]


@pytest.mark.parametrize("stream, size", RECORDED_CASES)
def test_recorded_streams(stream, size, chunked, request):
    """Six recorded streams give the same deltas at read sizes 1, 7 and 65536, and through the provider."""
    name, body = stream["name"], stream["body"].encode("utf-8")
    want = stream["expected"]
    if size == "http":
        fm = request.getfixturevalue("fake")
        fm.script(fake_model.raw(body, piece=7))
        deltas = list(provider(fm).chat_stream([user("hi")]))
        how = "through OpenAIProvider (the fake model serving the recorded body)"
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


def test_request_body(fake):
    """The wire request: path, bearer key, headers, model, stream with usage, tools, assistant calls, tool results."""
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
        types.ToolDef("get_weather", "Current weather in a city", WEATHER_TOOL_SCHEMA),
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

    def check_body(got: object, where: str) -> None:
        assert isinstance(got, dict), f"{where}: got {got!r}, want a JSON object"
        assert sorted(got) == sorted(want), f"{where}: got keys {sorted(got)}, want {sorted(want)}"
        for key in ("model", "stream", "stream_options", "tools", "temperature", "max_tokens"):
            assert got[key] == want[key], f"{where}: {key!r}: got {got[key]!r}, want {want[key]!r}"
        got_messages = got["messages"]
        assert len(got_messages) == len(want_messages), f"{where}: got {len(got_messages)} messages, want {len(want_messages)}"
        for i, (g, w) in enumerate(zip(got_messages, want_messages)):
            assert g == w, f"{where}: message {i} ({w['role']}): got {g!r}, want {w!r}"

    built = openai.request_body("test-model", messages, tools, options)
    check_body(json.loads(json.dumps(built)), "request_body()")
    minimal = json.loads(json.dumps(openai.request_body("m", [user("hi")])))
    want_minimal = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True, "stream_options": {"include_usage": True}}
    assert minimal == want_minimal, f"request_body() with no tools and no options: got {minimal!r}, want {want_minimal!r}"

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
    check_body(req.body, "the body on the wire")

    list(provider(fake, api_key="").chat_stream([user("hi")]))
    sent = fake.requests[-1].headers.get("authorization")
    assert sent is None, f"with no api_key: got an Authorization header {sent!r}, want none"


def test_api_error_not_retried(fake, sleeps):
    """A 400 is raised once as APIError with the body's type, code and message (or its text when it is not
    JSON): one request, no wait. A Retry-After that is not a finite number >= 0 gives retry_after None."""
    fake.script(
        fake_model.http_error(400, "invalid_request_error", "bad model", code="model_not_found"),
        fake_model.text("this answer must never be asked for"),
    )
    with pytest.raises(errors.APIError) as caught:
        retrying(fake, sleeps, max_attempts=5).chat_stream([user("hi")])
    err = caught.value
    got = (err.status, err.type, err.code, err.message, err.retry_after)
    want = (400, "invalid_request_error", "model_not_found", "bad model", None)
    assert got == want, f"APIError (status, type, code, message, retry_after): got {got!r}, want {want!r}"
    assert "400" in str(err) and "bad model" in str(err), f"str(APIError): got {str(err)!r}, want the status and the message in it"
    assert requests_made(fake) == 1, f"requests: got {requests_made(fake)}, want 1 (a 400 fails the same way every time)"
    assert list(sleeps) == [], f"sleeps: got {list(sleeps)}, want []"

    fake.clear()
    page = "<html>\n<head><title>400 Bad Request</title></head>\n<body>nginx</body>\n</html>"
    fake.script(
        fake_model.raw(f"\n{page}\n\n", status=400, content_type="text/html"),
        fake_model.text("this answer must never be asked for"),
    )
    with pytest.raises(errors.APIError) as caught:
        retrying(fake, sleeps, max_attempts=5).chat_stream([user("hi")])
    err = caught.value
    got = (err.status, err.type, err.code, err.message)
    want = (400, "", "", page)
    assert got == want, (
        f"a 400 with a proxy's HTML page as its body, APIError (status, type, code, message): got {got!r}, "
        f"want {want!r} (no JSON error object: the body's text, stripped, is the message)"
    )
    assert requests_made(fake) == 1, f"a 400 with an HTML body: got {requests_made(fake)} requests, want 1"
    assert list(sleeps) == [], f"a 400 with an HTML body: got sleeps {list(sleeps)}, want []"

    # Retry-After is delta-seconds, a finite number >= 0; anything else (the HTTP-date form included) is no hint
    fake.clear()
    for header in ("-1", "inf", "nan", "Wed, 21 Oct 2015 07:28:00 GMT"):
        fake.script(fake_model.http_error(503, retry_after=header))
        with pytest.raises(errors.APIError) as caught:
            provider(fake).chat_stream([user("hi")])
        got = caught.value.retry_after
        assert got is None, f"APIError.retry_after for 'Retry-After: {header}': got {got!r}, want None"


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

    fake.clear()
    sleeps.clear()
    fake.script(fake_model.http_error(503), fake_model.text("too late"))
    with pytest.raises(errors.APIError):
        retrying(fake, sleeps, max_attempts=1).chat_stream([user("hi")])
    assert requests_made(fake) == 1, f"max_attempts=1: got {requests_made(fake)} requests, want 1"
    assert list(sleeps) == [], f"max_attempts=1: got sleeps {list(sleeps)}, want []"


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(fake_model.reset_after(), id="reset-after-role-chunk"),
        pytest.param(fake_model.error_event("server_error"), id="server_error-event"),
        pytest.param(fake_model.cut_mid_chunk(), id="closed-mid-chunk-after-role-chunk"),
        pytest.param(fake_model.truncated(), id="event-cut-short-after-role-chunk"),
    ],
)
def test_retry_before_first_content(fake, sleeps, failure):
    """A failure after the role chunk but before any content is retried; 'Hello' arrives exactly once."""
    fake.script(failure, fake_model.text("Hel", "lo"))
    deltas = list(retrying(fake, sleeps).chat_stream([user("hi")]))
    got = [neutral(d) for d in deltas]
    assert texts(deltas) == ["Hel", "lo"], f"text deltas: got {texts(deltas)}, want ['Hel', 'lo'] once (all deltas: {got})"
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


def retryable_table() -> list:
    """(label, error, want): built when the test runs, so a broken errors module fails only this test."""
    return [
        *[(f"APIError({s})", errors.APIError(s), True) for s in (408, 429, 500, 502, 503, 504)],
        *[(f"APIError({s})", errors.APIError(s), False) for s in (400, 401, 403, 404, 409, 422, 501)],
        ("StreamCutError()", errors.StreamCutError(), True),
        ("StreamError(server_error)", errors.StreamError(type="server_error"), True),
        ("StreamError(invalid_request_error)", errors.StreamError(type="invalid_request_error"), False),
        ("ProviderError(invalid JSON)", errors.ProviderError("invalid JSON in stream event: '{'"), False),
        ("ConnectionRefusedError", ConnectionRefusedError(111, "Connection refused"), True),
        ("ConnectionResetError", ConnectionResetError(104, "Connection reset by peer"), True),
        ("ConnectionAbortedError", ConnectionAbortedError(103, "Software caused connection abort"), True),
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
    """Calls come out sorted by index whatever order they ended in; no arguments is '{}'; no end delta is an error."""
    c0 = types.ToolCall("call_0", "get_weather", '{"city":"Paris"}')
    c1 = types.ToolCall("call_1", "list_files", "")
    c2 = types.ToolCall("call_2", "get_time", '{"tz":"UTC"}')
    acc = types.Accumulator()
    assert acc.finish_reason == "", f"finish_reason before any delta: got {acc.finish_reason!r}, want ''"
    for d in [
        types.ToolCallStartDelta(2, c2.id, c2.name),
        types.ToolCallStartDelta(0, c0.id, c0.name),
        types.ToolCallStartDelta(1, c1.id, c1.name),
        types.ToolCallArgsDelta(2, c2.arguments),
        types.TextDelta("Let me "),
        types.ToolCallArgsDelta(0, c0.arguments),
        types.TextDelta("check."),
        types.ToolCallEndDelta(2, c2),
        types.ToolCallEndDelta(1, c1),
        types.ToolCallEndDelta(0, c0),
        types.UsageDelta(3, 1),
        types.UsageDelta(12, 7),
    ]:
        acc.add(d)
    assert acc.finish_reason == "", f"finish_reason before the DoneDelta: got {acc.finish_reason!r}, want ''"
    assert isinstance(acc.error, types.IncompleteStreamError), (
        f"error with no DoneDelta yet: got {acc.error!r}, want IncompleteStreamError"
    )
    acc.add(types.DoneDelta("tool_calls"))
    message = acc.message()
    got_ids = [c.id for c in message.tool_calls]
    assert got_ids == ["call_0", "call_1", "call_2"], f"tool calls: got ids {got_ids}, want ['call_0', 'call_1', 'call_2'] (index order)"
    got_args = [c.arguments for c in message.tool_calls]
    want_args = ['{"city":"Paris"}', "{}", '{"tz":"UTC"}']
    assert got_args == want_args, f"arguments: got {got_args}, want {want_args} (no arguments is '{{}}')"
    assert role_value(message.role) == "assistant", f"role: got {message.role!r}, want assistant"
    assert message.content == "Let me check.", f"content: got {message.content!r}, want 'Let me check.'"
    assert acc.usage() == types.Usage(12, 7), f"usage: got {acc.usage()!r}, want Usage(12, 7) (the last UsageDelta)"
    assert acc.finish_reason == "tool_calls", f"finish_reason: got {acc.finish_reason!r}, want 'tool_calls'"
    assert acc.error is None, f"error after DoneDelta: got {acc.error!r}, want None"

    opened = [types.ToolCallStartDelta(0, "call_0", "get_weather"), types.ToolCallArgsDelta(0, '{"city":')]
    acc = types.Accumulator()
    for d in opened:
        acc.add(d)
    assert acc.message().tool_calls == [], f"a call with no end delta: got {acc.message().tool_calls!r}, want no tool call"
    with pytest.raises(types.IncompleteStreamError):
        types.collect(opened)

    cut = errors.StreamCutError()
    acc = types.Accumulator()
    for d in [types.TextDelta("Hel"), types.ErrorDelta(cut)]:
        acc.add(d)
    assert acc.error is cut, f"error after an ErrorDelta: got {acc.error!r}, want that delta's error"
    with pytest.raises(errors.StreamCutError):
        types.collect([types.TextDelta("Hel"), types.ErrorDelta(cut)])

    message, usage = types.collect([types.TextDelta("hi"), types.DoneDelta("stop")])
    assert (message.content, usage) == ("hi", types.Usage()), f"collect: got {(message.content, usage)!r}, want ('hi', Usage(0, 0))"


def test_seams():
    """Call context (tainted without one), step names, is_content, Verdict and Direct."""
    assert types.current_call_context().tainted is True, (
        f"no call context set: got {types.current_call_context()!r}, want tainted=True (err on the cautious side)"
    )
    outer = types.CallContext(tainted=False, iter=1)
    inner = types.CallContext(tainted=True, iter=2)
    with types.call_context(outer):
        assert types.current_call_context() == outer, f"inside call_context(outer): got {types.current_call_context()!r}, want {outer!r}"
        with types.call_context(inner):
            assert types.current_call_context() == inner, f"nested: got {types.current_call_context()!r}, want {inner!r}"
        assert types.current_call_context() == outer, f"after the nested block: got {types.current_call_context()!r}, want {outer!r} restored"
        seen: list = []
        t = threading.Thread(target=lambda: seen.append(types.current_call_context()))
        t.start()
        t.join()
        assert seen[0].tainted is True, f"another thread (no context set there): got {seen[0]!r}, want tainted=True"
    assert types.current_call_context().tainted is True, (
        f"after every block: got {types.current_call_context()!r}, want the default again (tainted=True)"
    )

    names = [(types.llm_step(3), "llm/3"), (types.tool_step(3, 0, "get_weather"), "tool/3/0/get_weather")]
    for got, want in names:
        assert got == want, f"step name: got {got!r}, want {want!r}"
    parse = {
        "tool/3/0/get_weather": "get_weather",
        "tool/12/4/fs/read_file": "fs/read_file",
        types.tool_step(7, 2, "mcp/github/open_pr"): "mcp/github/open_pr",
        "llm/3": None,
        "tool/3/0": None,
        "tool/x/0/get_weather": None,
        "tool/3/y/get_weather": None,
        "tool/3.5/0/get_weather": None,
        "tools/3/0/get_weather": None,
        "": None,
    }
    for step, want in parse.items():
        got = types.step_tool_name(step)
        assert got == want, f"step_tool_name({step!r}): got {got!r}, want {want!r}"

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


def test_sse_large_event(chunked):
    """One 1 MiB event read 4096 bytes at a time, and a 4 KiB event read 1 byte at a time, arrive intact."""
    unit = "0123456789abcdef" * 15 + "é€👋 "
    big = (unit * (1024 * 1024 // len(unit.encode("utf-8")) + 1))[: 1024 * 1024]
    body = b": big\n" + b"data: " + big.encode("utf-8") + b"\n\ndata: [DONE]\n\n"
    events = [e.data for e in sse.EventReader(chunked(body, 4096), read_size=4096)]
    assert len(events) == 2, f"a 1 MiB event read 4096 bytes at a time: got {len(events)} events, want 2 (the event and [DONE])"
    assert events[0] == big, (
        f"a 1 MiB event read 4096 bytes at a time: got {len(events[0])} characters, want {len(big)} "
        f"(first difference at {next((i for i, (a, b) in enumerate(zip(events[0], big)) if a != b), min(len(events[0]), len(big)))})"
    )
    assert events[1] == "[DONE]", f"the event after the big one: got {events[1][:40]!r}, want '[DONE]'"

    medium = big[: 4 * 1024]
    body = b"data: " + medium.encode("utf-8") + b"\r\n\r\n"
    events = [e.data for e in sse.EventReader(chunked(body, 1), read_size=1)]
    assert events == [medium], (
        f"a 4 KiB event read 1 byte at a time: got {len(events)} events of lengths {[len(e) for e in events]}, "
        f"want 1 of length {len(medium)}"
    )


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
