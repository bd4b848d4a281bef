"""Offline demonstration of chapter ag03 (`course run ag03`).

Starts the code under test (the learner's agent/, or the reference) as a proxy on 127.0.0.1, in
front of a scripted upstream that serves the authored streams of fixtures/ag03, and drives it as a
client would: with the official openai SDK when it is installed, else with plain HTTP. No network
beyond 127.0.0.1, no API key, no cost. Exit 0 when every scenario behaved as the chapter says.
"""

from __future__ import annotations

import json
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent))  # appended: never shadows the code under test

from ag03_streams import body  # noqa: E402
from agent.proxy.server import demo_tools, make_server  # noqa: E402
from agent.proxy.sse import read_events  # noqa: E402
from agent.proxy.upstream import HttpUpstream  # noqa: E402

TOOLS = [{"type": "function", "name": "get_weather", "strict": True,
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                         "additionalProperties": False}}]


class ScriptedUpstream(ThreadingHTTPServer):
    """Answers each POST /v1/responses with the next fixture stream of its script."""

    def __init__(self) -> None:
        self.script: list[str] = []
        super().__init__(("127.0.0.1", 0), _UpstreamHandler)


class _UpstreamHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        data = body(self.server.script.pop(0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def _post(url: str, request: dict) -> tuple[int, str, bytes]:
    data = json.dumps(request).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data, {"Content-Type": "application/json"}), timeout=30) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read()


def _answer_text(status: int, content_type: str, data: bytes) -> str:
    if content_type.startswith("text/event-stream"):
        events = list(read_events([data]))
        return "".join(p["text"] for i in events[-1]["response"]["output"] for p in i["content"])
    return "".join(p["text"] for i in json.loads(data)["output"] for p in i["content"])


def _sdk_text(base: str, stream: bool) -> str | None:
    try:
        import openai
    except ImportError:
        return None
    client = openai.OpenAI(base_url=base, api_key="not-needed-offline")  # its default retries: the proxy says when not to
    request = {"model": "gpt-4.1-mini", "input": "What is the weather in Paris?", "tools": TOOLS}
    if not stream:
        return client.responses.create(**request).output_text
    with client.responses.stream(**request) as events:
        return events.get_final_response().output_text


def main() -> int:
    upstream = ScriptedUpstream()
    runs: list[dict] = []
    tools = {name: (lambda fn: lambda args: (runs.append(args), fn(args))[1])(fn) for name, fn in demo_tools().items()}
    proxy = make_server(HttpUpstream(f"http://127.0.0.1:{upstream.server_address[1]}/v1"), tools)
    for server in (upstream, proxy):
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    base = f"http://127.0.0.1:{proxy.server_address[1]}/v1"
    url = base + "/responses"
    question = {"model": "gpt-4.1-mini", "input": "What is the weather in Paris?", "tools": TOOLS}
    print("ag03 offline demonstration: a proxy in front of a scripted upstream (fixtures/ag03), no network.")
    ok = True
    try:
        for stream in (False, True):
            mode = "stream" if stream else "JSON"
            upstream.script[:] = ["final_text"]
            status, kind, data = _post(url, {**question, "stream": stream})
            text = _answer_text(status, kind, data) if status == 200 else ""
            good = status == 200 and text == "It is raining in Paris." and not runs
            ok &= good
            print(f"\n== text answer ({mode}): {status} {kind}\n   {text!r}\n   tools run: {len(runs)}  {'ok' if good else 'WRONG'}")

            runs.clear()
            upstream.script[:] = ["tool_call", "final_after_tools"]
            status, kind, data = _post(url, {**question, "stream": stream})
            text = _answer_text(status, kind, data) if status == 200 else ""
            good = status == 200 and runs == [{"city": "Paris"}] and text.startswith("Paris:")
            ok &= good
            print(f"\n== tool call ({mode}): {status}; get_weather ran {len(runs)} time(s) with {runs}\n   {text!r}"
                  f"  {'ok' if good else 'WRONG'}")

            runs.clear()
            upstream.script[:] = ["cut_after_arguments"]
            status, kind, data = _post(url, {**question, "stream": stream})
            code = json.loads(data).get("error", {}).get("code") if status != 200 else None
            good = status == 502 and not runs
            ok &= good
            print(f"\n== upstream cut after the arguments ({mode}): {status}, error code {code!r}, tools run: "
                  f"{len(runs)}  {'ok (failed closed)' if good else 'WRONG'}")
            runs.clear()

        upstream.script[:] = ["tool_call", "final_after_tools", "tool_call", "final_after_tools"]
        try:
            sdk = [_sdk_text(base, stream) for stream in (False, True)]
        except Exception as exc:  # noqa: BLE001 - the SDK's own words are the demonstration
            sdk = [f"the SDK failed: {exc}"] * 2
        if sdk[0] is None:
            print("\n(the official openai SDK is not installed: `pip install openai` to drive the proxy with it too)")
        else:
            good = all(t == "Paris: light rain, 14 C; Lisbon: sunny, 21 C." for t in sdk)
            ok &= good
            print(f"\n== the official openai SDK: responses.create -> {sdk[0]!r}; responses.stream -> {sdk[1]!r}"
                  f"  {'ok' if good else 'WRONG'}")
    finally:
        for server in (proxy, upstream):
            server.shutdown()
            server.server_close()
    print("\nall scenarios behaved as the chapter says" if ok else "\nsome scenarios did not behave as the chapter says")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
