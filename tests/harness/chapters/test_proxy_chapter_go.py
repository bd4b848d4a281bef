"""Chapter ag03's Go track end to end: the learner's loop on it, and the official openai SDK reading
the Go reference proxy's answers in every mode, as it reads the real API's, with its default retries,
at one tool execution per request.

The Go reference is built into a program of ours (a small main put beside the reference with
`go build -overlay`, nothing written into the reference) that serves the proxy on 127.0.0.1 in front
of the given HTTP upstream, with get_weather counted through the proxy's tool seam (GET /_runs). The
upstream is scripted here, over HTTP, from fixtures/ag03 with the Python catalog's own helpers
(ag03_streams.body), so both tracks are asked the same streams the same way as in
test_proxy_chapter.py, whose modes, failures and strict checks this test shares.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.request import urlopen

import pytest

from conftest import REPO
from course.languages.go import toolchain
from test_proxy_chapter import FAILURES, MODES, TOOLS, _check_strictly, _raw

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="the Go track needs Go on PATH")

CHAPTER = "ag03"
GO_MODULE = REPO / "reference" / "go" / CHAPTER / "go"

# The program: the reference's Proxy on 127.0.0.1, its upstream and mode from the command line; it
# prints its base URL, and ends when its standard input does (the test holds it open).
GO_SERVE = """package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"

	"tinyllm/agent/proxy"
)

func main() {
	upstreamURL := flag.String("upstream", "", "the upstream's base URL")
	policy := flag.String("policy", "", "buffered_final_stream or progress_events")
	forward := flag.Bool("forward-tool-events", false, "forward tool-call events in progress mode")
	flag.Parse()
	upstream, err := proxy.NewHTTPUpstream(*upstreamURL, "", nil, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	runs := []map[string]any{}
	weather := proxy.DemoTools()["get_weather"]
	tools := proxy.Tools{"get_weather": func(ctx context.Context, arguments map[string]any) (string, error) {
		mu.Lock()
		runs = append(runs, arguments)
		mu.Unlock()
		return weather(ctx, arguments)
	}}
	mux := http.NewServeMux()
	mux.Handle("/v1/", &proxy.Proxy{Upstream: upstream, Tools: tools, Policy: proxy.Policy(*policy), ForwardToolEvents: *forward})
	mux.HandleFunc("/_runs", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		json.NewEncoder(w).Encode(runs)
	})
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Printf("http://%s\\n", listener.Addr())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	http.Serve(listener, mux)
}
"""


@pytest.fixture(scope="module")
def go_proxy(tmp_path_factory) -> Path:  # noqa: ANN001
    """The Go reference proxy, built once for the module's tests."""
    folder = tmp_path_factory.mktemp("ag03-go-proxy")
    (folder / "main.go").write_text(GO_SERVE, encoding="utf-8")
    overlay = folder / "overlay.json"
    overlay.write_text(json.dumps({"Replace": {str(GO_MODULE / "cmd" / "ag03-serve" / "main.go"): str(folder / "main.go")}}),
                       encoding="utf-8")
    binary = folder / "ag03-serve"
    built = subprocess.run([toolchain.find().go, "build", "-o", str(binary), "-overlay", str(overlay), "./cmd/ag03-serve"],
                           cwd=GO_MODULE, env=toolchain.environment(dict(os.environ)), capture_output=True, text=True,
                           timeout=900)
    assert built.returncode == 0, f"the Go reference proxy does not build:\n{built.stdout}{built.stderr}"
    return binary


@pytest.fixture(scope="module")
def streams(tmp_path_factory):  # noqa: ANN001, ANN201
    """The Python catalog's stream helpers (ag03_streams), for fixtures/ag03."""
    saved = os.environ.get("COURSE_FIXTURES")
    os.environ["COURSE_FIXTURES"] = str(REPO / "fixtures" / CHAPTER)
    sys.path.append(str(REPO / "tests" / "python" / CHAPTER))
    sys.modules.pop("ag03_streams", None)
    import ag03_streams

    yield ag03_streams
    sys.path.remove(str(REPO / "tests" / "python" / CHAPTER))
    sys.modules.pop("ag03_streams", None)
    if saved is None:
        os.environ.pop("COURSE_FIXTURES", None)
    else:
        os.environ["COURSE_FIXTURES"] = saved


