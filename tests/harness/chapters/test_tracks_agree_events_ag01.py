"""The three references of ag01 (Python, Go, TypeScript) read the chapter's shared fixtures
(fixtures/ag01/streams.json) the same way: the same server-sent events (data, type, last id) and
the same deltas, whatever the read size. Each track's catalog checks its reference against the
fixtures' expected deltas; this test checks the three against each other, events included, so a
difference that the deltas hide (an event type, an id) shows too."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness.conftest import REPO, reference_package

pytestmark = pytest.mark.skipif(shutil.which("go") is None or shutil.which("node") is None,
                                reason="comparing the three references needs Go and Node.js on PATH")

READ_SIZES = [1, 7, 65536]

GO_PROGRAM = """\
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"tinyllm/agent/provider"
	"tinyllm/agent/types"
)

type chunked struct {
	data []byte
	size int
}

func (r *chunked) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(r.size, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

func neutral(d types.Delta) map[string]any {
	switch d := d.(type) {
	case types.TextDelta:
		return map[string]any{"type": "text", "text": d.Text}
	case types.ToolCallStartDelta:
		return map[string]any{"type": "tool_start", "index": d.Index, "id": d.ID, "name": d.Name}
	case types.ToolCallArgsDelta:
		return map[string]any{"type": "tool_args", "index": d.Index, "fragment": d.Fragment}
	case types.ToolCallEndDelta:
		return map[string]any{"type": "tool_end", "index": d.Index, "id": d.Call.ID, "name": d.Call.Name, "arguments": string(d.Call.Args)}
	case types.UsageDelta:
		return map[string]any{"type": "usage", "input": d.In, "output": d.Out}
	case types.DoneDelta:
		return map[string]any{"type": "done", "finish_reason": d.FinishReason}
	case types.ErrorDelta:
		var se *provider.StreamError
		if errors.Is(d.Err, provider.ErrNoDone) {
			return map[string]any{"type": "error", "error": "stream_cut"}
		} else if errors.As(d.Err, &se) {
			return map[string]any{"type": "error", "error": "stream_error", "error_type": se.Type, "message": se.Message}
		}
		return map[string]any{"type": "error", "error": "other"}
	}
	return map[string]any{"type": fmt.Sprintf("%T", d)}
}

func main() {
	var cases []struct {
		Body string `json:"body"`
		Size int    `json:"size"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		panic(err)
	}
	out := []any{}
	for _, c := range cases {
		reader := provider.NewEventReader(&chunked{[]byte(c.Body), c.Size})
		decoder := provider.NewDecoder()
		events, deltas, finished := []any{}, []any{}, false
		for {
			data, err := reader.Next()
			if err != nil {
				break
			}
			events = append(events, []string{string(data), reader.Type(), reader.LastID()})
			if !finished {
				ds, done := decoder.Event(data)
				for _, d := range ds {
					deltas = append(deltas, neutral(d))
				}
				finished = done
			}
		}
		if !finished {
			deltas = append(deltas, neutral(types.ErrorDelta{Err: provider.ErrNoDone}))
		}
		out = append(out, map[string]any{"events": events, "deltas": deltas})
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
"""

TS_PROGRAM = """\
import { readFileSync } from "node:fs";

import type { Delta } from "./agent/types.js";
import { StreamCutError, StreamError } from "./agent/provider/errors.js";
import { Decoder, EventReader } from "./agent/provider/sse.js";

function neutral(d: Delta): Record<string, unknown> {
  switch (d.type) {
    case "text": return { type: "text", text: d.text };
    case "tool_call_start": return { type: "tool_start", index: d.index, id: d.id, name: d.name };
    case "tool_call_args": return { type: "tool_args", index: d.index, fragment: d.fragment };
    case "tool_call_end": return { type: "tool_end", index: d.index, id: d.call.id, name: d.call.name, arguments: d.call.arguments };
    case "usage": return { type: "usage", input: d.inputTokens, output: d.outputTokens };
    case "done": return { type: "done", finish_reason: d.finishReason };
    case "error":
      if (d.error instanceof StreamCutError) return { type: "error", error: "stream_cut" };
      if (d.error instanceof StreamError) return { type: "error", error: "stream_error", error_type: d.error.type, message: d.error.serverMessage };
      return { type: "error", error: "other" };
  }
}

function chunked(data: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= data.length) {
        controller.close();
      } else {
        controller.enqueue(data.slice(at, at + size));
        at += size;
      }
    },
  }, { highWaterMark: 0 });
}

const cases = JSON.parse(readFileSync(0, "utf8")) as { body: string; size: number }[];
const out = [];
for (const { body, size } of cases) {
  const decoder = new Decoder();
  const events: string[][] = [];
  const deltas: Record<string, unknown>[] = [];
  let finished = false;
  for await (const event of new EventReader(chunked(new TextEncoder().encode(body), size))) {
    events.push([event.data, event.event, event.id]);
    if (!finished) {
      const decoded = decoder.decode(event.data);
      deltas.push(...decoded.deltas.map(neutral));
      finished = decoded.finished;
    }
  }
  if (!finished) {
    deltas.push(neutral({ type: "error", error: new StreamCutError() }));
  }
  out.push({ events, deltas });
}
process.stdout.write(JSON.stringify(out));
"""


def _cases() -> list[dict]:
    streams = json.loads((REPO / "fixtures" / "ag01" / "streams.json").read_text(encoding="utf-8"))
    bodies = [("hand_example", streams["hand_example"]["body"])] + [(s["name"], s["body"]) for s in streams["streams"]]
    return [{"name": name, "body": body, "size": size} for name, body in bodies for size in READ_SIZES]


def _python(cases: list[dict]) -> list[dict]:
    with reference_package("ag01"):
        from agent.provider import errors, sse
        from agent import types

        def neutral(d) -> dict:  # noqa: ANN001
            kinds = {types.TextDelta: lambda: {"type": "text", "text": d.text},
                     types.ToolCallStartDelta: lambda: {"type": "tool_start", "index": d.index, "id": d.id, "name": d.name},
                     types.ToolCallArgsDelta: lambda: {"type": "tool_args", "index": d.index, "fragment": d.fragment},
                     types.ToolCallEndDelta: lambda: {"type": "tool_end", "index": d.index, "id": d.call.id,
                                                      "name": d.call.name, "arguments": d.call.arguments},
                     types.UsageDelta: lambda: {"type": "usage", "input": d.input_tokens, "output": d.output_tokens},
                     types.DoneDelta: lambda: {"type": "done", "finish_reason": d.finish_reason}}
            if isinstance(d, types.ErrorDelta):
                if isinstance(d.error, errors.StreamCutError):
                    return {"type": "error", "error": "stream_cut"}
                if isinstance(d.error, errors.StreamError):
                    return {"type": "error", "error": "stream_error", "error_type": d.error.type, "message": d.error.message}
                return {"type": "error", "error": "other"}
            return kinds[type(d)]()

        out = []
        for case in cases:
            reader = sse.EventReader(io.BufferedReader(io.BytesIO(case["body"].encode())), read_size=case["size"])
            decoder, events, deltas, finished = sse.Decoder(), [], [], False
            for event in reader:
                events.append([event.data, event.event, event.id])
                if not finished:
                    produced, finished = decoder.decode(event.data)
                    deltas += [neutral(d) for d in produced]
            if not finished:
                deltas.append(neutral(types.ErrorDelta(errors.StreamCutError())))
            out.append({"events": events, "deltas": deltas})
        return out


def _go(cases: list[dict], folder: Path) -> list[dict]:
    module = folder / "go"
    module.mkdir()
    reference = REPO / "reference" / "go" / "ag01" / "go"
    (module / "go.mod").write_text(f"module compare\n\ngo 1.22\n\nrequire tinyllm v0.0.0\n\nreplace tinyllm => {reference}\n")
    (module / "main.go").write_text(GO_PROGRAM)
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOWORK": "off", "GOTOOLCHAIN": "local"}
    done = subprocess.run(["go", "run", "."], cwd=module, input=json.dumps(cases), capture_output=True, text=True,
                          env=env, timeout=900, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _typescript(cases: list[dict], folder: Path) -> list[dict]:
    from course.languages.typescript import build, toolchain

    tools = toolchain.find()
    source = folder / "ts"
    shutil.copytree(REPO / "reference" / "typescript" / "ag01" / "ts" / "agent", source / "agent")
    (source / "compare.ts").write_text(TS_PROGRAM)
    (source / "package.json").write_text('{"type": "module"}\n')
    options = {**build.COMPILER_OPTIONS, "rootDir": ".", "outDir": str(folder / "out"),
               "typeRoots": [str(tools.tools / "node_modules" / "@types")]}
    (source / "tsconfig.json").write_text(json.dumps({"compilerOptions": options, "include": ["**/*.ts"]}))
    compiled = subprocess.run([*tools.tsc, "-p", str(source / "tsconfig.json")], capture_output=True, text=True, timeout=300,
                              check=False)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    (folder / "out" / "package.json").write_text('{"type": "module"}\n')
    done = subprocess.run([tools.node, str(folder / "out" / "compare.js")], input=json.dumps(cases), capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_three_references_read_the_fixtures_alike(tmp_path: Path) -> None:
    cases = _cases()
    python, go, typescript = _python(cases), _go(cases, tmp_path), _typescript(cases, tmp_path)
    assert len(python) == len(go) == len(typescript) == len(cases) == 21, "seven bodies at three read sizes each"
    expected = {s["name"]: s["expected"]["deltas"]
                for s in json.loads((REPO / "fixtures" / "ag01" / "streams.json").read_text())["streams"]}
    for case, p, g, t in zip(cases, python, go, typescript):
        where = f"{case['name']} read {case['size']} byte(s) at a time"
        assert p["events"], f"{where}: the Python reference read no event"
        assert p["events"] == g["events"] == t["events"], (
            f"{where}: the events differ\n  python: {p['events']}\n  go: {g['events']}\n  typescript: {t['events']}")
        assert p["deltas"] == g["deltas"] == t["deltas"], (
            f"{where}: the deltas differ\n  python: {p['deltas']}\n  go: {g['deltas']}\n  typescript: {t['deltas']}")
        if case["name"] in expected:
            assert t["deltas"] == expected[case["name"]], f"{where}: the three agree, but not with the fixture's expected deltas"
