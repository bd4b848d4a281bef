// course: begin docstring
/** Retrying a provider, but only while retrying cannot duplicate what the caller already has. */
// course: end docstring

import { isContent } from "../types.js";
import type { CallOptions, Delta, DeltaStream, Message, Provider, ToolDef } from "../types.js";
import { APIError, StreamCutError, StreamError } from "./errors.js";

/** Waits `ms` milliseconds; rejects with the signal's reason if it aborts first. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** RetryPolicy's default Sleep: a timer, ended early (rejecting with the signal's reason) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  // course: begin sleep
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason); // an aborted signal fires no abort event any more
      return;
    }
    const wake = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", wake);
      resolve();
    }, ms);
    signal?.addEventListener("abort", wake, { once: true });
  });
  // course: end sleep
}

/** The fields of a RetryPolicy; any left out takes its default. Times are in milliseconds. */
export interface RetryOptions {
  /** Counts the first attempt: 3. */
  maxAttempts?: number;
  /** The first wait: 500. */
  initialMs?: number;
  /** The cap on a computed wait: 30 000. */
  maxMs?: number;
  /** 2. */
  multiplier?: number;
  /** A server asking for a longer wait than this is not retried: 60 000. */
  maxRetryAfterMs?: number;
  /** How to wait: a timer that ends early when the signal aborts. */
  sleep?: Sleep;
}

/** How often and how patiently to retry. */
export class RetryPolicy {
  readonly maxAttempts: number;
  readonly initialMs: number;
  readonly maxMs: number;
  readonly multiplier: number;
  readonly maxRetryAfterMs: number;
  readonly sleep: Sleep;

  constructor(options: RetryOptions = {}) {
    this.maxAttempts = options.maxAttempts ?? 3;
    this.initialMs = options.initialMs ?? 500;
    this.maxMs = options.maxMs ?? 30_000;
    this.multiplier = options.multiplier ?? 2;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
    this.sleep = options.sleep ?? sleep;
  }

  /**
   * The wait after failure `n` (1 after the first attempt failed), in milliseconds: the server's
   * Retry-After when `error` is an APIError carrying one, else min(maxMs, initialMs * multiplier ** (n - 1)).
   */
  delay(n: number, error?: unknown): number {
    // course: begin RetryPolicy_delay
    if (error instanceof APIError && error.retryAfterMs !== undefined) {
      return error.retryAfterMs; // the server knows when its capacity comes back
    }
    // grown one step at a time and stopped at the cap: computed whole, the power overflows to
    // Infinity (and Infinity * 0 is NaN) after enough failures
    let wait = this.initialMs;
    for (let failure = 1; failure < n && wait < this.maxMs; failure++) {
      wait *= this.multiplier;
    }
    return Math.min(this.maxMs, wait);
    // course: end RetryPolicy_delay
  }
}

/** Whether the very same request could succeed if sent again. */
export function retryable(error: unknown): boolean {
  // course: begin retryable
  if (error instanceof APIError) {
    return RETRYABLE_STATUSES.has(error.status); // any other status fails the same way every time
  }
  if (error instanceof StreamCutError) {
    return true;
  }
  if (error instanceof StreamError) {
    return error.type === "server_error";
  }
  if (!(error instanceof Error)) {
    return false;
  }
  if (error.name === "TimeoutError") {
    return true; // a silent server (the caller's own deadline is its signal: never retried)
  }
  // fetch wraps what the socket said in `cause`: refused, reset, closed before or inside the body
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && RETRYABLE_CODES.has(code)) {
      return true;
    }
  }
  return false;
  // course: end retryable
}

/** `provider`, with failures that happen before the first content delta retried under `policy`. */
export function withRetry(provider: Provider, policy: RetryPolicy = new RetryPolicy()): Provider {
  // course: begin withRetry
  return new RetryingProvider(provider, policy);
  // course: end withRetry
}

// course: begin helpers
// overloaded, rate-limited or failing servers: the same request may succeed later
const RETRYABLE_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

