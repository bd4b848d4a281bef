"""Scripted replies: plain data saying what the fake model answers next, and how the bytes travel.

A reply is a frozen dataclass with a JSON form (:meth:`Reply.to_json`, :func:`from_json`), so a catalog
in any language can script the fake model over HTTP (``POST /_fake/script``) or with a file
(``course fake-model --script FILE``) as well as Python tests by import. Replies never touch the server:
an API module (``_chat.py``) turns them into bytes and ``_playback.py`` sends those bytes.

JSON form: an object with ``"kind"`` (``turn``, ``http_error``, ``raw``, ``slow``, ``events``) and the fields of the
matching class below, plus the :class:`Delivery` fields at the top level; lists stand for tuples, and a
raw body is ``"body"`` (text) or ``"body_base64"``. Example::

    {"kind": "turn", "text": ["Hel", "lo"], "ending": "cut_mid_chunk", "cut_after": 2, "stall_after": 1, "stall": 0.5}
"""

from __future__ import annotations

import base64
import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Sequence

from course.fake_model._errors import error_object

Ending = Literal["done", "eof", "reset", "error", "cut_mid_chunk", "truncate"]
ENDINGS: tuple[str, ...] = ("done", "eof", "reset", "error", "cut_mid_chunk", "truncate")


@dataclass(frozen=True)
class Delivery:
    """How an answer's bytes travel, whatever it says: stalls, a slow head, small writes."""

    head_stall: float = 0.0  # no bytes at all for this many seconds before the head
    head_byte_delay: float = 0.0  # a slow head: sent one byte at a time, this many seconds apart
    stall_after: int | None = None  # after this many events (or body pieces), no bytes for `stall` seconds
    stall: float = 0.0
    piece: int = 0  # body bytes per write; 0: one write per event (a whole body in one write)

    def __post_init__(self) -> None:
        for name in ("head_stall", "head_byte_delay", "stall"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.piece < 0 or (self.stall_after is not None and self.stall_after < 0):
            raise ValueError("piece and stall_after must be >= 0")


NO_DELAY = Delivery()


class Reply:
    """One scripted answer, consumed by one API request. Build replies with the factories below."""

    kind: ClassVar[str] = ""
    delivery: Delivery

    def with_delivery(self, **changes: Any) -> Reply:
        """A copy of this reply delivered differently, e.g. ``text("hi").with_delivery(head_stall=2.0)``."""
        return dataclasses.replace(self, delivery=dataclasses.replace(self.delivery, **changes))  # type: ignore[type-var]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, bytes):
                out[f"{f.name}_base64"] = base64.b64encode(value).decode("ascii")
            elif f.name != "delivery":
                out[f.name] = _plain(value)
        for f in dataclasses.fields(Delivery):
            value = getattr(self.delivery, f.name)
            if value != f.default:
                out[f.name] = value
        return out


@dataclass(frozen=True)
class ScriptedCall:
    """A tool call inside a :class:`Turn`: its arguments are sent as the given parts, one chunk each.

    A call with no parts streams the fragment ``"{}"`` as the real API does; ``no_argument_fragment``
    plays a server that sends no fragment at all (its arguments then arrive as ``""``).
    """

    id: str
    name: str
    argument_parts: tuple[str, ...] = ()
    no_argument_fragment: bool = False

    def fragments(self) -> tuple[str, ...]:
        if self.argument_parts or self.no_argument_fragment:
            return self.argument_parts
        return ("{}",)


@dataclass(frozen=True)
class Turn(Reply):
    """An assistant turn: text, a refusal and/or tool calls, streamed as events or answered as one object.

    ``refusal`` parts make the answer a refusal (a ``refusal`` content part in the Responses API, the
    message's ``refusal`` in chat completions). ``reasoning`` parts are the summary of a reasoning item
    that opens the output (the Responses API only; chat completions answers such a turn with a 400).

    ``cut_after`` keeps only the first N events of the turn's stream; ``ending`` says what follows:
    ``"done"`` the end marker and a clean end; ``"eof"`` a clean end without the end marker; ``"reset"``
    a TCP reset; ``"error"`` an in-band error event, then a clean end (in the Responses API, the shape
    live traffic sends, its fields nested under ``error``; ``flat_error`` sends the published schema's
    flat shape instead); ``"cut_mid_chunk"`` the next event's
    HTTP chunk announced whole but only half sent, then the connection closed; ``"truncate"`` half of the
    next event, then a well-framed end of the body (the stream ends inside an event). Without
    ``cut_after`` the cut and truncation hit the end marker.

    A non-streaming request gets the turn as one object; ``reset``, ``cut_mid_chunk`` and ``truncate``
    apply to that body too, while ``eof``, ``error`` (and a ``cut_after`` with them) exist only in a
    stream, so a non-streaming request for them is answered with a 400 that says so.
    """

    kind: ClassVar[str] = "turn"
    text: tuple[str, ...] = ()
    calls: tuple[ScriptedCall, ...] = ()
    refusal: tuple[str, ...] = ()
    reasoning: tuple[str, ...] = ()
    finish_reason: str = ""  # "" means "tool_calls" when there are calls, else "stop"
    usage: tuple[int, int] | None = None  # (prompt_tokens, completion_tokens); None: estimated
    cut_after: int | None = None
    ending: Ending = "done"
    error: dict[str, Any] | None = None  # the object under "error" for ending="error"
    flat_error: bool = False  # Responses: the error event's fields at its top level, not nested under "error"
    delivery: Delivery = NO_DELAY

    def __post_init__(self) -> None:
        if self.ending not in ENDINGS:
            raise ValueError(f"ending must be one of {', '.join(ENDINGS)}; got {self.ending!r}")
        if self.cut_after is not None and self.cut_after < 0:
            raise ValueError(f"cut_after must be >= 0, got {self.cut_after}")

    @property
    def finish(self) -> str:
        return self.finish_reason or ("tool_calls" if self.calls else "stop")

    @property
    def stream_only(self) -> bool:
        """True when this turn has no non-streaming form."""
        return self.ending in ("eof", "error")


@dataclass(frozen=True)
class HTTPErrorReply(Reply):
    """An answer with an error body ``{"error": {...}}`` and this status (200 plays a provider that
    reports failures with a success status), optionally with a Retry-After header."""

    kind: ClassVar[str] = "http_error"
    status: int
    type: str = ""
    message: str = ""
    code: str | None = None
    retry_after: str | None = None  # the header's exact text (seconds, or anything, to test parsing)
    param: str | None = None
    delivery: Delivery = NO_DELAY

    def body(self) -> dict[str, Any]:
        return {"error": error_object(self.message, self.type, self.param, self.code)}


@dataclass(frozen=True)
class SlowStream(Reply):
    """A stream that sends one small text chunk every ``interval`` seconds for up to ``duration`` seconds.

    It watches its connection between chunks: when the client goes away the fake model's
    ``client_gone`` is set and the stream stops. Left alone it ends by itself (finish chunk, end marker)
    after ``duration`` seconds, or at once when the fake model stops. Streaming only.
    """

    kind: ClassVar[str] = "slow"
    interval: float = 0.02
    duration: float = 3.0
    delivery: Delivery = NO_DELAY

    stream_only: ClassVar[bool] = True


@dataclass(frozen=True)
class RawReply(Reply):
    """Exactly these body bytes (a recorded stream, an HTML error page), correctly framed."""

    kind: ClassVar[str] = "raw"
    body: bytes
    status: int = 200
    content_type: str = "text/event-stream; charset=utf-8"
    delivery: Delivery = NO_DELAY


@dataclass(frozen=True)
class EventsReply(Reply):
    """Authored stream events played as they are (the Responses API's, e.g. a sequence of fixtures/ag02).

    Each event is sent as ``event: <its type>`` and ``data: <its JSON>``; ``ending`` says what follows the
    last one: ``"eof"`` (or ``"done"``) a clean end, ``"reset"`` a TCP reset, ``"cut_mid_chunk"`` and
    ``"truncate"`` the last event cut in half. A non-streaming request gets the response object of the last
    lifecycle event that carries one as a whole answer.
    """

    kind: ClassVar[str] = "events"
    events: tuple[dict[str, Any], ...] = ()
    ending: Ending = "eof"
    delivery: Delivery = NO_DELAY

    def __post_init__(self) -> None:
        if self.ending not in ENDINGS or self.ending == "error":
            raise ValueError(f"an events reply ends with eof, done, reset, cut_mid_chunk or truncate; got {self.ending!r}")
        if not all(isinstance(e, dict) and isinstance(e.get("type"), str) for e in self.events):
            raise ValueError("each event is a JSON object with a string 'type'")


# ---- factories ---------------------------------------------------------------------------------------


def text(*chunks: str, finish_reason: str = "stop", usage: tuple[int, int] | None = None) -> Turn:
    """A text answer streamed as the given chunks (role chunk first, then finish, usage, end marker)."""
    return Turn(text=tuple(chunks), finish_reason=finish_reason, usage=usage)


def refusal(*chunks: str) -> Turn:
    """A refusal streamed as the given chunks: the model declines to answer."""
    return Turn(refusal=tuple(chunks))


def tool_call(name: str, *argument_parts: str, call_id: str = "call_scripted_1", text: Sequence[str] = (),
              no_argument_fragment: bool = False) -> Turn:
    """An answer asking for one tool call whose arguments arrive as the given parts (one chunk each).

    No parts: the real API's ``"{}"`` fragment, or none at all with ``no_argument_fragment=True``.
    """
    call = ScriptedCall(call_id, name, tuple(argument_parts), no_argument_fragment)
    return Turn(text=tuple(text), calls=(call,))


def http_error(status: int, type: str = "", message: str = "", *, code: str | None = None,
               retry_after: float | int | str | None = None, param: str | None = None) -> HTTPErrorReply:
    """An HTTP error ``{"error": {"message", "type", "param", "code"}}``, optionally with Retry-After.

    ``type`` and ``message`` default to what the real API sends for the status.
    """
    if not type:
        type = "rate_limit_exceeded" if status == 429 else ("server_error" if status >= 500 else "invalid_request_error")
    if not message:
        message = _DEFAULT_MESSAGES.get(status, f"The fake model answered HTTP {status}.")
    if retry_after is None or isinstance(retry_after, str):
        header = retry_after
    else:
        header = str(int(retry_after)) if float(retry_after).is_integer() else repr(float(retry_after))
    return HTTPErrorReply(status, type, message, code, header, param)


def error_200(message: str = "The server had an error while processing your request.", type: str = "server_error",
              *, code: str | None = None) -> HTTPErrorReply:
    """A 200 whose JSON body is an error object: a provider reporting a failure with a success status."""
    return HTTPErrorReply(200, type, message, code)


def reset_after(*chunks: str) -> Turn:
    """The role chunk and one text event per chunk (``1 + len(chunks)`` events), then a TCP reset."""
    return Turn(text=tuple(chunks), cut_after=1 + len(chunks), ending="reset")


def cut_mid_chunk(*chunks: str) -> Turn:
    """The role chunk and one text event per chunk, then the connection closed in the middle of an HTTP chunk."""
    return Turn(text=tuple(chunks) + ("never whole",), cut_after=1 + len(chunks), ending="cut_mid_chunk")


def truncated(*chunks: str) -> Turn:
    """The role chunk and one text event per chunk, then half an event and a clean end of the body."""
    return Turn(text=tuple(chunks) + ("never whole",), cut_after=1 + len(chunks), ending="truncate")


def no_done(*chunks: str) -> Turn:
    """A complete-looking text stream (finish and usage chunks included) that ends cleanly without [DONE]."""
    return Turn(text=tuple(chunks), ending="eof")


def error_event(type: str = "server_error", message: str = "The server had an error while processing your request.", *,
                code: str | None = None, after: Sequence[str] = (), flat: bool = False) -> Turn:
    """The role chunk and one text event per piece of ``after``, then an in-band error: ``data: {"error":
    {...}}`` in chat completions; in the Responses API an ``error`` event, its fields nested under
    ``error`` as live traffic sends them, or at its top level with ``flat=True``."""
    return Turn(text=tuple(after), cut_after=1 + len(after), ending="error", error=error_object(message, type, None, code),
                flat_error=flat)


def stall(seconds: float, *, after: int | None = None, reply: Reply | None = None) -> Reply:
    """``reply`` (default: a short text) with no bytes for ``seconds``: before the head, or after ``after`` events."""
    base = reply if reply is not None else text("Hel", "lo")
    if after is None:
        return base.with_delivery(head_stall=seconds)
    return base.with_delivery(stall_after=after, stall=seconds)


def slow_head(byte_delay: float = 0.01, reply: Reply | None = None) -> Reply:
    """``reply`` (default: a short text) whose head trickles out one byte at a time."""
    return (reply if reply is not None else text("Hel", "lo")).with_delivery(head_byte_delay=byte_delay)


def slow(interval: float = 0.02, duration: float = 3.0) -> SlowStream:
    """A slow stream for cancellation tests: see :class:`SlowStream`."""
    return SlowStream(interval, duration)


def events(*events: dict[str, Any], ending: Ending = "eof") -> EventsReply:
    """These stream events exactly, then ``ending`` (see :class:`EventsReply`)."""
    return EventsReply(tuple(events), ending)


def raw(body: bytes | str, *, status: int = 200, content_type: str = "text/event-stream; charset=utf-8", piece: int = 0) -> RawReply:
    """Exactly these body bytes (a str is UTF-8 encoded), HTTP-framed correctly, ``piece`` bytes per write."""
    data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    return RawReply(data, status, content_type, Delivery(piece=piece))


_DEFAULT_MESSAGES = {
    400: "The fake model was scripted to reject this request.",
    401: "Incorrect API key provided.",
    403: "You are not allowed to sample from this model.",
    404: "The model does not exist or you do not have access to it.",
    408: "Request timed out.",
    429: "Rate limit reached for requests. Please try again later.",
    500: "The server had an error while processing your request. Sorry about that!",
    502: "Bad gateway.",
    503: "The engine is currently overloaded, please try again later.",
    504: "Gateway timeout.",
}


# ---- JSON form -------------------------------------------------------------------------------------------

_KINDS: dict[str, type[Reply]] = {cls.kind: cls for cls in (Turn, HTTPErrorReply, SlowStream, RawReply, EventsReply)}


def _plain(value: Any) -> Any:
    if isinstance(value, ScriptedCall):
        out: dict[str, Any] = {"id": value.id, "name": value.name, "arguments": list(value.argument_parts)}
        if value.no_argument_fragment:
            out["no_argument_fragment"] = True
        return out
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def from_json(obj: Any) -> Reply:
    """A reply from its JSON form; ValueError with a one-line reason when it is not one."""
    if not isinstance(obj, dict):
        raise ValueError(f"a scripted reply is a JSON object with a 'kind', got {type(obj).__name__}")
    kind = obj.get("kind")
    cls = _KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown reply kind {kind!r}; expected one of {', '.join(sorted(_KINDS))}")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    delivery_fields = {f.name for f in dataclasses.fields(Delivery)}
    args: dict[str, Any] = {}
    delivery: dict[str, Any] = {}
    for key, value in obj.items():
        if key == "kind":
            continue
        if key in delivery_fields:
            delivery[key] = _checked(key, value)
        elif key == "body_base64" and cls is RawReply:
            args["body"] = _decode_base64(value)
        elif key in fields and key != "delivery":
            args[key] = _field_value(cls, key, _checked(key, value))
        else:
            raise ValueError(f"a {kind!r} reply has no field {key!r}")
    try:
        return cls(**args, delivery=Delivery(**delivery))  # type: ignore[call-arg]
    except TypeError as exc:
        raise ValueError(f"a {kind!r} reply: {exc}") from None


def _field_value(cls: type[Reply], key: str, value: Any) -> Any:
    if cls is RawReply and key == "body":
        if not isinstance(value, str):
            raise ValueError("a raw reply's 'body' is text; use 'body_base64' for bytes")
        return value.encode("utf-8")
    if cls is EventsReply and key == "events":
        return tuple(_list(key, value))
    if cls is Turn and key == "calls":
        return tuple(_call_from_json(c) for c in _list(key, value))
    if cls is Turn and key in ("text", "refusal", "reasoning"):
        return tuple(_str_list(key, value))
    if cls is Turn and key == "usage":
        if value is None:
            return None
        pair = _list(key, value)
        if len(pair) != 2 or not all(isinstance(n, int) for n in pair):
            raise ValueError("'usage' is [prompt_tokens, completion_tokens]")
        return (pair[0], pair[1])
    return value


_NUMBER = (int, float)
_TYPES: dict[str, tuple[Any, ...]] = {
    "status": (int,), "cut_after": (int, type(None)), "stall_after": (int, type(None)), "piece": (int,),
    "interval": _NUMBER, "duration": _NUMBER, "head_stall": _NUMBER, "head_byte_delay": _NUMBER, "stall": _NUMBER,
    "finish_reason": (str,), "ending": (str,), "type": (str,), "message": (str,), "content_type": (str,),
    "code": (str, type(None)), "retry_after": (str, type(None)), "param": (str, type(None)), "error": (dict, type(None)),
    "flat_error": (bool,),
}


def _checked(key: str, value: Any) -> Any:
    allowed = _TYPES.get(key)
    if allowed is not None and ((isinstance(value, bool) and bool not in allowed) or not isinstance(value, allowed)):
        names = " or ".join("null" if t is type(None) else {int: "an integer", float: "a number", str: "a string", dict: "an object",
                                                             bool: "true or false"}[t] for t in allowed)
        raise ValueError(f"{key!r} must be {names}, got {value!r}")
    return value


def _call_from_json(obj: Any) -> ScriptedCall:
    if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) or not isinstance(obj.get("name"), str):
        raise ValueError(f"a call is {{'id': str, 'name': str, 'arguments': [str, ...]}}, got {obj!r}")
    unknown = set(obj) - {"id", "name", "arguments", "no_argument_fragment"}
    if unknown:
        raise ValueError(f"a call has no field {sorted(unknown)[0]!r}")
    parts = obj.get("arguments", [])
    if isinstance(parts, str):
        parts = [parts]
    return ScriptedCall(obj["id"], obj["name"], tuple(_str_list("arguments", parts)), bool(obj.get("no_argument_fragment", False)))


