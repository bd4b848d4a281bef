// The ag01 catalog, TypeScript track: a streaming client for OpenAI-compatible chat completions,
// and its retry wrapper. Tests run in catalog order. The recorded streams come from the chapter's
// fixtures (COURSE_FIXTURES), the conversation tests talk to the course fake model
// (COURSE_FAKE_MODEL_URL), faults come from a scripted server on 127.0.0.1, and retry waits go to
// a recorder, never to a real sleep.

import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { Worker } from "node:worker_threads";

import {
  Accumulator,
  collect,
  currentCallContext,
  Direct,
  IncompleteStreamError,
  isContent,
  llmStep,
  stepToolName,
  toolStep,
  Verdict,
  withCallContext,
} from "../agent/types.js";
import type { CallContext, CallOptions, Delta, DeltaStream, Message, Provider, ToolDef } from "../agent/types.js";
import { APIError, ProviderError, StreamCutError, StreamError } from "../agent/provider/errors.js";
import { OpenAIProvider, requestBody } from "../agent/provider/openai.js";
import type { Config } from "../agent/provider/openai.js";
import { RetryPolicy, retryable, sleep, withRetry } from "../agent/provider/retry.js";
import { Decoder, EventReader } from "../agent/provider/sse.js";
import type { SSEEvent } from "../agent/provider/sse.js";

import { FakeModel, fakeError, fakeRaw, fakeText } from "./fakemodel.js";
import {
  apiChunk,
  callEntry,
  chunked,
  cut,
  decodeAll,
  drain,
  encode,
  errorKind,
  eventually,
  loadStreams,
  messageForm,
  mismatch,
  neutral,
  neutralAll,
  pause,
  READ_SIZES,
  readBody,
  same,
  show,
  SleepRecorder,
  streamOf,
  textsOf,
  usageChunk,
  user,
} from "./helpers.js";
import {
  after,
  CHAT_PATH,
  chunkEvent,
  cleanEnd,
  closeConnection,
  errorEvent,
  httpError,
  none,
  rawReply,
  reset,
  resetAfterRole,
  ScriptedServer,
  slowStream,
  textChunks,
  textReply,
  writeThen,
} from "./servers.js";
import type { Exchange, Reply } from "./servers.js";

const WEATHER_SCHEMA = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };

function openAI(baseURL: string, config: Partial<Config> = {}): OpenAIProvider {
  return new OpenAIProvider({ baseURL, apiKey: "sk-test", model: "test-model", timeoutMs: 20_000, ...config });
}

const HELLO: unknown[] = [
  { type: "text", text: "Hel" },
  { type: "text", text: "lo" },
  { type: "usage", input: 5, output: 2 },
  { type: "done", finish_reason: "stop" },
];

test("hand_example", async () => {
  const hand = loadStreams().hand_example;
  const decoder = new Decoder();
  hand.events.forEach((step, i) => {
    const { deltas, finished } = decoder.decode(step.data);
    const got = neutralAll(deltas);
    assert.ok(same(got, step.deltas), `event ${i + 1} (${step.data.slice(0, 70)}...): got deltas ${show(got)}, want ${show(step.deltas)}`);
    const want = step.data === "[DONE]";
    assert.equal(finished, want, `event ${i + 1}: got finished=${finished}, want ${want}`);
  });

  const deltas = await readBody(hand.body, hand.read_size);
  assert.ok(same(neutralAll(deltas), HELLO), `read 7 bytes at a time: got ${show(neutralAll(deltas))}, want ${show(HELLO)}`);
  const { message, usage } = await collect(streamOf(...deltas));
  assert.ok(message.role === "assistant" && message.content === "Hello" && (message.toolCalls ?? []).length === 0,
    `collect: got message ${show(message)}, want the assistant message "Hello" and no tool call`);
  assert.ok(usage.inputTokens === 5 && usage.outputTokens === 2, `collect: got usage ${show(usage)}, want 5 in, 2 out`);
});

test("decoder_follows_choice_zero", async () => {
  // The 'Hello' answer beside a second one (choice index 1: text, a tool call, its own finish
  // reason). We ask for one answer, so the decoder follows choice 0 and the four deltas stay.
  const chunk = (usage: string, ...choices: string[]): string =>
    `{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[${choices.join(",")}]`
    + (usage ? `,"usage":${usage}` : "") + "}";
  const choice = (index: number, delta: string, finish: string): string => `{"index":${index},"delta":${delta},"finish_reason":${finish}}`;
  const otherCall = `{"tool_calls":[{"index":0,"id":"call_other","type":"function","function":{"name":"get_time","arguments":"{\\"tz\\":\\"UTC\\"}"}}]}`;
  const events = [
    chunk("", choice(0, `{"role":"assistant","content":""}`, "null"), choice(1, `{"role":"assistant","content":""}`, "null")),
    chunk("", choice(1, `{"content":"Bye"}`, "null")),
    chunk("", choice(0, `{"content":"Hel"}`, "null")),
    chunk("", choice(1, otherCall, "null"), choice(0, `{"content":"lo"}`, "null")),
    chunk("", choice(0, `{}`, `"stop"`), choice(1, `{}`, `"length"`)),
    chunk(`{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}`),
    "[DONE]",
  ];
  const body = events.map((e) => `data: ${e}\n\n`).join("");
  const got = neutralAll(await readBody(body, loadStreams().hand_example.read_size));
  assert.ok(same(got, HELLO), `'Hello' as choice 0 beside a second answer (choice 1: 'Bye', a get_time call, finish 'length'): `
    + `got ${show(got)}, want ${show(HELLO)} (only choice 0 is ours)`);
});

test("decoder_bad_events", async () => {
  // data that is not a chunk ends the stream with one ErrorDelta, never silently
  for (const data of ["{not json", "", "[1, 2]", `"text"`, "null", `{"choices": 5}`, `{"choices": [{"index": 0, "delta": "hi"}]}`,
    `{"choices": [{"index": 0, "delta": {"content": 7}}]}`, `{"choices": ["hi"]}`, `{"choices": [{"index": 0, "delta": {"tool_calls": {}}}]}`,
    `{"choices": [{"index": "0", "delta": {}}]}`, `{"choices": [{"index": 0, "delta": {}, "finish_reason": 1}]}`, `{"choices": [], "usage": 5}`]) {
    const { deltas, finished } = new Decoder().decode(data);
    const first = deltas[0];
    assert.ok(deltas.length === 1 && finished && first?.type === "error",
      `decode(${JSON.stringify(data)}): got ${show(neutralAll(deltas))}, finished=${finished}; want one ErrorDelta and finished=true`);
    assert.ok(first.error instanceof ProviderError && !(first.error instanceof StreamError),
      `decode(${JSON.stringify(data)}): got an ErrorDelta holding ${show(first.error)}, want a ProviderError `
      + "(not a StreamError: the server reported nothing)");
  }
  const { deltas: notJson } = new Decoder().decode("{not json");
  const error = notJson[0]?.type === "error" ? notJson[0].error : undefined;
  assert.ok(error?.message.startsWith("invalid JSON in stream event:"),
    `decode("{not json"): got the error ${show(error)}, want a message starting "invalid JSON in stream event:"`);

  const decoder = new Decoder();
  const opened = decoder.decode(apiChunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{"}}]}`, "null", "null"));
  assert.equal(opened.deltas.length, 2, `a chunk opening a call with a fragment: got ${show(neutralAll(opened.deltas))}, want a start and an args delta`);
  const failed = decoder.decode(`{"error": {"message": "The server had an error", "type": "server_error", "param": null, "code": "overloaded"}}`);
  const only = failed.deltas[0];
  assert.ok(failed.deltas.length === 1 && failed.finished && only?.type === "error",
    `an error event (while a call is open): got ${show(neutralAll(failed.deltas))}, finished=${failed.finished}; want only one ErrorDelta and finished=true`);
  assert.ok(only.error instanceof StreamError, `the error event: got ${show(only.error)}, want an ErrorDelta holding a StreamError`);
  const got = { type: only.error.type, code: only.error.code, serverMessage: only.error.serverMessage };
  const want = { type: "server_error", code: "overloaded", serverMessage: "The server had an error" };
  assert.ok(same(got, want), `the error event's StreamError: got ${show(got)}, want ${show(want)}`);
  assert.equal(only.error.message, "stream error server_error: The server had an error", "the StreamError's message");

  for (const [data, serverMessage, code] of [
    [`{"error": "upstream overloaded"}`, "upstream overloaded", ""],
    [`{"error": 503}`, "503", ""],
    [`{"error": {"message": "slow down", "code": 429}}`, "slow down", "429"],
  ] as const) {
    const { deltas, finished } = new Decoder().decode(data);
    const e = deltas[0]?.type === "error" ? deltas[0].error : undefined;
    assert.ok(deltas.length === 1 && finished && e instanceof StreamError && e.serverMessage === serverMessage && e.code === code,
      `decode(${data}): got ${show(neutralAll(deltas))} (${show(e)}), finished=${finished}; `
      + `want one ErrorDelta with a StreamError whose serverMessage is "${serverMessage}" and code "${code}", and finished=true`);
  }
});

test("decoder_tool_calls", async () => {
  const [A, B] = ["call_a", "call_b"];
  let events = [
    apiChunk(`{"role":"assistant","content":null}`, "null", "null"),
    apiChunk(callEntry(10, A, "get_weather", ""), "null", "null"),
    apiChunk(callEntry(2, B, "get_time", `{"tz"`), "null", "null"),
    // this provider repeats id and name with every fragment: they open nothing new
    apiChunk(callEntry(10, A, "get_weather", `{"city":`), "null", "null"),
    apiChunk(callEntry(2, B, "get_time", `:"UTC"}`), "null", "null"),
    apiChunk(callEntry(10, A, "get_weather", `"Paris"}`), "null", "null"),
    apiChunk(`{}`, `"tool_calls"`, "null"),
    usageChunk(`{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}`),
    "[DONE]",
  ];
  let want: unknown[] = [
    { type: "tool_start", index: 10, id: A, name: "get_weather" },
    { type: "tool_start", index: 2, id: B, name: "get_time" },
    { type: "tool_args", index: 2, fragment: `{"tz"` },
    { type: "tool_args", index: 10, fragment: `{"city":` },
    { type: "tool_args", index: 2, fragment: `:"UTC"}` },
    { type: "tool_args", index: 10, fragment: `"Paris"}` },
    { type: "tool_end", index: 2, id: B, name: "get_time", arguments: `{"tz":"UTC"}` },
    { type: "tool_end", index: 10, id: A, name: "get_weather", arguments: `{"city":"Paris"}` },
    { type: "usage", input: 9, output: 4 },
    { type: "done", finish_reason: "tool_calls" },
  ];
  let got = decodeAll(events);
  assert.ok(same(got, want), `two calls at indexes 10 and 2, id and name repeated: ${mismatch(got, want)}\n  got:  ${show(got)}\n  want: ${show(want)}`);

  // A call cut short by the token limit still ends when finish_reason comes, before the usage
  // chunk; a call whose arguments never came (null, or "") ends with "{}".
  events = [
    apiChunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"list_files","arguments":null}}]}`, "null", "null"),
    apiChunk(callEntry(1, "call_y", "read_file", `{"path": "/et`), "null", "null"),
    apiChunk(`{}`, `"length"`, "null"),
    usageChunk(`{"prompt_tokens":3,"completion_tokens":16,"total_tokens":19}`),
    "[DONE]",
  ];
  want = [
    { type: "tool_start", index: 0, id: "call_x", name: "list_files" },
    { type: "tool_start", index: 1, id: "call_y", name: "read_file" },
    { type: "tool_args", index: 1, fragment: `{"path": "/et` },
    { type: "tool_end", index: 0, id: "call_x", name: "list_files", arguments: "{}" },
    { type: "tool_end", index: 1, id: "call_y", name: "read_file", arguments: `{"path": "/et` },
    { type: "usage", input: 3, output: 16 },
    { type: "done", finish_reason: "length" },
  ];
  got = decodeAll(events);
  assert.ok(same(got, want), `calls open when finish_reason 'length' comes: ${mismatch(got, want)}\n  got:  ${show(got)}\n  want: ${show(want)}`);

  // a server that sends no finish_reason at all: [DONE] ends the call still open
  got = decodeAll([apiChunk(callEntry(0, "call_z", "now", "{}"), "null", "null"), "[DONE]"]);
  want = [
    { type: "tool_start", index: 0, id: "call_z", name: "now" },
    { type: "tool_args", index: 0, fragment: "{}" },
    { type: "tool_end", index: 0, id: "call_z", name: "now", arguments: "{}" },
    { type: "done", finish_reason: "" },
  ];
  assert.ok(same(got, want), `a call still open at [DONE], no finish_reason: ${mismatch(got, want)}\n  got:  ${show(got)}\n  want: ${show(want)}`);
});

test("decoder_nulls_and_usage", async () => {
  let got = decodeAll([
    apiChunk(`{"role":"assistant","content":"","refusal":null}`, "null", "null"),
    apiChunk(`{"content":null,"tool_calls":null,"function_call":null}`, "null", "null"),
    apiChunk(`{"content":"Bonjour"}`, "null", "null"),
    apiChunk(`{}`, `"stop"`, "null"),
    // usage without total_tokens, with the details objects real servers add
    usageChunk(`{"prompt_tokens":12,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":0}}`),
    "[DONE]",
  ]);
  let want: unknown[] = [
    { type: "text", text: "Bonjour" },
    { type: "usage", input: 12, output: 1 },
    { type: "done", finish_reason: "stop" },
  ];
  assert.ok(same(got, want), `chunks with null fields, a usage chunk without total_tokens: ${mismatch(got, want)}\n  got:  ${show(got)}\n  want: ${show(want)}`);

  // a chunk that carries both the last text and the usage (some servers merge them) gives both, text first
  got = decodeAll([apiChunk(`{"content":"!"}`, `"stop"`, `{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}`), "[DONE]"]);
  want = [
    { type: "text", text: "!" },
    { type: "usage", input: 2, output: 3 },
    { type: "done", finish_reason: "stop" },
  ];
  assert.ok(same(got, want), `text, finish and usage in one chunk: ${mismatch(got, want)}\n  got:  ${show(got)}\n  want: ${show(want)}`);
});

