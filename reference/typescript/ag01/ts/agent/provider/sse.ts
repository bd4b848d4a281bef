// course: begin docstring
/** Server-sent events: the bytes of a streamed answer turned into events, and events into deltas. */
// course: end docstring

import type { Delta, ToolCall } from "../types.js";
import { ProviderError, StreamError } from "./errors.js";

/** One server-sent event. `id` is the last event id seen so far, as the spec defines it. */
export interface SSEEvent {
  readonly data: string;
  readonly event: string;
  readonly id: string;
}

// course: begin EventReader
/**
 * The events of a text/event-stream body (WHATWG HTML, "server-sent events"), read with
 * `for await`. An event is the lines between two blank lines. A read may end anywhere: inside a
 * line, inside a UTF-8 character, between the CR and LF of one line end, between the two line
 * ends of a blank line. The reader carries that state from one read to the next, and its cost
 * stays linear in the size of the input whatever the read size. Only the body's end ends it (a
 * read of no bytes does not), and a read's failure reaches the caller as it came, after the events
 * completed before it. Leaving the loop early cancels the body, which closes its connection.
 */
// course: end EventReader
export class EventReader implements AsyncIterable<SSEEvent> {
  readonly #body: ReadableStream<Uint8Array>;

  constructor(body: ReadableStream<Uint8Array>) {
    this.#body = body;
  }

  [Symbol.asyncIterator](): AsyncIterator<SSEEvent, void, undefined> {
    // course: begin EventReader_iterate
    return new Events(this.#body);
    // course: end EventReader_iterate
  }
}

// course: begin BlockSplitter
/**
 * One reading of a body, event by event. A hand-written iterator rather than an async generator:
 * the events a read completes are handed out from a queue, each through a promise already
 * resolved, at a third of a generator's cost per event (most chunks of a chat stream are one
 * event); and return() cancels the body whether or not reading began.
 */
class Events implements AsyncIterator<SSEEvent, void, undefined> {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  // UTF-8 as the spec decodes it: one leading BOM dropped, bytes that are not UTF-8 made U+FFFD,
  // and (with stream: true) a character cut by the end of a read kept for the next read
  readonly #decoder = new TextDecoder();
  readonly #blocks = new BlockSplitter();
  readonly #ready: SSEEvent[] = []; // events read but not handed out yet, from #next on
  #next = 0;
  #lastId = ""; // unlike the event type, kept from one event to the next
  #ended = false;

  constructor(body: ReadableStream<Uint8Array>) {
    this.#reader = body.getReader();
  }

