"""Demonstration of chapter ag01 (`course run ag01`): one streamed answer through your client.

The course fake model (started by `course run`, its URL in COURSE_FAKE_MODEL_URL) is scripted to
refuse the first request with a 503 and a Retry-After, then to stream a short answer. Your
OpenAIProvider, wrapped by with_retry, asks twice; each delta is printed as it arrives, then what
collect makes of them. No network beyond 127.0.0.1, no API key, no cost.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
from pathlib import Path

PIECES = ["Streams ", "arrive ", "in ", "pieces; ", "the ", "client ", "puts ", "them ", "together."]
USAGE = (14, 9)  # prompt and completion tokens the fake reports
RETRY_AFTER = 0.2  # seconds the fake asks the client to wait after its 503
SCRIPT = [
    {"kind": "http_error", "status": 503, "type": "server_error", "message": "The server is overloaded.",
     "retry_after": str(RETRY_AFTER)},
    {"kind": "turn", "text": PIECES, "usage": list(USAGE)},
]


def _fake(base_url: str, path: str, body: object = None) -> dict:
    """Talk to the fake model's control routes (/_fake/...), beside its API at base_url (.../v1)."""
    root = base_url.rstrip("/").removesuffix("/v1")
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(root + path, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def main() -> int:
    # here, not at the top: code of yours that fails as it is imported is reported like any other failure
    from agent.provider.openai import Config, OpenAIProvider
    from agent.provider.retry import RetryPolicy, with_retry
    from agent.types import Message, Role, collect

    base_url = os.environ.get("COURSE_FAKE_MODEL_URL", "")
    if not base_url:
        print("COURSE_FAKE_MODEL_URL is not set: run this with `course run ag01`, which starts the course fake model.")
        return 2
    print(f"ag01 demonstration: the course fake model at {base_url}, through your client with retry.")
    print(f"code under test: {Path(sys.modules[OpenAIProvider.__module__].__file__).resolve().parents[2]}")
    _fake(base_url, "/_fake/script", SCRIPT)
    print(f"scripted: the first request gets HTTP 503 with Retry-After: {RETRY_AFTER:g}; the next one a streamed answer.\n")

    def sleep(seconds: float) -> None:
        print(f"  retry: waiting {seconds:g} s, as the server asked, then asking again")
        time.sleep(min(seconds, 2.0))

    provider = with_retry(OpenAIProvider(Config(base_url=base_url, model="course-demo", timeout=10)),
                          RetryPolicy(max_attempts=3, sleep=sleep))
    question = [Message(role=Role.USER, content="How do streamed answers arrive?")]
    deltas = []
    for delta in provider.chat_stream(question):
        print(f"  delta: {delta!r}")
        deltas.append(delta)
    message, usage = collect(deltas)
    requests = len(_fake(base_url, "/_fake/state")["requests"])
    print(f"\ncollected: {message.content!r}")
    print(f"usage: {usage.input_tokens} in, {usage.output_tokens} out; the fake model received {requests} requests")
    if message.content != "".join(PIECES) or requests != 2:
        print(f"not what was scripted: the text {''.join(PIECES)!r} after exactly 2 requests (one refused, one answered)")
        return 1
    return 0


if __name__ == "__main__":
    # code of yours that raises (a stub not written yet) is one line from `course run`, not a traceback
    raise SystemExit(main())
