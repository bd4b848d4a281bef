"""The chat-completions API: ``POST /v1/chat/completions``, streamed or not, checked like the real one.

A request is validated against the contract and the conversation rules first (a rejected request does not
consume a scripted reply: the real model never saw it). Then the next scripted reply is played; with
none scripted the fake plays "faketool":

* when the last message is a tool message, it answers with text quoting the tool's result;
* otherwise, when the request offers tools, it calls one: ``tool_name`` with ``tool_arguments`` when that
  tool is offered (by default ``get_weather`` with ``{"city": "Paris"}``), else the first tool offered
  with ``{}``, the arguments split in two halves across two chunks;
* a request without tools gets a short text answer.
"""

from __future__ import annotations

import json
import time
from typing import Any

from course.fake_model import _contract as contract, _conversation as conversation, _playback as playback
from course.fake_model._errors import APIError, error_object
from course.fake_model._replies import Reply, ScriptedCall, SlowStream, Turn
from course.fake_model._state import MODEL_NAME, State
from course.fake_model._wire import Request, Responder

PATH = "/v1/chat/completions"
CREATED = 1_700_000_000  # a fixed "created" timestamp: answers are byte-for-byte reproducible
FINGERPRINT = "fp_course_fake"


def create(request: Request, responder: Responder, state: State) -> None:
    body = contract.request_body("CreateChatCompletionRequest", request.body)
    conversation.check(body["messages"])
    reply = state.next_reply() or faketool(body, state)
    play(reply, _Answer(body, state), responder, state)


ROUTES = {("POST", PATH): create}


def play(reply: Reply, answer: _Answer, responder: Responder, state: State) -> None:
    """Send one scripted reply as the answer to a chat-completions request."""
    if playback.send_any_api(reply, responder):
        return
    if isinstance(reply, SlowStream):
        _only_streamed(answer, "slow")
        _slow(reply, answer, responder)
    elif isinstance(reply, Turn):
        if reply.reasoning:
            raise APIError(400, "The fake model's scripted reply (a reasoning item) exists only in the Responses API.")
        state.note_calls(c.id for c in reply.calls)
        if answer.stream:
            _stream_turn(reply, answer, responder)
        else:
            _complete_turn(reply, answer, responder)
    else:  # pragma: no cover - every Reply subclass is handled above
        raise TypeError(f"the chat API cannot play {type(reply).__name__}")


class _Answer:
    """What every chunk of one answer shares: its id, model, and whether usage was asked for."""

    def __init__(self, body: dict[str, Any], state: State) -> None:
        self.body = body
        self.stream = body.get("stream") is True
        options = body.get("stream_options")
        self.include_usage = self.stream and isinstance(options, dict) and options.get("include_usage") is True
        self.model = body.get("model") or MODEL_NAME
        self.id = state.new_completion_id()

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        obj: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": self.model,
            "system_fingerprint": FINGERPRINT,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }
        if self.include_usage:  # the real API then puts "usage": null on every chunk but the last
            obj["usage"] = None
        return playback.sse_event(playback.compact(obj))

    def usage_chunk(self, usage: dict[str, int]) -> bytes:
        obj = {"id": self.id, "object": "chat.completion.chunk", "created": CREATED, "model": self.model,
               "system_fingerprint": FINGERPRINT, "choices": [], "usage": usage}
        return playback.sse_event(playback.compact(obj))

    def usage(self, turn: Turn) -> dict[str, int]:
        if turn.usage is not None:
            prompt, completion = turn.usage
        else:  # a deterministic estimate: about four characters a token
            prompt = max(1, len(json.dumps(self.body.get("messages", []))) // 4)
            completion = max(1, len(turn.text) + len(turn.refusal) + sum(len(c.fragments()) for c in turn.calls))
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


DONE = playback.sse_event("[DONE]")


def turn_events(turn: Turn, answer: _Answer) -> list[bytes]:
    """Every event of the turn's complete stream, before the end marker."""
    no_text = (bool(turn.calls) or bool(turn.refusal)) and not turn.text
    events = [answer.chunk({"role": "assistant", "content": None if no_text else "", "refusal": None})]
    events += [answer.chunk({"content": piece}) for piece in turn.text]
    events += [answer.chunk({"refusal": piece}) for piece in turn.refusal]
    for index, call in enumerate(turn.calls):
        head = {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        events.append(answer.chunk({"tool_calls": [head]}))
        events += [answer.chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}) for part in call.fragments()]
    events.append(answer.chunk({}, finish_reason=turn.finish))
    if answer.include_usage:
        events.append(answer.usage_chunk(answer.usage(turn)))
    return events


