// Helpers of the ag01 catalog: the language-neutral delta form of streams.json, bodies cut into
// reads, a recorder that stands in for the retry sleep, chunks shaped like the real API's.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";

import type { Delta, DeltaStream, Message } from "../agent/types.js";
import { StreamCutError, StreamError } from "../agent/provider/errors.js";
import { Decoder, EventReader } from "../agent/provider/sse.js";

/** The read sizes every recorded stream is read at. */
export const READ_SIZES = [1, 7, 65536];

export interface RecordedStream {
  name: string;
  body: string;
  expected: {
    deltas: unknown[];
    message: unknown;
    usage: unknown;
    finish_reason: string;
    error: string | null;
  };
}

export interface StreamsFile {
  hand_example: { read_size: number; events: { data: string; deltas: unknown[] }[]; body: string };
  streams: RecordedStream[];
}

let streams: StreamsFile | undefined;

/** fixtures/ag01/streams.json, from the folder COURSE_FIXTURES names (course check sets it). */
export function loadStreams(): StreamsFile {
  const dir = process.env.COURSE_FIXTURES;
  if (!dir) {
    throw new Error("COURSE_FIXTURES is not set: run the catalog with `course check`, or set it to the chapter's fixtures folder");
  }
  streams ??= JSON.parse(readFileSync(join(dir, "streams.json"), "utf8")) as StreamsFile;
  return streams;
}

/** A delta in the language-neutral form of streams.json. */
export function neutral(delta: Delta): unknown {
  switch (delta.type) {
    case "text":
      return { type: "text", text: delta.text };
    case "tool_call_start":
      return { type: "tool_start", index: delta.index, id: delta.id, name: delta.name };
    case "tool_call_args":
      return { type: "tool_args", index: delta.index, fragment: delta.fragment };
    case "tool_call_end":
      return { type: "tool_end", index: delta.index, id: delta.call.id, name: delta.call.name, arguments: delta.call.arguments };
    case "usage":
      return { type: "usage", input: delta.inputTokens, output: delta.outputTokens };
    case "done":
      return { type: "done", finish_reason: delta.finishReason };
    case "error":
      return { type: "error", ...errorForm(delta.error) };
    default:
      return { type: `not a delta: ${show(delta)}` };
  }
}

export function neutralAll(deltas: readonly Delta[]): unknown[] {
  return deltas.map(neutral);
}

export function errorForm(error: unknown): Record<string, unknown> {
  if (error instanceof StreamCutError) {
    return { error: "stream_cut" };
  }
  if (error instanceof StreamError) {
    return { error: "stream_error", error_type: error.type, message: error.serverMessage };
  }
  if (error === undefined) {
    return { error: null };
  }
  return { error: error instanceof Error ? error.name : typeof error, message: String(error instanceof Error ? error.message : error) };
}

/** The error field of streams.json's collected form: null, stream_cut or stream_error. */
export function errorKind(error: unknown): unknown {
  return error === undefined ? null : errorForm(error).error;
}

/** `value` as compact JSON, for messages. */
export function show(value: unknown): string {
  try {
    return JSON.stringify(value, (_key, v: unknown) => (v instanceof Error ? `${v.name}: ${v.message}` : v)) ?? String(value);
  } catch {
    return String(value);
  }
}

export function same(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(a, b);
}

/** Where two delta sequences first differ, in words. */
export function mismatch(got: unknown[], want: unknown[]): string {
  for (let i = 0; i < got.length && i < want.length; i++) {
    if (!same(got[i], want[i])) {
      return `delta #${i} differs: got ${show(got[i])}, want ${show(want[i])}`;
    }
  }
  if (got.length > want.length) {
    return `${got.length - want.length} extra delta(s) at the end: ${show(got.slice(want.length))}`;
  }
  if (got.length < want.length) {
    return `${want.length - got.length} delta(s) missing at the end: ${show(want.slice(got.length))}`;
  }
  return "equal";
}

export const encode = (text: string): Uint8Array => new TextEncoder().encode(text);

/** A body that gives at most `size` bytes per read, the way a socket delivers small packets. */
export function chunked(data: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= data.length) {
        controller.close();
        return;
      }
      controller.enqueue(data.slice(at, at + size));
      at += size;
    },
  }, { highWaterMark: 0 });
}

