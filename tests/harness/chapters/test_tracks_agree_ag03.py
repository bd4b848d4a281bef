"""Both tracks of ag03 give the same verdict on the same stream: every authored stream of
fixtures/ag03 goes through the Python reference's reader and state (in this process) and the Go
reference's (a test of ours built beside the Go catalog's helpers), read 1, 7 and 65,536 bytes at a
time, as recorded and with its line ends written as CRLF, as lone CRs, and after a BOM; what each
amounts to (the failure's code, or the text, the refusal and the calls) must be the same.

Each side reads the fixtures with its own catalog's helpers (the Python catalog's `body` and
`pieces`, the Go catalog's `body` and `outcome`), so this test adds no third reading of them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course.languages.go import toolchain
from tests.harness.conftest import REPO, reference_package
from test_tracks_agree_ag01 import variants

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="comparing the tracks needs Go on PATH")

FIXTURES = REPO / "fixtures" / "ag03"
READ_SIZES = (1, 7, 65536)
GO_MODULE = REPO / "reference" / "go" / "ag03" / "go"
GO_CATALOG = REPO / "tests" / "go" / "ag03" / "agent" / "proxy"
PY_CATALOG = REPO / "tests" / "python" / "ag03"


def cases(names: list[str], bodies: dict[str, bytes]) -> dict[str, tuple[bytes, int]]:
    """Every stream, in each of its variants, at each read size: key -> (body, read size)."""
    out = {}
    for name in names:
        for how, text in variants(bodies[name].decode("utf-8")).items():
            for size in READ_SIZES:
                out[f"{name}, {how}, reads of {size}"] = (text.encode("utf-8"), size)
    return out


def python_form(all_cases: dict[str, tuple[bytes, int]], pieces) -> dict[str, dict]:  # noqa: ANN001
    with reference_package("ag03"):
        from agent.proxy.errors import FailClosed
        from agent.proxy.sse import read_events
        from agent.proxy.state import StreamState

        out = {}
        for key, (data, size) in all_cases.items():
            state = StreamState()
            try:
                for event in read_events(pieces(data, size)):
                    state.feed(event)
                turn = state.finish()
                out[key] = {"text": turn.text, "refusal": turn.refusal,
                            "calls": [[c.call_id, c.name, c.arguments] for c in turn.calls]}
            except FailClosed as failure:
                out[key] = {"failure": failure.code}
        return out


# The Go side: a test of its own beside the catalog's helpers (helpers_test.go, overlaid on the
# reference module with `go test -overlay`, as the Go adapter builds the catalog), which writes what it
# produces as JSON. Nothing is written into the reference.
GO_DUMP = """package proxy_test

import (
	"encoding/json"
	"os"
	"testing"
)

func TestTracksAgreeDump(t *testing.T) {
	var cases map[string]struct {
		Body []byte
		Size int
	}
	raw, err := os.ReadFile(os.Getenv("TRACKS_AGREE_CASES"))
	if err == nil {
		err = json.Unmarshal(raw, &cases)
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for key, c := range cases {
		turn, code := outcome(c.Body, c.Size)
		if code != "" {
			out[key] = map[string]any{"failure": code}
			continue
		}
		calls := [][]string{}
		for _, call := range turn.Calls {
			calls = append(calls, []string{call.CallID, call.Name, call.Arguments})
		}
		out[key] = map[string]any{"text": turn.Text, "refusal": turn.Refusal, "calls": calls}
	}
	raw, err = json.Marshal(out)
	if err == nil {
		err = os.WriteFile(os.Getenv("TRACKS_AGREE_OUT"), raw, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}
"""


def go_form(all_cases: dict[str, tuple[bytes, int]], folder: Path) -> dict[str, dict]:
    dump = folder / "tracks_agree_test.go"
    dump.write_text(GO_DUMP, encoding="utf-8")
    overlay = folder / "overlay.json"
    replace = {str(GO_MODULE / "agent" / "proxy" / "helpers_test.go"): str(GO_CATALOG / "helpers_test.go"),
               str(GO_MODULE / "agent" / "proxy" / "tracks_agree_test.go"): str(dump)}
    overlay.write_text(json.dumps({"Replace": replace}), encoding="utf-8")
    import base64

    given = folder / "cases.json"  # []byte is base64 in Go's JSON
    given.write_text(json.dumps({k: {"Body": base64.b64encode(b).decode(), "Size": n} for k, (b, n) in all_cases.items()}),
                     encoding="utf-8")
    out = folder / "go.json"
    env = toolchain.environment({**os.environ, "COURSE_FIXTURES": str(FIXTURES), "TRACKS_AGREE_CASES": str(given),
                                 "TRACKS_AGREE_OUT": str(out)})
    done = subprocess.run([toolchain.find().go, "test", "-count=1", "-overlay", str(overlay), "-run", "^TestTracksAgreeDump$",
                           "./agent/proxy"], cwd=GO_MODULE, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"the Go side did not run:\n{done.stdout}\n{done.stderr}"
    return json.loads(out.read_text(encoding="utf-8"))


def test_both_references_read_every_stream_alike(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("COURSE_FIXTURES", str(FIXTURES))
    monkeypatch.syspath_prepend(str(PY_CATALOG))
    monkeypatch.delitem(sys.modules, "ag03_streams", raising=False)
    import ag03_streams

    names = list(ag03_streams.STREAMS)
    bodies = {name: ag03_streams.body(name) for name in names}
    all_cases = cases(names, bodies)
    python, go = python_form(all_cases, ag03_streams.pieces), go_form(all_cases, tmp_path)
    assert python.keys() == go.keys(), f"the two sides ran different cases: {sorted(python.keys() ^ go.keys())[:5]}"
    differ = [f"{key}:\n  python: {python[key]}\n  go:     {go[key]}" for key in sorted(python) if python[key] != go[key]]
    assert not differ, f"{len(differ)} of {len(python)} cases differ between the tracks:\n" + "\n".join(differ[:5])
    # and the streams say what they were written to say: some complete, most fail closed
    outcomes = {name: python[f"{name}, as recorded, reads of 65536"] for name in names}
    assert outcomes["tool_call"]["calls"] == [["call_paris", "get_weather", '{"city":"Paris"}']], outcomes["tool_call"]
    assert outcomes["cut_after_arguments"] == {"failure": "missing_terminal"}, outcomes["cut_after_arguments"]
