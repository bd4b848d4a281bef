"""Playback: sends an answer's bytes through a :class:`~course.fake_model._wire.Responder` the way a
scripted :class:`~course.fake_model._replies.Delivery` and ending say, for any API.

An API module decides *what* to send (the events of a stream, or one body); this module decides *how*
the bytes travel: stalls, a slow head, small writes, and the faults that end an answer early.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator

from course.fake_model._replies import Delivery, HTTPErrorReply, RawReply, Reply
from course.fake_model._wire import Responder

SSE_HEADERS = (("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-cache"))


def sse_event(data: str, event: str | None = None) -> bytes:
    """One server-sent event carrying ``data`` (a single line), optionally named."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data}\n\n".encode("utf-8")


def compact(obj: Any) -> str:
    """JSON the way the real API writes stream events: no spaces, non-ASCII kept."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def send_any_api(reply: Reply, responder: Responder) -> bool:
    """Send a reply whose bytes are the same whatever API was asked (an HTTP error, raw bytes); False
    for a reply the API module must render itself."""
    if isinstance(reply, HTTPErrorReply):
        headers = (("Retry-After", reply.retry_after),) if reply.retry_after is not None else ()
        body = json.dumps(reply.body()).encode("utf-8")
        send_body(responder, reply.status, body, "application/json", reply.delivery, headers=headers)
        return True
    if isinstance(reply, RawReply):
        headers = (("Content-Type", reply.content_type), ("Cache-Control", "no-cache"))
        send_stream(responder, [reply.body], reply.delivery, ending="eof", status=reply.status, headers=headers)
        return True
    return False


def send_body(responder: Responder, status: int, body: bytes, content_type: str, delivery: Delivery, *,
              headers: tuple[tuple[str, str], ...] = (), fault: str = "") -> None:
    """A complete body with a Content-Length. ``fault``: ``""`` none, ``"reset"`` a reset before any
    byte, ``"cut_mid_chunk"`` half the body then a close, ``"truncate"`` half the body announced and sent
    as if whole."""
    if not responder.pause(delivery.head_stall):
        return
    if fault == "reset":
        responder.reset()
        return
    if fault == "truncate":
        body = body[: len(body) // 2]
    head = (("Content-Type", content_type), ("Content-Length", str(len(body))), *headers)
    if not responder.start(status, head, byte_delay=delivery.head_byte_delay):
        return
    if fault == "cut_mid_chunk":
        responder.cut(body, len(body) // 2)
        return
    if _write_all(responder, _pieces([body], delivery.piece), delivery):
        responder.end()


def send_stream(responder: Responder, events: list[bytes], delivery: Delivery, *, ending: str = "done", tail: bytes = b"",
                status: int = 200, headers: tuple[tuple[str, str], ...] = SSE_HEADERS) -> None:
    """A streamed body: the head, ``events``, then the ending.

    ``tail`` is the event the ending concerns: the end marker for ``"done"``, the error event for
    ``"error"``, the event cut in half for ``"cut_mid_chunk"`` and ``"truncate"``. ``"eof"`` ends the body
    cleanly without it, ``"reset"`` resets the connection.
    """
    if not responder.pause(delivery.head_stall):
        return
    # The head waits for the first event unless the script wants its bytes apart (pieces, a stall first).
    together = not delivery.piece and delivery.stall_after != 0
    if not responder.start(status, headers, byte_delay=delivery.head_byte_delay, hold=together):
        return
    if not _write_all(responder, _pieces(events, delivery.piece), delivery):
        return
    if ending == "reset":
        responder.reset()
    elif ending == "cut_mid_chunk":
        responder.cut(tail, len(tail) // 2)
    elif ending == "truncate":
        if responder.write(tail[: len(tail) // 2]):
            responder.end()
    elif ending == "eof" or responder.write(tail):
        responder.end()


def _pieces(parts: Iterable[bytes], size: int) -> Iterator[bytes]:
    """The parts as they are (size 0), or their bytes re-cut into pieces of ``size``."""
    if size <= 0:
        yield from parts
        return
    data = b"".join(parts)
    for start in range(0, len(data), size):
        yield data[start : start + size]


def _write_all(responder: Responder, pieces: Iterable[bytes], delivery: Delivery) -> bool:
    """Write each piece, pausing after ``delivery.stall_after`` of them; False when the answer must stop."""
    written = 0
    for piece in pieces:
        if written == delivery.stall_after and not responder.pause(delivery.stall):
            return False
        if not responder.write(piece):
            return False
        written += 1
    return written != delivery.stall_after or responder.pause(delivery.stall)