/** A body that gives `data` in the pieces the increasing offsets `cuts` make, one piece per read. */
export function cut(data: Uint8Array, cuts: readonly number[]): ReadableStream<Uint8Array> {
  const ends = [...cuts.filter((c) => c > 0 && c < data.length), data.length];
  let start = 0;
  let next = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next >= ends.length) {
        controller.close();
        return;
      }
      const end = ends[next++]!;
      controller.enqueue(data.slice(start, end));
      start = end;
    },
  }, { highWaterMark: 0 });
}

/** A whole body through EventReader (reads of `size` bytes) and Decoder; a body that ends before
 * the decoder says finished is a cut stream, as the provider reports it. */
export async function readBody(body: Uint8Array | string, size: number): Promise<Delta[]> {
  const decoder = new Decoder();
  const out: Delta[] = [];
  for await (const event of new EventReader(chunked(typeof body === "string" ? encode(body) : body, size))) {
    const { deltas, finished } = decoder.decode(event.data);
    out.push(...deltas);
    if (finished) {
      return out;
    }
  }
  out.push({ type: "error", error: new StreamCutError() });
  return out;
}

export function messageForm(message: Message): unknown {
  const calls = (message.toolCalls ?? []).map((c) => ({ id: c.id, name: c.name, arguments: c.arguments }));
  return { role: message.role, content: message.content, tool_calls: calls };
}

export function user(text: string): Message {
  return { role: "user", content: text };
}

export function textsOf(deltas: readonly Delta[]): string[] {
  return deltas.flatMap((d) => (d.type === "text" ? [d.text] : []));
}

/** Every delta of `stream` until it ends; fails when that takes longer than `limitMs`. */
export async function drain(stream: DeltaStream, limitMs = 10_000): Promise<Delta[]> {
  const out: Delta[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), limitMs);
  });
  try {
    for (;;) {
      const next = await Promise.race([stream.next(), late]);
      if (next === "late") {
        void stream.return();
        throw new Error(`the stream was still open after ${limitMs} ms (deltas so far: ${show(neutralAll(out))}); `
          + "it must end after its last delta");
      }
      if (next.done) {
        return out;
      }
      out.push(next.value);
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Deltas as a stream, for the accumulator and collect. */
export async function* streamOf(...deltas: Delta[]): AsyncGenerator<Delta, void, undefined> {
  yield* deltas;
}

/** Stands in for RetryPolicy's sleep: records every wait asked for, and never waits. */
export class SleepRecorder {
  readonly waits: number[] = [];

  readonly sleep = async (ms: number, signal?: AbortSignal): Promise<void> => {
    this.waits.push(ms);
    signal?.throwIfAborted();
  };
}

/** The data of one chunk shaped like the real API's (id, created, model, system_fingerprint,
 * logprobs, and "usage" on every chunk); delta, finish and usage are JSON text. */
export function apiChunk(delta: string, finish: string, usage: string): string {
  return `{"id":"chatcmpl-9xYz","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18",`
    + `"system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish}}],"usage":${usage}}`;
}

/** The last chunk of a request with include_usage: no choices, the usage. */
export function usageChunk(usage: string): string {
  return `{"id":"chatcmpl-9xYz","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":${usage}}`;
}

/** A delta with one tool-call fragment; id and name only when given (a call's first fragment
 * carries them, and some providers repeat them in every one). */
export function callEntry(index: number, id: string, name: string, args: string): string {
  const fn: Record<string, unknown> = { arguments: args };
  if (name) {
    fn.name = name;
  }
  const entry: Record<string, unknown> = { index, function: fn };
  if (id) {
    Object.assign(entry, { id, type: "function" });
  }
  return JSON.stringify({ tool_calls: [entry] });
}

/** Event data run through one Decoder until it says finished: the deltas in neutral form. */
export function decodeAll(events: readonly string[]): unknown[] {
  const decoder = new Decoder();
  const deltas: Delta[] = [];
  for (const data of events) {
    const { deltas: out, finished } = decoder.decode(data);
    deltas.push(...out);
    if (finished) {
      break;
    }
  }
  return neutralAll(deltas);
}

/** Waits until `check` is true, for at most `limitMs`; whether it became true. */
export async function eventually(check: () => boolean, limitMs: number): Promise<boolean> {
  const end = performance.now() + limitMs;
  while (!check()) {
    if (performance.now() >= end) {
      return false;
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  return true;
}

/** Resolves after `ms`: for a test that must see something *not* happen, never to wait for a retry. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
