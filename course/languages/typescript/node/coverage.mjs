// Reads what a run's V8 coverage (NODE_V8_COVERAGE) says about the code under test, through the
// compiled files' source maps, and prints it per TypeScript file as JSON (course.languages.typescript.coverage).
//
// argv[2] is a JSON request: {"v8": the coverage folder, "out": the compiled folder, "files": {the
// TypeScript source's absolute path: the name to report it by}, "toolchain": the installed tools' folder}.
// A line is a statement when code was compiled from it (the source map says so: comments, blank lines
// and type declarations are not); it is missing when no execution covered it.
// A branch is a block of code V8 counted on its own (a function body, either side of an if, a
// case, the right side of ?? or ||); it is missing when it never ran, named by its line and the
// line where it begins (or by its line twice).

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const request = JSON.parse(process.argv[2]);
const requireTool = createRequire(join(request.toolchain, "package.json"));
const v8toIstanbul = requireTool("v8-to-istanbul");
const { TraceMap, eachMapping } = createRequire(requireTool.resolve("v8-to-istanbul"))("@jridgewell/trace-mapping");
const out = pathToFileURL(request.out).href + "/";

const runs = new Map(); // compiled file's url -> [V8 function coverage of each process that ran it]
for (const name of readdirSync(request.v8).filter((n) => n.endsWith(".json"))) {
  for (const script of JSON.parse(readFileSync(join(request.v8, name), "utf8")).result ?? []) {
    if (script.url.startsWith(out) && script.url.endsWith(".js")) {
      if (!runs.has(script.url)) runs.set(script.url, []);
      runs.get(script.url).push(script.functions);
    }
  }
}

const merged = new Map(); // source path -> {lines: Map line -> covered, blocks: Map "line:col" -> [line, covered]}
const compiled = new Map(); // source path -> the lines code was compiled from
for (const [url, coverages] of runs) {
  const path = fileURLToPath(url);
  const map = new TraceMap(readFileSync(`${path}.map`, "utf8"), url);
  eachMapping(map, ({ source, originalLine }) => {
    if (source === null) return;
    const file = fileURLToPath(source);
    if (!compiled.has(file)) compiled.set(file, new Set());
    compiled.get(file).add(originalLine);
  });
  const converter = v8toIstanbul(path, 0);
  await converter.load();
  for (const functions of coverages) {
    converter.applyCoverage(functions);
  }
  for (const [path, file] of Object.entries(converter.toIstanbul())) {
    if (!(path in request.files)) continue;
    const into = merged.get(path) ?? { lines: new Map(), blocks: new Map() };
    merged.set(path, into);
    const code = compiled.get(path) ?? new Set();
    for (const [id, where] of Object.entries(file.statementMap)) {
      const line = where.start.line;
      if (code.has(line)) {
        into.lines.set(line, (into.lines.get(line) ?? false) || file.s[id] > 0);
      }
    }
    for (const [id, branch] of Object.entries(file.branchMap)) {
      branch.locations.forEach((where, arm) => {
        const key = `${where.start.line}:${where.start.column}`;
        const before = into.blocks.get(key);
        into.blocks.set(key, [branch.line ?? where.start.line, where.start.line, (before?.[2] ?? false) || file.b[id][arm] > 0]);
      });
    }
  }
}

const report = {};
for (const [path, { lines, blocks }] of merged) {
  const statements = [...lines.keys()].sort((a, b) => a - b);
  const missingBranches = [...blocks.values()].filter(([, , ran]) => !ran).map(([from, to]) => [from, to]);
  report[request.files[path]] = {
    statements,
    missing: statements.filter((line) => !lines.get(line)),
    branches: blocks.size,
    missing_branches: missingBranches.sort((a, b) => a[0] - b[0] || a[1] - b[1]),
  };
}
process.stdout.write(JSON.stringify(report));
