"""A small HTTP server that puts the proxy's policy in front of an upstream (given).

    python -m agent.proxy.server --upstream http://127.0.0.1:PORT/v1 [--port 0] [--policy progress_events]

POST /v1/responses is answered by policy.handle; the demo tools below are the ones this proxy runs.
A body the reply holds whole goes out with its Content-Length; a body produced as it streams goes out
in chunks (Transfer-Encoding: chunked), so that a body cut in the middle (the upstream broke, the proxy
failed) reaches the client without its last chunk: a cut the client can see, never a clean end.
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent.proxy.policy import NOT_RETRYABLE, Reply, Tools, Upstream, handle
from agent.proxy.upstream import HttpUpstream

MAX_BODY = 1 << 20


def demo_tools() -> Tools:
    """The tools the demonstration proxy runs: deterministic, no network."""
    forecasts = {"Paris": "light rain, 14 C", "Lisbon": "sunny, 21 C"}
    return {"get_weather": lambda args: json.dumps({"city": args.get("city"),
                                                      "forecast": forecasts.get(str(args.get("city")), "unknown")})}


def _refusal(status: int, message: str, code: str) -> Reply:
    error = {"message": message, "type": "invalid_request_error" if status < 500 else "server_error", "param": None,
             "code": code}
    return Reply(status, "application/json", [json.dumps({"error": error}).encode()], NOT_RETRYABLE if status >= 500 else ())


def make_server(upstream: Upstream, tools: Tools, *, port: int = 0, policy: str = "buffered_final_stream",
                forward_tool_events: bool = False) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
            if self.path.rstrip("/") != "/v1/responses":
                return self._send(_refusal(404, "not found", "not_found"))
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                return self._send(_refusal(400, "a JSON body is required", "invalid_body"))
            try:
                request: Any = json.loads(self.rfile.read(length))
            except ValueError:
                request = None
            if not isinstance(request, dict):
                return self._send(_refusal(400, "the body is not a JSON object", "invalid_body"))
            try:
                reply = handle(request, upstream, tools, policy=policy, forward_tool_events=forward_tool_events)
            except Exception as exc:  # noqa: BLE001 - a bug, or a tool that raised: an answer, never a traceback
                reply = _refusal(500, f"the proxy failed: {exc!r}", "proxy_error")
            self._send(reply)

        def _send(self, reply: Reply) -> None:
            whole = isinstance(reply.body, (list, tuple))
            data = b"".join(reply.body) if whole else b""
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            for name, value in reply.headers:
                self.send_header(name, value)
            self.send_header(*(("Content-Length", str(len(data))) if whole else ("Transfer-Encoding", "chunked")))
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                if whole:
                    self.wfile.write(data)
                    return
                for chunk in reply.body:
                    if chunk:  # an empty chunk would read as the end of the body
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.write(b"0\r\n\r\n")  # the last chunk: the body ended whole
            except Exception:  # noqa: BLE001 - the client left, or the body broke: the last chunk never goes out
                pass
            finally:
                close = getattr(reply.body, "close", None)
                if close is not None:
                    close()  # the upstream is closed here, by the proxy, however the answer ended

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet by default
            pass

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


def main() -> None:  # pragma: no cover - the command line, run by hand and by the demo, not by the catalog
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="the upstream base URL, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--policy", default="buffered_final_stream", choices=["buffered_final_stream", "progress_events"])
    parser.add_argument("--forward-tool-events", action="store_true")
    options = parser.parse_args()
    server = make_server(HttpUpstream(options.upstream), demo_tools(), port=options.port, policy=options.policy,
                         forward_tool_events=options.forward_tool_events)
    print(f"proxy on http://127.0.0.1:{server.server_address[1]}/v1 in front of {options.upstream}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":  # pragma: no cover - the command line
    main()