class Upstream(ThreadingHTTPServer):
    """A Responses API on 127.0.0.1 that answers each POST with the next step of its script: bytes (a
    whole event stream), an int (that error status), or ("cut", bytes) (a chunked body whose
    connection closes before its last chunk). It records each request's JSON."""

    daemon_threads = True

    def __init__(self) -> None:
        self.script: list = []
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _UpstreamHandler)

    def play(self, *steps) -> None:  # noqa: ANN002
        with self.lock:
            self.script[:] = steps
            self.requests.clear()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _UpstreamHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests.append(request)
            step = self.server.script.pop(0) if self.server.script else 400
        self.close_connection = True  # and says so (Connection: close): a client must not send on it again
        if isinstance(step, int):
            data = json.dumps({"error": {"message": "scripted failure", "type": "server_error", "code": None}}).encode()
            self.send_response(step)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            return
        cut = isinstance(step, tuple)
        data = step[1] if cut else step
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header(*(("Transfer-Encoding", "chunked") if cut else ("Content-Length", str(len(data)))))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if cut else data)  # a cut body never sends its last chunk

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@contextlib.contextmanager
def upstream_and_proxy(binary: Path, **options) -> Iterator[tuple[Upstream, str]]:  # noqa: ANN003
    """A scripted upstream and the Go proxy in front of it; yields both (the proxy as its base URL)."""
    upstream = Upstream()
    threading.Thread(target=upstream.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    args = [str(binary), "-upstream", upstream.base]
    if options.get("policy"):
        args += ["-policy", options["policy"]]
    if options.get("forward_tool_events"):
        args.append("-forward-tool-events")
    proxy = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proxy.stdout.readline().strip()
        assert line.startswith("http://127.0.0.1:"), f"the Go proxy did not start: {line!r} {proxy.stderr.read()}"
        yield upstream, line + "/v1"
    finally:
        proxy.stdin.close()  # the program's end
        try:
            proxy.wait(10)
        finally:
            proxy.kill()
            proxy.stdout.close()
            proxy.stderr.close()
            upstream.shutdown()
            upstream.server_close()


def tool_runs(base: str) -> list[dict]:
    with urlopen(base.removesuffix("/v1") + "/_runs", timeout=10) as answer:
        return json.loads(answer.read())


def test_the_official_sdk_reads_the_go_proxys_synthesized_answers(go_proxy, streams) -> None:
    openai = pytest.importorskip("openai")
    with upstream_and_proxy(go_proxy) as (upstream, base):
        upstream.play(*[streams.body(n) for n in ("tool_call", "final_after_tools", "tool_call", "final_after_tools", "final_text")])
        client = openai.OpenAI(base_url=base, api_key="offline")
        request = {"model": "gpt-4.1-mini", "input": "Weather in Paris?",
                   "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]}
        answer = client.responses.create(**request)
        assert answer.output_text == "Paris: light rain, 14 C; Lisbon: sunny, 21 C.", answer.output_text
        assert answer.status == "completed" and answer.id == "resp_call1", (answer.status, answer.id)
        assert answer.usage.input_tokens_details.cached_tokens == 32 and answer.usage.input_tokens == 89, answer.usage
        with client.responses.stream(**request) as stream:
            deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
            final = stream.get_final_response()
        assert "".join(deltas) == final.output_text == answer.output_text, (deltas, final.output_text)
        assert json.loads(final.model_dump_json())["usage"] == json.loads(answer.model_dump_json())["usage"]
        assert [t.name for t in final.tools] == ["get_weather"], "the request's tools are echoed"
        assert tool_runs(base) == [{"city": "Paris"}, {"city": "Paris"}], "the tool ran once per request"
        with client.responses.stream(model="gpt-4.1-mini", input="Hi") as stream:  # no tools: passed through
            stateless = stream.get_final_response()
        assert stateless.output_text == "It is raining in Paris.", "pass-through reaches the SDK unchanged"
        assert upstream.requests[-1].get("stream") is True and "tools" not in upstream.requests[-1], upstream.requests[-1]
        client.close()


@pytest.mark.parametrize("mode", list(MODES))
def test_the_official_sdk_with_default_retries_runs_each_go_tool_once(go_proxy, streams, mode) -> None:
    openai = pytest.importorskip("openai")
    options, stream = MODES[mode]
    request = {"model": "gpt-4.1-mini", "input": "Weather in Paris?", "tools": TOOLS}
    with upstream_and_proxy(go_proxy, **options) as (upstream, base):
        for failing in [None, *FAILURES, "upstream 503"]:
            # Every attempt the client could make meets a model that calls the tool, then the failure.
            then = {None: streams.body("final_after_tools"), "upstream 503": 503}.get(failing) or streams.body(failing)
            upstream.play(*[step for attempt in range(3) for step in
                            (streams.body("interleaved_calls" if failing is None else "tool_call", f"a{attempt}"), then)])
            before = len(tool_runs(base))
            client = openai.OpenAI(base_url=base, api_key="offline")  # the SDK's defaults: max_retries=2
            assert client.max_retries == 2
            outcome = "completed"
            try:
                if not stream:
                    final = client.responses.create(**request)
                else:
                    with client.responses.stream(**request) as events:
                        kinds = [e.type for e in events]
                        final = events.get_final_response()
                    assert kinds[0] == "response.created" and kinds[-1] == "response.completed", kinds
            except openai.APIStatusError as error:
                outcome = f"{error.status_code} {error.code}"
                assert error.status_code == 502 and error.response.headers.get("x-should-retry") == "false", outcome
            except RuntimeError as error:  # the SDK's stream helper: a stream that ended in response.failed
                if "response.completed" not in str(error):
                    raise  # the SDK's stream reader refused the stream itself (a duplicate output index, ...)
                outcome = f"failed: {error}"
            client.close()
            runs, requests_made = len(tool_runs(base)) - before, len(upstream.requests)
            # The same request again, raw: every object the proxy writes, read by the SDK's types strictly.
            status, _, data = _raw(base, {**request, "stream": stream})
            per_request = 2 if failing is None else 1  # Paris and Lisbon, or the one call before the failure
            assert runs == per_request, f"{mode}, {failing}: {runs} tool runs for the SDK's request, want {per_request} ({outcome})"
            assert len(tool_runs(base)) - before == 2 * per_request, f"{mode}, {failing}: the raw request ran its tools once too"
            assert requests_made == 2, f"{mode}, {failing}: the SDK's request cost {requests_made} upstream responses ({outcome})"
            if failing is None:
                assert outcome == "completed" and final.output_text.startswith("Paris:") and final.id == "resp_call2_a0", \
                    (outcome, final.id)
                assert final.usage.total_tokens == 55 + 73, final.usage
            else:
                assert outcome != "completed", f"{mode}, {failing}: a failed upstream is never a completed answer"
            assert _check_strictly(status, data, stream) == [], f"{mode}, {failing}: {_check_strictly(status, data, stream)}"


def test_the_official_sdk_sees_a_cut_go_pass_through_as_cut(go_proxy, streams) -> None:
    openai = pytest.importorskip("openai")
    whole = streams.body("final_text")
    with upstream_and_proxy(go_proxy) as (upstream, base):
        upstream.play(("cut", whole[:1000]), whole)
        client = openai.OpenAI(base_url=base, api_key="offline")
        seen = []
        with pytest.raises(openai.APIConnectionError):
            with client.responses.stream(model="gpt-4.1-mini", input="Hi") as stream:
                for event in stream:
                    seen.append(event.type)
        assert seen[:2] == ["response.created", "response.in_progress"] and "response.completed" not in seen, seen
        assert len(upstream.requests) == 1, "the SDK does not retry a stream that began"
        with client.responses.stream(model="gpt-4.1-mini", input="Hi") as stream:
            assert stream.get_final_response().output_text == "It is raining in Paris.", "the proxy serves on after a cut"
        client.close()


def test_the_learner_loop_on_the_go_track(course, learner: Path) -> None:
    assert course("start", CHAPTER, "--language", "go", cwd=learner).code == 0
    vet = subprocess.run(["go", "vet", "./..."], cwd=learner / "go", capture_output=True, text=True, timeout=600)
    assert vet.returncode == 0, f"go vet is not clean on the stubs:\n{vet.stdout}{vet.stderr}"
    stubs = course("check", cwd=learner, timeout=600)
    assert stubs.code == 1 and "0 passed, 36 failed" in stubs.out, stubs.out + stubs.err
    demo = course("run", cwd=learner, timeout=600)
    assert demo.code == 1 and "TODO ag03" in demo.out, "on stubs the demonstration names what is still to write\n" + demo.out
    shutil.copytree(GO_MODULE.parent, learner, dirs_exist_ok=True)
    passing = course("check", cwd=learner, timeout=600)
    assert passing.code == 0 and "36 passed" in passing.out, passing.out + passing.err
    same = course("diff", cwd=learner)
    assert same.code == 0 and "no differences" in same.out, same.out + same.err
    demo = course("run", cwd=learner, timeout=600)
    assert demo.code == 0 and "all scenarios behaved as the chapter says" in demo.out, demo.out + demo.err


def test_the_go_catalog_finds_no_data_race_in_the_reference(tmp_path: Path) -> None:
    """The Go catalog under the race detector, on the reference: the proxy serves requests at once, and
    the catalog's own helpers (the scripted upstream, the tools, the bodies) are shared with its
    handlers. Here and not in `course check` or verify's mutant runs: measured on ag03, the race
    detector costs 5 times the plain run and needs cgo, and over the 62 documented mutants it failed
    exactly the tests the plain run fails, with no report of its own; the one bug of ours it alone
    caught (an unsynchronized counter on the Proxy) it caught in one run of two."""
    if subprocess.run([toolchain.find().go, "env", "CGO_ENABLED"], capture_output=True, text=True).stdout.strip() != "1":
        pytest.skip("the race detector needs cgo")
    tests = REPO / "tests" / "go" / CHAPTER
    overlay = tmp_path / "overlay.json"
    overlay.write_text(json.dumps({"Replace": {str(GO_MODULE / p.relative_to(tests)): str(p) for p in tests.rglob("*_test.go")}}),
                       encoding="utf-8")
    env = toolchain.environment({**os.environ, "COURSE_FIXTURES": str(REPO / "fixtures" / CHAPTER)})
    done = subprocess.run([toolchain.find().go, "test", "-race", "-count=1", "-overlay", str(overlay), "./agent/proxy"],
                          cwd=GO_MODULE, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0 and "DATA RACE" not in done.stdout + done.stderr, done.stdout[-4000:] + done.stderr[-2000:]
