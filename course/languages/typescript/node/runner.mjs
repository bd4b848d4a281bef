// Runs catalog tests in this process under node:test, as the harness asks (course.languages.typescript.worker).
//
// The test files import `test` from "node:test" as any test file does, so a bare `node --test` runs
// them too. Here `test` is swapped, while the files load, for a function that only records each
// top-level test; then the tests the harness named are registered with the real one, in its order
// (or an order drawn from a seed). Each test and each of its first-level subtests says, at once and
// synchronously, when it starts and ends on the events pipe: a test that loops forever or ends the
// process still leaves that trace, where node's reporter (reporter.mjs) only speaks later.
//
// COURSE_TS_RUN holds the run as JSON: {"files": [absolute paths of the compiled test files],
// "tests": [names, in order], "shuffle": seed or null, "fd": the events pipe's descriptor}.

import { writeSync } from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { pathToFileURL } from "node:url";

const spec = JSON.parse(process.env.COURSE_TS_RUN ?? "{}");
const say = (record) => writeSync(spec.fd, JSON.stringify(record) + "\n");

const nodeTest = createRequire(import.meta.url)("node:test");
const realTest = nodeTest.test;
const defined = new Map(); // name -> [options, fn], as the files define them

/** test(name, options, fn) in any of the forms node:test accepts, recorded instead of run. */
function record(name, options, fn) {
  if (typeof name === "function") [name, options, fn] = [name.name, {}, name];
  else if (typeof options === "function") [options, fn] = [{}, options];
  defined.set(String(name), [options ?? {}, fn]);
}
for (const alias of ["test", "it"]) {
  nodeTest[alias] = record;
}
syncBuiltinESMExports();
try {
  for (const file of spec.files) {
    await import(pathToFileURL(file).href);
  }
} catch (error) {
  say({ problem: `${error?.stack ?? error}` });
  process.exit(1);
} finally {
  nodeTest.test = nodeTest.it = realTest; // a test that makes tests as it runs gets the real one
  syncBuiltinESMExports();
}

let names = spec.tests.filter((name) => defined.has(name));
if (spec.shuffle !== null && spec.shuffle !== undefined) {
  names = shuffled(names, spec.shuffle);
}
say({ collected: names });
for (const name of names) {
  const [options, fn] = defined.get(name);
  realTest(name, options, traced(fn, name, ""));
}

/** fn, saying when it starts and how it ends; its context's t.test traced as the test's cases. */
function traced(fn, top, sub) {
  const key = sub ? `${top}/${sub}` : top;
  const run = (t, ...rest) => {
    say({ started: key });
    let result;
    try {
      result = fn(sub ? t : casesOf(t, top), ...rest);
    } catch (error) {
      ended(key, error);
      throw error;
    }
    if (typeof result?.then !== "function") {
      ended(key);
      return result;
    }
    return result.then((value) => (ended(key), value), (error) => {
      ended(key, error);
      throw error;
    });
  };
  // node:test passes a done callback to a function that declares a second parameter
  return fn.length >= 2 ? (t, done) => run(t, done) : (t) => run(t);
}

function ended(key, error) {
  say(error === undefined ? { ended: key, ok: true } : { ended: key, ok: false, message: `${error?.message ?? error}`, stack: `${error?.stack ?? ""}` });
}

/** The test's context, with t.test making traced cases (deeper subtests count as their case). */
function casesOf(t, top) {
  const test = (name, options, fn) => {
    if (typeof name === "function") [name, options, fn] = [name.name, {}, name];
    else if (typeof options === "function") [options, fn] = [{}, options];
    return t.test(name, options, traced(fn, top, String(name)));
  };
  return new Proxy(t, {
    get(target, property) {
      if (property === "test") return test;
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** `names` in an order drawn from `seed` (mulberry32, then Fisher-Yates): the same seed, the same order. */
function shuffled(names, seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...names];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
