// Your own tests for ag01. `course selftest` runs every test of the .test.ts files in this folder
// on the course's reference, where each must pass, and then on every pitfall mutant of the
// chapter, each of which should make at least one of them fail; `course check` leaves them out.
// On your own code: `npx tsc -p .` in ts/ (with the tools of tsconfig.json installed), then
// `node --test build/test/`. Here is one to start from; it uses the chapter's interface only, the
// one thing the reference, the mutants and your code have in common.

import assert from "node:assert/strict";
import { test } from "node:test";

import { EventReader } from "../agent/provider/sse.js";

/** A body that gives one byte per read, the smallest pieces TCP can cut it into. */
function oneByteAtATime(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at < bytes.length) {
        controller.enqueue(bytes.subarray(at, ++at));
      } else {
        controller.close();
      }
    },
  });
}

test("two events read one byte at a time", async () => {
  const events: string[] = [];
  for await (const event of new EventReader(oneByteAtATime("data: one\n\ndata: two\ndata: lines\n\n"))) {
    events.push(event.data);
  }
  assert.deepEqual(events, ["one", "two\nlines"], "the events' data, whatever the read size");
});
