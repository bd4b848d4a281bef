"""The fake model's public face: what `course.fake_model.__all__` says is what it offers, frozen; its
control surface over HTTP (a fake model of one's own, waiting for a client to leave); and the
catalogs, in every language, reaching it only by URL.

A change to FROZEN is a change to the public face: it comes with a note for chapter authors
(CONTRIBUTING.md, "The fake model").
"""

from __future__ import annotations

import http.client
import importlib.util
import inspect
import json
import re
import socket
import sys
from pathlib import Path

import pytest

from course import fake_model
from tiny import write_files

REPO = Path(__file__).resolve().parents[3]
CATALOGS = ("tests/python", "tests/go", "tests/typescript")

# Every callable of the face with its signature; the constants by name.
FROZEN = {
    'FakeModel': '(host: \'str\' = \'127.0.0.1\', port: \'int\' = 0, *, tool_name: \'str\' = \'get_weather\', tool_arguments: \'str\' = \'{"city": "Paris"}\', log: \'Callable[[str], None] | None\' = None) -> \'None\'',
    'serve': "(port: 'int' = 0, host: 'str' = '127.0.0.1', *, script: 'str | Path | None' = None, verbose: 'bool' = True, out: 'TextIO | None' = None, ready: 'Callable[[FakeModel], None] | None' = None, until: 'threading.Event | None' = None) -> 'None'",
    'RecordedRequest': "(method: 'str', path: 'str', headers: 'dict[str, str]', body: 'Any', raw_body: 'bytes' = b'', header_values: 'dict[str, list[str]]' = <factory>) -> None",
    'Reply': '()',
    'Delivery': "(head_stall: 'float' = 0.0, head_byte_delay: 'float' = 0.0, stall_after: 'int | None' = None, stall: 'float' = 0.0, piece: 'int' = 0) -> None",
    'Turn': "(text: 'tuple[str, ...]' = (), calls: 'tuple[ScriptedCall, ...]' = (), refusal: 'tuple[str, ...]' = (), reasoning: 'tuple[str, ...]' = (), finish_reason: 'str' = '', usage: 'tuple[int, int] | None' = None, cut_after: 'int | None' = None, ending: 'Ending' = 'done', error: 'dict[str, Any] | None' = None, flat_error: 'bool' = False, delivery: 'Delivery' = Delivery(head_stall=0.0, head_byte_delay=0.0, stall_after=None, stall=0.0, piece=0)) -> None",
    'ScriptedCall': "(id: 'str', name: 'str', argument_parts: 'tuple[str, ...]' = (), no_argument_fragment: 'bool' = False) -> None",
    'HTTPErrorReply': "(status: 'int', type: 'str' = '', message: 'str' = '', code: 'str | None' = None, retry_after: 'str | None' = None, param: 'str | None' = None, delivery: 'Delivery' = Delivery(head_stall=0.0, head_byte_delay=0.0, stall_after=None, stall=0.0, piece=0)) -> None",
    'SlowStream': "(interval: 'float' = 0.02, duration: 'float' = 3.0, delivery: 'Delivery' = Delivery(head_stall=0.0, head_byte_delay=0.0, stall_after=None, stall=0.0, piece=0)) -> None",
    'RawReply': "(body: 'bytes', status: 'int' = 200, content_type: 'str' = 'text/event-stream; charset=utf-8', delivery: 'Delivery' = Delivery(head_stall=0.0, head_byte_delay=0.0, stall_after=None, stall=0.0, piece=0)) -> None",
    'EventsReply': "(events: 'tuple[dict[str, Any], ...]' = (), ending: 'Ending' = 'eof', delivery: 'Delivery' = Delivery(head_stall=0.0, head_byte_delay=0.0, stall_after=None, stall=0.0, piece=0)) -> None",
    'text': "(*chunks: 'str', finish_reason: 'str' = 'stop', usage: 'tuple[int, int] | None' = None) -> 'Turn'",
    'refusal': "(*chunks: 'str') -> 'Turn'",
    'tool_call': "(name: 'str', *argument_parts: 'str', call_id: 'str' = 'call_scripted_1', text: 'Sequence[str]' = (), no_argument_fragment: 'bool' = False) -> 'Turn'",
    'http_error': "(status: 'int', type: 'str' = '', message: 'str' = '', *, code: 'str | None' = None, retry_after: 'float | int | str | None' = None, param: 'str | None' = None) -> 'HTTPErrorReply'",
    'error_200': "(message: 'str' = 'The server had an error while processing your request.', type: 'str' = 'server_error', *, code: 'str | None' = None) -> 'HTTPErrorReply'",
    'reset_after': "(*chunks: 'str') -> 'Turn'",
    'cut_mid_chunk': "(*chunks: 'str') -> 'Turn'",
    'truncated': "(*chunks: 'str') -> 'Turn'",
    'no_done': "(*chunks: 'str') -> 'Turn'",
    'error_event': "(type: 'str' = 'server_error', message: 'str' = 'The server had an error while processing your request.', *, code: 'str | None' = None, after: 'Sequence[str]' = (), flat: 'bool' = False) -> 'Turn'",
    'stall': "(seconds: 'float', *, after: 'int | None' = None, reply: 'Reply | None' = None) -> 'Reply'",
    'slow_head': "(byte_delay: 'float' = 0.01, reply: 'Reply | None' = None) -> 'Reply'",
    'slow': "(interval: 'float' = 0.02, duration: 'float' = 3.0) -> 'SlowStream'",
    'raw': "(body: 'bytes | str', *, status: 'int' = 200, content_type: 'str' = 'text/event-stream; charset=utf-8', piece: 'int' = 0) -> 'RawReply'",
    'events': "(*events: 'dict[str, Any]', ending: 'Ending' = 'eof') -> 'EventsReply'",
    'from_json': "(obj: 'Any') -> 'Reply'",
    'script_from_json': "(obj: 'Any') -> 'list[Reply]'",
    'contract_problems': "(schema: 'str', instance: 'object') -> 'list[str]'",
}
CONSTANTS = {"CHAT_PATH", "RESPONSES_PATH", "CONTROL_PREFIX", "CREATED", "MODEL_NAME", "MAX_BODY"}


