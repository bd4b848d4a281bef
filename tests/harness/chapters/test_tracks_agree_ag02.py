"""Both tracks of ag02 give the same verdict on the same behaviour: the shared fixtures go through the
Python reference (in this process) and the Go reference (a test of its own, built with the Go
toolchain beside the Go catalog's helpers, nothing written into the reference), and what they
produce is compared.

What is compared: every authored sequence of fixtures/ag02 fed to an assembly event by event (what
each event gives: progress, a decision or a failure code; the decision; every report), the same for
sequences built here at the edges where the two languages differ by default (null against an absent
field, keys in another case, a JSON value that is no object, characters against bytes at the bounds,
a parameterless tool's null arguments); the request both build for the Python catalog's nine-message
history (a call's arguments compared as the JSON value they hold: each language's encoder spaces its
text its own way); and every scenario of scenarios.json through each provider and a small agent loop
(the outcome, the openings, the waits, the tools run, what was reported; a retry's report names the
failure in each language's words, so only its kind is compared).

Each side uses its own catalog's helpers (the Python catalog's ag02_samples, the Go catalog's
helpers_test.go and request_test.go), so this test adds no third reading of the fixtures' format.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from course.languages.go import toolchain
from tests.harness.conftest import REPO, json_differences, load_module, reference_package

FIXTURES = REPO / "fixtures" / "ag02"
GO_MODULE = REPO / "reference" / "go" / "ag02" / "go"
GO_CATALOG = REPO / "tests" / "go" / "ag02" / "agent" / "responses"
PY_CATALOG = REPO / "tests" / "python" / "ag02"
READ_EDIT = [["read", ["path"]], ["edit", ["path", "old", "new"]]]


# ---- the edge cases: (tools as [name, parameters], events as JSON texts), built with the Python
# catalog's own event builders (test_assembly.py) --------------------------------------------------------

@contextmanager
def python_catalog() -> Iterator[object]:
    """Inside the block, the Python reference is importable as `agent` and the Python catalog's
    ag02_samples (given) as it imports it, with COURSE_FIXTURES set; all of it undone afterwards."""
    with reference_package("ag02"):
        sys.path.insert(0, str(PY_CATALOG))
        saved = os.environ.get("COURSE_FIXTURES")
        os.environ["COURSE_FIXTURES"] = str(FIXTURES)
        try:
            samples = load_module("ag02_samples", PY_CATALOG / "ag02_samples.py")  # the catalog imports it by this name
            sys.modules["ag02_samples"] = samples
            yield samples
        finally:
            sys.path.remove(str(PY_CATALOG))
            sys.modules.pop("ag02_samples", None)
            if saved is None:
                os.environ.pop("COURSE_FIXTURES", None)
            else:
                os.environ["COURSE_FIXTURES"] = saved


def edge_cases() -> dict[str, tuple[list, list[str]]]:
    with python_catalog():
        return _edge_cases(load_module("ag02_assembly_for_tracks", PY_CATALOG / "test_assembly.py"))


def _edge_cases(catalog) -> dict[str, tuple[list, list[str]]]:  # noqa: ANN001
    created, call_item, added, delta = catalog.created, catalog.call_item, catalog.added, catalog.delta
    completed, text_delta, one_call = catalog.completed, catalog.text_delta, catalog.one_call

    def case(events: list, tools: list = READ_EDIT) -> tuple[list, list[str]]:
        return tools, [e if isinstance(e, str) else json.dumps(e, ensure_ascii=False) for e in events]

    start = [created()]
    call = added(call_item("fc_1", "call_1", "read"))
    big = '{"path": "' + "é" * 15_988 + '"}'
    cases = {
        "a delta that is null": case(start + [text_delta(None)]),
        "a delta that is absent": case(start + [{"type": "response.output_text.delta"}]),
        "a key in another case": case(start + [{"type": "response.output_text.delta", "delta": "hi", "DELTA": 7, "Delta": None}]),
        "a type in another case only": case(start + [{"Type": "response.in_progress"}]),
        "a response_id that is null": case(start + [call, dict(delta("fc_1", ""), response_id=None)]),
        "a response object without an id": case(start + [{"type": "response.in_progress", "response": {"status": "x"}}]),
        "keys of a response in another case": case(start + [{"type": "response.in_progress", "Response": {"id": "r"}, "RESPONSE_ID": "r"}]),
        "an event that is null": case(start + ["null"]),
        "an event that is a list": case(start + ['["response.in_progress"]']),
        "data that is not JSON": case(start + ["{not json"]),
        "a duplicated key, the last one a string": case(start + ['{"type": "response.output_text.delta", "delta": 5, "delta": "x"}']),
        "a call_id that is null": case(start + [added(dict(call_item("fc_1", "call_1", "read"), call_id=None))]),
        "a done event with null arguments": case(start + [call, delta("fc_1", "{}"),
                                                           {"type": "response.function_call_arguments.done", "item_id": "fc_1", "arguments": None}]),
        "a finished item with null arguments": case(start + [call, {"type": "response.output_item.done", "item": dict(call_item("fc_1", "call_1", "read"), arguments=None)}]),
        "a finished item without arguments": case(start + [call, delta("fc_1", '{"path": "a"}'),
                                                           {"type": "response.output_item.done", "item": {k: v for k, v in call_item("fc_1", "call_1", "read").items() if k != "arguments"}},
                                                           completed([call_item("fc_1", "call_1", "read", '{"path": "a"}', "completed")])]),
        "an output that is null": case(start + [completed(None)]),
        "an output that is an object": case(start + [completed({})]),
        "a text part whose text is null": case(start + [completed([{"type": "message", "content": [{"type": "output_text", "text": None}]}])]),
        "a text part without its text": case(start + [completed([{"type": "message", "content": [{"type": "output_text"}]}])]),
        "an item whose type is null": case(start + [completed([{"id": "x", "type": None}])]),
        "null arguments for a tool without parameters": case(one_call("null", "ping"), READ_EDIT + [["ping", []]]),
        "{} for a tool without parameters": case(one_call("{}", "ping"), READ_EDIT + [["ping", []]]),
        "an argument name in another case": case(one_call('{"PATH": "a.py"}')),
        "a created event with a null id": case([{"type": "response.created", "response": {"id": None}}]),
        "an error event with its detail under error": case(start + [{"type": "error", "error": {"message": "gone"}}]),
        "64,000 characters of é in two deltas": case(start + [text_delta("é" * 40_000), text_delta("é" * 24_000, "refusal")]),
        "64,001 characters of é in two deltas": case(start + [text_delta("é" * 40_000), text_delta("é" * 24_001, "refusal")]),
        "64,000 characters outside the BMP": case(start + [text_delta("😀" * 64_000)]),
        "16,000 characters of é in the arguments": case(one_call(big)),
        "16,001 characters of é in the arguments": case(one_call(big[:-2] + 'é"}')),
    }
    return cases


# ---- the Python side ---------------------------------------------------------------------------------

def python_form(cases: dict) -> dict:
    """What the Python reference produces, in the form go_form gives too."""
    with python_catalog() as samples:
        catalog = load_module("ag02_request_for_tracks", PY_CATALOG / "test_request.py")
        from agent.responses import assembly, provider, request
        from agent.responses.types import Message, OpenFailure, ResponseFailure, ToolSpec

        def feed(tools: list, events: list) -> dict:
            reports: list = []
            asm = assembly.ResponseAssembly(tools, lambda kind, detail: reports.append([kind, detail]))
            said, message = [], None
            for event in events:
                if isinstance(event, str):  # JSON text, as the Go side gets it; not JSON is the transport's malformed_event
                    try:
                        event = json.loads(event)
                    except ValueError:
                        said.append("failure malformed_event")
                        break
                try:
                    decision = asm.accept(event)
                except ResponseFailure as exc:
                    said.append(f"failure {exc.code}")
                    break
                if decision is not None:
                    said.append("decision")
                    message = samples.message_form(decision)
                    break
                said.append("progress")
            return {"events": said, "message": message, "reports": reports}

        out: dict = {}
        for name in samples.sequence_names():
            seq = samples.sequence(name)
            out[f"sequence {name}"] = feed(samples.tools(*seq["tools"]), seq["events"])
        for name, (tools, events) in cases.items():
            out[f"edge: {name}"] = feed([ToolSpec(n, "", tuple(p)) for n, p in tools], events)

        body = request.build_request(catalog.history(), samples.tools(), samples.MODEL)
        for item in body["input"]:
            if item.get("type") == "function_call":
                item["arguments"] = json.loads(item["arguments"])
        out["request"] = body

        data = samples.scenarios()
        for name, spec in data["scenarios"].items():
            openings = []
            for entry in (e for turn in spec["turns"] for e in turn):
                if "stream" in entry:
                    openings.append(samples.replay(entry["stream"]))
                else:
                    openings.append(OpenFailure(entry["open_failure"]["message"], entry["open_failure"]["status"]))
            script = samples.Script(*openings)
            recorder = samples.Recorder()
            adapter = provider.ResponsesProvider(script, samples.MODEL, report=recorder, sleep=recorder.sleep,
                                                 rng=random.Random(0))
            workspace = samples.Workspace(data["files"])
            history = [Message("developer", "Fix the bug."), Message("user", data["question"])]
            try:
                answer = asyncio.run(samples.run_loop(adapter.complete, history, samples.tools(), workspace.execute))
                outcome = "answer " + answer.content
            except Exception as exc:  # noqa: BLE001 - the failure is what is compared
                outcome = "failure " + samples.failure_code(exc)
            out[f"scenario {name}"] = {
                "outcome": outcome, "openings": len(script.requests), "waits": len(recorder.sleeps),
                "ran": [c.name for c in workspace.executed], "files": workspace.files,
                "reports": [[kind, "" if kind == "retry" else detail] for kind, detail in recorder.reports],
                "closes": [s.closed for s in script.streams]}
        return copy.deepcopy(out)


# ---- the Go side -------------------------------------------------------------------------------------

# A test of its own beside the catalog's helpers (overlaid on the reference module with `go test
# -overlay`, as the Go adapter builds the catalog), which writes what it produces as JSON.
GO_DUMP = """package responses_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"tinyllm/agent/responses"
)