test("recorded_streams", async (t) => {
  for (const stream of loadStreams().streams) {
    for (const size of [...READ_SIZES, 0]) {
      const name = size === 0 ? `${stream.name}-http` : `${stream.name}-${size}`;
      const how = size === 0 ? "through the OpenAI provider (a server sending the recorded body 7 bytes per write)" : `read ${size} byte(s) at a time`;
      await t.test(name, async (t) => {
        let deltas: Delta[];
        if (size === 0) {
          const server = await ScriptedServer.start(t, rawReply(200, "text/event-stream; charset=utf-8", stream.body, 7));
          deltas = await drain(await openAI(server.baseURL).chatStream([user("hi")]));
        } else {
          deltas = await readBody(stream.body, size);
        }
        const want = stream.expected;
        const got = neutralAll(deltas);
        assert.ok(same(got, want.deltas), `${stream.name}, ${how}: ${mismatch(got, want.deltas)}\n  got:  ${show(got)}\n  want: ${show(want.deltas)}`);
        const accumulator = new Accumulator();
        for (const delta of deltas) {
          accumulator.add(delta);
        }
        const message = messageForm(accumulator.message());
        assert.ok(same(message, want.message), `${stream.name}: Accumulator.message(): got ${show(message)}, want ${show(want.message)}`);
        const usage = accumulator.usage();
        const usageForm = { input: usage.inputTokens, output: usage.outputTokens };
        assert.ok(same(usageForm, want.usage), `${stream.name}: Accumulator.usage(): got ${show(usageForm)}, want ${show(want.usage)}`);
        assert.equal(accumulator.finishReason, want.finish_reason, `${stream.name}: Accumulator.finishReason`);
        const error = accumulator.error;
        assert.equal(errorKind(error), want.error, `${stream.name}: Accumulator.error: got ${show(error)}`);
      });
    }
  }
  await t.test("one-provider", async (t) => {
    // every recorded stream through one provider, one after another, the first cut while a call was
    // open: what a stream leaves behind belongs to that stream alone
    const cutShort = {
      name: "call_cut_short",
      body: `data: ${apiChunk(callEntry(0, "call_cut", "get_weather", `{"city":`), "null", "null")}\n\n`,
      expected: { deltas: [
        { type: "tool_start", index: 0, id: "call_cut", name: "get_weather" },
        { type: "tool_args", index: 0, fragment: `{"city":` },
        { type: "error", error: "stream_cut" },
      ] },
    };
    const streams = [cutShort, ...loadStreams().streams];
    const server = await ScriptedServer.start(t, ...streams.map((s) => rawReply(200, "text/event-stream; charset=utf-8", s.body, 7)));
    const provider = openAI(server.baseURL);
    const wrong: string[] = [];
    for (const stream of streams) {
      const got = neutralAll(await drain(await provider.chatStream([user(stream.name)])));
      if (!same(got, stream.expected.deltas)) {
        wrong.push(`${stream.name}, through one provider after the others: ${mismatch(got, stream.expected.deltas)}\n  got:  ${show(got)}\n  want: ${show(stream.expected.deltas)}`);
      }
    }
    assert.ok(wrong.length === 0, wrong.join("\n"));
  });
});

/** A conversation with every kind of message, two tools and two options; REQUEST_JSON is the body they must give. */
function requestFixture(): { messages: Message[]; tools: ToolDef[]; options: CallOptions } {
  const messages: Message[] = [
    { role: "system", content: "You are terse." },
    { role: "user", content: "Weather in Paris, and the time in UTC?", name: "alice" },
    { role: "assistant", content: "", toolCalls: [
      { id: "call_1", name: "get_weather", arguments: `{"city":"Paris"}` },
      { id: "call_2", name: "get_time", arguments: "" },
    ] },
    { role: "tool", content: `{"temp_c": 18}`, toolCallId: "call_1" },
    { role: "tool", content: "12:00", toolCallId: "call_2" },
    { role: "assistant", content: "Paris is 18 °C. Now Lyon.", toolCalls: [{ id: "call_3", name: "get_weather", arguments: `{"city":"Lyon"}` }] },
    { role: "tool", content: `{"temp_c": 21}`, toolCallId: "call_3" },
    { role: "assistant", content: "18 °C in Paris, 21 °C in Lyon, at noon." },
  ];
  const tools: ToolDef[] = [
    { name: "get_weather", description: "Current weather in a city", parameters: structuredClone(WEATHER_SCHEMA) },
    { name: "get_time", description: "Current time in a time zone", parameters: { type: "object", properties: { tz: { type: "string" } } } },
  ];
  return { messages, tools, options: { temperature: 0.2, maxTokens: 64 } };
}

const REQUEST_JSON = {
  model: "test-model",
  messages: [
    { role: "system", content: "You are terse." },
    { role: "user", content: "Weather in Paris, and the time in UTC?", name: "alice" },
    { role: "assistant", content: null, tool_calls: [
      { id: "call_1", type: "function", function: { name: "get_weather", arguments: `{"city":"Paris"}` } },
      { id: "call_2", type: "function", function: { name: "get_time", arguments: "{}" } },
    ] },
    { role: "tool", content: `{"temp_c": 18}`, tool_call_id: "call_1" },
    { role: "tool", content: "12:00", tool_call_id: "call_2" },
    { role: "assistant", content: "Paris is 18 °C. Now Lyon.", tool_calls: [
      { id: "call_3", type: "function", function: { name: "get_weather", arguments: `{"city":"Lyon"}` } },
    ] },
    { role: "tool", content: `{"temp_c": 21}`, tool_call_id: "call_3" },
    { role: "assistant", content: "18 °C in Paris, 21 °C in Lyon, at noon." },
  ],
  stream: true,
  stream_options: { include_usage: true },
  tools: [
    { type: "function", function: { name: "get_weather", description: "Current weather in a city", parameters: WEATHER_SCHEMA } },
    { type: "function", function: { name: "get_time", description: "Current time in a time zone", parameters: { type: "object", properties: { tz: { type: "string" } } } } },
  ],
  temperature: 0.2,
  max_tokens: 64,
};

/** A request body compared as data (JSON written differently is the same body), key by key. */
function checkRequestBody(got: unknown, want: Record<string, unknown>, where: string): void {
  assert.ok(typeof got === "object" && got !== null && !Array.isArray(got), `${where}: not a JSON object: ${show(got)}`);
  const body = JSON.parse(JSON.stringify(got)) as Record<string, unknown>; // as the server reads it
  for (const key of ["model", "stream", "stream_options", "tools", "temperature", "max_tokens"]) {
    assert.ok(same(body[key], want[key]), `${where}: "${key}": got ${show(body[key])}, want ${show(want[key])}`);
  }
  assert.ok(same(Object.keys(body).sort(), Object.keys(want).sort()), `${where}: got keys ${show(Object.keys(body))}, want the keys of ${show(want)}`);
  const messages = body.messages as unknown[];
  const wanted = want.messages as unknown[];
  assert.equal(messages?.length, wanted.length, `${where}: got ${show(messages)}, want ${wanted.length} messages`);
  wanted.forEach((message, i) => {
    assert.ok(same(messages[i], message), `${where}: message ${i}: got ${show(messages[i])}, want ${show(message)}`);
  });
}

test("request_body", async (t) => {
  const { messages, tools, options } = requestFixture();
  const built = requestBody("test-model", messages, tools, options);
  checkRequestBody(built, REQUEST_JSON, "requestBody()");

  const minimal = JSON.parse(JSON.stringify(requestBody("m", [user("hi")])));
  const wantMinimal = { model: "m", messages: [{ role: "user", content: "hi" }], stream: true, stream_options: { include_usage: true } };
  assert.ok(same(minimal, wantMinimal), `requestBody with no tools and no options: got ${show(minimal)}, want ${show(wantMinimal)}`);

  const empty = JSON.parse(JSON.stringify(requestBody("m", [user("hi"), { role: "assistant", content: "" }, user("")], [], {})));
  const wantEmpty = [{ role: "user", content: "hi" }, { role: "assistant", content: "" }, { role: "user", content: "" }];
  assert.ok(same(empty.messages, wantEmpty), `messages without tool calls keep their text, even empty: got ${show(empty.messages)}, `
    + `want ${show(wantEmpty)} (null is only for an assistant's empty text beside tool calls)`);

  // a tool with a name only: an empty description, and parameters that accept anything
  const bare = JSON.parse(JSON.stringify(requestBody("m", [user("hi")], [{ name: "now" }])));
  const wantBare = [{ type: "function", function: { name: "now", description: "", parameters: {} } }];
  assert.ok(same(bare.tools, wantBare), `a ToolDef with a name only: got tools ${show(bare.tools)}, want ${show(wantBare)}`);

  // an option is sent whenever it is set: a temperature of 0 included
  const cold = requestBody("m", [user("hi")], [], { temperature: 0 });
  assert.ok(cold.temperature === 0 && !("max_tokens" in cold),
    `a temperature of 0 is set, so it is sent (only an unset option is left out): got ${show(cold)}`);

  // the body shares no object with the caller's: edits to either leave the other as it was
  const fixture = requestFixture();
  const body = requestBody("m", fixture.messages, fixture.tools) as { tools: { function: { parameters: { properties: Record<string, unknown> } } }[]; messages: { tool_calls?: { function: { name: string } }[] }[] };
  body.tools[0]!.function.parameters.properties.city = { type: "number" };
  assert.ok(same(fixture.tools[0]!.parameters, WEATHER_SCHEMA), "editing the body's tool schema edited the caller's ToolDef.parameters (copy the schema)");
  body.messages[2]!.tool_calls![0]!.function.name = "rm";
  assert.equal(fixture.messages[2]!.toolCalls![0]!.name, "get_weather", "editing the body's tool call edited the caller's message");
  const later = requestBody("m", [user("hi")], fixture.tools);
  const before = JSON.stringify(later);
  (fixture.tools[0]!.parameters!.properties as Record<string, unknown>).city = { type: "array" };
  assert.equal(JSON.stringify(later), before, "a body built, then the caller's ToolDef.parameters changed: the body changed with it (it must hold its own copy)");

  // a schema that JSON cannot hold cannot be sent: chatStream rejects, and nothing reaches the server
  const server = await ScriptedServer.start(t, textReply("a request with a broken schema must never be sent"));
  const broken: ToolDef[] = [{ name: "get_weather", parameters: { type: "object", maxLength: 10n } }];
  await assert.rejects(openAI(server.baseURL).chatStream([user("hi")], broken),
    "chatStream with a ToolDef whose parameters are not JSON: it must reject (JSON.stringify throws on a BigInt)");
  assert.equal(server.requestCount, 0, "chatStream with a ToolDef whose parameters are not JSON: a request was sent");
});

test("request_wire", async (t) => {
  const fake = await FakeModel.fresh();
  await fake.script(fakeText("ok"), fakeText("ok"));
  const { messages, tools, options } = requestFixture();
  await drain(await openAI(fake.baseURL, { headers: { "X-Course-Trace": "t-1" } }).chatStream(messages, tools, options));
  const request = await fake.lastRequest();
  assert.ok(request.method === "POST" && request.path === CHAT_PATH,
    `request line: got ${request.method} ${request.path}, want POST ${CHAT_PATH} (baseURL + /chat/completions)`);
  for (const [name, value] of [["authorization", "Bearer sk-test"], ["accept", "text/event-stream"], ["x-course-trace", "t-1"]]) {
    assert.equal(request.headers[name!], value, `header ${name}`);
  }
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim();
  assert.equal(type, "application/json", `header Content-Type: got ${show(request.headers["content-type"])}`);
  checkRequestBody(request.body, REQUEST_JSON, "the body on the wire");

  await drain(await new OpenAIProvider({ baseURL: fake.baseURL, model: "test-model" }).chatStream([user("hi")]));
  const keyless = await fake.lastRequest();
  assert.ok(!("authorization" in keyless.headers),
    `with no apiKey (and no fetch of the test's: globalThis.fetch): got an Authorization header ${show(keyless.headers.authorization)}, want none`);

  await fake.script(fakeText("ok"));
  await drain(await openAI(`${fake.baseURL}/`).chatStream([user("hi")]));
  assert.equal((await fake.lastRequest()).path, CHAT_PATH, "a baseURL ending in '/': the path");

  // the caller's headers replace ours of the same name, whatever the case of its letters
  await fake.script(fakeText("ok"));
  const own = { authorization: "Basic Z2F0ZXdheQ==", Accept: "text/event-stream; q=1" };
  await drain(await openAI(fake.baseURL, { headers: own }).chatStream([user("hi")]));
  const last = (await fake.lastRequest()).headers;
  assert.ok(last.authorization === own.authorization && last.accept === own.Accept,
    `Config.headers setting authorization and Accept: got ${show(last.authorization)} and ${show(last.accept)}, `
    + `want ${show(own.authorization)} and ${show(own.Accept)} (the caller's headers win; header names ignore case)`);

  // Each header goes out once, with its value: ours, the caller's, and ours replaced by the caller's
  // under any spelling of the name. The raw server sees every header line, where the fake model keeps
  // one value per name.
  const ours = { authorization: "Bearer sk-test", accept: "text/event-stream", "content-type": "application/json" };
  const wrong: string[] = [];
  for (const [what, headers, theirs] of [
    ["Config.headers adding X-Course-Trace", { "X-Course-Trace": "t-1" }, { "x-course-trace": "t-1" }],
    ["Config.headers replacing Authorization and Accept", { Authorization: "Basic Z2F0ZXdheQ==", Accept: "text/event-stream; q=1" },
      { authorization: "Basic Z2F0ZXdheQ==", accept: "text/event-stream; q=1" }],
    ["Config.headers replacing them in lower case, and adding one of its own",
      { authorization: "Basic Z2F0ZXdheQ==", accept: "text/event-stream; q=1", "x-course-trace": "t-2" },
      { authorization: "Basic Z2F0ZXdheQ==", accept: "text/event-stream; q=1", "x-course-trace": "t-2" }],
  ] as [string, Record<string, string>, Record<string, string>][]) {
    const server = await ScriptedServer.start(t, textReply("ok"));
    await drain(await openAI(server.baseURL, { headers }).chatStream([user("hi")]));
    const sent = server.requests.at(-1)?.lines ?? {};
    for (const [name, value] of Object.entries({ ...ours, ...theirs })) {
      if (!same(sent[name], [value])) {
        wrong.push(`${what}: header ${name} went out as ${show(sent[name])}, want once, as ${show(value)} (the caller's replaces ours, whatever its case)`);
      }
    }
  }
  assert.ok(wrong.length === 0, wrong.join("\n"));

  const before = (await fake.requests()).length;
  for (const bad of ["127.0.0.1:8080/v1", "ftp://127.0.0.1/v1", "http://[::1/v1", "", "file:///v1", "localhost/v1"]) {
    assert.throws(() => openAI(bad), TypeError, `new OpenAIProvider with baseURL ${JSON.stringify(bad)}: want a TypeError (not an http(s) URL with a host)`);
  }
  assert.equal((await fake.requests()).length - before, 0, "bad baseURLs: a request reached the server");
});

/** The APIError `promise` rejects with; fails when it resolves or rejects with something else. */
async function apiErrorOf(promise: Promise<unknown>, what: string): Promise<APIError> {
  let stream: unknown;
  try {
    stream = await promise;
  } catch (error) {
    assert.ok(error instanceof APIError, `${what}: got the error ${show(error)}, want an APIError`);
    return error;
  }
  if (typeof stream === "object" && stream !== null && "return" in stream) {
    await (stream as DeltaStream).return();
  }
  assert.fail(`${what}: got a stream, want the promise rejected with an APIError`);
}

test("api_error_raised", async () => {
  const fake = await FakeModel.fresh();
  await fake.script(fakeError(400, "invalid_request_error", "bad model", "model_not_found"));
  const error = await apiErrorOf(openAI(fake.baseURL).chatStream([user("hi")]), "a 400");
  const got = { status: error.status, type: error.type, code: error.code, serverMessage: error.serverMessage, retryAfterMs: error.retryAfterMs };
  const want = { status: 400, type: "invalid_request_error", code: "model_not_found", serverMessage: "bad model", retryAfterMs: undefined };
  assert.ok(same(got, want), `APIError: got ${show(got)}, want ${show(want)}`);
  assert.equal(error.message, "HTTP 400 invalid_request_error: bad model", "APIError's message: status, type, the server's message");
  assert.ok(error instanceof ProviderError, "an APIError is a ProviderError");

  const page = "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>nginx</body>\n</html>";
  const long = "upstream timed out. ".repeat(40); // 800 characters of text
  for (const [what, body, serverMessage, status] of [
    ["a 502 with a proxy's HTML page (the body's text, trimmed, is the message)", `\n${page}\n\n`, page, 502],
    ["a 504 with 800 characters of text (the message keeps the first 500)", long, long.slice(0, 500), 504],
    ["a 503 with an empty body (the status line's reason is the message)", "", "Service Unavailable", 503],
  ] as const) {
    await fake.script(fakeRaw(status, "text/html", body));
    const e = await apiErrorOf(openAI(fake.baseURL).chatStream([user("hi")]), what);
    const gotRaw = { status: e.status, type: e.type, serverMessage: e.serverMessage };
    assert.ok(same(gotRaw, { status, type: "", serverMessage }), `${what}: got ${show(gotRaw)}`);
  }
  // some servers send the code as a number
  await fake.script(fakeRaw(429, "application/json", `{"error": {"message": "slow down", "type": "rate_limit_exceeded", "code": 429}}`));
  const numeric = await apiErrorOf(openAI(fake.baseURL).chatStream([user("hi")]), "a 429 whose error code is a number");
  assert.equal(numeric.code, "429", "the APIError's code when the body's code is the number 429");
  assert.equal(new APIError(502, "", "", page).message, `HTTP 502: ${page}`, "APIError's message without a type");
  assert.equal(new APIError(503).message, "HTTP 503", "APIError(503)'s message");

  // Retry-After is delta-seconds, a finite number >= 0; anything else (an HTTP date included) is no hint
  for (const header of ["-1", "inf", "nan", "1e400", "Wed, 21 Oct 2015 07:28:00 GMT"]) {
    await fake.script(fakeError(503, "", "", "", header));
    const e = await apiErrorOf(openAI(fake.baseURL).chatStream([user("hi")]), `a 503 with Retry-After: ${header}`);
    assert.equal(e.retryAfterMs, undefined, `APIError.retryAfterMs for 'Retry-After: ${header}' (no usable hint)`);
  }
});

test("status_boundaries", async (t) => {
  for (const [status, isStream] of [[200, true], [201, true], [204, true], [299, true], [300, false], [302, false], [304, false],
    [307, false], [404, false], [418, false], [599, false]] as const) {
    await t.test(String(status), async (t) => {
      const answer: Reply = (x) => {
        // a redirect names a place that streams: a client that follows it gets a stream there
        const headers = { "Content-Type": "text/event-stream", Location: CHAT_PATH };
        if (status === 204 || status === 304) {
          x.head(status, headers, 0); // these have no body
          return;
        }
        x.head(status, headers);
        for (const event of [chunkEvent(x, { content: "hi" }, null), chunkEvent(x, {}, "stop"), "[DONE]"]) {
          x.event(event);
        }
        x.end();
      };
      const server = await ScriptedServer.start(t, answer);
      const provider = openAI(server.baseURL);
      if (isStream) {
        const got = neutralAll(await drain(await provider.chatStream([user("hi")])));
        // a 204 is a success without a body: a stream cut before [DONE]
        const want = status === 204 ? [{ type: "error", error: "stream_cut" }] : [{ type: "text", text: "hi" }, { type: "done", finish_reason: "stop" }];
        assert.ok(same(got, want), `HTTP ${status}: got deltas ${show(got)}, want ${show(want)} (every 2xx status is a success)`);
        return;
      }
      const error = await apiErrorOf(provider.chatStream([user("hi")]), `HTTP ${status} (only 2xx is a success, and a redirect is not followed)`);
      assert.equal(error.status, status, `HTTP ${status}: the APIError's status`);
      assert.equal(server.requestCount, 1, `HTTP ${status}: requests (a redirect followed sends a second one)`);
    });
  }
});

test("api_error_not_retried", async (t) => {
  for (const [status, retryAfter] of [[400, undefined], [400, "1"], [501, undefined]] as const) {
    const server = await ScriptedServer.start(t, httpError(status, { retryAfter }), textReply("this answer must never be asked for"));
    const sleeps = new SleepRecorder();
    const provider = withRetry(openAI(server.baseURL), new RetryPolicy({ maxAttempts: 5, initialMs: 100, sleep: sleeps.sleep }));
    const label = `HTTP ${status}${retryAfter ? ` with Retry-After: ${retryAfter}` : ""}`;
    const error = await apiErrorOf(provider.chatStream([user("hi")]), label);
    assert.equal(error.status, status, `${label}: the APIError's status`);
    assert.equal(server.requestCount, 1, `${label}: requests (it fails the same way every time)`);
    assert.deepEqual(sleeps.waits, [], `${label}: sleeps`);
  }
});

/** A provider without a network, whose streams the test writes: each chatStream call takes the next one. */
class MemProvider implements Provider {
  calls = 0;
  readonly given: MemStream[] = [];
  readonly openAtCall: number[] = []; // how many of the streams given before were still open, at each call
  readonly #streams: (MemStream | Error)[];

  constructor(...streams: (MemStream | Error)[]) {
    this.#streams = streams;
  }

  /** How many of the streams given so far were not closed (return() not called). */
  openStreams(): number {
    return this.given.filter((stream) => !stream.closed).length;
  }

  async chatStream(): Promise<DeltaStream> {
    this.calls++;
    this.openAtCall.push(this.openStreams());
    const next = this.#streams.shift();
    if (next === undefined) {
      throw new Error(`MemProvider: call ${this.calls} was not scripted`);
    }
    if (next instanceof Error) {
      throw next;
    }
    this.given.push(next);
    return next;
  }
}

/** A stream of given deltas that notes whether it was read to its end and whether it was closed;
 * it throws `failure` when read past its deltas, if given. */
class MemStream implements DeltaStream {
  finished = false;
  closed = false;
  readonly #deltas: Delta[];

  constructor(deltas: Delta[], readonly failure?: Error) {
    this.#deltas = [...deltas];
  }

  [Symbol.asyncIterator](): DeltaStream {
    return this;
  }

  async next(): Promise<IteratorResult<Delta, void>> {
    const delta = this.#deltas.shift();
    if (delta !== undefined && !this.closed) {
      return { done: false, value: delta };
    }
    if (this.failure !== undefined && !this.closed) {
      throw this.failure;
    }
    this.finished = true;
    return { done: true, value: undefined };
  }

  async return(): Promise<IteratorResult<Delta, void>> {
    this.closed = true;
    return { done: true, value: undefined };
  }
}

test("retry_backoff_schedule", async (t) => {
  const delays = (policy: RetryPolicy, ns: number[]): number[] => ns.map((n) => policy.delay(n));
  let got = delays(new RetryPolicy({ initialMs: 100, maxMs: 1000, multiplier: 2 }), [1, 2, 3, 4, 5, 6]);
  assert.deepEqual(got, [100, 200, 400, 800, 1000, 1000], "RetryPolicy({initialMs: 100, maxMs: 1000, multiplier: 2}).delay(1..6)");
  const defaults = new RetryPolicy();
  got = delays(defaults, [1, 2, 3, 8]);
  assert.deepEqual(got, [500, 1000, 2000, 30000], "new RetryPolicy() (the defaults: initialMs 500, multiplier 2, maxMs 30000).delay(1, 2, 3, 8)");
  // the cap cuts in between two doublings, and any multiplier works the same way
  got = delays(new RetryPolicy({ initialMs: 100, maxMs: 300 }), [1, 2, 3, 4]);
  assert.deepEqual(got, [100, 200, 300, 300], "RetryPolicy({initialMs: 100, maxMs: 300}).delay(1..4)");
  got = delays(new RetryPolicy({ initialMs: 1000, maxMs: 100_000, multiplier: 3 }), [1, 2, 3, 5]);
  assert.deepEqual(got, [1000, 3000, 9000, 81000], "RetryPolicy({initialMs: 1000, maxMs: 100000, multiplier: 3}).delay(1, 2, 3, 5)");
  // a long run of failures stays at the cap: the growth must never overflow to Infinity or NaN
  for (const n of [30, 64, 100, 1100, 5000]) {
    assert.equal(defaults.delay(n), 30_000, `new RetryPolicy().delay(${n}) (the cap, however many failures)`);
  }
  const zero = new RetryPolicy({ initialMs: 0 });
  assert.equal(zero.delay(2000), 0, "RetryPolicy({initialMs: 0}).delay(2000)");

  // without a sleep of its own the policy waits with a timer (here a millisecond), then retries
  const inner = new MemProvider(new APIError(503), new MemStream([{ type: "text", text: "ok" }, { type: "done", finishReason: "stop" }]));
  const live = new AbortController().signal; // a signal that never aborts: the wait ends with its timer
  const { message } = await collect(await withRetry(inner, new RetryPolicy({ initialMs: 1 })).chatStream([user("hi")], [], { signal: live }));
  assert.ok(message.content === "ok" && inner.calls === 2,
    `RetryPolicy({initialMs: 1}) with no sleep, after a 503: got ${show(message.content)} after ${inner.calls} call(s), want the second attempt's "ok"`);

  const server = await ScriptedServer.start(t, httpError(503), httpError(503), textReply("Hel", "lo"));
  const sleeps = new SleepRecorder();
  const provider = withRetry(openAI(server.baseURL), new RetryPolicy({ maxAttempts: 3, initialMs: 100, sleep: sleeps.sleep }));
  const tools: ToolDef[] = [{ name: "get_weather", description: "Current weather in a city", parameters: WEATHER_SCHEMA }];
  const answer = await collect(await provider.chatStream([user("hi")], tools, { temperature: 0.2, maxTokens: 64 }));
  assert.deepEqual(sleeps.waits, [100, 200], "sleeps after 503, 503, 200");
  assert.equal(server.requestCount, 3, "requests");
  assert.equal(answer.message.content, "Hello", "text");
  // every attempt is the caller's request: the wrapper passes the tools and options on, each time
  server.requests.forEach((request, i) => {
    const names = ((request.body?.tools ?? []) as { function?: { name?: string } }[]).map((tool) => tool.function?.name);
    const sent = { tools: names, temperature: request.body?.temperature, max_tokens: request.body?.max_tokens };
    assert.ok(same(sent, { tools: ["get_weather"], temperature: 0.2, max_tokens: 64 }),
      `request ${i + 1} of 3: got ${show(sent)}; want tools [get_weather], temperature 0.2, max_tokens 64 (the wrapper must pass the caller's tools and options on)`);
  });
});

test("retry_after_honored", async (t) => {
  const policy = new RetryPolicy({ initialMs: 100 });
  assert.equal(policy.delay(1, new APIError(429, "", "", "", 3000)), 3000, "delay(1, an APIError 429 with retryAfterMs 3000)");
  assert.equal(policy.delay(4, new APIError(429, "", "", "", 0)), 0, "delay(4, an APIError 429 with retryAfterMs 0): the server said now");
  assert.equal(policy.delay(1, new APIError(503)), 100, "delay(1, an APIError 503 without Retry-After): the backoff");
  assert.equal(policy.delay(2, new Error("no APIError")), 200, "delay(2, another error): the backoff");

  for (const [header, want] of [["3", 3000], ["0", 0], ["1.5", 1500], ["soon", undefined]] as const) {
    const server = await ScriptedServer.start(t, httpError(429, { retryAfter: header }));
    const error = await apiErrorOf(openAI(server.baseURL).chatStream([user("hi")]), `a 429 with Retry-After: ${header}`);
    assert.equal(error.retryAfterMs, want, `APIError.retryAfterMs for 'Retry-After: ${header}'`);
  }

  let server = await ScriptedServer.start(t, httpError(429, { retryAfter: "3" }), textReply("ok"));
  let sleeps = new SleepRecorder();
  let answer = await collect(await withRetry(openAI(server.baseURL), new RetryPolicy({ initialMs: 100, sleep: sleeps.sleep })).chatStream([user("hi")]));
  assert.deepEqual(sleeps.waits, [3000], "sleeps after a 429 with Retry-After: 3");
  assert.ok(server.requestCount === 2 && answer.message.content === "ok", `got ${server.requestCount} requests and ${show(answer.message.content)}, want 2 and "ok"`);

  // between the two caps: 45 s is more than the backoff's maxMs (30 s) but within maxRetryAfterMs (60 s); 0 s is now
  server = await ScriptedServer.start(t, httpError(503, { retryAfter: "45" }), httpError(503, { retryAfter: "0" }), textReply("ok"));
  sleeps = new SleepRecorder();
  answer = await collect(await withRetry(openAI(server.baseURL), new RetryPolicy({ sleep: sleeps.sleep })).chatStream([user("hi")]));
  assert.ok(same(sleeps.waits, [45000, 0]) && answer.message.content === "ok",
    `the default policy after a 503 with Retry-After: 45, then one with Retry-After: 0: got sleeps ${show(sleeps.waits)} and ${show(answer.message.content)}, `
    + "want [45000, 0] and \"ok\" (the header wins over the backoff's maxMs, up to maxRetryAfterMs)");
});

test("retry_gives_up_at_max_attempts", async (t) => {
  let server = await ScriptedServer.start(t, httpError(503, { message: "first" }), httpError(503, { message: "second" }),
    httpError(503, { message: "third" }), textReply("a fourth attempt must not happen"));
  let sleeps = new SleepRecorder();
  const error = await apiErrorOf(withRetry(openAI(server.baseURL), new RetryPolicy({ maxAttempts: 3, initialMs: 100, sleep: sleeps.sleep }))
    .chatStream([user("hi")]), "after three 503s");
  assert.equal(error.serverMessage, "third", "after three 503s: the error that reaches the caller is the third one, as it came");
  assert.equal(server.requestCount, 3, "requests (maxAttempts counts the first)");
  assert.deepEqual(sleeps.waits, [100, 200], "sleeps (none after the last attempt)");

  for (const [what, replies] of [
    ["three resets before content", [resetAfterRole(), resetAfterRole(), resetAfterRole()]],
    ["a 503, then two resets before content (every failure counts)", [httpError(503), resetAfterRole(), resetAfterRole()]],
  ] as const) {
    server = await ScriptedServer.start(t, ...replies, textReply("too late"));
    sleeps = new SleepRecorder();
    const stream = await withRetry(openAI(server.baseURL), new RetryPolicy({ maxAttempts: 3, initialMs: 100, sleep: sleeps.sleep })).chatStream([user("hi")]);
    const deltas = await drain(stream);
    assert.equal(server.requestCount, 3, `${what}: requests`);
    assert.ok(deltas.length === 1 && deltas[0]!.type === "error",
      `${what}: got ${show(neutralAll(deltas))}, want the last failure as it came: one ErrorDelta`);
    assert.equal(sleeps.waits.length, 2, `${what}: sleeps ${show(sleeps.waits)}, want two waits`);
  }

  server = await ScriptedServer.start(t, httpError(503), textReply("too late"));
  sleeps = new SleepRecorder();
  await apiErrorOf(withRetry(openAI(server.baseURL), new RetryPolicy({ maxAttempts: 1, sleep: sleeps.sleep })).chatStream([user("hi")]), "maxAttempts 1");
  assert.ok(server.requestCount === 1 && sleeps.waits.length === 0,
    `maxAttempts 1: ${server.requestCount} request(s) and sleeps ${show(sleeps.waits)}, want 1 and none`);

  // the default policy makes three attempts
  server = await ScriptedServer.start(t, httpError(503), httpError(503), httpError(503), textReply("too late"));
  await apiErrorOf(withRetry(openAI(server.baseURL), new RetryPolicy({ sleep: new SleepRecorder().sleep })).chatStream([user("hi")]),
    "the default policy against four scripted 503s");
  assert.equal(server.requestCount, 3, "the default policy: requests (maxAttempts is 3)");

  // every call has attempts of its own: the same wrapper, asked again after it gave up, tries three times more
  server = await ScriptedServer.start(t, ...Array.from({ length: 5 }, () => httpError(503)), textReply("third time lucky"));
  const wrapper = withRetry(openAI(server.baseURL), new RetryPolicy({ maxAttempts: 3, sleep: new SleepRecorder().sleep }));
  await apiErrorOf(wrapper.chatStream([user("hi")]), "one wrapper, against three 503s");
  const again = await collect(await wrapper.chatStream([user("hi again")]));
  assert.ok(server.requestCount === 6 && again.message.content === "third time lucky",
    `one wrapper asked twice, against five 503s and then an answer: got ${server.requestCount} requests and ${show(again.message.content)}, `
    + "want 6 and the answer (each call counts its own attempts)");
});

test("retry_before_first_content", async (t) => {
  const failures: [string, Reply][] = [
    ["reset-after-role-chunk", resetAfterRole()],
    ["server_error-event", errorEvent("server_error")],
    ["cut-before-content", after(none, closeConnection)],
    ["clean-end-without-done-no-text", after(none, cleanEnd)],
    // usage is not content: a stream that sent only usage, then ended without [DONE], is retried
    ["usage-then-cut", rawReply(200, "text/event-stream", `data: ${usageChunk(`{"prompt_tokens":7,"completion_tokens":0,"total_tokens":7}`)}\n\n`)],
    ["closed-mid-chunk-after-role-chunk", after(none, writeThen(`40\r\ndata: {"choices":[`, closeConnection))],
    ["event-cut-short-after-role-chunk", after(none, (x) => {
      x.chunk(`data: {"choices":[{"index":0,"delta":{"content":"Hel`);
      x.end();
    })],
  ];
  for (const [name, failure] of failures) {
    await t.test(name, async (t) => {
      const server = await ScriptedServer.start(t, failure, textReply("Hel", "lo"));
      const sleeps = new SleepRecorder();
      const provider = withRetry(openAI(server.baseURL), new RetryPolicy({ initialMs: 100, sleep: sleeps.sleep }));
      const deltas = await drain(await provider.chatStream([user("hi")]));
      const all = show(neutralAll(deltas));
      assert.deepEqual(textsOf(deltas), ["Hel", "lo"], `text deltas: want "Hel", "lo" once (all deltas: ${all})`);
      assert.ok(same(neutral(deltas.at(-1)!), { type: "done", finish_reason: "stop" }), `last delta: want a DoneDelta "stop" (all deltas: ${all})`);
      const usages = neutralAll(deltas.filter((d) => d.type === "usage"));
      assert.ok(same(usages, [{ type: "usage", input: 5, output: 2 }]), `usage deltas: got ${show(usages)}, want only the successful attempt's (all deltas: ${all})`);
      assert.ok(!deltas.some((d) => d.type === "error"), `an error reached the caller although the retry succeeded: ${all}`);
      assert.equal(server.requestCount, 2, "requests (the failed one and the retry)");
      assert.deepEqual(sleeps.waits, [100], "sleeps");
    });
  }
});

test("no_retry_after_content", async (t) => {
  const abc = textChunks("a", " b", " c");
  const cases: [string, Reply, string[]][] = [
    ["cut-after-three-tokens", after(abc, closeConnection), ["a", " b", " c"]],
    ["reset-after-three-tokens", after(abc, reset), ["a", " b", " c"]],
    ["server_error-after-three-tokens", errorEvent("server_error", "a", " b", " c"), ["a", " b", " c"]],
    ["event-cut-short-after-three-tokens", after(abc, (x) => {
      x.chunk(`data: {"choices":[{"index":0,"delta":{"content":" d`);
      x.end();
    }), ["a", " b", " c"]],
    ["clean-end-without-done-after-text", after((x) => [chunkEvent(x, { content: "a" }, null), chunkEvent(x, {}, "stop")], cleanEnd), ["a"]],
  ];
  for (const [name, failure, texts] of cases) {
    await t.test(name, async (t) => {
      const server = await ScriptedServer.start(t, failure, textReply("a", " b", " c", " d"));
      const sleeps = new SleepRecorder();
      const provider = withRetry(openAI(server.baseURL), new RetryPolicy({ maxAttempts: 3, initialMs: 100, sleep: sleeps.sleep }));
      const deltas = await drain(await provider.chatStream([user("hi")]));
      const all = show(neutralAll(deltas));
      assert.deepEqual(textsOf(deltas), texts, `text deltas (all deltas: ${all})`);
      const last = deltas.at(-1);
      assert.ok(last?.type === "error", `last delta: want an ErrorDelta (all deltas: ${all})`);
      if (name.startsWith("clean-end")) {
        assert.ok(last.error instanceof StreamCutError,
          `a body that ends cleanly before [DONE]: got an ErrorDelta holding ${show(last.error)}, want a StreamCutError (only [DONE] ends a stream well)`);
      }
      assert.ok(!deltas.some((d) => d.type === "done"), `a broken stream must not end in a DoneDelta: ${all}`);
      assert.equal(server.requestCount, 1, "requests (no retry once content was passed on)");
      assert.deepEqual(sleeps.waits, [], "sleeps");
    });
  }
});

test("no_retry_after_tool_call_began", async (t) => {
  const start = { tool_calls: [{ index: 0, id: "call_w", type: "function", function: { name: "get_weather", arguments: "" } }] };
  const fragment = { tool_calls: [{ index: 0, function: { arguments: `{"ci` } }] };
  const cases: [string, Reply][] = [
    ["reset-after-call-start", after((x) => [chunkEvent(x, start, null)], reset)],
    ["eof-after-first-fragment", after((x) => [chunkEvent(x, start, null), chunkEvent(x, fragment, null)], cleanEnd)],
  ];
  for (const [name, failure] of cases) {
    await t.test(name, async (t) => {
      const server = await ScriptedServer.start(t, failure, textReply("a second answer must never be asked for"));
      const sleeps = new SleepRecorder();
      const provider = withRetry(openAI(server.baseURL), new RetryPolicy({ initialMs: 100, sleep: sleeps.sleep }));
      const deltas = await drain(await provider.chatStream([user("hi")]));
      const all = show(neutralAll(deltas));
      const first = { type: "tool_start", index: 0, id: "call_w", name: "get_weather" };
      assert.ok(deltas.length > 0 && same(neutral(deltas[0]!), first), `first delta: want the tool call's start ${show(first)} (all deltas: ${all})`);
      assert.equal(deltas.at(-1)?.type, "error", `last delta: want an ErrorDelta (all deltas: ${all})`);
      assert.equal(deltas.filter((d) => d.type === "tool_call_start").length, 1, `the call must start once: ${all}`);
      assert.equal(server.requestCount, 1, "requests (a tool call is content: no retry after it)");
      assert.deepEqual(sleeps.waits, [], "sleeps");
    });
  }
});

test("transport_faults_in_band", async (t) => {
  const next = `data: ${apiChunk(`{"content":" d"}`, "null", "null")}\n\n`;
  const abc = textChunks("a", " b", " c");
  const faults: [string, Reply][] = [
    // the server closes the connection in the middle of a chunk's data
    ["closed-mid-chunk", after(abc, writeThen(`${Buffer.byteLength(next).toString(16)}\r\n${next.slice(0, 20)}`, closeConnection))],
    // the last chunk's size line is cut short, then the connection closes
    ["truncated-chunk-size", after(abc, writeThen("1", closeConnection))],
    // a chunk whose size line is not hexadecimal
    ["malformed-chunk-size", after(abc, writeThen(`zz\r\n${next}\r\n`, closeConnection))],
    // a reset in the middle of a chunk
    ["reset-mid-chunk", after(abc, writeThen(`${Buffer.byteLength(next).toString(16)}\r\n${next.slice(0, 20)}`, reset))],
    // a body framed by Content-Length that ends short of it
    ["short-content-length", (x) => {
      x.head(200, { "Content-Type": "text/event-stream" }, 100_000);
      x.raw(abc(x).map((e) => `data: ${e}\n\n`).join(""));
      x.close();
    }],
  ];
  for (const [fault, answer] of faults) {
    for (const wrapped of [false, true]) {
      const name = `${fault}-${wrapped ? "with_retry" : "direct"}`;
      await t.test(name, async (t) => {
        const server = await ScriptedServer.start(t, answer, textReply("a retry after content must not happen"));
        const direct = openAI(server.baseURL);
        const provider = wrapped ? withRetry(direct, new RetryPolicy({ sleep: new SleepRecorder().sleep })) : direct;
        const deltas = await drain(await provider.chatStream([user("hi")]));
        const all = show(neutralAll(deltas));
        assert.deepEqual(textsOf(deltas), ["a", " b", " c"], `${name}: text deltas (all: ${all})`);
        assert.equal(deltas.at(-1)?.type, "error", `${name}: last delta: want an ErrorDelta (all: ${all})`);
        assert.equal(server.requestCount, 1, `${name}: requests`);
      });
    }
  }
  // a body that fails with something that is not an Error (a fetch of the caller's may): the
  // ErrorDelta still holds an Error, as its type says
  for (const wrapped of [false, true]) {
    await t.test(`body-fails-with-a-string-${wrapped ? "with_retry" : "direct"}`, async () => {
      const ownFetch = async (): Promise<Response> => {
        let sent = false;
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (!sent) {
              sent = true;
              controller.enqueue(encode(`data: ${apiChunk(`{"content":"a"}`, "null", "null")}\n\n`));
            } else {
              controller.error("the body broke");
            }
          },
        });
        return new Response(body, { status: 200, headers: { "Content-Type": "text/event-stream" } });
      };
      const direct = openAI("http://127.0.0.1:9/v1", { fetch: ownFetch });
      const provider = wrapped ? withRetry(direct, new RetryPolicy({ sleep: new SleepRecorder().sleep })) : direct;
      const deltas = await drain(await provider.chatStream([user("hi")]));
      const last = deltas.at(-1);
      assert.deepEqual(textsOf(deltas), ["a"], `text deltas (all: ${show(neutralAll(deltas))})`);
      assert.ok(last?.type === "error" && last.error instanceof Error && last.error.message.includes("the body broke"),
        `a body that failed with the string "the body broke": got ${show(last)}, want an ErrorDelta holding an Error that says so`);
    });
  }
});

