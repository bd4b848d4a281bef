// The TypeScript reference's EventReader against eventsource-parser (its callback parser, and its
// stream of events read with for await, the shape of ours) and the openai Node package's own SSE
// decoder, on the same chat-completions stream, each reading the same ReadableStream of 4 KiB
// chunks (python tooling/bench/run.py ts-sse runs it, with the reference compiled).
//
//   node sse_bench.mjs REFERENCE_SSE_JS [--rounds N]
//
// Prints one JSON object: {name: MB/s (median of the rounds)}, measured in interleaved rounds so
// that noise hits every parser alike, and the event count each saw (they must agree).

import { createParser } from "eventsource-parser";
import { EventSourceParserStream } from "eventsource-parser/stream";
// the decoder the package uses itself, from its own file (the package exports only its Stream class)
const { _iterSSEMessages } = await import(new URL("./node_modules/openai/core/streaming.mjs", import.meta.url).href);
import { pathToFileURL } from "node:url";

const [referencePath, ...rest] = process.argv.slice(2);
const rounds = Number(rest[rest.indexOf("--rounds") + 1] ?? 9) || 9;
const realistic = rest.includes("--realistic");
const { EventReader } = await import(pathToFileURL(referencePath).href);

/** A chat-completions stream of about `size` bytes: text chunks, then the finish, [DONE]. */
function chatStream(size) {
  const words = ["Hel", "lo", " wor", "ld", ", ", "caf\u00e9", " \u2014 ", "stream", "ing", " \u{1f680}"];
  const parts = [];
  let total = 0;
  for (let i = 0; total < size; i++) {
    const body = realistic
      ? { id: "chatcmpl-AZ3fK9qLmT7xWvB2nR8sYdE1uC4hJ", object: "chat.completion.chunk", created: 1732950000, model: "gpt-4o-mini-2024-07-18",
        system_fingerprint: "fp_0ba0d124f1", choices: [{ index: 0, delta: { content: words[i % words.length] }, logprobs: null, finish_reason: null }], usage: null }
      : { id: "c1", object: "chat.completion.chunk", model: "m", choices: [{ index: 0, delta: { content: words[i % words.length] }, finish_reason: null }] };
    const event = `data: ${JSON.stringify(body)}\n\n`;
    parts.push(event);
    total += Buffer.byteLength(event);
  }
  parts.push('data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n', "data: [DONE]\n\n");
  return new TextEncoder().encode(parts.join(""));
}

/** The body as a server's socket would give it: a ReadableStream of 4 KiB chunks. */
function body(data, size = 4096) {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= data.length) {
        controller.close();
      } else {
        controller.enqueue(data.subarray(at, at + size));
        at += size;
      }
    },
  }, { highWaterMark: 0 });
}

const parsers = {
  async "reference EventReader"(data) {
    let count = 0;
    for await (const event of new EventReader(body(data))) {
      count += event.data.length > 0 ? 1 : 0;
    }
    return count;
  },
  async "eventsource-parser 4.1.3"(data) {
    // its own streaming use: each read decoded with { stream: true } and fed to the parser
    let count = 0;
    const parser = createParser({ onEvent: (event) => { count += event.data.length > 0 ? 1 : 0; } });
    const decoder = new TextDecoder();
    const reader = body(data).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
    }
    parser.feed(decoder.decode());
    return count;
  },
  async "eventsource-parser 4.1.3 stream"(data) {
    // its async API, the shape of ours: a stream of events read with for await
    let count = 0;
    for await (const event of body(data).pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream())) {
      count += event.data.length > 0 ? 1 : 0;
    }
    return count;
  },
  async "openai-node 7.55 _iterSSEMessages"(data) {
    let count = 0;
    for await (const event of _iterSSEMessages(new Response(body(data)), new AbortController())) {
      count += event.data.length > 0 ? 1 : 0;
    }
    return count;
  },
};

const data = chatStream(4_000_000);
const counts = {};
for (const [name, parse] of Object.entries(parsers)) {
  counts[name] = await parse(data); // also the warm-up
}
const times = Object.fromEntries(Object.keys(parsers).map((name) => [name, []]));
for (let round = 0; round < rounds; round++) {
  for (const [name, parse] of Object.entries(parsers)) {
    const started = performance.now();
    await parse(data);
    times[name].push(performance.now() - started);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const speeds = Object.fromEntries(Object.entries(times).map(([name, t]) => [name, data.length / median(t) / 1000]));
process.stdout.write(JSON.stringify({ bytes: data.length, events: counts, mbps: speeds }) + "\n");