def test_all_is_the_public_face_and_nothing_more() -> None:
    offered = {name for name in vars(fake_model) if not name.startswith("_")} - {"annotations"}
    assert len(fake_model.__all__) == len(set(fake_model.__all__)), "a name twice in __all__"
    assert offered == set(fake_model.__all__), (
        f"public but not in __all__: {sorted(offered - set(fake_model.__all__))}; "
        f"in __all__ but missing: {sorted(set(fake_model.__all__) - offered)}")


def test_the_public_face_is_frozen() -> None:
    assert set(fake_model.__all__) == set(FROZEN) | CONSTANTS
    changed = {name: str(inspect.signature(getattr(fake_model, name))) for name in FROZEN
               if str(inspect.signature(getattr(fake_model, name))) != FROZEN[name]}
    assert changed == {}, "the public face changed: update FROZEN and write the note for chapter authors"


def test_every_callable_of_the_face_is_documented() -> None:
    bare = [name for name in FROZEN
            if not (inspect.getdoc(getattr(fake_model, name)) or "").strip()
            or (inspect.getdoc(getattr(fake_model, name)) or "").startswith(f"{name}(")]  # a dataclass's made-up doc
    assert bare == []


def test_every_module_behind_the_face_is_private() -> None:
    folder = Path(fake_model.__file__).parent
    public = [p.name for p in folder.glob("*.py") if p.name != "__init__.py" and not p.name.startswith("_")]
    assert public == []


# ---- the catalogs reach it by URL, in every language ----------------------------------------------------------


def harness_in_catalogs(root: Path) -> list[str]:
    """Every line of a catalog (any language) that imports the harness or names a private part of the
    fake model: a catalog reaches the fake model by COURSE_FAKE_MODEL_URL and its public control surface."""
    found = []
    imports = re.compile(r"^\s*(from\s+course(\.|\s)|import\s+course(\.|\s|$))")
    private = re.compile(r"fake_model[./]_")
    for folder in CATALOGS:
        for path in sorted((root / folder).rglob("*")):
            if not path.is_file() or path.suffix not in (".py", ".go", ".ts", ".md", ".json", ".yaml"):
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if (path.suffix == ".py" and imports.search(line)) or private.search(line):
                    found.append(f"{path.relative_to(root).as_posix()}:{number}: {line.strip()}")
    return found


def test_no_catalog_imports_the_harness_or_names_a_private_part_of_the_fake_model() -> None:
    assert harness_in_catalogs(REPO) == []


def test_the_catalog_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    files = {
        "tests/python/ag09/test_a.py": "import json\nfrom course import fake_model\n",
        "tests/python/ag09/test_b.py": "import course.fake_model\n",
        "tests/go/ag09/x_test.go": "// replies in the JSON form of course/fake_model/_replies.py\n",
        "tests/typescript/ag09/x.ts": "const url = process.env.COURSE_FAKE_MODEL_URL; // coursework\n",
        "tests/python/ag09/test_c.py": "import coursework\nfrom courses import x\n",
    }
    write_files(tmp_path, files)
    assert [line.split(": ")[0] for line in harness_in_catalogs(tmp_path)] == [
        "tests/python/ag09/test_a.py:2", "tests/python/ag09/test_b.py:1", "tests/go/ag09/x_test.go:1"]