test("stalled_stream_times_out", async (t) => {
  for (const wrapped of [false, true]) {
    const label = wrapped ? "through withRetry" : "directly";
    // timeoutMs bounds the silence before the head too: on a machine too busy to get the head and
    // the first text within 50 ms (the wrapper then rightly tries again, and gets this server's
    // default answer), the run is tried once more with 2 s, on a server of its own, so that only a
    // stream that stalls after its text is judged
    let deltas: Delta[] = [];
    let server: ScriptedServer | undefined;
    let sleeps = new SleepRecorder();
    for (const limit of [50, 2000]) {
      sleeps = new SleepRecorder();
      server = await ScriptedServer.start(t, after(textChunks("a"), (x) => x.stall(10_000)));
      const direct = openAI(server.baseURL, { timeoutMs: limit });
      const provider = wrapped ? withRetry(direct, new RetryPolicy({ sleep: sleeps.sleep })) : direct;
      try {
        deltas = await drain(await provider.chatStream([user("hi")]), 15_000);
      } catch (error) {
        if (limit === 2000) {
          throw error;
        }
        continue; // no head within 50 ms: chatStream rejected with the timeout, before any content
      }
      if (textsOf(deltas)[0] === "a") {
        break;
      }
    }
    const all = show(neutralAll(deltas));
    assert.ok(server!.requestCount === 1 && sleeps.waits.length === 0,
      `${label}: ${server!.requestCount} request(s) and sleeps ${show(sleeps.waits)}, want 1 and none (a timeout after content is not retried)`);
    assert.deepEqual(textsOf(deltas), ["a"], `${label}: text deltas (all: ${all})`);
    const last = deltas.at(-1);
    assert.ok(last?.type === "error" && last.error.name === "TimeoutError",
      `${label}: last delta: got ${show(last)}, want an ErrorDelta whose error is named TimeoutError (a DOMException, as AbortSignal.timeout makes): `
      + "Config.timeoutMs bounds each silence of the body too");
    assert.ok(await server!.allClosed(500), `${label}: 500 ms after the timeout the server still had the connection: a stream that timed out must close it`);
  }
});