def _list(key: str, value: Any) -> list:
    if not isinstance(value, list):
        raise ValueError(f"{key!r} must be a list, got {value!r}")
    return value


def _str_list(key: str, value: Any) -> list[str]:
    items = _list(key, value)
    if not all(isinstance(v, str) for v in items):
        raise ValueError(f"{key!r} must be a list of strings, got {value!r}")
    return items


def _decode_base64(value: Any) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (ValueError, TypeError):
        raise ValueError("'body_base64' is not valid base64") from None


def script_from_json(obj: Any) -> list[Reply]:
    """Replies from ``[reply, ...]`` or ``{"replies": [reply, ...]}``."""
    if isinstance(obj, dict) and "replies" in obj:
        obj = obj["replies"]
    if not isinstance(obj, list):
        raise ValueError("a script is a JSON list of replies, or an object {\"replies\": [...]}")
    replies = []
    for i, item in enumerate(obj):
        try:
            replies.append(from_json(item))
        except ValueError as exc:
            raise ValueError(f"reply #{i + 1}: {exc}") from None
    return replies


__all__ = [
    "Delivery", "Reply", "ScriptedCall", "Turn", "HTTPErrorReply", "SlowStream", "RawReply", "EventsReply", "ENDINGS",
    "text", "refusal", "tool_call", "http_error", "error_200", "reset_after", "cut_mid_chunk", "truncated", "no_done",
    "error_event", "stall", "slow_head", "slow", "raw", "events", "from_json", "script_from_json",
]
