"""Both tracks of ag00 give the same verdict on the same behaviour: every sample of fixtures/ag00 goes
through the Python reference and the Go reference, and what they produce is compared.

For each sample: the classification (kind, retryable, the reason where it is data, the calls, the
text) and what running each of its calls as the trusted principal returns. For each ordered pair of
samples A, B: a run of the loop with the replies A, B, then answer_o1, and the default limits: its
status, calls, results, steps, last verdict, denial, answer and every request it sent. And the request
both build for the chapter's question.

Each reference runs in a process of its own (a program of ours built into the Go module through
`go build -overlay`, nothing written into the reference; a Python script with the reference on its
path) and prints the same JSON form. Differences of form that are not behaviour are taken out first:
a function_call_output's text is compared as the JSON value it holds (each language's encoder spaces
it its own way), a reason that is absent is "" (Go's zero value, Python's None), and the reason of
unsupported and invalid_tool_call is a sentence for people, not data, so it is left out.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="comparing the tracks needs Go on PATH")

FIXTURES = REPO / "fixtures" / "ag00"
PYTHON_REFERENCE = REPO / "reference" / "python" / "ag00"
GO_MODULE = REPO / "reference" / "go" / "ag00" / "go"

PYTHON_SIDE = r'''
import json, os, sys
from agent.contract import classify, loop, orders, request

DATA_REASONS = {"http_error", "incomplete", "failed", "refused"}
names = sys.argv[1:]
samples = {n: json.load(open(os.path.join(os.environ["COURSE_FIXTURES"], n + ".json"), encoding="utf-8")) for n in names}


def item(value):
    """An input or output item as a JSON value, a result's output text read as the value it holds."""
    value = json.loads(json.dumps(value))
    if isinstance(value, dict) and value.get("type") == "function_call_output" and isinstance(value.get("output"), str):
        value["output"] = json.loads(value["output"])
    return value


def verdict_form(v):
    kind = v.kind.value
    return {"kind": kind, "retryable": v.retryable,
            "reason": (v.reason or "") if kind in DATA_REASONS else None,
            "calls": [[c.get("id") or "", c.get("call_id"), c.get("name"), c.get("arguments")] for c in v.calls],
            "text": v.text}


def run(replies):
    sent = []

    def send(body):
        sent.append([item(i) for i in body["input"]])
        chosen = samples[replies[len(sent) - 1]]
        return loop.Reply(chosen["http_status"], json.loads(json.dumps(chosen["body"])))

    body = request.build_request("What is the status of order o-1?", model="sample-model")
    o = loop.run_loop(body, send, orders.TRUSTED_PRINCIPAL)
    return {"status": o.status, "calls": o.calls, "results": [item(r) for r in o.results],
            "steps": [[s.turn, s.kind, list(s.executed)] for s in o.steps],
            "verdict": verdict_form(o.verdict) if o.verdict is not None else None,
            "denial": o.denial, "answer": o.answer, "sent": sent}


out = {"request": item(request.build_request("What is the status of order o-1?", model="sample-model")),
       "verdicts": {}, "executed": {}, "runs": {}}
for n in names:
    v = classify.classify_response(json.loads(json.dumps(samples[n]["body"])), samples[n]["http_status"])
    out["verdicts"][n] = verdict_form(v)
    results = [orders.execute_call(c, orders.TRUSTED_PRINCIPAL) for c in v.calls]
    out["executed"][n] = [{"denied": r.denied or "", "payload": r.payload} for r in results]
for a in names:
    for b in names:
        out["runs"][a + " " + b] = run([a, b, "answer_o1"])
print(json.dumps(out))
'''

GO_SIDE = r'''package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"tinyllm/agent/contract"
)

type sample struct {
	HTTPStatus int             `json:"http_status"`
	Body       json.RawMessage `json:"body"`
}

var dataReasons = map[contract.Kind]bool{contract.HTTPError: true, contract.Incomplete: true, contract.Failed: true, contract.Refused: true}

// item is an input or output item as a JSON value, a result's output text read as the value it holds.
func item(raw []byte) any {
	var value any
	if err := json.Unmarshal(raw, &value); err != nil {
		panic(err)
	}
	if m, ok := value.(map[string]any); ok && m["type"] == "function_call_output" {
		if text, ok := m["output"].(string); ok {
			var payload any
			if json.Unmarshal([]byte(text), &payload) == nil {
				m["output"] = payload
			}
		}
	}
	return value
}

func verdictForm(v contract.Verdict) map[string]any {
	calls := [][]string{}
	for _, c := range v.Calls {
		calls = append(calls, []string{c.ID, c.CallID, c.Name, c.Arguments})
	}
	var reason any
	if dataReasons[v.Kind] {
		reason = v.Reason
	}
	return map[string]any{"kind": v.Kind, "retryable": v.Retryable, "reason": reason, "calls": calls, "text": v.Text}
}