/** A fetch that counts the response bodies it hands out and those finished: read to their end, failed, or cancelled. */
class CountingFetch {
  opened = 0;
  finished = 0;

  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    if (response.body === null) {
      return response;
    }
    this.opened++;
    let done = false;
    const finish = (): void => {
      if (!done) {
        done = true;
        this.finished++;
      }
    };
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = await reader.read();
          if (next.done) {
            finish();
            controller.close();
          } else {
            controller.enqueue(next.value);
          }
        } catch (error) {
          finish();
          controller.error(error);
        }
      },
      async cancel(reason) {
        finish();
        await reader.cancel(reason);
      },
    }, { highWaterMark: 0 });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };

  /** Bodies handed out and not finished. */
  get open(): number {
    return this.opened - this.finished;
  }
}

test("connections_closed", async (t) => {
  const good = textReply("ok");
  // a server_error event, then the connection kept open: only the client can close it
  const errorThenOpen = after((x) => [JSON.stringify({ error: { message: "overloaded", type: "server_error" } })], (x) => x.stall(10_000));
  for (const name of ["read-to-end", "api-error", "retried-after-503", "retried-after-cut", "retried-after-error-event",
    "cancelled-early", "returned-early"]) {
    await t.test(name, async (t) => {
      const server = await ScriptedServer.start(t);
      const counting = new CountingFetch();
      const provider = openAI(server.baseURL, { fetch: counting.fetch });
      const atSleep: { bodies: number; closed: boolean }[] = []; // what was still open while the retry wrapper waited
      const sleep = async (): Promise<void> => {
        atSleep.push({ bodies: counting.open, closed: await server.allClosed(500) });
      };
      if (name === "read-to-end") {
        server.script(good);
        await drain(await provider.chatStream([user("hi")]));
      } else if (name === "api-error") {
        server.script(httpError(400, { message: "no" }));
        await apiErrorOf(provider.chatStream([user("hi")]), "a 400");
      } else if (name === "cancelled-early") {
        server.script(slowStream(5000));
        const controller = new AbortController();
        const stream = await provider.chatStream([user("hi")], [], { signal: controller.signal });
        controller.abort();
        await drain(stream);
      } else if (name === "returned-early") {
        server.script(slowStream(5000));
        const stream = await provider.chatStream([user("hi")]);
        await stream.return();
      } else {
        const failure = { "retried-after-503": httpError(503, { message: "busy" }), "retried-after-cut": after(none, cleanEnd),
          "retried-after-error-event": errorThenOpen }[name]!;
        server.script(failure, good);
        const deltas = await drain(await withRetry(provider, new RetryPolicy({ sleep })).chatStream([user("hi")]));
        assert.deepEqual(textsOf(deltas), ["ok"], `got ${show(neutralAll(deltas))}, want the retried answer "ok"`);
        assert.ok(same(atSleep, [{ bodies: 0, closed: true }]),
          `while the wrapper waited to retry: got ${show(atSleep)}, want [{"bodies":0,"closed":true}] (the failed attempt is closed before the wait)`);
      }
      assert.equal(counting.open, 0, "response bodies never read to their end nor cancelled: close the body on every path (the end of a stream, an error answer, an early end)");
      assert.ok(await server.allClosed(500), "the server still saw an open connection 500 ms later: the client must close what it opened");
    });
  }
});

