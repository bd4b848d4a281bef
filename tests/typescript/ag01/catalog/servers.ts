// A scripted chat-completions server on 127.0.0.1 for what a test must control to the byte: each
// request takes the next scripted reply and is recorded, and every reply is written as raw HTTP/1.1
// (chunked bodies, resets, cuts in the middle of a chunk). Every answer says `Connection: close`
// and the server never closes a connection unless a reply says so, so a connection it sees open
// is one the client has not let go. Conversations that need no scripting go to the course fake
// model (fakemodel.ts).

import { STATUS_CODES } from "node:http";
import { createServer } from "node:net";
import type { AddressInfo, Server, Socket } from "node:net";
import type { TestContext } from "node:test";

export const CHAT_PATH = "/v1/chat/completions";

/** One request as the server received it; header names are lower case. */
export interface Received {
  method: string;
  path: string;
  headers: Record<string, string>; // the last value of each name
  lines: Record<string, string[]>; // every value sent under each name, one per header line, in order
  body: Record<string, unknown> | undefined; // undefined when the body is not a JSON object
}

/** Answers one request. */
export type Reply = (x: Exchange) => void | Promise<void>;

/** One request and the raw connection that answers it. */
export class Exchange {
  constructor(readonly socket: Socket, readonly request: Received, readonly server: ScriptedServer) {}

  /** The status line and headers; the body that follows is chunked unless `length` is given. */
  head(status = 200, headers: Record<string, string> = { "Content-Type": "text/event-stream; charset=utf-8" }, length?: number): void {
    const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Status"}`, "Connection: close"];
    for (const [name, value] of Object.entries(headers)) {
      lines.push(`${name}: ${value}`);
    }
    lines.push(length === undefined ? "Transfer-Encoding: chunked" : `Content-Length: ${length}`);
    this.socket.write(lines.join("\r\n") + "\r\n\r\n");
  }