def _stream_turn(turn: Turn, answer: _Answer, responder: Responder) -> None:
    events = turn_events(turn, answer)
    kept = events if turn.cut_after is None else events[: turn.cut_after]
    if turn.ending == "error":
        tail = playback.sse_event(playback.compact({"error": turn.error or error_object("The server had an error.", "server_error")}))
    elif turn.ending in ("cut_mid_chunk", "truncate") and len(kept) < len(events):
        tail = events[len(kept)]
    else:
        tail = DONE
    playback.send_stream(responder, kept, turn.delivery, ending=turn.ending, tail=tail)


def _complete_turn(turn: Turn, answer: _Answer, responder: Responder) -> None:
    if turn.stream_only:
        _only_streamed(answer, "an ending of 'eof'" if turn.ending == "eof" else "an in-band error event")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(turn.text) if turn.text or not (turn.calls or turn.refusal) else None,
                               "refusal": "".join(turn.refusal) if turn.refusal else None}
    if turn.calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": "".join(c.fragments())}} for c in turn.calls
        ]
    completion = {
        "id": answer.id,
        "object": "chat.completion",
        "created": CREATED,
        "model": answer.model,
        "system_fingerprint": FINGERPRINT,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": turn.finish}],
        "usage": answer.usage(turn),
    }
    fault = turn.ending if turn.ending in ("reset", "cut_mid_chunk", "truncate") else ""
    playback.send_body(responder, 200, _json(completion), "application/json", turn.delivery, fault=fault)


def _slow(reply: SlowStream, answer: _Answer, responder: Responder) -> None:
    if not responder.pause(reply.delivery.head_stall) or not responder.start(200, playback.SSE_HEADERS):
        return
    if not responder.write(answer.chunk({"role": "assistant", "content": "", "refusal": None})):
        return
    deadline = time.monotonic() + reply.duration
    n = 0
    while time.monotonic() < deadline:
        if not responder.write(answer.chunk({"content": f"tick{n} "})):
            return
        n += 1
        if responder.client_gone(reply.interval):
            return
    if responder.write(answer.chunk({}, finish_reason="length")) and responder.write(DONE):
        responder.end()


def _only_streamed(answer: _Answer, what: str) -> None:
    if not answer.stream:
        raise APIError(400, f"The fake model's scripted reply ({what}) exists only in a stream: send \"stream\": true.", param="stream")


def faketool(body: dict[str, Any], state: State) -> Turn:
    """The unscripted answer (see the module docstring)."""
    messages = body["messages"]
    last = messages[-1]
    if last.get("role") == "tool":
        result = last.get("content")
        return Turn(text=("The tool", " returned: ", result if isinstance(result, str) else json.dumps(result)))
    tools = [t["function"]["name"] for t in body.get("tools") or ()]
    if not tools:  # a model asks for tools only when it was offered some
        return Turn(text=("Hello", " from the", " course fake model."))
    name, arguments = (state.tool_name, state.tool_arguments) if state.tool_name in tools else (tools[0], "{}")
    half = len(arguments) // 2
    return Turn(calls=(ScriptedCall(state.new_call_id(), name, (arguments[:half], arguments[half:])),))


def _json(obj: Any) -> bytes:
    return json.dumps(obj).encode("utf-8")