test("cancel_stops_stream", async (t) => {
  const cases: [string, boolean, "abort" | "return" | "break", boolean][] = [
    // name, through withRetry, how the caller stops, whether it read a delta first
    ["abort-direct", false, "abort", true],
    ["abort-with_retry", true, "abort", true],
    ["abort-before-reading", false, "abort", false],
    ["break-direct", false, "break", true],
    ["break-with_retry", true, "break", true],
    ["return-before-reading", false, "return", false],
    ["return-before-reading-with_retry", true, "return", false],
  ];
  for (const [name, wrapped, how, readFirst] of cases) {
    await t.test(name, async (t) => {
      const server = await ScriptedServer.start(t, slowStream(5000));
      const direct = openAI(server.baseURL);
      const provider = wrapped ? withRetry(direct, new RetryPolicy({ sleep: new SleepRecorder().sleep })) : direct;
      const controller = new AbortController();
      const stream = await provider.chatStream([user("count slowly")], [], { signal: controller.signal });
      if (how === "break") {
        for await (const delta of stream) {
          void delta;
          break; // for await calls return()
        }
      } else {
        if (readFirst) {
          const first = await stream.next();
          assert.ok(!first.done, "the slow stream ended before its first delta");
        }
        assert.equal(server.open, 1, "the server saw the client leave before the test stopped the stream");
        if (how === "abort") {
          controller.abort();
          const rest = await drain(stream, 500);
          assert.deepEqual(neutralAll(rest), [], "after the abort: the stream must end, with no delta more");
        } else {
          await stream.return();
        }
      }
      const gone = await Promise.race([server.clientGone.then(() => true), pause(500).then(() => false)]);
      assert.ok(gone, `500 ms after the caller stopped (${how}) the server still had its request: the stream must close its connection`);
    });
  }

  // Aborted while the retry wrapper holds the stream back, before its first content: chatStream
  // rejects with the signal's reason, and the connection closes.
  await t.test("abort-before-first-content-with_retry", async (t) => {
    const server = await ScriptedServer.start(t, after(none, async (x) => {
      if (await x.stall(5000)) {
        x.server.noteClientGone();
      }
    }));
    const controller = new AbortController();
    let headArrived = false;
    const watching = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const response = await fetch(input, init);
      headArrived = true;
      return response;
    };
    const pending = withRetry(openAI(server.baseURL, { fetch: watching }), new RetryPolicy({ sleep: new SleepRecorder().sleep }))
      .chatStream([user("hi")], [], { signal: controller.signal });
    assert.ok(await eventually(() => headArrived, 2000), "the answer's head never arrived");
    controller.abort();
    await assert.rejects(pending, (error: unknown) => error === controller.signal.reason,
      "aborted before the first content: want chatStream rejected with the signal's reason");
    const gone = await Promise.race([server.clientGone.then(() => true), pause(500).then(() => false)]);
    assert.ok(gone, "500 ms after the abort the server still had its request: the held-back stream must close its connection");
  });

  // Aborted while the caller is not reading: nothing waits on the stream, yet the connection must close.
  await t.test("abort-while-not-reading", async (t) => {
    const server = await ScriptedServer.start(t, slowStream(5000));
    const controller = new AbortController();
    const stream = await openAI(server.baseURL).chatStream([user("hi")], [], { signal: controller.signal });
    await stream.next();
    controller.abort();
    assert.ok(await server.allClosed(500), "500 ms after the abort the server still had the connection, with nobody reading the stream");
    assert.deepEqual(neutralAll(await drain(stream, 500)), [], "after the abort: the stream must end, with no delta more");
  });

  // Aborted before the request: chatStream rejects with the signal's reason and sends nothing.
  await t.test("aborted-before-request", async (t) => {
    const server = await ScriptedServer.start(t, textReply("never asked for"));
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(openAI(server.baseURL).chatStream([user("hi")], [], { signal: controller.signal }),
      (error: unknown) => error === controller.signal.reason, "chatStream with an aborted signal must reject with the signal's reason");
    assert.equal(server.requestCount, 0, "a request was sent with an aborted signal");
  });

  // Aborted during the retry's wait: the default sleep (a timer) ends with the signal, and the
  // caller gets its reason at once, without a second request.
  await t.test("aborted-during-retry-wait", async () => {
    // the first attempt fails as chatStream's rejection, or inside its stream before any content
    for (const failure of [new APIError(503), new MemStream([{ type: "error", error: new StreamCutError() }])]) {
      const what = failure instanceof APIError ? "after a 503" : "after a stream cut before content";
      const inner = new MemProvider(failure, new MemStream([{ type: "text", text: "too late" }]));
      const signal = AbortSignal.timeout(100);
      const begun = performance.now();
      await assert.rejects(withRetry(inner, new RetryPolicy({ initialMs: 3_600_000, maxMs: 3_600_000 })).chatStream([user("hi")], [], { signal }),
        (error: unknown) => error instanceof Error && error.name === "TimeoutError",
        `${what}, the signal timed out during an hour's wait: want chatStream rejected with its reason (a TimeoutError)`);
      const waited = performance.now() - begun;
      assert.ok(waited < 4000, `${what}: the wait went on ${Math.round(waited)} ms after the signal aborted at 100 ms: the default sleep must end with the signal`);
      assert.equal(inner.calls, 1, `${what}: calls (the caller gave up before the retry)`);
    }
    // a signal that aborted before the wait began: an abort event never comes, yet the wait must not happen
    const aborted = AbortSignal.abort();
    const early = performance.now();
    await assert.rejects(sleep(3_600_000, aborted), (error: unknown) => error === aborted.reason,
      "sleep(an hour, a signal aborted already): want it rejected at once with the signal's reason");
    assert.ok(performance.now() - early < 4000, "sleep with a signal aborted already waited");
  });
});

test("faketool_tool_call", async () => {
  const fake = await FakeModel.fresh();
  const provider = openAI(fake.baseURL);
  const tools: ToolDef[] = [{ name: "get_weather", description: "Current weather in a city", parameters: WEATHER_SCHEMA }];
  const conversation: Message[] = [user("What is the weather in Paris?")];
  const deltas = await drain(await provider.chatStream(conversation, tools));
  const fragments = deltas.flatMap((d) => (d.type === "tool_call_args" ? [d.fragment] : []));
  const accumulator = new Accumulator();
  for (const delta of deltas) {
    accumulator.add(delta);
  }
  assert.equal(fragments.length, 2, `argument fragments: got ${show(fragments)}, want the two halves the fake model sends (all: ${show(neutralAll(deltas))})`);
  const message = accumulator.message();
  const usage = accumulator.usage();
  const calls = message.toolCalls ?? [];
  assert.ok(accumulator.error === undefined && calls.length === 1,
    `first turn: got ${calls.length} tool calls (error ${show(accumulator.error)}), want one get_weather call (deltas: ${show(neutralAll(deltas))})`);
  const call = calls[0]!;
  let args: unknown;
  try {
    args = JSON.parse(call.arguments);
  } catch {
    args = undefined;
  }
  assert.ok(call.name === "get_weather" && call.arguments === fragments.join("") && same(args, { city: "Paris" }),
    `tool call: got ${call.name}(${call.arguments}), want get_weather with the fragments joined, {"city":"Paris"}`);
  assert.notEqual(call.id, "", "tool call: got an empty id, want the id the fake model sent");
  assert.ok(usage.inputTokens > 0 && usage.outputTokens > 0,
    `usage: got ${show(usage)}; the fake model (like OpenAI) sends usage only when stream_options.include_usage is true`);

  conversation.push(message, { role: "tool", content: `{"temp_c": 18}`, toolCallId: call.id });
  let answer;
  try {
    answer = await collect(await provider.chatStream(conversation, tools));
  } catch (error) {
    assert.fail(`second turn (with the tool result): ${show(error)} (was the tool message sent with its tool_call_id?)`);
  }
  assert.ok((answer.message.toolCalls ?? []).length === 0 && answer.message.content.includes(`{"temp_c": 18}`),
    `second turn: got ${show(answer.message)}; want a text answer quoting the tool result`);

  const sent = (await fake.lastRequest()).body as { messages?: Record<string, unknown>[] };
  const wire = sent.messages ?? [];
  assert.equal(wire.length, 3, `second turn: the fake model received ${show(wire)}, want 3 messages (question, the call, its result)`);
  const wantCall = { id: call.id, type: "function", function: { name: "get_weather", arguments: call.arguments } };
  assert.ok(same(wire[1]!.tool_calls, [wantCall]), `the assistant message sent back: got tool_calls ${show(wire[1]!.tool_calls)}, want [${show(wantCall)}]`);
  const wantResult = { role: "tool", content: `{"temp_c": 18}`, tool_call_id: call.id };
  assert.ok(same(wire[2], wantResult), `the tool message sent back: got ${show(wire[2])}, want ${show(wantResult)}`);
});