func main() {
	names := os.Args[1:]
	samples := map[string]sample{}
	for _, n := range names {
		raw, err := os.ReadFile(filepath.Join(os.Getenv("COURSE_FIXTURES"), n+".json"))
		if err == nil {
			var s sample
			err = json.Unmarshal(raw, &s)
			samples[n] = s
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, n, err)
			os.Exit(1)
		}
	}
	build := func() *contract.Request {
		req, err := contract.BuildRequest("sample-model", "What is the status of order o-1?", contract.OutputTokenBudget)
		if err != nil {
			panic(err)
		}
		return req
	}
	encoded, _ := json.Marshal(build())
	out := map[string]any{"request": item(encoded)}
	verdicts, executed, runs := map[string]any{}, map[string]any{}, map[string]any{}
	for _, n := range names {
		v := contract.Classify(samples[n].HTTPStatus, samples[n].Body)
		verdicts[n] = verdictForm(v)
		results := []any{}
		for _, c := range v.Calls {
			r := contract.ExecuteCall(c, contract.TrustedPrincipal)
			results = append(results, map[string]any{"denied": r.Denied, "payload": r.Payload})
		}
		executed[n] = results
	}
	for _, a := range names {
		for _, b := range names {
			replies := []string{a, b, "answer_o1"}
			sent := []any{}
			model := contract.ModelFunc(func(_ context.Context, req *contract.Request) (contract.Reply, error) {
				input := []any{}
				for _, raw := range req.Input {
					input = append(input, item(raw))
				}
				sent = append(sent, input)
				chosen := samples[replies[len(sent)-1]]
				return contract.Reply{StatusCode: chosen.HTTPStatus, Body: append([]byte(nil), chosen.Body...)}, nil
			})
			o, err := contract.NewLoop(model).Run(context.Background(), build())
			if err != nil {
				panic(err)
			}
			results := []any{}
			for _, r := range o.Results {
				results = append(results, item(r))
			}
			steps := []any{}
			for _, s := range o.Steps {
				steps = append(steps, []any{s.Turn, s.Kind, append([]string{}, s.Executed...)})
			}
			var verdict any
			if o.Verdict != nil {
				verdict = verdictForm(*o.Verdict)
			}
			runs[a+" "+b] = map[string]any{"status": o.Status, "calls": o.Calls, "results": results, "steps": steps,
				"verdict": verdict, "denial": o.Denial, "answer": o.Answer, "sent": sent}
		}
	}
	out["verdicts"], out["executed"], out["runs"] = verdicts, executed, runs
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		panic(err)
	}
}
'''


def _names() -> list[str]:
    return sorted(p.stem for p in FIXTURES.glob("*.json"))


def _python(names: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(PYTHON_REFERENCE), "COURSE_FIXTURES": str(FIXTURES)}
    done = subprocess.run([sys.executable, "-c", PYTHON_SIDE, *names], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _go(names: list[str], folder: Path) -> dict:
    program = folder / "main.go"
    program.write_text(GO_SIDE, encoding="utf-8")
    overlay = folder / "overlay.json"
    overlay.write_text(json.dumps({"Replace": {str(GO_MODULE / "cmd" / "agree" / "main.go"): str(program)}}), encoding="utf-8")
    binary = folder / "agree"
    env = {**os.environ, "GOFLAGS": "-buildvcs=false", "COURSE_FIXTURES": str(FIXTURES)}
    built = subprocess.run(["go", "build", "-overlay", str(overlay), "-o", str(binary), "./cmd/agree"], cwd=GO_MODULE, env=env,
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    done = subprocess.run([str(binary), *names], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _differences(python: object, go: object, where: str = "") -> list[str]:
    """Where the two JSON values differ, as paths, the first few of them."""
    if isinstance(python, dict) and isinstance(go, dict):
        found = []
        for key in sorted(set(python) | set(go)):
            if key not in python or key not in go:
                found.append(f"{where}/{key}: only in {'Go' if key in go else 'Python'}")
            else:
                found += _differences(python[key], go[key], f"{where}/{key}")
        return found
    if isinstance(python, list) and isinstance(go, list) and len(python) == len(go):
        return [d for n, (p, g) in enumerate(zip(python, go)) for d in _differences(p, g, f"{where}[{n}]")]
    return [] if python == go else [f"{where}: Python {json.dumps(python)[:300]}, Go {json.dumps(go)[:300]}"]


def test_both_references_read_the_shared_fixtures_alike(tmp_path: Path) -> None:
    names = _names()
    assert len(names) >= 19 and "answer_o1" in names and "tool_call_o1" in names, names
    python, go = _python(names), _go(names, tmp_path)
    assert len(python["runs"]) == len(names) ** 2, "one run for each ordered pair of samples"
    # the comparison compares something: the runs reach the ends the chapter names
    statuses = {run["status"] for run in python["runs"].values()}
    assert {"answer_ready", "unverified_answer", "permission_denied", "duplicate_call_id", "http_error", "refused",
            "incomplete", "failed", "cancelled", "empty", "unsupported", "invalid_tool_call"} <= statuses, statuses
    differences = _differences(python, go)
    assert not differences, f"{len(differences)} differences between the Python and the Go reference:\n" + "\n".join(differences[:20])