  /** One chunk of a chunked body. */
  chunk(text: string): void {
    const bytes = Buffer.from(text);
    if (bytes.length > 0) {
      this.socket.write(Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from("\r\n")]));
    }
  }

  /** One event, as one chunk. */
  event(data: string): void {
    this.chunk(`data: ${data}\n\n`);
  }

  /** The end of a chunked body. */
  end(): void {
    this.socket.write("0\r\n\r\n");
  }

  raw(text: string | Uint8Array): void {
    this.socket.write(text);
  }

  /** Aborts the connection with a TCP RST. */
  reset(): void {
    this.socket.resetAndDestroy();
  }

  /** Closes the connection (a FIN, after what was written). */
  close(): void {
    this.socket.end();
  }

  /** Sends nothing more until the client goes (true) or `limitMs` passes (false). */
  stall(limitMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      if (this.socket.destroyed) {
        resolve(true);
        return;
      }
      const timer = setTimeout(() => resolve(false), limitMs);
      this.socket.once("close", () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** The model the request named. */
  get model(): string {
    const model = this.request.body?.model;
    return typeof model === "string" ? model : "";
  }

  /** Whether the request asked for the usage chunk. */
  get wantsUsage(): boolean {
    const options = this.request.body?.stream_options;
    return typeof options === "object" && options !== null && (options as { include_usage?: unknown }).include_usage === true;
  }
}

export class ScriptedServer {
  readonly requests: Received[] = [];
  #replies: Reply[];
  readonly #server: Server;
  readonly #sockets = new Set<Socket>(); // those that carried a request
  readonly #accepted = new Set<Socket>();
  #gone!: () => void;
  /** Settles the first time a slow reply sees its client leave. */
  readonly clientGone = new Promise<void>((resolve) => {
    this.#gone = resolve;
  });

  private constructor(replies: Reply[]) {
    this.#replies = replies;
    this.#server = createServer((socket) => this.#accept(socket));
  }

  /** A server answering with `replies` in turn, closed when the test ends. */
  static async start(t: TestContext, ...replies: Reply[]): Promise<ScriptedServer> {
    const server = new ScriptedServer(replies);
    await new Promise<void>((resolve) => server.#server.listen(0, "127.0.0.1", resolve));
    t.after(() => server.close());
    return server;
  }

  get baseURL(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/v1`;
  }

  script(...replies: Reply[]): void {
    this.#replies.push(...replies);
  }

  get requestCount(): number {
    return this.requests.length;
  }

  /** Connections that carried a request and are open now. */
  get open(): number {
    return this.#sockets.size;
  }

  /** Whether every connection is closed within `limitMs`. */
  async allClosed(limitMs: number): Promise<boolean> {
    const end = performance.now() + limitMs;
    while (this.#sockets.size > 0) {
      if (performance.now() >= end) {
        return false;
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    return true;
  }

  noteClientGone(): void {
    this.#gone();
  }

  close(): void {
    for (const socket of this.#accepted) {
      socket.destroy();
    }
    this.#server.close();
  }

  #accept(socket: Socket): void {
    // Only a connection that carried a request counts as open: after a connection of its pool
    // is destroyed, undici opens a fresh one that sends nothing until it is needed (and closes
    // it itself when it idles too long).
    socket.setNoDelay(true);
    this.#accepted.add(socket);
    socket.on("close", () => {
      this.#sockets.delete(socket);
      this.#accepted.delete(socket);
    });
    socket.on("error", () => undefined); // a reset from the client is one of the things tests do
    let buffer = Buffer.alloc(0);
    let served = false;
    socket.on("data", (data: Buffer) => {
      if (served) {
        return; // one request per connection: every answer says Connection: close
      }
      buffer = Buffer.concat([buffer, data]);
      const request = parse(buffer);
      if (request === undefined) {
        return;
      }
      served = true;
      if (!socket.destroyed) {
        this.#sockets.add(socket);
      }
      void this.#answer(new Exchange(socket, request, this));
    });
  }

  async #answer(x: Exchange): Promise<void> {
    if (x.request.path !== CHAT_PATH) {
      const body = JSON.stringify({ error: { message: `unknown path ${x.request.path}`, type: "invalid_request_error" } });
      x.head(404, { "Content-Type": "application/json" }, Buffer.byteLength(body));
      x.raw(body);
      return;
    }
    this.requests.push(x.request);
    const reply = this.#replies.shift() ?? textReply("no reply was scripted for this request");
    try {
      await reply(x);
    } catch {
      x.socket.destroy(); // a write after the client left: nothing more to say
    }
  }
}

/** A whole request in `buffer` (head and Content-Length body), or undefined while it is not all there. */
function parse(buffer: Buffer): Received | undefined {
  const headEnd = buffer.indexOf("\r\n\r\n");
  if (headEnd < 0) {
    return undefined;
  }
  const [requestLine = "", ...lines] = buffer.subarray(0, headEnd).toString("latin1").split("\r\n");
  const headers: Record<string, string> = {};
  const sent: Record<string, string[]> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon > 0) {
      const name = line.slice(0, colon).trim().toLowerCase();
      headers[name] = line.slice(colon + 1).trim();
      (sent[name] ??= []).push(headers[name]);
    }
  }
  const length = Number(headers["content-length"] ?? "0");
  if (buffer.length < headEnd + 4 + length) {
    return undefined;
  }
  const [method = "", path = ""] = requestLine.split(" ");
  let body: Record<string, unknown> | undefined;
  try {
    const value: unknown = JSON.parse(buffer.subarray(headEnd + 4, headEnd + 4 + length).toString("utf8"));
    body = typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    body = undefined;
  }
  return { method, path, headers, lines: sent, body };
}

// ---- the stream's events ----------------------------------------------------------------------------

export function chunkEvent(x: Exchange, delta: Record<string, unknown>, finish: string | null): string {
  return JSON.stringify({
    id: "chatcmpl-scripted", object: "chat.completion.chunk", created: 1700000000, model: x.model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
}

export function usageEvent(x: Exchange, input: number, output: number): string {
  return JSON.stringify({
    id: "chatcmpl-scripted", object: "chat.completion.chunk", created: 1700000000, model: x.model,
    choices: [], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output },
  });
}

/** A text answer's events: the role chunk, one chunk per piece, the finish, the usage if asked. */
export function textEvents(x: Exchange, pieces: readonly string[]): string[] {
  const events = [chunkEvent(x, { role: "assistant", content: "" }, null)];
  for (const piece of pieces) {
    events.push(chunkEvent(x, { content: piece }, null));
  }
  events.push(chunkEvent(x, {}, "stop"));
  if (x.wantsUsage) {
    events.push(usageEvent(x, 5, pieces.length));
  }
  return events;
}

/** One content chunk per piece. */
export function textChunks(...pieces: string[]): (x: Exchange) => string[] {
  return (x) => pieces.map((piece) => chunkEvent(x, { content: piece }, null));
}

// ---- replies ------------------------------------------------------------------------------------------

/** Streams `pieces` as text, then [DONE]. */
export function textReply(...pieces: string[]): Reply {
  return (x) => {
    x.head();
    for (const event of textEvents(x, pieces)) {
      x.event(event);
    }
    x.event("[DONE]");
    x.end();
  };
}

/** An error answer with the real API's error body; a Retry-After header with exactly `retryAfter` when given. */
export function httpError(status: number, options: { type?: string; message?: string; retryAfter?: string } = {}): Reply {
  return (x) => {
    const type = options.type ?? (status < 500 ? "invalid_request_error" : "server_error");
    const body = JSON.stringify({
      error: { message: options.message ?? STATUS_CODES[status] ?? "", type, param: null, code: `code_${status}` },
    });
    const headers: Record<string, string> = { "Content-Type": "application/json" };
    if (options.retryAfter !== undefined) {
      headers["Retry-After"] = options.retryAfter;
    }
    x.head(status, headers, Buffer.byteLength(body));
    x.raw(body);
  };
}

/** `body` as it is, as a chunked body written `piece` bytes at a time (all at once when 0). */
export function rawReply(status: number, contentType: string, body: string, piece = 0): Reply {
  return async (x) => {
    x.head(status, { "Content-Type": contentType });
    const bytes = Buffer.from(body);
    const size = piece > 0 ? piece : Math.max(1, bytes.length);
    for (let at = 0; at < bytes.length; at += size) {
      x.raw(chunkBytes(bytes.subarray(at, at + size)));
      await new Promise((resolve) => setImmediate(resolve)); // a write of its own, as a socket sends it
    }
    x.end();
  };
}

function chunkBytes(bytes: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from("\r\n")]);
}

/** The role chunk and the pieces of text, then data: {"error": {type ...}}, then the body's end. */
export function errorEvent(type: string, ...pieces: string[]): Reply {
  return (x) => {
    x.head();
    for (const event of textEvents(x, pieces).slice(0, 1 + pieces.length)) {
      x.event(event);
    }
    x.event(JSON.stringify({ error: { message: "the server failed", type, param: null, code: null } }));
    x.end();
  };
}

/** The role chunk, then `events`, then `end` finishes the exchange byte for byte. */
export function after(events: (x: Exchange) => string[], end: (x: Exchange) => void | Promise<unknown>): Reply {
  return async (x) => {
    x.head();
    x.event(chunkEvent(x, { role: "assistant", content: "" }, null));
    for (const event of events(x)) {
      x.event(event);
    }
    await end(x);
  };
}

export const none = (): string[] => [];

/** Ends the body cleanly, without [DONE]: to HTTP a finished answer, to the contract a cut one. */
export const cleanEnd = (x: Exchange): void => x.end();

/** Closes the connection in the middle of the chunked body: every byte sent arrives, then it ends without its end. */
export const closeConnection = (x: Exchange): void => x.close();

export const reset = (x: Exchange): void => x.reset();

/** Writes `raw` bytes, then ends the exchange with `end`. */
export function writeThen(raw: string, end: (x: Exchange) => void): (x: Exchange) => void {
  return (x) => {
    x.raw(raw);
    end(x);
  };
}

/** The head and the role chunk, then a TCP RST. */
export const resetAfterRole = (): Reply => after(none, reset);

/**
 * The role chunk and one text chunk, then nothing more until the client goes (noted in
 * clientGone) or `limitMs` passes: a model thinking. A client that only stops reading, without
 * closing its connection, is never noticed.
 */
export function slowStream(limitMs: number): Reply {
  return async (x) => {
    x.head();
    x.event(chunkEvent(x, { role: "assistant", content: "" }, null));
    x.event(chunkEvent(x, { content: "thinking" }, null));
    if (await x.stall(limitMs)) {
      x.server.noteClientGone();
      return;
    }
    x.event(chunkEvent(x, {}, "length"));
    x.event("[DONE]");
    x.end();
  };
}