test("retry_wraps_any_provider", async () => {
  const sleeps = new SleepRecorder();
  const policy = new RetryPolicy({ sleep: sleeps.sleep });

  // a failure of the provider's own making, before any stream: the caller gets it as it came
  const own = new Error("provider bug");
  let inner = new MemProvider(own, new MemStream([{ type: "text", text: "never" }]));
  await assert.rejects(withRetry(inner, policy).chatStream([user("hi")]), (error: unknown) => error === own,
    "an inner provider failing with its own error: want that very error, as it came");
  assert.equal(inner.calls, 1, "an inner provider's own error (not retryable): calls");

  // streams that end without a done delta are passed on as they are, and read to their end
  for (const [what, deltas] of [["a usage delta, then the end", [{ type: "usage", inputTokens: 2, outputTokens: 0 }]], ["nothing at all", []]] as const) {
    const stream = new MemStream([...deltas]);
    const got = await drain(await withRetry(new MemProvider(stream), policy).chatStream([user("hi")]));
    assert.ok(same(neutralAll(got), neutralAll([...deltas])), `an inner stream of ${what}: got ${show(neutralAll(got))}, want it as it came`);
    assert.ok(stream.finished, `an inner stream of ${what}: never read to its end`);
  }

  // an exception while the wrapper reads the inner stream reaches the caller, and the stream is closed
  const broken = new Error("the inner stream broke");
  const throwing = new MemStream([{ type: "usage", inputTokens: 1, outputTokens: 0 }], broken);
  await assert.rejects(withRetry(new MemProvider(throwing), policy).chatStream([user("hi")]), (error: unknown) => error === broken,
    "an inner stream that throws while the wrapper reads it: want that very error");
  assert.ok(throwing.closed, "an inner stream that threw while the wrapper read it was never closed (return())");

  // an inner stream that throws after its first content: the caller gets the exception, and the stream is closed
  const late = new MemStream([{ type: "text", text: "a" }], broken);
  const committed = await withRetry(new MemProvider(late), policy).chatStream([user("hi")]);
  assert.equal((await committed.next()).value?.type, "text", "the first delta of a stream that throws after it");
  await assert.rejects(committed.next(), (error: unknown) => error === broken, "an inner stream that throws after content: want that very error");
  assert.ok(late.closed, "an inner stream that threw after content was never closed (return())");

  // the caller leaves its loop early, or throws inside it: the inner stream is closed
  for (const how of ["break", "throw"]) {
    const stream = new MemStream([{ type: "text", text: "a" }, { type: "text", text: "b" }, { type: "done", finishReason: "stop" }]);
    inner = new MemProvider(stream);
    try {
      for await (const delta of await withRetry(inner, policy).chatStream([user("hi")])) {
        void delta;
        if (how === "break") {
          break;
        }
        throw new Error("the caller's own failure");
      }
    } catch (error) {
      assert.equal((error as Error).message, "the caller's own failure", "the caller's exception must reach the caller");
    }
    assert.ok(stream.closed, `the caller ${how === "break" ? "broke out of" : "threw inside"} its loop after one delta: the inner stream was never closed (return())`);
  }
  assert.deepEqual(sleeps.waits, [], "sleeps (nothing here is retryable)");

  // a failed attempt's stream is closed before the wait and before the next attempt, so that two
  // attempts' connections are never open at once
  const failed = new MemStream([{ type: "usage", inputTokens: 3, outputTokens: 0 }, { type: "error", error: new StreamCutError() }]);
  const answer: Delta[] = [{ type: "text", text: "ok" }, { type: "done", finishReason: "stop" }];
  const scripted = new MemProvider(failed, new MemStream([...answer]));
  const openAtSleep: number[] = [];
  const noting = new RetryPolicy({ sleep: async () => { openAtSleep.push(scripted.openStreams()); } });
  const got = await drain(await withRetry(scripted, noting).chatStream([user("hi")]));
  assert.ok(same(neutralAll(got), neutralAll(answer)), `a failed attempt, then a good one: got ${show(neutralAll(got))}, want ${show(neutralAll(answer))}`);
  assert.ok(same(openAtSleep, [0]) && same(scripted.openAtCall, [0, 0]),
    `inner streams still open at the wait ${show(openAtSleep)} and at each attempt ${show(scripted.openAtCall)}, want [0] and [0, 0] `
    + "(close the failed attempt's stream, then wait, then try again)");
});

/** Errors shaped as fetch and undici make them: a TypeError whose cause carries the socket's code. */
function netError(message: string, code: string): TypeError {
  return new TypeError(message, { cause: Object.assign(new Error(`${code} from the socket`), { code }) });
}

test("retryable_table", async () => {
  const table: [string, unknown, boolean][] = [
    ["StreamCutError", new StreamCutError(), true],
    ["StreamError server_error", new StreamError("server_error"), true],
    ["StreamError invalid_request_error", new StreamError("invalid_request_error"), false],
    ["StreamError without a type", new StreamError(), false],
    ["connection refused (fetch failed)", netError("fetch failed", "ECONNREFUSED"), true],
    ["connection reset before the answer", netError("fetch failed", "ECONNRESET"), true],
    ["connection reset mid-body (terminated)", netError("terminated", "ECONNRESET"), true],
    ["connection aborted", netError("fetch failed", "ECONNABORTED"), true],
    ["broken pipe", netError("fetch failed", "EPIPE"), true],
    ["the other side closed (undici)", netError("terminated", "UND_ERR_SOCKET"), true],
    ["a connect timeout (undici)", netError("fetch failed", "UND_ERR_CONNECT_TIMEOUT"), true],
    ["a silent server (TimeoutError)", new DOMException("the server sent nothing", "TimeoutError"), true],
    ["the caller aborted (AbortError)", new DOMException("This operation was aborted", "AbortError"), false],
    ["a malformed chunk size (the parser's error)", netError("terminated", "HPE_INVALID_CHUNK_SIZE"), false],
    ["a bad port (fetch failed, no socket code)", new TypeError("fetch failed", { cause: new Error("bad port") }), false],
    ["invalid JSON in an event", new ProviderError("invalid JSON in stream event: \"{\""), false],
    ["IncompleteStreamError", new IncompleteStreamError(), false],
    ["an Error of the caller's", new Error("boom"), false],
    ["undefined", undefined, false],
    ["a string", "ECONNRESET", false],
  ];
  for (const status of [408, 429, 500, 502, 503, 504]) {
    table.push([`APIError ${status}`, new APIError(status), true]);
  }
  for (const status of [400, 401, 403, 404, 407, 409, 410, 422, 499, 501, 505, 599]) {
    table.push([`APIError ${status}`, new APIError(status), false]);
  }
  // a real refusal, from fetch itself: a port nobody listens on
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  try {
    await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: "POST", body: "{}" });
  } catch (error) {
    table.push(["fetch's own error for a refused connection", error, true]);
  }
  for (const [label, error, want] of table) {
    assert.equal(retryable(error), want, `retryable(${label})`);
  }
});

test("accumulator_orders_calls_by_index", async () => {
  const accumulator = new Accumulator();
  for (const i of [10, 2, 0, 1]) {
    accumulator.add({ type: "tool_call_start", index: i, id: `call_${i}`, name: `tool_${i}` });
  }
  for (const i of [2, 10, 1, 0]) {
    accumulator.add({ type: "tool_call_end", index: i, call: { id: `call_${i}`, name: `tool_${i}`, arguments: `{"n": ${i}}` } });
  }
  accumulator.add({ type: "done", finishReason: "tool_calls" });
  const ids = (accumulator.message().toolCalls ?? []).map((call) => call.id);
  assert.deepEqual(ids, ["call_0", "call_1", "call_2", "call_10"], "tool calls ended in the order 2, 10, 1, 0: their ids in message() (index order)");
});

test("accumulator_message", async () => {
  const accumulator = new Accumulator();
  assert.ok(accumulator.finishReason === "" && same(accumulator.usage(), { inputTokens: 0, outputTokens: 0 }),
    `before any delta: got finishReason ${show(accumulator.finishReason)} and usage ${show(accumulator.usage())}, want "" and zeros`);
  const deltas: Delta[] = [
    { type: "text", text: "Let me " },
    { type: "tool_call_start", index: 0, id: "call_0", name: "list_files" },
    { type: "tool_call_start", index: 1, id: "call_1", name: "read_file" },
    { type: "text", text: "check." },
    { type: "tool_call_args", index: 1, fragment: `{"path": "a"}` },
    { type: "usage", inputTokens: 3, outputTokens: 1 },
    { type: "tool_call_end", index: 0, call: { id: "call_0", name: "list_files", arguments: "" } },
    { type: "usage", inputTokens: 12, outputTokens: 7 },
  ];
  for (const delta of deltas) {
    accumulator.add(delta);
  }
  assert.equal(accumulator.finishReason, "", "finishReason before the DoneDelta");
  accumulator.add({ type: "done", finishReason: "length" });
  const message = accumulator.message();
  const want = { role: "assistant", content: "Let me check.", tool_calls: [{ id: "call_0", name: "list_files", arguments: "{}" }] };
  assert.ok(same(messageForm(message), want), `message(): got ${show(messageForm(message))}, want ${show(want)} `
    + "(text joined; a call counts once its end delta came; no arguments is {})");
  assert.ok(same(accumulator.usage(), { inputTokens: 12, outputTokens: 7 }), `usage(): got ${show(accumulator.usage())}, want the last UsageDelta's 12 and 7`);
  assert.equal(accumulator.finishReason, "length", "finishReason");

  // what the caller does with the message it got must not change the accumulator
  message.toolCalls![0]!.arguments = "[";
  message.toolCalls!.push({ id: "call_x", name: "rm", arguments: "{}" });
  message.content += " (edited)";
  accumulator.usage().inputTokens = 99;
  assert.ok(same(messageForm(accumulator.message()), want), `message() after the caller changed the previous one: got ${show(messageForm(accumulator.message()))}, want ${show(want)} again`);
  assert.ok(same(accumulator.usage(), { inputTokens: 12, outputTokens: 7 }), "usage() after the caller changed the previous one");
});

test("accumulator_errors", async () => {
  const opened: Delta[] = [{ type: "tool_call_start", index: 0, id: "call_0", name: "get_weather" }, { type: "tool_call_args", index: 0, fragment: `{"city":` }];
  const accumulator = new Accumulator();
  for (const delta of opened) {
    accumulator.add(delta);
  }
  assert.ok(accumulator.error instanceof IncompleteStreamError, `error with no DoneDelta yet: got ${show(accumulator.error)}, want an IncompleteStreamError`);
  assert.equal(accumulator.error.name, "IncompleteStreamError", "an IncompleteStreamError's name (what a log shows of it)");
  assert.deepEqual(accumulator.message().toolCalls ?? [], [], "a call with no end delta is no tool call");
  await assert.rejects(collect(streamOf(...opened)), IncompleteStreamError, "collect of a stream with neither a done nor an error delta");

  const [first, second] = [new Error("first failure"), new Error("second failure")];
  const failed = new Accumulator();
  for (const delta of [{ type: "text", text: "Hel" }, { type: "error", error: first }, { type: "error", error: second }] as Delta[]) {
    failed.add(delta);
  }
  assert.equal(failed.error, first, "error after two ErrorDeltas: want the first one's own error");
  const cut = new StreamCutError();
  await assert.rejects(collect(streamOf({ type: "text", text: "Hel" }, { type: "error", error: cut })), (error: unknown) => error === cut,
    "collect of a cut stream: want its ErrorDelta's own error thrown");

  const done = new Accumulator();
  done.add({ type: "done", finishReason: "stop" });
  assert.equal(done.error, undefined, "error after a DoneDelta");
  const { message, usage } = await collect(streamOf({ type: "text", text: "hi" }, { type: "done", finishReason: "stop" }));
  assert.ok(message.content === "hi" && same(usage, { inputTokens: 0, outputTokens: 0 }), `collect: got ${show(message)} and ${show(usage)}, want "hi" and zero usage`);
});

const TAINTED: CallContext = { tainted: true, iter: 0 };

function contextForm(cc: CallContext): CallContext {
  return { tainted: cc.tainted, iter: cc.iter };
}

test("call_context_default_tainted", async () => {
  assert.ok(same(contextForm(currentCallContext()), TAINTED),
    `no call context set: got ${show(currentCallContext())}, want {"tainted":true,"iter":0} (err on the cautious side)`);
  // a value another module keeps in its own AsyncLocalStorage is not a call context
  const other = new AsyncLocalStorage<CallContext>();
  const seen = other.run({ tainted: false, iter: 9 }, () => currentCallContext());
  assert.ok(same(contextForm(seen), TAINTED), `a CallContext kept in another AsyncLocalStorage: got ${show(seen)}, want the default (only withCallContext sets one)`);
  // a callback scheduled outside any context has none either
  const later = await new Promise<CallContext>((resolve) => setImmediate(() => resolve(currentCallContext())));
  assert.ok(same(contextForm(later), TAINTED), `a setImmediate callback: got ${show(later)}, want the default`);
  // nor does a new thread
  const worker = new Worker(new URL("./context-worker.js", import.meta.url));
  const fromThread = await new Promise<unknown>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  await worker.terminate();
  assert.ok(same(fromThread, TAINTED), `a worker thread: got ${show(fromThread)}, want the default`);
});

test("call_context_restores", async () => {
  const outer: CallContext = { tainted: false, iter: 1 };
  const inner: CallContext = { tainted: true, iter: 2 };
  withCallContext(outer, () => {
    assert.ok(same(contextForm(currentCallContext()), outer), `withCallContext(outer): got ${show(currentCallContext())}`);
    const returned = withCallContext(inner, () => {
      assert.ok(same(contextForm(currentCallContext()), inner), `nested: got ${show(currentCallContext())}, want ${show(inner)}`);
      return 42;
    });
    assert.equal(returned, 42, "withCallContext gives back what its function returns");
    assert.ok(same(contextForm(currentCallContext()), outer), `after the nested block: got ${show(currentCallContext())}, want ${show(outer)} back`);
    // a tool that fails inside its own context leaves the caller's as it was, and its error goes on
    assert.throws(() => withCallContext(inner, () => {
      throw new Error("a tool failed");
    }), /a tool failed/, "the tool's exception must reach the caller");
    assert.ok(same(contextForm(currentCallContext()), outer), `after a block that threw: got ${show(currentCallContext())}, want ${show(outer)}`);
  });
  // the context follows its block across awaits, and two blocks at once keep their own
  const seen = await Promise.all([1, 2].map((iter) => withCallContext({ tainted: iter === 2, iter }, async () => {
    await pause(iter === 1 ? 20 : 5);
    return currentCallContext();
  })));
  assert.ok(same(seen.map(contextForm), [{ tainted: false, iter: 1 }, { tainted: true, iter: 2 }]),
    `two async blocks at once, each awaiting: got ${show(seen)}, want each its own context`);
  await assert.rejects(withCallContext(outer, async () => {
    await pause(1);
    throw new Error("an async tool failed");
  }), /an async tool failed/, "an async block's rejection must reach the caller");
  assert.ok(same(contextForm(currentCallContext()), TAINTED), `outside every block again: got ${show(currentCallContext())}, want the default`);
});

test("step_names", async () => {
  assert.equal(llmStep(3), "llm/3", "llmStep(3)");
  assert.equal(toolStep(3, 0, "get_weather"), "tool/3/0/get_weather", "toolStep(3, 0, \"get_weather\")");
  assert.equal(llmStep(0), "llm/0", "llmStep(0)");
  const table: [string, string | undefined][] = [
    ["tool/3/0/get_weather", "get_weather"],
    ["tool/12/4/fs/read_file", "fs/read_file"],
    ["tool/3/10/get_weather", "get_weather"],
    [toolStep(7, 2, "mcp/github/open_pr"), "mcp/github/open_pr"],
    ["llm/3", undefined],
    ["tool/3/0", undefined],
    ["tool/3/0/", undefined],
    ["tool/x/0/get_weather", undefined],
    ["tool/3/y/get_weather", undefined],
    ["tool/3.5/0/get_weather", undefined],
    ["tool/-1/0/get_weather", undefined],
    ["tool/ 3/0/get_weather", undefined],
    ["tool//0/get_weather", undefined],
    ["tool/3//get_weather", undefined],
    ["tool/\u0663/0/get_weather", undefined], // ARABIC-INDIC DIGIT THREE: a digit, but not an ASCII one
    ["tool/\uff13/0/get_weather", undefined], // FULLWIDTH DIGIT THREE
    ["tools/3/0/get_weather", undefined],
    ["my-tool/3/0/get_weather", undefined],
    ["Tool/3/0/get_weather", undefined],
    ["", undefined],
  ];
  for (const [step, want] of table) {
    assert.equal(stepToolName(step), want, `stepToolName(${JSON.stringify(step)})`);
  }
});