  next(): Promise<IteratorResult<SSEEvent, void>> {
    if (this.#next < this.#ready.length) {
      return Promise.resolve({ done: false, value: this.#ready[this.#next++]! });
    }
    return this.#read();
  }

  /** Reads until a read completes an event, or the body ends. */
  async #read(): Promise<IteratorResult<SSEEvent, void>> {
    this.#ready.length = this.#next = 0;
    try {
      while (this.#ready.length === 0) {
        if (this.#ended) {
          return { done: true, value: undefined }; // an event still waiting for its blank line is dropped
        }
        const { done, value } = await this.#reader.read();
        this.#ended = done;
        for (const block of this.#blocks.push(done ? this.#decoder.decode() : this.#decoder.decode(value, STREAMING))) {
          const event = this.#parse(block);
          if (event !== undefined) {
            this.#ready.push(event);
          }
        }
      }
    } catch (error) {
      await this.return(); // a failing body is cancelled all the same
      throw error;
    }
    return { done: false, value: this.#ready[this.#next++]! };
  }

  /** Leaving early (a break, a failure) must not leave the body, and its connection, open. */
  async return(): Promise<IteratorResult<SSEEvent, void>> {
    this.#ended = true;
    this.#ready.length = this.#next = 0;
    await this.#reader.cancel().catch(() => undefined);
    return { done: true, value: undefined };
  }

  /** The event of one block, or undefined when it has no data. */
  #parse(block: string): SSEEvent | undefined {
    // The usual event is one "data: ..." line: it needs no splitting into lines.
    if (block.startsWith("data: ") && !block.includes("\n", 6)) {
      return { data: block.slice(6), event: "message", id: this.#lastId };
    }
    let data: string[] | undefined;
    let type = "";
    for (const line of block.split("\n")) {
      // "name: value"; a line without a colon is a name with an empty value; a comment
      // (": ping") and an empty line have the empty name, which is no field
      const colon = line.indexOf(":");
      const name = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(line.charCodeAt(colon + 1) === SPACE ? colon + 2 : colon + 1);
      if (name === "data") {
        (data ??= []).push(value);
      } else if (name === "event") {
        type = value;
      } else if (name === "id" && !value.includes("\0")) {
        this.#lastId = value;
      }
    }
    // a block without data (comments, an event or id alone) is no event
    return data === undefined ? undefined : { data: data.join("\n"), event: type || "message", id: this.#lastId };
  }
}

const LF = 10;
const CR = 13;
const SPACE = 32;
const STREAMING = { stream: true };

/**
 * Cuts decoded text, read by read, into blocks: the lines of one event joined by LF, without
 * the blank line that ends them. CRLF and lone CR become LF first, so a block never holds a CR.
 */
class BlockSplitter {
  readonly #pending: string[] = []; // pieces of the unfinished block, joined once when it ends
  #skipLF = false; // the text before ended with CR: a LF opening the next text is part of that line end

  /** The blocks that `text` completes. */
  push(text: string): string[] {
    if (text.length === 0) {
      return []; // only part of a character so far
    }
    if (this.#skipLF && text.charCodeAt(0) === LF) {
      text = text.slice(1);
    }
    // set after every text, an emptied one included: the LF of a CRLF can only come right after its CR
    this.#skipLF = text.charCodeAt(text.length - 1) === CR;
    if (text.includes("\r")) {
      text = text.replace(LINE_ENDS, "\n");
    }
    const pending = this.#pending;
    const ended: string[] = [];
    let start = 0;
    if (pending.length > 0 && text.charCodeAt(0) === LF && pending[pending.length - 1]!.endsWith("\n")) {
      ended.push(pending.join("").slice(0, -1)); // the two line ends of the blank line came in different reads
      pending.length = 0;
      start = 1;
    }
    // A text without a blank line ends no block (most reads of a long event have none).
    let end = text.indexOf("\n\n", start);
    if (end >= 0) {
      ended.push(pending.join("") + text.slice(start, end));
      pending.length = 0;
      start = end + 2;
      while ((end = text.indexOf("\n\n", start)) >= 0) {
        // three or more line ends in a row leave a block that starts with LF: its empty first
        // line is no field, so the extra blank line dispatches nothing
        ended.push(text.slice(start, end));
        start = end + 2;
      }
    }
    if (start < text.length) {
      pending.push(start === 0 ? text : text.slice(start));
    }
    return ended;
  }
}

const LINE_ENDS = /\r\n?/g; // CRLF first, so that its CR and LF do not end two lines

// course: end BlockSplitter
// course: begin Decoder
/**
 * Turns the data of each chat-completions stream event into deltas. It keeps the tool calls
 * still open, by index: a call's argument fragments may arrive interleaved with those of other
 * calls, so each fragment goes to the call its index names.
 */
// course: end Decoder
export class Decoder {
  // course: begin Decoder_fields
  readonly #open = new Map<number, OpenCall>();
  #finishReason = "";
  // course: end Decoder_fields

  /**
   * The deltas of one event's data, and whether the stream is finished. [DONE] ends every open
   * call (lowest index first) and gives a DoneDelta; data that is not a chunk gives one
   * ErrorDelta with a ProviderError, an {"error": ...} event one with a StreamError. Only choice 0
   * counts; empty content is no text; a finish_reason ends the open calls; usage comes last.
   */
  decode(data: string): { deltas: Delta[]; finished: boolean } {
    // course: begin Decoder_decode
    if (data === "[DONE]") {
      const deltas = this.#closeOpenCalls();
      deltas.push({ type: "done", finishReason: this.#finishReason });
      return { deltas, finished: true };
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      return failed(new ProviderError(`invalid JSON in stream event: ${JSON.stringify(data.slice(0, 200))}`));
    }
    try {
      const fields = expect(chunk, "object");
      if ("error" in fields) {
        return failed(streamError(fields.error));
      }
      return { deltas: this.#chunkDeltas(fields), finished: false };
    } catch { // WrongShape: valid JSON, but not a chunk
      return failed(new ProviderError(`unexpected stream event: ${JSON.stringify(data.slice(0, 200))}`));
    }
    // course: end Decoder_decode
  }

  // course: begin Decoder_private

  /** The deltas of one chunk; throws WrongShape when it is not shaped like one. */
  #chunkDeltas(chunk: JsonObject): Delta[] {
    const deltas: Delta[] = [];
    for (const choice of field(chunk.choices, "array", [])) {
      const { index, delta, finish_reason: finish } = expect(choice, "object");
      if (field(index, "number", 0) !== 0) {
        continue; // we ask for one answer; another would mix its text and calls into ours
      }
      const { content, tool_calls: calls } = field(delta, "object", {});
      const text = field(content, "string", "");
      if (text !== "") { // servers send "" with the role, or while a character is incomplete
        deltas.push({ type: "text", text });
      }
      for (const entry of field(calls, "array", [])) {
        this.#addFragment(expect(entry, "object"), deltas);
      }
      const reason = field(finish, "string", "");
      if (reason !== "") {
        this.#finishReason = reason;
        deltas.push(...this.#closeOpenCalls());
      }
    }
    // the last chunk, with "choices": [], when include_usage was asked
    if (chunk.usage !== undefined && chunk.usage !== null) {
      const { prompt_tokens: input, completion_tokens: output } = expect(chunk.usage, "object");
      deltas.push({ type: "usage", inputTokens: field(input, "number", 0), outputTokens: field(output, "number", 0) });
    }
    return deltas;
  }

  /** Adds one tool_calls entry to the call its index names. */
  #addFragment(entry: JsonObject, deltas: Delta[]): void {
    const index = field(entry.index, "number", 0);
    const fn = field(entry.function, "object", {});
    let call = this.#open.get(index);
    if (call === undefined) { // the id and name come with a call's first fragment
      call = { id: field(entry.id, "string", ""), name: field(fn.name, "string", ""), fragments: [] };
      this.#open.set(index, call);
      deltas.push({ type: "tool_call_start", index, id: call.id, name: call.name });
    }
    const fragment = field(fn.arguments, "string", "");
    if (fragment !== "") {
      call.fragments.push(fragment);
      deltas.push({ type: "tool_call_args", index, fragment });
    }
  }

  /** Ends every open call, lowest index first, its fragments joined ("{}" when none came). */
  #closeOpenCalls(): Delta[] {
    const ends: Delta[] = [];
    for (const index of [...this.#open.keys()].sort((a, b) => a - b)) {
      const { id, name, fragments } = this.#open.get(index)!;
      const call: ToolCall = { id, name, arguments: fragments.join("") || "{}" };
      ends.push({ type: "tool_call_end", index, call });
    }
    this.#open.clear();
    return ends;
  }
  // course: end Decoder_private
}

// course: begin helpers
interface OpenCall {
  id: string;
  name: string;
  fragments: string[];
}

type JsonObject = { [key: string]: unknown };

interface Shapes {
  object: JsonObject;
  array: unknown[];
  string: string;
  number: number;
}

/** A chunk that is valid JSON of the wrong shape ("choices": 5, a delta that is a string). */
class WrongShape extends Error {}

/** `value` when it has the JSON shape `kind`; WrongShape otherwise. */
function expect<K extends keyof Shapes>(value: unknown, kind: K): Shapes[K] {
  const shape = Array.isArray(value) ? "array" : value === null ? "null" : typeof value;
  if (shape !== kind) {
    throw new WrongShape(`${kind} expected, got ${shape}`);
  }
  return value as Shapes[K];
}

/** A field that may be null or absent (`fallback` then), else of the JSON shape `kind`. */
function field<K extends keyof Shapes>(value: unknown, kind: K, fallback: Shapes[K]): Shapes[K] {
  return value === undefined || value === null ? fallback : expect(value, kind);
}

function failed(error: Error): { deltas: Delta[]; finished: boolean } {
  return { deltas: [{ type: "error", error }], finished: true };
}

/** The error of an {"error": ...} event: an object's type, code and message, or a bare value as the message. */
function streamError(error: unknown): StreamError {
  if (typeof error !== "object" || error === null) {
    return new StreamError("", "", typeof error === "string" ? error : JSON.stringify(error));
  }
  const { type, code, message } = error as JsonObject;
  return new StreamError(text(type), typeof code === "number" ? String(code) : text(code), text(message));
}

/** A field as text: null, absent or anything but a string is "". */
function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}
// course: end helpers
