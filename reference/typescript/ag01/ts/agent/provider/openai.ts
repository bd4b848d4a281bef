// course: begin docstring
/** A Provider for any server that speaks the OpenAI chat-completions API with streaming, over fetch. */
// course: end docstring

import type { CallOptions, Delta, DeltaStream, Message, Provider, ToolCall, ToolDef } from "../types.js";
import { APIError, StreamCutError } from "./errors.js";
import { Decoder, EventReader } from "./sse.js";

/** Where and how to reach the server. */
export interface Config {
  /** Ends before /chat/completions, e.g. http://127.0.0.1:8080/v1. */
  baseURL: string;
  /** Sent as "Authorization: Bearer ..."; none when empty. */
  apiKey?: string;
  model: string;
  /** Sent with every request, after (so in place of) the provider's own. */
  headers?: Record<string, string>;
  /** How long the server may stay silent, in milliseconds: before the answer's head, and between two reads of its body. 60 s by default. */
  timeoutMs?: number;
  /** The fetch to send requests with; globalThis.fetch by default. */
  fetch?: typeof fetch;
}

/** The JSON body of a streamed chat-completions request, as a plain object sharing nothing with its arguments. */
export function requestBody(
  model: string,
  messages: readonly Message[],
  tools: readonly ToolDef[] = [],
  options: CallOptions = {},
): Record<string, unknown> {
  // course: begin requestBody
  const body: Record<string, unknown> = {
    model,
    messages: messages.map(messageJson),
    stream: true,
    // without it the server sends no usage chunk, and no token is ever counted
    stream_options: { include_usage: true },
  };
  if (tools.length > 0) {
    body.tools = tools.map(toolJson);
  }
  if (options.temperature !== undefined) {
    body.temperature = options.temperature;
  }
  if (options.maxTokens !== undefined) {
    body.max_tokens = options.maxTokens;
  }
  return body;
}

function messageJson(message: Message): Record<string, unknown> {
  const out: Record<string, unknown> = { role: message.role, content: message.content };
  if (message.toolCalls !== undefined && message.toolCalls.length > 0) {
    // strict servers reject "" beside tool calls: no text is null
    out.content = message.content || null;
    out.tool_calls = message.toolCalls.map(toolCallJson);
  }
  if (message.toolCallId) {
    out.tool_call_id = message.toolCallId; // how the model matches a result to its call
  }
  if (message.name) {
    out.name = message.name;
  }
  return out;
}

function toolCallJson(call: ToolCall): Record<string, unknown> {
  // arguments travel as a string of JSON, and "" is not a JSON object
  return { id: call.id, type: "function", function: { name: call.name, arguments: call.arguments || "{}" } };
}

function toolJson(tool: ToolDef): Record<string, unknown> {
  // a copy: a caller who edits the body before sending it must not edit the tool's schema too
  const fn = { name: tool.name, description: tool.description ?? "", parameters: structuredClone(tool.parameters ?? {}) };
  return { type: "function", function: fn };
  // course: end requestBody
}

/** Streams chat completions over fetch. */
export class OpenAIProvider implements Provider {
  // course: begin OpenAIProvider_fields
  readonly #config: Config;
  readonly #url: string;
  // course: end OpenAIProvider_fields

  /** Throws a TypeError when `config.baseURL` is not an http or https URL with a host. */
  constructor(config: Config) {
    // course: begin OpenAIProvider_constructor
    const url = URL.canParse(config.baseURL) ? new URL(config.baseURL) : undefined;
    if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") {
      throw new TypeError(`baseURL must be an http or https URL, got ${JSON.stringify(config.baseURL)}`);
    }
    this.#config = config;
    this.#url = config.baseURL.replace(/\/+$/, "") + "/chat/completions";
    // course: end OpenAIProvider_constructor
  }

  /**
   * Sends the request; rejects with an APIError for an answer outside 2xx, with fetch's error
   * when there is no answer, with the signal's reason when it aborts first. The stream it
   * resolves to owns the connection: reading it to the end, leaving it early (return()) or
   * aborting the signal closes the connection.
   */
  async chatStream(messages: readonly Message[], tools: readonly ToolDef[] = [], options: CallOptions = {}): Promise<DeltaStream> {
    // course: begin OpenAIProvider_chatStream
    const config = this.#config;
    const body = JSON.stringify(requestBody(config.model, messages, tools, options));
    const headers = new Headers({ "Content-Type": "application/json", Accept: "text/event-stream" });
    if (config.apiKey) {
      headers.set("Authorization", `Bearer ${config.apiKey}`);
    }
    for (const [name, value] of Object.entries(config.headers ?? {})) {
      headers.set(name, value); // last, so that a caller may replace ours (names match whatever their case)
    }
    const watchdog = new Watchdog(config.timeoutMs ?? 60_000);
    const signal = options.signal === undefined ? watchdog.signal : AbortSignal.any([options.signal, watchdog.signal]);
    try {
      // a redirect is not a stream: followed, it would turn the POST into a GET elsewhere
      const response = await (config.fetch ?? fetch)(this.#url, { method: "POST", headers, body, signal, redirect: "manual" });
      if (response.status < 200 || response.status > 299) {
        throw await apiError(response); // reading the body to its end frees the connection
      }
      return new ResponseStream(response.body, watchdog, options.signal);
    } catch (error) {
      watchdog.stop();
      throw error;
    }
  }
}