func TestTracksAgreeDump(t *testing.T) {
	var cases map[string]struct {
		Tools  []responses.ToolSpec
		Events []string
	}
	raw, err := os.ReadFile(os.Getenv("TRACKS_AGREE_CASES"))
	if err == nil {
		err = json.Unmarshal(raw, &cases)
	}
	if err != nil {
		t.Fatal(err)
	}
	feed := func(tools []responses.ToolSpec, events [][]byte) map[string]any {
		rec := &recorder{}
		asm := responses.NewAssembly(tools, rec.report)
		said, reports := []string{}, [][2]string{}
		var message any
		for _, event := range events {
			decision, err := asm.Accept(event)
			if err != nil {
				said = append(said, "failure "+code(err))
				break
			}
			if decision != nil {
				said, message = append(said, "decision"), messageForm(*decision)
				break
			}
			said = append(said, "progress")
		}
		reports = append(reports, rec.reports...)
		return map[string]any{"events": said, "message": message, "reports": reports}
	}
	out := map[string]any{}
	for _, name := range sequenceNames(t) {
		seq := load(t, name)
		out["sequence "+name] = feed(toolSpecs(t, seq.Tools...), events(t, name))
	}
	for name, c := range cases {
		var evs [][]byte
		for _, e := range c.Events {
			evs = append(evs, []byte(e))
		}
		out["edge: "+name] = feed(c.Tools, evs)
	}

	req, err := responses.BuildRequest(nineMessages(), toolSpecs(t), model, responses.MaxOutputTokens)
	if err != nil {
		t.Fatal(err)
	}
	body := asJSON(t, req)
	for _, item := range body["input"].([]any) {
		if m := item.(map[string]any); m["type"] == "function_call" {
			var arguments any
			json.Unmarshal([]byte(m["arguments"].(string)), &arguments)
			m["arguments"] = arguments
		}
	}
	out["request"] = body

	var data struct {
		Files     map[string]string `json:"files"`
		Question  string            `json:"question"`
		Scenarios map[string]struct {
			Turns [][]struct {
				Stream      string `json:"stream"`
				OpenFailure *struct {
					Status  *int   `json:"status"`
					Message string `json:"message"`
				} `json:"open_failure"`
			} `json:"turns"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(fixture(t, "scenarios"), &data); err != nil {
		t.Fatal(err)
	}
	for name, spec := range data.Scenarios {
		var openings []any
		var streams []*replayStream
		for _, turn := range spec.Turns {
			for _, entry := range turn {
				if entry.OpenFailure == nil {
					s := replay(t, entry.Stream)
					streams = append(streams, s)
					openings = append(openings, s)
					continue
				}
				failure := &responses.OpenError{Message: entry.OpenFailure.Message}
				if entry.OpenFailure.Status != nil {
					failure.Status = *entry.OpenFailure.Status
				}
				openings = append(openings, failure)
			}
		}
		sc := newScript(openings...)
		rec := &recorder{}
		ws := newWorkspace(data.Files)
		history := []responses.Message{{Role: responses.RoleDeveloper, Content: "Fix the bug."}, {Role: responses.RoleUser, Content: data.Question}}
		answer, err := runLoop(context.Background(), newProvider(sc, rec, nil), history, toolSpecs(t), ws.execute)
		outcome := "answer " + answer.Content
		if err != nil {
			outcome = "failure " + failureCode(err)
		}
		ran, reports, closes := []string{}, [][2]string{}, []int{}
		for _, c := range ws.executed {
			ran = append(ran, c.Name)
		}
		for _, r := range rec.reports {
			if r[0] == "retry" {
				r[1] = ""
			}
			reports = append(reports, r)
		}
		for _, s := range streams[:min(len(streams), sc.requestCount())] {
			_, closed, _ := s.counts()
			closes = append(closes, closed)
		}
		out["scenario "+name] = map[string]any{"outcome": outcome, "openings": sc.requestCount(), "waits": len(rec.sleeps),
			"ran": ran, "files": ws.files, "reports": reports, "closes": closes}
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


def go_form(cases: dict, folder: Path) -> dict:
    """What the Go reference produces for the same cases, built and run in `folder`."""
    dump = folder / "tracks_agree_test.go"
    dump.write_text(GO_DUMP, encoding="utf-8")
    package = GO_MODULE / "agent" / "responses"
    replace = {str(package / name): str(GO_CATALOG / name) for name in ("helpers_test.go", "request_test.go")}
    replace[str(package / "tracks_agree_test.go")] = str(dump)
    overlay = folder / "overlay.json"
    overlay.write_text(json.dumps({"Replace": replace}), encoding="utf-8")
    given = folder / "cases.json"
    given.write_text(json.dumps({name: {"Tools": [{"Name": n, "Parameters": p} for n, p in tools], "Events": events}
                                 for name, (tools, events) in cases.items()}, ensure_ascii=False), encoding="utf-8")
    out = folder / "go.json"
    env = toolchain.environment({**os.environ, "COURSE_FIXTURES": str(FIXTURES), "TRACKS_AGREE_CASES": str(given),
                                 "TRACKS_AGREE_OUT": str(out)})
    done = subprocess.run([toolchain.find().go, "test", "-count=1", "-overlay", str(overlay), "-run", "^TestTracksAgreeDump$",
                           "./agent/responses"], cwd=GO_MODULE, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"the Go side did not run:\n{done.stdout}\n{done.stderr}"
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.skipif(shutil.which("go") is None, reason="the Go reference needs Go on PATH (the Python side alone compares nothing)")
def test_both_references_give_the_same_verdicts(tmp_path: Path) -> None:
    cases = edge_cases()
    python, go = python_form(cases), go_form(cases, tmp_path)
    assert python.keys() == go.keys(), f"the two sides ran different cases: {sorted(python.keys() ^ go.keys())[:5]}"
    differences = json_differences(python, go)
    assert not differences, f"{len(differences)} differences between the Python and the Go reference:\n" + "\n".join(differences[:20])
    # the comparison compares something: the cases reach the ends the chapter names
    ends = {json.dumps(v["events"][-1:]) for k, v in python.items() if k.startswith(("sequence", "edge"))}
    for end in ("decision", "progress", "failure malformed_event", "failure preview_limit", "failure argument_limit",
                "failure call_mismatch", "failure bad_arguments", "failure identity_mismatch", "failure unsupported_item"):
        assert json.dumps([end]) in ends, f"no case ends with {end}: the comparison would miss it"
    outcomes = {python[f"scenario {n}"]["outcome"] for n in ("happy", "retry", "disconnect", "malformed", "output-limit")}
    assert outcomes == {"answer add() now returns a + b.", "failure transport", "failure stream_ended", "failure bad_arguments",
                        "failure incomplete"}, outcomes
