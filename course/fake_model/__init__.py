"""The course fake model: an OpenAI-compatible server on the loopback interface, strict like the real API.

It serves ``POST {base_url}/chat/completions`` and ``POST {base_url}/responses`` (``base_url`` is
``http://127.0.0.1:PORT/v1``), streamed or not, and ``GET {base_url}/models``; it validates every request against the course's contract
(``fixtures/contracts/openai-subset.v1.yaml``) and the conversation rules, answering a bad request with
the real API's status, error shape and wording; it records every request; tests script its replies
and faults, or leave it to play "faketool" (see ``chat.py``).

Usage in a test::

    from course import fake_model

    with fake_model.FakeModel() as fm:
        fm.script(fake_model.http_error(503), fake_model.text("Hel", "lo"))
        ...  # point the client at fm.base_url
        assert len(fm.requests) == 2

From any language: ``POST /_fake/script`` with replies in their JSON form, ``GET /_fake/state``
(``control.py``), or ``course fake-model --script FILE``. From a shell: ``course fake-model``.

The package, one job per file, along one line (wire -> app -> API module -> playback -> wire):

* ``wire.py``      sockets, threads and HTTP/1.1 via h11; hands each request to one handler and gives it
                   a ``Responder`` (whole answers, streamed bodies, exact-byte faults). Nothing else
                   touches a socket.
* ``app.py``       the handler: records requests, routes ``(method, path)`` to an API module, turns
                   ``APIError`` into an error answer. ``API_MODULES`` lists the APIs served.
* ``chat.py``      the chat-completions API: validation, faketool, a reply turned into chunks or a
                   completion object.
* ``responses.py`` the Responses API: validation, faketool, a reply turned into Responses stream events
                   or a response object; authored events (``EventsReply``) played as they are.
* ``models.py``    ``GET /v1/models``.
* ``control.py``   scripting over HTTP (``/_fake/...``).
* ``contract.py``  the contract file, JSON Schema validation, the real API's error wording.
* ``conversation.py`` the rules a schema cannot express (tool messages and their calls).
* ``replies.py``   scripted replies and faults as plain data, their factories and JSON form.
* ``playback.py``  how an answer's bytes travel: stalls, slow head, small writes, endings and cuts.
* ``state.py``     the script queue, recorded requests, issued ids.
* ``errors.py``    the one place an error body is built.
* ``server.py``    ``FakeModel`` (all of the above on a port) and ``serve`` for the CLI.

"""

from __future__ import annotations

from course.fake_model.chat import CREATED, PATH as CHAT_PATH
from course.fake_model.responses import PATH as RESPONSES_PATH
from course.fake_model.replies import (
    Delivery,
    EventsReply,
    HTTPErrorReply,
    RawReply,
    Reply,
    ScriptedCall,
    SlowStream,
    Turn,
    cut_mid_chunk,
    error_200,
    error_event,
    events,
    from_json,
    http_error,
    no_done,
    raw,
    refusal,
    reset_after,
    script_from_json,
    slow,
    slow_head,
    stall,
    text,
    tool_call,
    truncated,
)
from course.fake_model.server import FakeModel, serve
from course.fake_model.state import MODEL_NAME, RecordedRequest

__all__ = [
    "CHAT_PATH", "RESPONSES_PATH", "CREATED", "MODEL_NAME", "FakeModel", "RecordedRequest", "serve",
    "Reply", "Delivery", "Turn", "ScriptedCall", "HTTPErrorReply", "SlowStream", "RawReply", "EventsReply", "from_json",
    "script_from_json", "text", "refusal", "tool_call", "http_error", "error_200", "reset_after", "cut_mid_chunk", "truncated", "no_done",
    "error_event", "stall", "slow_head", "slow", "raw", "events",
]
