"""Every track of ag01 gives the same verdict on the same behaviour: the recorded streams of
fixtures/ag01/streams.json go through the Python reference (in this process), the Go reference (a
test program built with the Go toolchain, in a temporary folder) and the TypeScript reference (a
program compiled with the track's pinned TypeScript beside the catalog's helpers, run by node), and
what they produce is compared delta by delta, read by read.

Each side uses its own catalog's helpers to turn deltas into the fixtures' neutral form (the Python
catalog's `neutral` and `read_body`, the Go and TypeScript catalogs' `neutralAll` and `readBody`), so
this test adds no other reading of the fixtures' format. Beside each recorded body, the same body with its line ends
written as CRLF, as lone CRs, and after a BOM must give the same deltas in both tracks too.
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
from tests.harness.conftest import REPO, load_module, reference_package

FIXTURES = REPO / "fixtures" / "ag01"
READ_SIZES = (1, 7, 65536)
GO_MODULE = REPO / "reference" / "go" / "ag01" / "go"
GO_CATALOG = REPO / "tests" / "go" / "ag01" / "agent" / "provider"
PY_CATALOG = REPO / "tests" / "python" / "ag01"


def variants(body: str) -> dict[str, str]:
    """The body as recorded, and with the same lines ended by CRLF, by lone CRs, and after a BOM."""
    lines = body.replace("\r\n", "\n").replace("\r", "\n")  # JSON strings hold no raw CR: only line ends go
    return {"as recorded": body, "CRLF": lines.replace("\n", "\r\n"), "CR": lines.replace("\n", "\r"), "BOM": "\ufeff" + body}


def python_form(streams: dict) -> dict:
    """What the Python reference produces, in the neutral form, keyed like go_form's."""
    with reference_package("ag01"):
        sys.path.insert(0, str(PY_CATALOG))
        saved = os.environ.get("COURSE_FIXTURES")
        os.environ["COURSE_FIXTURES"] = str(FIXTURES)
        try:
            catalog = load_module("ag01_catalog_for_tracks", PY_CATALOG / "test_ag01.py")
            chunked = load_module("ag01_conftest_for_tracks", PY_CATALOG / "conftest.py").ChunkedReader
            from agent.provider import sse

            out: dict = {}
            decoder = sse.Decoder()
            out["hand example, event by event"] = [[catalog.neutral(d) for d in decoder.decode(e["data"])[0]]
                                                   for e in streams["hand_example"]["events"]]
            for stream in streams["streams"]:
                for how, body in variants(stream["body"]).items():
                    for size in READ_SIZES:
                        deltas = catalog.read_body(body.encode("utf-8"), size, chunked)
                        out[f"{stream['name']}, {how}, reads of {size}"] = [catalog.neutral(d) for d in deltas]
            return out
        finally:
            sys.path.remove(str(PY_CATALOG))
            if saved is None:
                os.environ.pop("COURSE_FIXTURES", None)
            else:
                os.environ["COURSE_FIXTURES"] = saved


# The Go side: a test of its own beside the catalog's helpers (helpers_test.go, overlaid on the
# reference module with `go test -overlay`, as the Go adapter builds the catalog), which writes what it
# produces as JSON. Nothing is written into the reference.
GO_DUMP = """package provider_test

import (
	"encoding/json"
	"os"
	"testing"

	"tinyllm/agent/provider"
)

func TestTracksAgreeDump(t *testing.T) {
	var cases []struct {
		Key, Body string
		Size      int
	}
	if err := json.Unmarshal([]byte(os.Getenv("TRACKS_AGREE_CASES")), &cases); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	decoder := provider.NewDecoder()
	var hand [][]any
	for _, e := range loadStreams(t).HandExample.Events {
		deltas, _ := decoder.Event([]byte(e.Data))
		hand = append(hand, neutralAll(deltas))
	}
	out["hand example, event by event"] = hand
	for _, c := range cases {
		out[c.Key] = neutralAll(readBody([]byte(c.Body), c.Size))
	}
	raw, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv("TRACKS_AGREE_OUT"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
}
"""


