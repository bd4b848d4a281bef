"""The Responses API: ``POST /v1/responses``, streamed or not, checked like the real one.

A request is validated against the contract (``CreateResponseRequest``) and the input rules a schema
cannot express (``x-course-conversation-rules``, the ``responses_*`` ones): a ``function_call_output``
answers an earlier ``function_call`` by ``call_id``, every call is answered, an input item carries no id
of a stored item when ``store`` is false, and no ``previous_response_id`` can be found (the fake keeps
nothing). A rejected request does not consume a scripted reply.

Then the next scripted reply is played; with none scripted the fake plays "faketool" as the chat API
does: a text quoting the last function_call_output, else a call of ``tool_name`` (or of the first tool
offered, with ``{}``), else a short text. A :class:`~course.fake_model._replies.Turn` becomes the real
stream's events (``response.created`` ... ``response.completed``; ``finish_reason`` ``"length"`` or
``"content_filter"`` ends with ``response.incomplete``; ending ``"eof"`` drops the terminal event, ``"error"`` sends an ``error`` event,
nested as live traffic nests it unless ``flat_error``; ``refusal`` parts become a refusal part, ``reasoning`` parts a reasoning
item's summary; usage carries its details objects; ``function_call_arguments.done`` carries no ``name``, as live traffic);
an :class:`~course.fake_model._replies.EventsReply` plays authored events as they are.
"""

from __future__ import annotations

import json
from typing import Any

from course.fake_model import _contract as contract, _playback as playback
from course.fake_model._chat import CREATED
from course.fake_model._errors import APIError, error_object
from course.fake_model._replies import EventsReply, Reply, ScriptedCall, Turn
from course.fake_model._state import MODEL_NAME, State
from course.fake_model._wire import Request, Responder

PATH = "/v1/responses"
_TERMINAL = ("response.completed", "response.incomplete", "response.failed")
_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}  # a Turn's finish_reason


def create(request: Request, responder: Responder, state: State) -> None:
    body = contract.request_body("CreateResponseRequest", request.body)
    check_input(body)
    reply = state.next_reply() or faketool(body, state)
    play(reply, body, responder, state)


ROUTES = {("POST", PATH): create}


def check_input(body: dict[str, Any]) -> None:
    """Raise the APIError the real API answers for the first broken input rule; the body passed the schema."""
    if body.get("previous_response_id"):
        raise _broken("responses_previous_not_found", response_id=body["previous_response_id"])
    items = body["input"] if isinstance(body["input"], list) else []
    if body.get("store") is False:
        stored = next((i["id"] for i in items if "id" in i), None)
        if stored is not None:
            raise _broken("responses_item_not_stored", item_id=stored)
    asked: list[str] = []
    answered: set[str] = set()
    for item in items:
        if item.get("type") == "function_call":
            asked.append(item["call_id"])
        elif item.get("type") == "function_call_output":
            if item["call_id"] not in asked:
                raise _broken("responses_output_answers_call", call_id=item["call_id"])
            answered.add(item["call_id"])
    unanswered = [c for c in asked if c not in answered]
    if unanswered:
        raise _broken("responses_call_answered", call_id=unanswered[0])


def _broken(rule_id: str, **values: Any) -> APIError:
    rule = contract.conversation_rule(rule_id)
    return APIError(rule["status"], " ".join(rule["message"].split()).format(**values), param=rule["param"].format(**values))


def faketool(body: dict[str, Any], state: State) -> Turn:
    """The unscripted answer (see the module docstring)."""
    items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
    last = items[-1] if items else {}
    if last.get("type") == "function_call_output":
        return Turn(text=("The tool", " returned: ", last["output"]))
    tools = [t["name"] for t in body.get("tools") or ()]
    if not tools:
        return Turn(text=("Hello", " from the", " course fake model."))
    name, arguments = (state.tool_name, state.tool_arguments) if state.tool_name in tools else (tools[0], "{}")
    half = len(arguments) // 2
    return Turn(calls=(ScriptedCall(state.new_call_id(), name, (arguments[:half], arguments[half:])),))


def play(reply: Reply, body: dict[str, Any], responder: Responder, state: State) -> None:
    """Send one scripted reply as the answer to a Responses request."""
    stream = body.get("stream") is True
    if playback.send_any_api(reply, responder):
        return
    if isinstance(reply, EventsReply):
        _play_events(list(reply.events), reply, stream, responder)
    elif isinstance(reply, Turn):
        state.note_calls(c.id for c in reply.calls)
        _play_turn(reply, _Builder(body, state), stream, responder)
    else:
        raise APIError(400, f"The fake model's scripted reply ({reply.kind}) exists only for chat completions.")


