// The demonstration of chapter ag01 (`course run ag01`): one streamed answer through your client.
//
// The course fake model (started by `course run`, its URL in COURSE_FAKE_MODEL_URL) is scripted to
// refuse the first request with a 503 and a Retry-After, then to stream a short answer. Your
// OpenAIProvider, wrapped by withRetry, asks twice; each delta is printed as it arrives, then what
// collect makes of them. No network beyond 127.0.0.1, no API key, no cost.
//
// `course run` compiles this file with your package (as catalog/demo.ts beside your agent/
// folder), so it imports your modules exactly as a program of yours would.

import { inspect } from "node:util";

import type { Delta, DeltaStream } from "../agent/types.js";

const PIECES = ["Streams ", "arrive ", "in ", "pieces; ", "the ", "client ", "puts ", "them ", "together."];
const RETRY_AFTER = "0.2"; // seconds the fake asks the client to wait after its 503

async function main(): Promise<number> {
  const base = process.env.COURSE_FAKE_MODEL_URL;
  if (!base) {
    console.log("COURSE_FAKE_MODEL_URL is not set: run this with `course run ag01`, which starts the course fake model.");
    return 2;
  }
  console.log(`ag01 demonstration: the course fake model at ${base}, through your client with retry.`);
  console.log(`code under test: ${process.cwd()}`); // course run starts the program in the package's folder
  // imported here, not at the top: code of yours that fails as it loads is reported like any other failure
  let modules;
  try {
    modules = {
      types: await import("../agent/types.js"),
      openai: await import("../agent/provider/openai.js"),
      retry: await import("../agent/provider/retry.js"),
    };
  } catch (error) {
    return said("loading your modules", error);
  }
  const { types, openai, retry } = modules;
  await control(base, "/_fake/script", [
    { kind: "http_error", status: 503, type: "server_error", message: "The server is overloaded.", retry_after: RETRY_AFTER },
    { kind: "turn", text: PIECES, usage: [14, 9] },
  ]);
  console.log(`scripted: the first request gets HTTP 503 with Retry-After: ${RETRY_AFTER}; the next one a streamed answer.\n`);

  const deltas: Delta[] = [];
  let stream: DeltaStream;
  try {
    const policy = new retry.RetryPolicy({
      maxAttempts: 3,
      sleep: async (ms) => {
        console.log(`  retry: waiting ${ms} ms, as the server asked, then asking again`);
        await new Promise((resolve) => setTimeout(resolve, Math.min(ms, 2000)));
      },
    });
    const client = new openai.OpenAIProvider({ baseURL: base, model: "course-demo", timeoutMs: 10_000 });
    stream = await retry.withRetry(client, policy).chatStream([{ role: "user", content: "How do streamed answers arrive?" }],
      [], { signal: AbortSignal.timeout(30_000) });
  } catch (error) {
    return said("chatStream", error, "your client threw instead of giving a stream");
  }
  try {
    for await (const delta of stream) {
      console.log(`  delta: ${describe(delta)}`);
      deltas.push(delta);
    }
  } catch (error) {
    return said("reading the stream", error, "your stream threw (a stream's failures are its last delta, never an exception)");
  }
  if (deltas.length === 0) {
    console.log("\nno delta came: a stream ends with exactly one DoneDelta or ErrorDelta");
    return 1;
  }
  const accumulator = new types.Accumulator();
  let message;
  let usage;
  try {
    for (const delta of deltas) {
      accumulator.add(delta);
    }
    [message, usage] = [accumulator.message(), accumulator.usage()];
  } catch (error) {
    return said("the Accumulator", error);
  }
  const error = accumulator.error;
  const state = (await control(base, "/_fake/state")) as { requests: unknown[] };
  console.log(`\ncollected: ${JSON.stringify(message.content)} (error: ${error === undefined ? "none" : `${error.name}: ${error.message}`})`);
  console.log(`usage: ${usage.inputTokens} in, ${usage.outputTokens} out; the fake model received ${state.requests.length} requests`);
  const want = PIECES.join("");
  if (message.content !== want || error !== undefined || state.requests.length !== 2) {
    console.log(`not what was scripted: the text ${JSON.stringify(want)}, no error, after exactly 2 requests (one refused, one answered)`);
    return 1;
  }
  return 0;
}

/** Says in one line what failed: a stub's TODO as not written yet, anything else as a failure of your code. */
function said(where: string, error: unknown, what = "your code failed"): number {
  const text = error instanceof Error ? error.message : String(error);
  if (text.startsWith("TODO")) {
    console.log(`\nNot written yet: ${where} throws ${JSON.stringify(text)}.`);
    console.log("Write it (its doc comment and `course show ag01` say what to do), then run `course run ag01` again.");
    return 1;
  }
  const name = error instanceof Error ? error.name : typeof error;
  const at = error instanceof Error ? (error.stack ?? "").split("\n").find((line) => line.includes("/agent/")) : undefined;
  console.log(`\n${what} in ${where}: ${name}: ${text}${at ? `\n  ${at.trim()}` : ""}`);
  console.log("`course check ag01` says which rule it breaks");
  return 1;
}

function describe(delta: Delta): string {
  return delta.type === "error" ? `{ type: 'error', error: ${delta.error.name}: ${delta.error.message} }`
    : inspect(delta, { breakLength: Infinity });
}

/** Talks to the fake model's scripting routes (/_fake/...), beside its API at `base` (.../v1). */
async function control(base: string, path: string, replies?: unknown[]): Promise<unknown> {
  const url = base.replace(/\/+$/, "").replace(/\/v1$/, "") + path;
  const answer = await fetch(url, replies === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ replies }),
  });
  if (answer.status !== 200) {
    throw new Error(`${path} answered HTTP ${answer.status}`);
  }
  return answer.json();
}

process.exitCode = await main();
