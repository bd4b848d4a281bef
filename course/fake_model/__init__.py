"""The course fake model: an OpenAI-compatible server on the loopback interface, strict like the real API.

It serves ``POST {base_url}/chat/completions`` and ``POST {base_url}/responses`` (``base_url`` is
``http://127.0.0.1:PORT/v1``), streamed or not, and ``GET {base_url}/models``; it validates every
request against the course's contract (``fixtures/contracts/openai-subset.v1.yaml``) and the
conversation rules, answering a bad request with the real API's status, error shape and wording; it
records every request; a script of replies and faults says what it answers, or it plays "faketool".

The public face
---------------

This module is the fake model's public face, and it is frozen: every name of ``__all__`` below, with
its signature and behaviour, and the HTTP control surface (``/_fake/...``, documented in
``_control.py``). A change to either comes with a note for chapter authors (CONTRIBUTING.md, "The fake
model"). Everything else lives in private modules (a leading underscore: ``_wire.py``, ``_chat.py``,
...), which nothing outside this package imports; ``tests/harness/core/test_architecture.py`` holds
the house to that.

Who uses what:

* a catalog, in any language, never imports it: it reaches the fake model the harness started for
  the run by its URL (``COURSE_FAKE_MODEL_URL``), and scripts it over HTTP (``POST /_fake/script``
  with replies in their JSON form, ``GET /_fake/state``, ``POST /_fake/reset``; a catalog whose tests
  run at once takes a fake model of its own per test with ``POST /_fake/fresh``);
* the harness (``course.services``), the ``course fake-model`` command (:func:`serve`), the
  benchmarks and the harness's own tests start one with :class:`FakeModel` and script it with the
  reply builders (:func:`text`, :func:`http_error`, ...) or their JSON form (:func:`from_json`,
  :func:`script_from_json`).

Usage in Python::

    from course import fake_model

    with fake_model.FakeModel() as fm:
        fm.script(fake_model.http_error(503), fake_model.text("Hel", "lo"))
        ...  # point the client at fm.base_url
        assert len(fm.requests) == 2

From a shell: ``course fake-model [--script FILE]``.

Behind the face, one job per private module, along one line (wire -> app -> API module -> playback -> wire):

* ``_wire.py``      sockets, threads and HTTP/1.1 via h11; hands each request to one handler and gives
                    it a ``Responder`` (whole answers, streamed bodies, exact-byte faults). Nothing else
                    touches a socket.
* ``_app.py``       the handler: records requests, routes ``(method, path)`` to an API module, turns
                    ``APIError`` into an error answer. ``API_MODULES`` lists the APIs served.
* ``_chat.py``      the chat-completions API: validation, faketool, a reply turned into chunks or a
                    completion object.
* ``_responses.py`` the Responses API: validation, faketool, a reply turned into Responses stream
                    events or a response object; authored events (``EventsReply``) played as they are.
* ``_models.py``    ``GET /v1/models``.
* ``_control.py``   scripting over HTTP (``/_fake/...``): the control surface, part of the public face.
* ``_contract.py``  the contract file, JSON Schema validation, the real API's error wording.
* ``_conversation.py`` the rules a schema cannot express (tool messages and their calls).
* ``_replies.py``   scripted replies and faults as plain data, their builders and JSON form.
* ``_playback.py``  how an answer's bytes travel: stalls, slow head, small writes, endings and cuts.
* ``_state.py``     the script queue, recorded requests, issued ids.
* ``_errors.py``    the one place an error body is built.
* ``_server.py``    ``FakeModel`` (all of the above on a port) and ``serve`` for the CLI.
"""

from __future__ import annotations

from course.fake_model._chat import CREATED, PATH as CHAT_PATH
from course.fake_model._control import PREFIX as CONTROL_PREFIX
from course.fake_model._responses import PATH as RESPONSES_PATH
from course.fake_model._replies import (
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
from course.fake_model._server import FakeModel, serve
from course.fake_model._state import MODEL_NAME, RecordedRequest
from course.fake_model._wire import MAX_BODY


def contract_problems(schema: str, instance: object) -> list[str]:
    """Every way ``instance`` (parsed JSON) breaks the contract's schema named ``schema`` (such as
    ``"CreateChatCompletionStreamResponse"``), one readable line each; ``[]`` when it conforms. For
    tests of what the fake model (or anything else) sends; it imports jsonschema and the contract."""
    from course.fake_model._contract import problems

    return problems(schema, instance)


__all__ = [
    # the server and serving it
    "FakeModel", "serve", "RecordedRequest",
    # paths, names and limits
    "CHAT_PATH", "RESPONSES_PATH", "CONTROL_PREFIX", "CREATED", "MODEL_NAME", "MAX_BODY",
    # replies: their types, their builders, their JSON form
    "Reply", "Delivery", "Turn", "ScriptedCall", "HTTPErrorReply", "SlowStream", "RawReply", "EventsReply",
    "text", "refusal", "tool_call", "http_error", "error_200", "reset_after", "cut_mid_chunk", "truncated",
    "no_done", "error_event", "stall", "slow_head", "slow", "raw", "events", "from_json", "script_from_json",
    # the contract, for tests of what is sent
    "contract_problems",
]