def _play_events(events: list[dict[str, Any]], reply: EventsReply | Turn, stream: bool, responder: Responder,
                 tail: bytes = b"") -> None:
    if not stream:
        final = next((e["response"] for e in reversed(events) if isinstance(e.get("response"), dict)
                      and e["type"] in _TERMINAL), None)
        if final is None or reply.ending not in ("done", "eof"):
            _only_streamed("events without a whole terminal response")
        playback.send_body(responder, 200, _json(final), "application/json", reply.delivery)
        return
    framed = [playback.sse_event(playback.compact(e), event=e["type"]) for e in events]
    ending = "eof" if reply.ending in ("done", "eof") else reply.ending
    if ending in ("cut_mid_chunk", "truncate") and not tail:
        framed, tail = framed[:-1], framed[-1] if framed else b""
    playback.send_stream(responder, framed, reply.delivery, ending=ending, tail=tail)


def _play_turn(turn: Turn, builder: _Builder, stream: bool, responder: Responder) -> None:
    events = builder.events(turn)
    if not stream:
        if turn.stream_only or turn.cut_after is not None:
            _only_streamed("an ending of 'eof'" if turn.ending == "eof" else f"an ending of {turn.ending!r}")
        fault = turn.ending if turn.ending in ("reset", "cut_mid_chunk", "truncate") else ""
        playback.send_body(responder, 200, _json(events[-1]["response"]), "application/json", turn.delivery, fault=fault)
        return
    if turn.ending == "eof":
        events = events[:-1]  # no terminal event: the cut this API's clients must notice
    kept = events if turn.cut_after is None else events[: turn.cut_after]
    if turn.ending == "error":
        kept = kept + [_error_event(turn, len(kept))]
    framed = [playback.sse_event(playback.compact(e), event=e["type"]) for e in kept]
    ending = {"done": "eof", "error": "eof"}.get(turn.ending, turn.ending)
    tail = b""
    if ending in ("cut_mid_chunk", "truncate"):
        rest = events[len(kept):]
        tail = playback.sse_event(playback.compact(rest[0]), event=rest[0]["type"]) if rest else b""
        if not tail:
            framed, tail = framed[:-1], framed[-1]
    playback.send_stream(responder, framed, turn.delivery, ending=ending, tail=tail)


