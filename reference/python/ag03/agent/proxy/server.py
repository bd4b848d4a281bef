"""A small HTTP server that puts the proxy's policy in front of an upstream (given).

    python -m agent.proxy.server --upstream http://127.0.0.1:PORT/v1 [--port 0] [--policy progress_events]

POST /v1/responses is answered by policy.handle; the demo tools below are the ones this proxy runs.
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent.proxy.policy import Tools, Upstream, handle
from agent.proxy.upstream import HttpUpstream

MAX_BODY = 1 << 20


def demo_tools() -> Tools:
    """The tools the demonstration proxy runs: deterministic, no network."""
    forecasts = {"Paris": "light rain, 14 C", "Lisbon": "sunny, 21 C"}
    return {"get_weather": lambda args: json.dumps({"city": args.get("city"),
                                                      "forecast": forecasts.get(str(args.get("city")), "unknown")})}


def make_server(upstream: Upstream, tools: Tools, *, port: int = 0, policy: str = "buffered_final_stream",
                forward_tool_events: bool = False) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
            if self.path.rstrip("/") != "/v1/responses":
                return self._send(404, "application/json", [b'{"error": {"message": "not found"}}'])
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                return self._send(400, "application/json", [b'{"error": {"message": "a JSON body is required"}}'])
            try:
                request: Any = json.loads(self.rfile.read(length))
            except ValueError:
                request = None
            if not isinstance(request, dict):
                return self._send(400, "application/json", [b'{"error": {"message": "the body is not a JSON object"}}'])
            reply = handle(request, upstream, tools, policy=policy, forward_tool_events=forward_tool_events)
            self._send(reply.status, reply.content_type, reply.body)

        def _send(self, status: int, content_type: str, body) -> None:  # noqa: ANN001
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Connection", "close")  # the body ends where the connection does
            self.end_headers()
            try:
                for chunk in body:
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except OSError:  # pragma: no cover - a client leaving mid-answer: timing, not logic
                pass  # closing the body (below) closes the upstream too
            finally:
                close = getattr(body, "close", None)
                if close is not None:
                    close()
            self.close_connection = True

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