def test_the_python_catalogs_builders_say_what_the_public_builders_say() -> None:
    """The ag01 Python catalog writes its replies as JSON (it never imports the harness): each must be
    the reply the public builder it replaced makes, so the catalog's checks stay what they were."""
    spec = importlib.util.spec_from_file_location("ag01_fake", REPO / "tests" / "python" / "ag01" / "ag01_fake.py")
    catalog = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = catalog  # its dataclasses look their module up by name
    try:
        spec.loader.exec_module(catalog)
    finally:
        del sys.modules[spec.name]
    pairs = [
        (catalog.text("ok"), fake_model.text("ok")),
        (catalog.text("Hel", "lo", usage=(5, 2)), fake_model.text("Hel", "lo", usage=(5, 2))),
        (catalog.http_error(400, "invalid_request_error", "bad model", code="model_not_found"),
         fake_model.http_error(400, "invalid_request_error", "bad model", code="model_not_found")),
        *[(catalog.http_error(status, retry_after=after), fake_model.http_error(status, retry_after=after))
          for status in (400, 429, 500, 501, 503) for after in (None, 0, 1, 0.2, 3600, "Wed, 21 Oct 2015 07:28:00 GMT")],
        (catalog.http_error(503, message="first"), fake_model.http_error(503, message="first")),
        (catalog.raw("<html>", status=502, content_type="text/html"), fake_model.raw("<html>", status=502, content_type="text/html")),
        (catalog.raw("data: {}\n\n"), fake_model.raw("data: {}\n\n")),
        *[(getattr(catalog, name)(*chunks), getattr(fake_model, name)(*chunks))
          for name in ("reset_after", "cut_mid_chunk", "truncated") for chunks in ((), ("a", " b", " c"))],
        (catalog.error_event("server_error"), fake_model.error_event("server_error")),
        (catalog.error_event("server_error", after=["a", " b"]), fake_model.error_event("server_error", after=["a", " b"])),
        (catalog.slow(interval=0.01, duration=3.0), fake_model.slow(interval=0.01, duration=3.0)),
    ]
    assert [fake_model.from_json(json.loads(json.dumps(mine))) for mine, _ in pairs] == [public for _, public in pairs]


# ---- the control surface: a fake model of one's own, and waiting for a client to leave ------------------------


def control(port: int, what: str, body: object = None, method: str = "POST") -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, f"{fake_model.CONTROL_PREFIX}{what}", body=None if body is None else json.dumps(body))
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        conn.close()


def test_a_fresh_fake_model_is_its_own_until_released(fm) -> None:  # noqa: ANN001
    status, made = control(fm.port, "fresh")
    assert status == 200 and made["base_url"] == f"http://127.0.0.1:{made['port']}/v1" and made["port"] != fm.port
    assert control(made["port"], "script", [fake_model.text("mine").to_json()])[1]["pending"] == 1
    conn = http.client.HTTPConnection("127.0.0.1", made["port"], timeout=10)
    conn.request("POST", "/v1/chat/completions", body=json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
    answer = json.loads(conn.getresponse().read())
    conn.close()
    assert answer["choices"][0]["message"]["content"] == "mine"
    assert len(control(made["port"], "state", method="GET")[1]["requests"]) == 1
    assert fm.requests == [] and fm.pending == 0, "the fake model that made it saw nothing of it"
    assert control(fm.port, "release", {"port": made["port"]}) == (200, {"released": made["port"]})
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", made["port"]), timeout=2).close()
    status, error = control(fm.port, "release", {"port": made["port"]})
    assert status == 404 and "No fake model on port" in error["error"]["message"]
    assert control(fm.port, "release", {"port": "x"})[0] == 400


def test_fresh_fake_models_stop_with_the_one_that_made_them() -> None:
    with fake_model.FakeModel() as parent:
        ports = [control(parent.port, "fresh")[1]["port"] for _ in range(2)]
    for port in ports:
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()


def slow_stream_begun(fm) -> http.client.HTTPConnection:  # noqa: ANN001
    """A client connection in the middle of a slow stream from `fm` (its first bytes read)."""
    fm.script(fake_model.slow(interval=0.01, duration=5.0))
    conn = http.client.HTTPConnection("127.0.0.1", fm.port, timeout=10)
    conn.request("POST", "/v1/chat/completions",
                 body=json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}))
    answer = conn.getresponse()
    assert answer.status == 200 and answer.read(20), "the slow stream began"
    return conn


def test_wait_answers_when_a_client_leaves_a_stream_or_at_its_timeout(fm) -> None:  # noqa: ANN001
    assert control(fm.port, "wait", {"for": "client_gone", "timeout": 0}) == (200, {"client_gone": False})
    assert control(fm.port, "wait", {"for": "nothing"})[0] == 400
    assert control(fm.port, "wait", {"for": "client_gone", "timeout": -1})[0] == 400
    conn = slow_stream_begun(fm)
    conn.close()
    assert control(fm.port, "wait", {"for": "client_gone", "timeout": 5}) == (200, {"client_gone": True})


def test_a_stream_of_before_a_reset_never_says_a_client_left(fm) -> None:  # noqa: ANN001
    """The catalogs reset one fake model between tests: a stream a test left running must not tell
    the next one, after the reset, that its client left."""
    conn = slow_stream_begun(fm)
    assert control(fm.port, "reset") == (200, {"pending": 0})
    conn.close()  # the stream of before the reset loses its client now
    assert control(fm.port, "wait", {"for": "client_gone", "timeout": 0.5}) == (200, {"client_gone": False})
    conn = slow_stream_begun(fm)
    conn.close()
    assert control(fm.port, "wait", {"for": "client_gone", "timeout": 5}) == (200, {"client_gone": True})
