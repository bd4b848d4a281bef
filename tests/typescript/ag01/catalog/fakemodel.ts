// The course fake model that `course check` starts (COURSE_FAKE_MODEL_URL), scripted over HTTP:
// POST /_fake/script queues replies (their JSON form: CONTRIBUTING.md, "The fake model"), GET
// /_fake/state shows the requests it received.

/** One request the fake model received; header names are lower case. */
export interface FakeRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

export class FakeModel {
  private constructor(readonly baseURL: string) {}

  /** The fake model, with whatever earlier tests scripted and recorded forgotten. */
  static async fresh(): Promise<FakeModel> {
    const url = process.env.COURSE_FAKE_MODEL_URL;
    if (!url) {
      throw new Error("COURSE_FAKE_MODEL_URL is not set: run the catalog with `course check`, or start `course fake-model` "
        + "and set it to the URL it prints");
    }
    const fake = new FakeModel(url.replace(/\/+$/, ""));
    await fake.#control("POST", "reset");
    return fake;
  }

  /** Queues replies: {"kind": "turn", "text": [...]}, {"kind": "http_error", ...}, {"kind": "raw", ...}. */
  async script(...replies: Record<string, unknown>[]): Promise<void> {
    await this.#control("POST", "script", { replies });
  }

  async requests(): Promise<FakeRequest[]> {
    const state = (await this.#control("GET", "state")) as { requests: FakeRequest[] };
    return state.requests;
  }

  async lastRequest(): Promise<FakeRequest> {
    const all = await this.requests();
    const last = all.at(-1);
    if (last === undefined) {
      throw new Error("the fake model received no request");
    }
    return last;
  }

  async #control(method: string, what: string, body?: unknown): Promise<unknown> {
    const root = this.baseURL.replace(/\/v1$/, "");
    const response = await fetch(`${root}/_fake/${what}`, {
      method,
      headers: { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    if (response.status !== 200) {
      throw new Error(`the fake model's /_fake/${what}: HTTP ${response.status}: ${text}`);
    }
    return text ? JSON.parse(text) : undefined;
  }
}

export function fakeText(...pieces: string[]): Record<string, unknown> {
  return { kind: "turn", text: pieces };
}

/** An HTTP error with the real API's error body; no Retry-After unless given. */
export function fakeError(status: number, type: string, message: string, code = "", retryAfter = ""): Record<string, unknown> {
  const reply: Record<string, unknown> = { kind: "http_error", status, type, message };
  if (code) {
    reply.code = code;
  }
  if (retryAfter) {
    reply.retry_after = retryAfter;
  }
  return reply;
}

export function fakeRaw(status: number, contentType: string, body: string): Record<string, unknown> {
  return { kind: "raw", status, content_type: contentType, body };
}