test("content_and_verdicts", async () => {
  const table: [Delta, boolean][] = [
    [{ type: "text", text: "x" }, true],
    [{ type: "tool_call_start", index: 0, id: "c", name: "n" }, true],
    [{ type: "tool_call_args", index: 0, fragment: "{" }, true],
    [{ type: "tool_call_end", index: 0, call: { id: "c", name: "n", arguments: "{}" } }, true],
    [{ type: "usage", inputTokens: 1, outputTokens: 1 }, false],
    [{ type: "done", finishReason: "stop" }, false],
    [{ type: "error", error: new StreamCutError() }, false],
  ];
  for (const [delta, want] of table) {
    assert.equal(isContent(delta), want, `isContent(${show(delta)})`);
  }
  const verdicts: [Verdict, Verdict][] = [
    [Verdict.allow(), { decision: "allow", reason: "", marker: "" }],
    [Verdict.deny("writes outside the sandbox"), { decision: "deny", reason: "writes outside the sandbox", marker: "" }],
    [Verdict.needApproval("ask-42"), { decision: "need_approval", reason: "", marker: "ask-42" }],
  ];
  for (const [got, want] of verdicts) {
    const form = { decision: got.decision, reason: got.reason, marker: got.marker };
    assert.ok(same(form, want), `a Verdict constructor: got ${show(got)}, want ${show(want)}`);
  }
  const result = encode(`{"temp_c": 18}`);
  const ran = await new Direct().runStep(toolStep(1, 0, "get_weather"), "tool", async () => result);
  assert.equal(ran, result, "Direct.runStep: want what the step's function returned");
  const boom = new Error("boom");
  await assert.rejects(new Direct().runStep(llmStep(1), "llm", async () => {
    throw boom;
  }), (error: unknown) => error === boom, "Direct.runStep with a failing function: want its error");
});

// ---- server-sent events ---------------------------------------------------------------------------

interface Ev {
  data: string;
  event: string;
  id: string;
}

/** Every event of `body`, in the form the tests compare. */
async function readEvents(body: ReadableStream<Uint8Array>): Promise<Ev[]> {
  const out: Ev[] = [];
  for await (const e of new EventReader(body) as AsyncIterable<SSEEvent>) {
    out.push({ data: e.data, event: e.event, id: e.id });
    if (out.length > 100_000) {
      throw new Error("more than 100000 events: the reader does not advance");
    }
  }
  return out;
}

const ev = (data: string, event = "message", id = ""): Ev => ({ data, event, id });

const SSE_EDGES: [string, string | Uint8Array, Ev[]][] = [
  ["lone_cr_line_ends", "data: a\rdata: b\r\rdata: c\r\r", [ev("a\nb"), ev("c")]],
  ["crlf_line_ends", "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", [ev("a\nb"), ev("c")]],
  ["crlf_then_lf_blank_line", "data: a\r\n\ndata: b\r\n\r\n", [ev("a"), ev("b")]],
  ["cr_then_lf_blank_line", "data: a\r\r\ndata: b\n\r\n", [ev("a"), ev("b")]],
  ["mixed_line_ends", "data: a\ndata: b\r\ndata: c\r\r\ndata: d\n\n", [ev("a\nb\nc"), ev("d")]],
  ["leading_bom_stripped", "\ufeffdata: a\n\n", [ev("a")]],
  ["only_one_bom_stripped", "\ufeff\ufeffdata: a\n\ndata: b\n\n", [ev("b")]],
  ["bom_later_is_data", "data: \ufeffa\n\n", [ev("\ufeffa")]],
  ["line_without_colon_is_field_with_empty_value", "data\ndata\ndata: x\n\n", [ev("\n\nx")]],
  ["empty_data_dispatches_empty_event", "data:\n\n", [ev("")]],
  ["blank_lines_without_data_dispatch_nothing", "\n\n\r\n\rid: 5\n\nretry: 100\n\ndata: a\n\n", [ev("a", "message", "5")]],
  ["event_only_block_not_dispatched", "event: ping\n\ndata: a\n\n", [ev("a")]],
  ["event_type_applies_to_one_event", "event: update\ndata: x\n\ndata: y\n\n", [ev("x", "update"), ev("y")]],
  ["one_leading_space_removed", "data:x\n\ndata:  y\n\ndata: z \n\ndata:\tw\n\n", [ev("x"), ev(" y"), ev("z "), ev("\tw")]],
  ["value_split_at_first_colon", "data: a:b: c\n\n", [ev("a:b: c")]],
  ["colon_in_short_field_values", "id:1:2\nevent:x:y\ndata:a:b\n\n", [ev("a:b", "x:y", "1:2")]],
  ["comments", ": ping\ndata: a\n: in the middle\ndata: b\n\n:\n\n", [ev("a\nb")]],
  ["unknown_fields_ignored", "foo: bar\nData: no\nretry: 10\ndata: a\nDATA: b\n\n", [ev("a")]],
  ["pending_event_at_eof_discarded", "data: a\n\ndata: [DONE]", [ev("a")]],
  ["pending_event_after_one_line_end_discarded", "data: a\n\ndata: b\n", [ev("a")]],
  ["pending_comment_at_eof", "data: a\n\n: ping\n", [ev("a")]],
  ["clean_end_after_extra_blank_lines", "data: a\n\n\n\r\n", [ev("a")]],
  ["empty_input", "", []],
  ["utf8_split_across_reads", "data: héllo — €5 𝄞👋\n\n", [ev("héllo — €5 𝄞👋")]],
  // a stray byte, a character cut short before a letter, and one cut short before the line end
  ["invalid_utf8_replaced", Uint8Array.from([...encode("data: a"), 0xff, 0x62, 0xe2, 0x82, 0x63, 0xf0, 0x9f, 0x98, 0x0a, 0x0a]), [ev("a\ufffdb\ufffdc\ufffd")]],
  ["id_kept", "id: 7\ndata: a\n\n", [ev("a", "message", "7")]],
  // an id alone dispatches nothing but is the last event id from then on, until an empty id resets it
  ["id_from_earlier_block_kept_until_reset", "id: 7\n\ndata: x\n\ndata: y\n\nid\ndata: z\n\ndata: w\n\n",
    [ev("x", "message", "7"), ev("y", "message", "7"), ev("z"), ev("w")]],
  ["id_with_nul_ignored", "id: 1\u00002\ndata: a\n\nid: \u0000\ndata: b\n\n", [ev("a"), ev("b")]],
  ["empty_values_after_colon", "id: 3\ndata: a\n\nid:\nevent:\ndata: b\n\n", [ev("a", "message", "3"), ev("b")]],
  ["unicode_line_separators_are_not_line_ends", "data: a\u2028b\u2029c\u0085d\u000be\u000cf\u001cg\n\n", [ev("a\u2028b\u2029c\u0085d\u000be\u000cf\u001cg")]],
];

test("sse_spec_edges", async (t) => {
  for (const [name, source, want] of SSE_EDGES) {
    await t.test(name, async () => {
      const body = typeof source === "string" ? encode(source) : source;
      const check = async (how: string, stream: ReadableStream<Uint8Array>): Promise<void> => {
        const got = await readEvents(stream);
        assert.ok(same(got, want), `body ${show(new TextDecoder().decode(body))} ${how}: got events ${show(got)}, want ${show(want)}`);
      };
      for (const size of [1, 2, 3, 5, 8, 65536]) {
        await check(`read ${size} byte(s) at a time`, chunked(body, size));
      }
      // every way of cutting the body into two reads, and into three with the middle one a byte or two
      for (let i = 1; i < body.length; i++) {
        await check(`cut at ${i}`, cut(body, [i]));
        for (const j of [i + 1, i + 2]) {
          if (j < body.length) {
            await check(`cut at ${i} and ${j}`, cut(body, [i, j]));
          }
        }
      }
    });
  }
});

/** The event-stream rules applied to a whole body line by line, the plain way (section 2.2). */
function specEvents(body: Uint8Array): Ev[] {
  let text = new TextDecoder("utf-8", { ignoreBOM: true }).decode(body);
  if (text.startsWith("\ufeff")) {
    text = text.slice(1);
  }
  const lines = text.split(/\r\n|\r|\n/).slice(0, -1); // the last piece has no line end: never part of an event
  const events: Ev[] = [];
  let data: string[] | undefined;
  let type = "";
  let lastId = "";
  for (const line of lines) {
    if (line === "") {
      if (data !== undefined) {
        events.push(ev(data.join("\n"), type || "message", lastId));
      }
      data = undefined;
      type = "";
      continue;
    }
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) {
      value = value.slice(1);
    }
    if (name === "data") {
      (data ??= []).push(value);
    } else if (name === "event") {
      type = value;
    } else if (name === "id" && !value.includes("\0")) {
      lastId = value;
    }
  }
  return events;
}

/** The pieces a body is cut into, as a message shows them. */
function showReads(body: Uint8Array, cuts: readonly number[]): string {
  if (cuts.length >= 5) {
    return `${body.length} reads of ${cuts.length === body.length - 1 ? "one byte" : "a few bytes"}`;
  }
  const bounds = [0, ...cuts, body.length];
  return `[${bounds.slice(1).map((end, i) => show(new TextDecoder().decode(body.slice(bounds[i], end)))).join(" ")}]`;
}

test("sse_line_ends_every_split", async () => {
  const ends = ["\n", "\r\n", "\r"];
  const failures: string[] = [];
  for (const x of ends) {
    for (const y of ends) {
      for (const z of ends) {
        for (const w of ends.slice(0, 2)) {
          const body = encode(`data: a${x}data: b${y}${z}data: c${w}${w}`);
          const want = specEvents(body);
          const n = body.length;
          const ways: number[][] = [];
          for (let i = 1; i < n; i++) {
            ways.push([i]); // two reads, split at i
          }
          for (let i = 1; i < n - 1; i++) {
            ways.push([i, i + 1]); // the byte at i alone in the middle read
          }
          for (let i = 1; i < n - 2; i++) {
            ways.push([i, i + 2]); // the two bytes at i alone
          }
          ways.push(Array.from({ length: n - 1 }, (_, i) => i + 1)); // one byte per read
          for (const cuts of ways) {
            const got = await readEvents(cut(body, cuts));
            if (!same(got, want)) {
              failures.push(`body ${show(new TextDecoder().decode(body))} read as ${showReads(body, cuts)}: got events ${show(got)}, want ${show(want)}`);
              break;
            }
          }
          assert.ok(failures.length < 3, failures.join("\n"));
        }
      }
    }
  }
  assert.deepEqual(failures, [], failures.join("\n"));
});

/** A seeded generator (mulberry32): the same 400 cases every run. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const PROPERTY_LINES = ["data: a", "data:b ", "data", "data:  \u00e9\u2028x", "data: \u{1f44b}:", "event: x", "event", ": c", ":", "", "",
  "id: 1", "id", "id: 2\u00003", "retry: 5", "data:a:b"];
const PROPERTY_TAILS = ["", "data: pending", "\r", "data: \u20ac"];
const LINE_ENDS = ["\n", "\r\n", "\r"];

/** A body as lines, each with its line end (the last a tail without one), and the read boundaries to cut it at. */
function randomCase(next: () => number): [string[], number[]] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const lines: string[] = [];
  for (let k = Math.floor(next() * 13); k > 0; k--) {
    lines.push(pick(PROPERTY_LINES) + pick(LINE_ENDS));
  }
  if (next() < 0.2) {
    lines.unshift("\ufeff");
  }
  lines.push(pick(PROPERTY_TAILS));
  const data = encode(lines.join(""));
  if (data.length < 2) {
    return [lines, []];
  }
  const mode = next();
  const all = Array.from({ length: data.length - 1 }, (_, i) => i + 1);
  if (mode < 0.1) {
    return [lines, all]; // one byte per read
  }
  // reads that end or begin right at a CR or LF, where line ends are split: all such points, or some
  const near = [...new Set([...data].flatMap((byte, i) => (byte === 10 || byte === 13 ? [i, i + 1] : [])).filter((p) => p > 0 && p < data.length))].sort((a, b) => a - b);
  const sample = (points: number[], k: number): number[] => {
    const picked = [...points];
    for (let i = picked.length - 1; i > 0; i--) {
      const j = Math.floor(next() * (i + 1));
      [picked[i], picked[j]] = [picked[j]!, picked[i]!];
    }
    return picked.slice(0, k).sort((a, b) => a - b);
  };
  if (mode < 0.4 && near.length > 0) {
    return [lines, near];
  }
  if (mode < 0.7 && near.length > 0) {
    return [lines, sample(near, 1 + Math.floor(next() * 8))];
  }
  return [lines, sample(all, Math.floor(next() * 9))];
}

/** Why a case breaks the property, or "". */
async function propertyFailure(lines: string[], cuts: number[]): Promise<string> {
  const data = encode(lines.join(""));
  const whole = await readEvents(chunked(data, data.length + 1));
  const want = specEvents(data);
  if (!same(whole, want)) {
    return `body ${show(lines.join(""))} read whole: got events ${show(whole)}, want ${show(want)}`;
  }
  const got = await readEvents(cut(data, cuts));
  if (!same(got, whole)) {
    return `body ${show(lines.join(""))} read as ${showReads(data, cuts)}: got events ${show(got)}, want ${show(whole)} (as when read whole)`;
  }
  return "";
}

/** Drops lines and read boundaries while the case still fails. */
async function shrink(lines: string[], cuts: number[]): Promise<[string[], number[]]> {
  for (let progress = true; progress;) {
    progress = false;
    for (let k = 0; k < lines.length && !progress; k++) {
      const fewer = [...lines.slice(0, k), ...lines.slice(k + 1)];
      const size = encode(fewer.join("")).length;
      const kept = cuts.filter((c) => c < size);
      if (fewer.length > 0 && (await propertyFailure(fewer, kept)) !== "") {
        [lines, cuts, progress] = [fewer, kept, true];
      }
    }
    for (let k = 0; k < cuts.length && !progress; k++) {
      const fewer = [...cuts.slice(0, k), ...cuts.slice(k + 1)];
      if ((await propertyFailure(lines, fewer)) !== "") {
        [cuts, progress] = [fewer, true];
      }
    }
  }
  return [lines, cuts];
}