class _Builder:
    """The events of one response: ids, sequence numbers and the response object they share."""

    def __init__(self, body: dict[str, Any], state: State) -> None:
        self.body = body
        self.model = body.get("model") or MODEL_NAME
        self.id = state.new_completion_id("resp_fake")
        self.sequence = 0

    def response(self, status: str, output: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        obj = {"id": self.id, "object": "response", "created_at": CREATED, "status": status, "model": self.model,
               "output": output, "error": None, "incomplete_details": None, "usage": None,
               "store": self.body.get("store") is not False, "max_output_tokens": self.body.get("max_output_tokens"),
               "parallel_tool_calls": True, "tool_choice": "auto", "tools": self.body.get("tools") or []}
        obj.update(extra)
        return obj

    def event(self, type_: str, **fields: Any) -> dict[str, Any]:
        event = {"type": type_, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event

    def events(self, turn: Turn) -> list[dict[str, Any]]:
        out = [self.event("response.created", response=self.response("in_progress", [])),
               self.event("response.in_progress", response=self.response("in_progress", []))]
        output: list[dict[str, Any]] = []
        if turn.reasoning:
            out += self._reasoning(turn.reasoning, output)
        if turn.text or turn.refusal or not turn.calls:
            out += self._message(turn, output)
        for call in turn.calls:
            out += self._call(call, output)
        usage = self._usage(turn)
        if turn.finish_reason in _INCOMPLETE:
            final = self.response("incomplete", output, usage=usage, incomplete_details={"reason": _INCOMPLETE[turn.finish_reason]})
            out.append(self.event("response.incomplete", response=final))
        else:
            out.append(self.event("response.completed", response=self.response("completed", output, usage=usage)))
        return out

    def _item_id(self, prefix: str, output: list[dict[str, Any]]) -> str:
        return f"{prefix}_{self.id.removeprefix('resp_')}_{len(output)}"

    def _reasoning(self, parts: tuple[str, ...], output: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A reasoning item whose summary is the given parts, each streamed in one delta."""
        index, item_id = len(output), self._item_id("rs", output)
        base = {"id": item_id, "type": "reasoning"}
        out = [self.event("response.output_item.added", output_index=index, item={**base, "summary": []})]
        summary = []
        for n, text in enumerate(parts):
            at = {"item_id": item_id, "output_index": index, "summary_index": n}
            out.append(self.event("response.reasoning_summary_part.added", **at, part={"type": "summary_text", "text": ""}))
            out.append(self.event("response.reasoning_summary_text.delta", **at, delta=text))
            out.append(self.event("response.reasoning_summary_text.done", **at, text=text))
            summary.append({"type": "summary_text", "text": text})
            out.append(self.event("response.reasoning_summary_part.done", **at, part=summary[-1]))
        item = {**base, "summary": summary}
        out.append(self.event("response.output_item.done", output_index=index, item=item))
        output.append(item)
        return out

    def _message(self, turn: Turn, output: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The assistant message: an output_text part (unless the turn only refuses), then a refusal part."""
        index, item_id = len(output), self._item_id("msg", output)
        base = {"id": item_id, "type": "message", "role": "assistant"}
        out = [self.event("response.output_item.added", output_index=index, item={**base, "status": "in_progress", "content": []})]
        parts = []
        kinds = ([("output_text", turn.text)] if turn.text or not turn.refusal else []) + ([("refusal", turn.refusal)] if turn.refusal else [])
        for content_index, (kind, pieces) in enumerate(kinds):
            at = {"item_id": item_id, "output_index": index, "content_index": content_index}
            whole = "".join(pieces)
            if kind == "output_text":
                out.append(self.event("response.content_part.added", **at, part={"type": "output_text", "text": "", "annotations": []}))
                out += [self.event("response.output_text.delta", **at, delta=piece, logprobs=[]) for piece in pieces]
                out.append(self.event("response.output_text.done", **at, text=whole, logprobs=[]))
                parts.append({"type": "output_text", "text": whole, "annotations": []})
            else:
                out.append(self.event("response.content_part.added", **at, part={"type": "refusal", "refusal": ""}))
                out += [self.event("response.refusal.delta", **at, delta=piece) for piece in pieces]
                out.append(self.event("response.refusal.done", **at, refusal=whole))
                parts.append({"type": "refusal", "refusal": whole})
            out.append(self.event("response.content_part.done", **at, part=parts[-1]))
        item = {**base, "status": "completed", "content": parts}
        out.append(self.event("response.output_item.done", output_index=index, item=item))
        output.append(item)
        return out

    def _call(self, call: ScriptedCall, output: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A function call; its done event carries no name, as live traffic sends it."""
        index, item_id = len(output), self._item_id("fc", output)
        fragments = call.fragments()
        arguments = "".join(fragments)
        base = {"id": item_id, "type": "function_call", "call_id": call.id, "name": call.name}
        out = [self.event("response.output_item.added", output_index=index, item={**base, "status": "in_progress", "arguments": ""})]
        out += [self.event("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=f) for f in fragments]
        out.append(self.event("response.function_call_arguments.done", item_id=item_id, output_index=index, arguments=arguments))
        item = {**base, "status": "completed", "arguments": arguments}
        out.append(self.event("response.output_item.done", output_index=index, item=item))
        output.append(item)
        return out

    def _usage(self, turn: Turn) -> dict[str, Any]:
        """Usage as live traffic reports it, details included; reasoning tokens count in the output tokens."""
        reasoning = sum(len(part) for part in turn.reasoning) // 4 + (1 if turn.reasoning else 0)
        if turn.usage is not None:
            prompt, completion = turn.usage
            reasoning = min(reasoning, completion)
        else:  # a deterministic estimate: about four characters a token
            prompt = max(1, len(json.dumps(self.body.get("input", ""))) // 4)
            completion = max(1, len(turn.text) + len(turn.refusal) + sum(len(c.fragments()) for c in turn.calls)) + reasoning
        return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": reasoning},
                "total_tokens": prompt + completion}


def _error_event(turn: Turn, sequence_number: int) -> dict[str, Any]:
    """The in-band error: nested under "error" as live traffic sends it, or flat as the published schema has it."""
    error = turn.error or error_object("The server had an error while processing your request.", "server_error")
    if turn.flat_error:
        return {"type": "error", "sequence_number": sequence_number, "code": error.get("code") or error.get("type"),
                "message": error.get("message"), "param": error.get("param")}
    nested = {"type": error.get("type"), "code": error.get("code") or error.get("type"), "message": error.get("message"),
              "param": error.get("param")}
    return {"type": "error", "sequence_number": sequence_number, "error": nested}


def _only_streamed(what: str) -> None:
    raise APIError(400, f"The fake model's scripted reply ({what}) exists only in a stream: send \"stream\": true.", param="stream")


def _json(obj: Any) -> bytes:
    return json.dumps(obj).encode("utf-8")