/**
 * The deltas of one response. It owns the connection: reading to the end, return() or the
 * caller's abort closes it, and dropping the connection is what tells the server to stop.
 * An object rather than a bare async generator: return() on a generator that never started
 * does not run its `finally`, and a caller may well give up before reading anything.
 */
class ResponseStream implements DeltaStream {
  readonly #body: ReadableStream<Uint8Array> | null;
  readonly #watchdog: Watchdog;
  readonly #deltas: AsyncGenerator<Delta, void, undefined>;

  constructor(body: ReadableStream<Uint8Array> | null, watchdog: Watchdog, cancel: AbortSignal | undefined) {
    this.#body = body === null ? null : watchdog.watch(body);
    this.#watchdog = watchdog;
    this.#deltas = deltas(this.#body, watchdog, cancel);
  }

  [Symbol.asyncIterator](): DeltaStream {
    return this;
  }

  next(): Promise<IteratorResult<Delta, void>> {
    return this.#deltas.next();
  }

  async return(): Promise<IteratorResult<Delta, void>> {
    this.#watchdog.stop();
    // cancelled whether or not reading began (once it began, the EventReader cancels it as it ends)
    if (this.#body !== null && !this.#body.locked) {
      await this.#body.cancel().catch(() => undefined);
    }
    return this.#deltas.return();
  }
}

async function* deltas(body: ReadableStream<Uint8Array> | null, watchdog: Watchdog, cancel: AbortSignal | undefined): AsyncGenerator<Delta, void, undefined> {
  const decoder = new Decoder();
  try {
    if (body !== null) {
      for await (const event of new EventReader(body)) {
        const { deltas, finished } = decoder.decode(event.data);
        yield* deltas;
        if (finished) {
          return;
        }
      }
    }
    // a clean end of the body without [DONE] is still a cut: a reset, a crash, a proxy's time limit
    yield { type: "error", error: new StreamCutError() };
  } catch (error) {
    if (cancel?.aborted) {
      return; // the caller gave up: the stream just ends
    }
    yield { type: "error", error: error instanceof Error ? error : new Error(String(error)) };
  } finally {
    watchdog.stop();
  }
}

/**
 * Aborts its signal once the server has been silent for `ms`: before the head arrives, and
 * between two reads of the body. One timer for the whole exchange, re-armed only when it fires
 * early, rather than a new timer per read.
 */
class Watchdog {
  readonly #controller = new AbortController();
  readonly #ms: number;
  #heard = performance.now();
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(ms: number) {
    this.#ms = ms;
    this.#arm(ms);
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** `body`, noting the time of every read. */
  watch(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    return body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
      transform: (chunk, controller) => {
        this.#heard = performance.now();
        controller.enqueue(chunk);
      },
    }));
  }

  stop(): void {
    clearTimeout(this.#timer);
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => {
      const quiet = performance.now() - this.#heard;
      if (quiet < this.#ms) {
        this.#arm(this.#ms - quiet);
        return;
      }
      this.#controller.abort(new DOMException(`the server sent nothing for ${this.#ms} ms`, "TimeoutError"));
    }, ms);
    this.#timer.unref(); // a stream nobody reads any more must not keep the program alive
  }
}

/** An answer outside 2xx as an APIError, its body read to the end. */
async function apiError(response: Response): Promise<APIError> {
  const raw = await response.text();
  let payload: unknown;
  try {
    payload = JSON.parse(raw);
  } catch {
    payload = undefined; // a proxy's HTML page, plain text, an empty body
  }
  const error = typeof payload === "object" && payload !== null ? (payload as { error?: unknown }).error : undefined;
  const retryAfter = seconds(response.headers.get("Retry-After"));
  const retryAfterMs = retryAfter === undefined ? undefined : retryAfter * 1000;
  if (typeof error === "object" && error !== null) {
    const { type, code, message } = error as { type?: unknown; code?: unknown; message?: unknown };
    return new APIError(response.status, text(type), text(code), text(message) || response.statusText, retryAfterMs);
  }
  return new APIError(response.status, "", "", raw.trim().slice(0, 500) || response.statusText, retryAfterMs);
}

/** Retry-After as seconds: a finite number >= 0, else undefined (absent, a date, anything else). */
function seconds(header: string | null): number | undefined {
  if (header === null || header.trim() === "") {
    return undefined;
  }
  const value = Number(header);
  return Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** A field as text: a string as it is, a number (some servers send numeric codes) as digits, else "". */
function text(value: unknown): string {
  return typeof value === "string" ? value : typeof value === "number" ? String(value) : "";
  // course: end OpenAIProvider_chatStream
}