// the socket errors (Node's and undici's codes) after which a new connection may do better
const RETRYABLE_CODES = new Set([
  "ECONNREFUSED", "ECONNRESET", "ECONNABORTED", "EPIPE", "ETIMEDOUT",
  "UND_ERR_SOCKET", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT",
]);

/**
 * Retries up to the commitment boundary, the first content delta. Until then the caller has seen
 * nothing, so the whole request can be sent again; after it the caller holds text (or a tool
 * call) that a second attempt would repeat, so every later delta, a failure included, passes
 * through as it comes.
 */
class RetryingProvider implements Provider {
  readonly #inner: Provider;
  readonly #policy: RetryPolicy;

  constructor(inner: Provider, policy: RetryPolicy) {
    this.#inner = inner;
    this.#policy = policy;
  }

  chatStream(messages: readonly Message[], tools: readonly ToolDef[] = [], options: CallOptions = {}): Promise<DeltaStream> {
    return this.#attempt(1, messages, tools, options);
  }

  async #attempt(attempt: number, messages: readonly Message[], tools: readonly ToolDef[], options: CallOptions): Promise<DeltaStream> {
    const signal = options.signal;
    let stream: DeltaStream;
    try {
      stream = await this.#inner.chatStream(messages, tools, options);
    } catch (error) {
      if (!this.#shouldRetry(error, attempt, signal)) {
        throw error; // no stream: the failure goes back as it came
      }
      await this.#policy.sleep(this.#policy.delay(attempt, error), signal);
      return this.#attempt(attempt + 1, messages, tools, options);
    }
    const held = await readUntilCommitted(stream);
    const last = held.at(-1);
    if (last?.type === "error" && this.#shouldRetry(last.error, attempt, signal)) {
      await stream.return(); // the failed attempt's connection goes before we wait
      await this.#policy.sleep(this.#policy.delay(attempt, last.error), signal);
      return this.#attempt(attempt + 1, messages, tools, options);
    }
    if (signal?.aborted) {
      await stream.return();
      throw signal.reason; // cancelled before the first delta reached the caller
    }
    return new Replay(held, stream);
  }

  #shouldRetry(error: unknown, attempt: number, signal: AbortSignal | undefined): boolean {
    if (attempt >= this.#policy.maxAttempts || signal?.aborted || !retryable(error)) {
      return false;
    }
    // a server that asks for a longer wait than we accept gets its error back now
    return !(error instanceof APIError) || (error.retryAfterMs ?? 0) <= this.#policy.maxRetryAfterMs;
  }
}

/** The deltas up to the first content delta, DoneDelta or ErrorDelta, that one included, or to the end. */
async function readUntilCommitted(stream: DeltaStream): Promise<Delta[]> {
  const held: Delta[] = [];
  try {
    for (;;) {
      const next = await stream.next();
      if (next.done) {
        return held;
      }
      held.push(next.value);
      if (isContent(next.value) || next.value.type === "done" || next.value.type === "error") {
        return held;
      }
    }
  } catch (error) {
    await stream.return(); // a stream that throws breaks its promise, but its connection still goes
    throw error;
  }
}

/** The held deltas, then the rest of the stream; return() closes the stream, read or not. */
class Replay implements DeltaStream {
  readonly #held: Delta[];
  readonly #stream: DeltaStream;

  constructor(held: Delta[], stream: DeltaStream) {
    this.#held = held;
    this.#stream = stream;
  }

  [Symbol.asyncIterator](): DeltaStream {
    return this;
  }

  async next(): Promise<IteratorResult<Delta, void>> {
    const held = this.#held.shift();
    if (held !== undefined) {
      return { done: false, value: held };
    }
    try {
      return await this.#stream.next();
    } catch (error) {
      await this.#stream.return();
      throw error;
    }
  }

  return(): Promise<IteratorResult<Delta, void>> {
    this.#held.length = 0;
    return this.#stream.return();
  }
}
// course: end helpers