def go_form(streams: dict, folder: Path) -> dict:
    """What the Go reference produces for the same cases, built and run in `folder`."""
    dump = folder / "tracks_agree_test.go"
    dump.write_text(GO_DUMP, encoding="utf-8")
    overlay = folder / "overlay.json"
    replace = {str(GO_MODULE / "agent" / "provider" / "helpers_test.go"): str(GO_CATALOG / "helpers_test.go"),
               str(GO_MODULE / "agent" / "provider" / "tracks_agree_test.go"): str(dump)}
    overlay.write_text(json.dumps({"Replace": replace}), encoding="utf-8")
    cases = [{"Key": f"{stream['name']}, {how}, reads of {size}", "Body": body, "Size": size}
             for stream in streams["streams"] for how, body in variants(stream["body"]).items() for size in READ_SIZES]
    out = folder / "go.json"
    env = toolchain.environment({**os.environ, "COURSE_FIXTURES": str(FIXTURES), "TRACKS_AGREE_CASES": json.dumps(cases),
                                 "TRACKS_AGREE_OUT": str(out)})
    done = subprocess.run([toolchain.find().go, "test", "-count=1", "-overlay", str(overlay), "-run", "^TestTracksAgreeDump$",
                           "./agent/provider"], cwd=GO_MODULE, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"the Go side did not run:\n{done.stdout}\n{done.stderr}"
    return json.loads(out.read_text(encoding="utf-8"))


# The TypeScript side: a program beside the catalog's helpers (catalog/helpers.ts, compiled with the
# reference package as the TypeScript adapter compiles the catalog), which prints what it produces.
TS_DUMP = """import { readFileSync } from "node:fs";

import { Decoder } from "../agent/provider/sse.js";
import { loadStreams, neutralAll, readBody } from "./helpers.js";

const cases = JSON.parse(readFileSync(0, "utf8")) as { key: string; body: string; size: number }[];
const out: Record<string, unknown> = {};
const decoder = new Decoder();
out["hand example, event by event"] = loadStreams().hand_example.events.map((e) => neutralAll(decoder.decode(e.data).deltas));
for (const c of cases) {
  out[c.key] = neutralAll(await readBody(c.body, c.size));
}
process.stdout.write(JSON.stringify(out));
"""


def typescript_form(streams: dict, folder: Path) -> dict:
    """What the TypeScript reference produces for the same cases, compiled and run in `folder`."""
    from course.languages.typescript import build
    from course.languages.typescript import toolchain as ts_toolchain

    tools = ts_toolchain.find()
    source = folder / "ts"
    shutil.copytree(REPO / "reference" / "typescript" / "ag01" / "ts" / "agent", source / "agent")
    (source / "catalog").mkdir()
    shutil.copy2(REPO / "tests" / "typescript" / "ag01" / "catalog" / "helpers.ts", source / "catalog" / "helpers.ts")
    (source / "catalog" / "tracks-agree.ts").write_text(TS_DUMP, encoding="utf-8")
    (source / "package.json").write_text('{"type": "module"}\n', encoding="utf-8")
    options = {**build.COMPILER_OPTIONS, "rootDir": ".", "outDir": str(folder / "out"),
               "typeRoots": [str(tools.tools / "node_modules" / "@types")]}
    (source / "tsconfig.json").write_text(json.dumps({"compilerOptions": options, "include": ["**/*.ts"]}), encoding="utf-8")
    compiled = subprocess.run([*tools.tsc, "-p", str(source / "tsconfig.json")], capture_output=True, text=True,
                              timeout=300, check=False)
    assert compiled.returncode == 0, f"the TypeScript side did not compile:\n{compiled.stdout}{compiled.stderr}"
    (folder / "out" / "package.json").write_text('{"type": "module"}\n', encoding="utf-8")
    cases = [{"key": f"{stream['name']}, {how}, reads of {size}", "body": body, "size": size}
             for stream in streams["streams"] for how, body in variants(stream["body"]).items() for size in READ_SIZES]
    done = subprocess.run([tools.node, str(folder / "out" / "catalog" / "tracks-agree.js")], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=300, check=False,
                          env=ts_toolchain.environment({"COURSE_FIXTURES": str(FIXTURES)}))
    assert done.returncode == 0, f"the TypeScript side did not run:\n{done.stderr}"
    return json.loads(done.stdout)


FORMS = {"go": (go_form, "go"), "typescript": (typescript_form, "node")}


@pytest.mark.parametrize("language", sorted(FORMS))
def test_the_references_give_the_same_deltas(language: str, tmp_path: Path) -> None:
    form, tool = FORMS[language]
    if shutil.which(tool) is None:
        pytest.skip(f"the {language} reference needs {tool} on PATH")
    streams = json.loads((FIXTURES / "streams.json").read_text(encoding="utf-8"))
    python, other = python_form(streams), form(streams, tmp_path)
    assert python.keys() == other.keys(), f"the two sides ran different cases: {sorted(python.keys() ^ other.keys())[:5]}"
    differ = [f"{key}:\n  python: {python[key]}\n  {language}: {other[key]}" for key in sorted(python) if python[key] != other[key]]
    assert not differ, f"{len(differ)} of {len(python)} cases differ between the tracks:\n" + "\n".join(differ[:5])
    # and both are what the fixtures record
    want = {f"{stream['name']}, {how}, reads of {size}": stream["expected"]["deltas"]
            for stream in streams["streams"] for how in variants(stream["body"]) for size in READ_SIZES}
    want["hand example, event by event"] = [e["deltas"] for e in streams["hand_example"]["events"]]
    wrong = [key for key in sorted(want) if python[key] != want[key]]
    assert not wrong, f"both tracks agree, and differ from streams.json on: {wrong[:5]}"