test("sse_any_reads_same_events", async () => {
  // A property, checked on 400 generated cases (always the same ones, from a fixed seed): for any
  // stream of data, event, id, comment and blank lines with any line ends, cut into reads anywhere,
  // the events are those of reading it whole, and those the rules give. A failure is shown shrunk.
  const next = random(20261130);
  for (let n = 1; n <= 400; n++) {
    const [lines, cuts] = randomCase(next);
    if ((await propertyFailure(lines, cuts)) !== "") {
      const [fewer, kept] = await shrink(lines, cuts);
      assert.fail(`case ${n} of 400, shrunk: ${await propertyFailure(fewer, kept)}`);
    }
  }
});

/** A body whose reads give 1 to `size` bytes of `data` (lengths drawn from `next`), with reads that
 * bring no bytes among them (two up front, then now and then one or two in a row), then the end, or
 * `failure` on the read after the last bytes. */
function shortReads(data: Uint8Array, size: number, next: () => number, failure?: unknown): ReadableStream<Uint8Array> {
  let at = 0;
  let empties = 2;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (empties > 0) {
        empties--;
        controller.enqueue(new Uint8Array(0));
        return;
      }
      if (at >= data.length) {
        if (failure === undefined) {
          controller.close();
        } else {
          controller.error(failure);
        }
        return;
      }
      const n = 1 + Math.floor(next() * size);
      controller.enqueue(data.slice(at, at + n));
      at += n;
      if (next() < 0.25) {
        empties = 1 + Math.floor(next() * 2);
      }
    },
  }, { highWaterMark: 0 });
}

test("sse_reader_contract", async () => {
  // What a body's reads may do: bring fewer bytes than the last, any number of times; bring no bytes
  // at all (a read of an empty chunk is not the end: only done is); fail after data. The events a
  // failure interrupts come out before it, then the failure itself, as it came.
  const next = random(15);
  const bodies: [string, Uint8Array][] = [
    ["the 'Hello' stream", encode(loadStreams().hand_example.body)],
    ["CRLF, CR and comments", encode("data: a\r\ndata: b\r\n\r\n: ping\n\nid: 7\nevent: x\ndata: c\rdata: [DONE]\r\r")],
  ];
  const wrong: string[] = [];
  for (const [name, body] of bodies) {
    for (const size of [1, 5, 64]) {
      const got = await readEvents(shortReads(body, size, next));
      if (!same(got, specEvents(body))) {
        wrong.push(`${name}, reads of 1 to ${size} byte(s) with empty reads among them: got events ${show(got)}, want ${show(specEvents(body))}`);
      }
    }
  }
  const failing = encode("data: one\n\nevent: two\ndata: 2\n\ndata: thr");
  for (const size of [1, 7, 64]) {
    const failure = netError("terminated", "ECONNRESET"); // as fetch's body fails on a reset
    const got: [string, string][] = [];
    let raised: unknown;
    try {
      for await (const event of new EventReader(shortReads(failing, size, next, failure)) as AsyncIterable<SSEEvent>) {
        got.push([event.data, event.event]);
      }
    } catch (error) {
      raised = error;
    }
    if (!same(got, [["one", "message"], ["2", "two"]]) || raised !== failure) {
      wrong.push(`two events and part of a third in reads of 1 to ${size} byte(s), then a connection reset: got events ${show(got)} `
        + `and then ${raised === undefined ? "the end" : show(raised)}; want the two events, then the body's own error (a TypeError "terminated") thrown as it came`);
    }
  }
  assert.ok(wrong.length === 0, wrong.join("\n"));
});

test("sse_linear_time", async () => {
  // How the work grows with the size of one event read 512 bytes at a time: the CPU time per event at
  // 16 KiB and at 32 times that, each the best of several runs taken in turns. A linear reader takes
  // about 32 times as long for 32 times the bytes; one that copies or searches its unfinished text
  // again on every read, about 1000 times. CPU time leaves out the time other processes held the
  // cores, and load slows every size alike: the ratio holds on a busy machine.
  const read = 512;
  const sizes = [16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10];
  const best = sizes.map(() => Infinity);
  for (let round = 0; round <= 5; round++) {
    for (const [i, size] of sizes.entries()) {
      if (round > 1 && best[i]! > 50) {
        continue; // a run this long is measured precisely enough once
      }
      const [took, problem] = await timedEvents(size, read);
      if (problem) {
        assert.fail(`an event of ${size} bytes then [DONE], read ${read} bytes at a time: ${problem} (sse_large_event checks the text in detail)`);
      }
      if (round > 0) {
        best[i] = Math.min(best[i]!, took); // round 0 warms up: the compiler's work and a collection now and then are no reading
      }
    }
  }
  const verdict = growthVerdict(sizes, best, read);
  assert.ok(verdict === "", verdict);
});

/** "" when the times grow in proportion to the sizes, else a message that says how they grew and what
 * makes the work quadratic. Time grows as size ** k: k is 1 for a linear reader (a little less here:
 * every event has a fixed cost too) and 2 for a quadratic one (a little less at these sizes: its
 * linear part still counts at the smallest). Growth beyond k = 1.25 fails, between the two with room
 * on both sides. */
function growthVerdict(sizes: number[], times: number[], read: number): string {
  const scale = sizes.at(-1)! / sizes[0]!;
  const limit = scale ** 1.25;
  const growth = times.at(-1)! / Math.max(times[0]!, 1e-6);
  if (growth <= limit) {
    return "";
  }
  const each = sizes.map((size, i) => `${size >> 10} KiB: ${times[i]!.toFixed(3)} ms`).join(", ");
  return `one event read ${read} bytes at a time, CPU time per event by size (best of 5): ${each}; ${scale.toFixed(0)}x the size `
    + `took ${growth.toFixed(1)}x the time: a linear reader takes about ${scale.toFixed(0)}x, a quadratic one up to ${(scale * scale).toFixed(0)}x, `
    + `and more than ${limit.toFixed(0)}x (size ** 1.25) fails. The work of each read grows with the unfinished text: keep its pieces `
    + "in an array, join them once when the event ends, and look for line ends only in the text the read brought";
}

/** Reads events of `size` x's ("data: " + x's + "\n\ndata: [DONE]\n\n"), `read` bytes per read, each with
 * a fresh EventReader, until a millisecond of CPU time has passed or 1 MiB was read; gives the CPU
 * time per event in milliseconds, or what went wrong. */
async function timedEvents(size: number, read: number): Promise<[number, string]> {
  const block = new Uint8Array(read).fill(0x78);
  const head = encode("data: ");
  const tail = encode("\n\ndata: [DONE]\n\n");
  const body = (): ReadableStream<Uint8Array> => {
    let left = size / read;
    let stage = 0;
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        if (stage === 0) {
          controller.enqueue(head);
          stage = 1;
        } else if (left > 0) {
          controller.enqueue(block);
          left--;
        } else if (stage === 1) {
          controller.enqueue(tail);
          stage = 2;
        } else {
          controller.close();
        }
      },
    }, { highWaterMark: 0 });
  };
  const readers: AsyncIterator<SSEEvent>[] = [];
  for (let i = 0; i < Math.max(1, (1 << 20) / size); i++) {
    readers.push((new EventReader(body()) as AsyncIterable<SSEEvent>)[Symbol.asyncIterator]());
  }
  const firsts: IteratorResult<SSEEvent>[] = [];
  const started = process.cpuUsage();
  let took = 0;
  while (firsts.length < readers.length && took < 1) {
    firsts.push(await readers[firsts.length]!.next());
    const used = process.cpuUsage(started);
    took = (used.user + used.system) / 1000;
  }
  for (const [i, first] of firsts.entries()) {
    if (first.done || first.value.data.length !== size) {
      return [took, `the event came back with ${first.done ? 0 : first.value.data.length} characters, want ${size}`];
    }
    const after = await readers[i]!.next();
    if (after.done || after.value.data !== "[DONE]") {
      return [took, `the event after it: got ${after.done ? "the end" : show(after.value.data)}, want [DONE]`];
    }
  }
  for (const reader of readers) {
    await reader.return?.();
  }
  return [took / firsts.length, ""];
}

/** About `n` bytes of events of 100 bytes or less, and how many there are. */
function smallEvents(n: number): [string, number] {
  let out = "";
  let count = 0;
  while (out.length < n) {
    out += `data: {"n": ${count}, "pad": "${"-".repeat(Math.min(70, n - out.length))}"}\n\n`;
    count++;
  }
  return [out, count];
}

/** Where the events read first differ from the events wanted, briefly. */
function textDifference(got: string[], want: string[]): string {
  if (got.length !== want.length) {
    return `got ${got.length} event(s), want ${want.length}`;
  }
  for (const [i, w] of want.entries()) {
    const g = got[i]!;
    if (g !== w) {
      let at = 0;
      while (at < Math.min(g.length, w.length) && g[at] === w[at]) {
        at++;
      }
      return `event ${i + 1}: got ${g.length} characters, want ${w.length}; from character ${at} they differ: `
        + `got ${show(g.slice(Math.max(0, at - 20), at + 40))}, want ${show(w.slice(Math.max(0, at - 20), at + 40))}`;
    }
  }
  return "equal";
}

test("sse_large_event", async () => {
  // Every character of a large event arrives, whatever the reads. The sizes are such that a reader
  // doing quadratic work still finishes quickly: whether it is fast enough is sse_linear_time's
  // question. Every check is made and each failure reported.
  const unit = "0123456789abcdef".repeat(15) + "é€👋 ";
  const big = unit.repeat(Math.ceil((1 << 20) / unit.length)).slice(0, 1 << 20);
  const lines = Array.from({ length: 40 }, (_, i) => `${String(i).padStart(4, "0")}${big.slice(0, 996)}`);
  const thousand = big.slice(0, 1000);
  const cases: [string, string, number, string[], number[]][] = [
    ["a comment, a 1 MiB event, [DONE]", `: big\ndata: ${big}\n\ndata: [DONE]\n\n`, 0, [big, "[DONE]"], [4096, 65536]],
    ["a 256 KiB event", `data: ${big.slice(0, 256 << 10)}\n\n`, 0, [big.slice(0, 256 << 10)], [4096]],
    ["a 4 KiB event with CRLF line ends", `data: ${big.slice(0, 4 << 10)}\r\n\r\n`, 0, [big.slice(0, 4 << 10)], [1]],
    ["an event of 300 data lines of 1000 characters", `data: ${Array(300).fill(thousand).join("\ndata: ")}\n\ndata: y\n\n`, 0,
      [Array(300).fill(thousand).join("\n"), "y"], [4096]],
  ];
  // a short first line, then a long rest of the same event, after earlier events
  const shapes: [string, string, string][] = [
    ["40 more data lines of 1000 characters", `\ndata: ${lines.join("\ndata: ")}`, `first\n${lines.join("\n")}`],
    ["40 comment lines of 1000 characters, then a last data line", `\n:${lines.join("\n:")}\ndata: last`, "first\nlast"],
    ["one 40000-character data line", `\ndata: ${big.slice(0, 40000)}`, `first\n${big.slice(0, 40000)}`],
  ];
  for (const [what, rest, want] of shapes) {
    for (let earlier = 0; earlier < 72 << 10; earlier += 8191) {
      const [prefix, count] = smallEvents(earlier);
      cases.push([`${prefix.length} bytes of small events, then an event of a data line 'first' and ${what}`,
        `${prefix}data: first${rest}\n\ndata: after\n\n`, count, [want, "after"], [4096]]);
    }
  }
  // many small events in small reads: the reader must not search again what it has consumed
  cases.push(["20000 small events", "data: {\"choices\":[]}\r\n\r\n".repeat(20000), 0, Array(20000).fill(`{"choices":[]}`), [16]]);
  const failures: string[] = [];
  for (const [what, body, skip, want, sizes] of cases) {
    for (const size of sizes) {
      const got = (await readEvents(chunked(encode(body), size))).slice(skip).map((e) => e.data);
      if (!same(got, want)) {
        failures.push(`${what}, read ${size} byte(s) at a time: ${textDifference(got, want)}`);
        break;
      }
    }
  }
  assert.ok(failures.length === 0, failures.join("\n"));
});

test("retry_after_capped", async (t) => {
  let server = await ScriptedServer.start(t, httpError(429, { retryAfter: "3600" }), textReply("an hour later"));
  let sleeps = new SleepRecorder();
  const error = await apiErrorOf(withRetry(openAI(server.baseURL), new RetryPolicy({ maxAttempts: 3, maxRetryAfterMs: 60_000, sleep: sleeps.sleep }))
    .chatStream([user("hi")]), "a 429 with Retry-After: 3600");
  assert.equal(error.retryAfterMs, 3_600_000, "the APIError's retryAfterMs");
  assert.deepEqual(sleeps.waits, [], "sleeps (an hour is more than maxRetryAfterMs, a minute)");
  assert.equal(server.requestCount, 1, "requests");

  for (const [options, header, retried, what] of [
    [{ maxRetryAfterMs: 5000 }, "5", true, "Retry-After: 5 with maxRetryAfterMs 5000 (at the cap is still honored)"],
    [{ maxRetryAfterMs: 5000 }, "5.5", false, "Retry-After: 5.5 with maxRetryAfterMs 5000"],
    [{}, "60", true, "Retry-After: 60 with the default maxRetryAfterMs (60 000)"],
    [{}, "61", false, "Retry-After: 61 with the default maxRetryAfterMs (60 000)"],
    [{}, "1e12", false, "Retry-After: 1e12"],
  ] as const) {
    server = await ScriptedServer.start(t, httpError(429, { retryAfter: header }), textReply("ok"));
    sleeps = new SleepRecorder();
    const provider = withRetry(openAI(server.baseURL), new RetryPolicy({ ...options, sleep: sleeps.sleep }));
    if (!retried) {
      await apiErrorOf(provider.chatStream([user("hi")]), what);
      assert.ok(server.requestCount === 1 && sleeps.waits.length === 0,
        `${what}: ${server.requestCount} request(s) and sleeps ${show(sleeps.waits)}, want the 429 at once, no sleep`);
      continue;
    }
    const { message } = await collect(await provider.chatStream([user("hi")]));
    assert.ok(same(sleeps.waits, [Number(header) * 1000]) && message.content === "ok",
      `${what}: got sleeps ${show(sleeps.waits)} and ${show(message.content)}, want [${Number(header) * 1000}] and "ok"`);
  }
});
