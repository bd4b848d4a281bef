// The harness's node:test reporter: each test's and each first-level subtest's result as one JSON
// line on the events pipe (the descriptor in COURSE_TS_EVENTS_FD), as `go test -json` gives the Go
// track. Written synchronously, like runner.mjs's start and end lines, so the two never interleave
// mid-line and come in the order they were written. When the run is over the process ends: a
// handle the code under test left open (a timer, a socket) must not keep it alive.

import { writeSync } from "node:fs";
import { inspect } from "node:util";

const fd = Number(process.env.COURSE_TS_EVENTS_FD);
const say = (record) => writeSync(fd, JSON.stringify(record) + "\n");

export default async function* reporter(source) {
  const path = []; // the names of the tests open at each nesting level, in report order
  for await (const { type, data } of source) {
    if (type === "test:start") {
      path.length = data.nesting;
      path.push(data.name);
    } else if ((type === "test:pass" || type === "test:fail") && data.nesting <= 1) {
      // deeper subtests count through the first-level case that holds them
      say({
        result: type === "test:pass" ? "pass" : "fail",
        top: data.nesting === 0 ? data.name : path[0],
        case: data.nesting === 1 ? data.name : "",
        skip: data.skip !== undefined && data.skip !== false,
        todo: data.todo !== undefined && data.todo !== false,
        seconds: (data.details?.duration_ms ?? 0) / 1000,
        ...failure(data.details?.error),
      });
    }
  }
  say({ done: true });
  process.exit(process.exitCode ?? 0);
}

/** What failed: node wraps the test's own error (as `cause`) in an ERR_TEST_FAILURE. An assertion
 * with a message of the test's own ("requests") also gets what it compared ("got 2, want 1"). */
function failure(error) {
  if (!error) return {};
  const cause = error.code === "ERR_TEST_FAILURE" && error.cause !== undefined ? error.cause : error;
  const isError = typeof cause === "object" && cause !== null;
  const compared = isError && cause.code === "ERR_ASSERTION" && !cause.generatedMessage && cause.operator !== "=="
    && cause.operator !== "fail" && "expected" in cause;
  return {
    failureType: error.failureType ?? "",
    name: isError ? `${cause.name ?? ""}` : "",
    message: isError ? `${cause.message ?? ""}` : `${cause}`,
    compared: compared ? `got ${show(cause.actual)}, want ${show(cause.expected)}` : "",
    stack: isError ? `${cause.stack ?? ""}` : "",
  };
}

function show(value) {
  return inspect(value, { depth: 4, breakLength: Infinity, maxArrayLength: 20, maxStringLength: 200 });
}
